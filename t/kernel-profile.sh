#!/bin/sh
# kernel-profile.sh - the GPU targets of issue 26, as the reference
# executor's work profile (doc/design.md §12.1) measures them at local
# size 128 on the frames workload's first batch of micro fill (32 chunks
# of 576 KiB):
#   - the encoder of zstd:1 and of blosc:zstd:1 runs with a parallelism
#     (work over critical path) of at least 32 lanes of 128, gzip:1's of
#     at least 48, both for the kernel that does the most work and, for
#     gzip, for its two kernels together (they run one after the other);
#   - a frames batch offers at least 128 independent units of work (zstd
#     and blosc, a unit per 128 KiB block; gzip, a unit per 128 KiB part
#     of a chunk: sp_gzip_units, whose matching and parse is the most
#     work of the encoder);
#   - the profiling executor writes the bytes the reference backend does,
#     at local size 128, 64 and 7 (groups of many work-items meeting at
#     barriers, scatter's runs copied by teams, where the normal path runs
#     one item per group);
#   - --profile refuses a backend that does not count work.
# Every figure follows as a comment.
# The profile counts work, not time, so the figures are the same on every
# machine and the assertions are not timed.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
scratch kprof

plan 24

# profile CODEC LOCAL DIR [GEOMETRY...]: the profiled run's table in
# DIR.prof and its store in DIR.prof.d, the normal reference run's store in
# DIR.ref.d; the exit status of the profiled run.
profile() {
	codec=$1 local=$2 out=$3
	shift 3
	"$SP" bench "$@" --codec "$codec" --write-empty-chunks \
		--output "$out.ref.d" --backend reference \
		> /dev/null 2> "$out.ref.err" ||
		cat "$out.ref.err" >&2
	"$SP" bench "$@" --codec "$codec" --write-empty-chunks \
		--output "$out.prof.d" --profile --local "$local" \
		> "$out.prof" 2> "$out.prof.err"
}

# The encoder's "all" row: the kernel that did the most work.
encoder_row() {
	awk '$2 == "all" && $3 + 0 > w { w = $3 + 0; r = $0 } END { print r }' \
		"$1"
}

for spec in zstd:1:32 blosc:zstd:1:shuffle:32 gzip:1:48; do
	codec=${spec%:*}
	target=${spec##*:}
	name=$(echo "$codec" | tr ':' '-')
	profile "$codec" 128 "$tmp/$name" frames --rows 1
	ok $? "$codec: bench frames --profile --local 128 runs"
	diag "$codec, frames/micro, first batch, local size 128:"
	sed -n '/^kernel /,$p' "$tmp/$name.prof" | sed 's/^/#   /'
	row=$(encoder_row "$tmp/$name.prof")
	kernel=$(echo "$row" | awk '{ print $1 }')
	par=$(echo "$row" | awk '{ print $5 }')
	units=$(echo "$row" | awk '{ print $8 }')
	met=1
	awk -v p="${par:-0}" -v t="$target" 'BEGIN { exit !(p >= t) }' && met=0
	ok $met "$codec: $kernel parallelism ${par:-?} of 128, at least $target"
	awk -v u="${units:-0}" 'BEGIN { exit !(u >= 128) }'
	ok $? "$codec: $kernel: ${units:-?} units of work per frames batch, at least 128"
	diff -r "$tmp/$name.ref.d" "$tmp/$name.prof.d" > "$tmp/diff" 2>&1
	ok $? "$codec: the profiling executor writes reference's bytes"
done
# gzip's parts, then its members: the two kernels' work over the sum of
# their critical paths.
par=$(awk '$2 == "all" && ($1 == "sp_gzip_units" || $1 == "sp_codec_gzip") {
	w += $3; c += $4 } END { if (c > 0) printf "%.1f", w / c }' \
	"$tmp/gzip-1.prof")
awk -v p="${par:-0}" 'BEGIN { exit !(p >= 48) }'
ok $? "gzip:1: sp_gzip_units and sp_codec_gzip together, parallelism ${par:-?} of 128, at least 48"

# Groups of 7 items: barriers met by a number of items that divides
# nothing, on edge chunks of every shape.
for codec in gzip:6 zstd:3 blosc:zstd:2:bitshuffle none; do
	name=$(echo "$codec" | tr ':' '-')-7
	profile "$codec" 7 "$tmp/$name" --shape 3,70,90 --chunk 2,33,41 \
		--shard 1,2,2 --dtype uint16 --rows 3 --fill noise12
	diff -r "$tmp/$name.ref.d" "$tmp/$name.prof.d" > "$tmp/diff" 2>&1
	ok $? "$codec at local size 7: the profiling executor writes reference's bytes"
done
# Groups of 64: scatter runs copied by teams of 4 and 16 items (byte and
# 2-byte words), edge chunks; gzip's odd sizes gathered a word at a time.
for spec in none:uint8:41 gzip:1:uint8:41 none:uint16:400 gzip:1:uint16:400; do
	codec=${spec%:*:*}
	rest=${spec#"$codec":}
	dtype=${rest%:*}
	x=${rest#*:}
	name=$(echo "$codec-$dtype" | tr ':' '-')-64
	profile "$codec" 64 "$tmp/$name" --shape 3,70,$((2 * x + 7)) \
		--chunk 2,33,$x --shard 1,2,2 --dtype "$dtype" --rows 3 \
		--fill noise12
	diff -r "$tmp/$name.ref.d" "$tmp/$name.prof.d" > "$tmp/diff" 2>&1
	ok $? "$codec, $dtype runs of $x at local size 64: the profiling executor writes reference's bytes"
done

"$SP" bench --profile --backend cpu > /dev/null 2> "$tmp/err"
is $? 2 "--profile with --backend cpu: a usage error"
grep -q "reference backend" "$tmp/err"
ok $? "its message names the backend that counts work"

SHARDPIPE_KERNEL_DEBUG=profile=$tmp/nodir/p "$SP" bench --backend reference \
	--rows 1 --codec none > /dev/null 2> "$tmp/err"
[ $? -ne 0 ] && grep -q "$tmp/nodir/p" "$tmp/err"
ok $? "a profile file that cannot be written fails the open, naming it"
done_testing
