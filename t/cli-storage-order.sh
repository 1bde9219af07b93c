#!/bin/sh
# cli-storage-order.sh - shardpipe write --storage-order as a user meets
# it (doc/design.md §3.3): interleaved (t, y, x, c) input stored planar
# (t, c, y, x), or channel-major (c, t, y, x) with the append dim second,
# gives the files of the permuted array written directly (a pyramid's
# too), cat
# and verify read it in storage order, bench takes the option, conform
# compares backends' permuted stores with the input it transposes, and
# every refusal exits 2 creating nothing, naming the option and the value.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
command -v python3 > /dev/null 2>&1 || skip_all "no python3 to permute the input"

scratch cliorder
test_seed
# The backends the image below is written on.
zbackends="cpu reference"
backend_usable opencl && zbackends="$zbackends opencl"
plan $((51 + $(echo $zbackends | wc -w)))

# 5 frames of 6 x 7 pixels x 3 channels, uint16, interleaved.
random_bytes $((5 * 6 * 7 * 3 * 2)) "$tmp/in.raw"
# The planar (t, c, y, x) and channel-major (c, t, y, x: the append dim
# stored second) arrays, permuted here with the standard library only:
# storage element (i0, i1, y, x) is input element (t, y, x, c) with t, c
# the outer pair in the order named.
permute() {
	python3 - "$tmp/in.raw" "$2" "$1" <<'PY'
import sys
T, Y, X, C, E = 5, 6, 7, 3, 2
src = open(sys.argv[1], "rb").read()
outer = [(t, c) for t in range(T) for c in range(C)]
if sys.argv[3] == "ct":
    outer = [(t, c) for c in range(C) for t in range(T)]
out = bytearray()
for t, c in outer:
    for y in range(Y):
        for x in range(X):
            o = (((t * Y + y) * X + x) * C + c) * E
            out += src[o:o + E]
open(sys.argv[2], "wb").write(out)
PY
}
permute tc "$tmp/planar.raw"
ok $? "the planar array, permuted independently"
permute ct "$tmp/cmajor.raw"
ok $? "the channel-major array, permuted independently"

for codec in none zstd gzip; do
	"$SP" write --shape 0,3,6,7 --chunk 2,1,4,4 --shard-shape 4,3,4,8 \
		--dtype uint16 --codec $codec --names t,c,y,x \
		--storage-order 0,3,1,2 --input "$tmp/in.raw" --quiet \
		"$tmp/o-$codec.zarr"
	ok $? "$codec: write --storage-order 0,3,1,2"
	"$SP" write --shape 0,3,6,7 --chunk 2,1,4,4 --shard-shape 4,3,4,8 \
		--dtype uint16 --codec $codec --names t,c,y,x \
		--input "$tmp/planar.raw" --quiet "$tmp/p-$codec.zarr"
	[ "$(tree_sum "$tmp/o-$codec.zarr")" = "$(tree_sum "$tmp/p-$codec.zarr")" ] &&
		diff -r "$tmp/o-$codec.zarr" "$tmp/p-$codec.zarr" > /dev/null
	ok $? "$codec: the same files as the planar array written directly"
done
# A pyramid: every level the planar array's.
"$SP" write --shape 0,3,6,7 --chunk 2,1,4,4 --dtype uint16 --names t,c,y,x \
	--storage-order 0,3,1,2 --downsample t,y,x --levels 3 \
	--input "$tmp/in.raw" --quiet "$tmp/py-o.zarr" &&
	"$SP" write --shape 0,3,6,7 --chunk 2,1,4,4 --dtype uint16 \
	--names t,c,y,x --downsample t,y,x --levels 3 \
	--input "$tmp/planar.raw" --quiet "$tmp/py-p.zarr"
ok $? "a pyramid with --storage-order 0,3,1,2, and the planar array's"
diff -r "$tmp/py-o.zarr" "$tmp/py-p.zarr" > /dev/null
ok $? "the same files, every level"
# The append dim stored as dim 1, unbounded: zarr.json grows dim 1.
for codec in none zstd; do
	"$SP" write --shape 3,0,6,7 --chunk 2,2,4,4 --shard-shape 2,4,4,8 \
		--dtype uint16 --codec $codec --names c,t,y,x \
		--storage-order 3,0,1,2 --input "$tmp/in.raw" --quiet \
		"$tmp/c-$codec.zarr"
	ok $? "$codec: write --storage-order 3,0,1,2"
	"$SP" write --shape 3,5,6,7 --chunk 2,2,4,4 --shard-shape 2,4,4,8 \
		--dtype uint16 --codec $codec --names c,t,y,x \
		--input "$tmp/cmajor.raw" --quiet "$tmp/cm-$codec.zarr"
	diff -r "$tmp/c-$codec.zarr" "$tmp/cm-$codec.zarr" > /dev/null
	ok $? "$codec: the same files as the channel-major array written directly"
done
"$SP" cat "$tmp/c-zstd.zarr" | cmp -s - "$tmp/cmajor.raw"
ok $? "cat reads the channel-major store back in storage order"
# The append dim stored as dim 1, continued: 3 frames (inside a chunk
# and a shard row along dim 1), then the other 2 with --append; the rows
# of the store are counted along dim 1.  A killed writer's orphan past
# them (a shard at t-shard 5) goes; a file the store did not write stays.
head -c $((3 * 6 * 7 * 3 * 2)) "$tmp/in.raw" > "$tmp/in1.raw"
tail -c $((2 * 6 * 7 * 3 * 2)) "$tmp/in.raw" > "$tmp/in2.raw"
for codec in none zstd; do
	"$SP" write --shape 3,0,6,7 --chunk 2,2,4,4 --shard-shape 2,4,4,8 \
		--dtype uint16 --codec $codec --names c,t,y,x \
		--storage-order 3,0,1,2 --input "$tmp/in1.raw" --quiet \
		"$tmp/cr-$codec.zarr" &&
		mkdir -p "$tmp/cr-$codec.zarr/c/1/5/0" &&
		cp "$tmp/cr-$codec.zarr/c/1/0/0/0" "$tmp/cr-$codec.zarr/c/1/5/0/0" &&
		echo mine > "$tmp/cr-$codec.zarr/c/1/notes" &&
		"$SP" write --append --storage-order 3,0,1,2 \
		--input "$tmp/in2.raw" --quiet "$tmp/cr-$codec.zarr" 2> "$tmp/err"
	ok_shown $? "$codec: 3 frames with the append dim stored second, then --append the other 2" "$tmp/err"
	[ ! -e "$tmp/cr-$codec.zarr/c/1/5" ] &&
		[ "$(cat "$tmp/cr-$codec.zarr/c/1/notes")" = mine ] &&
		rm "$tmp/cr-$codec.zarr/c/1/notes" &&
		diff -r "$tmp/cr-$codec.zarr" "$tmp/cm-$codec.zarr" > /dev/null
	ok $? "$codec: the orphan gone, the other file kept, the files of the channel-major array"
done
# A z-stack appended plane by plane as (z, y, x, c) and stored as the
# OME-NGFF image (c, z, y, x), the append dim second: every level, z
# halving along the append dim and stopping at 2 levels, has the files of
# the image of the planar array written directly, on every backend here
# (codec none: the kernel backends' own zstd gives other bytes).
"$SP" write --shape 3,5,6,7 --chunk 1,2,4,4 --shard-shape 1,4,4,8 \
	--dtype uint16 --codec none --names c,z,y,x --downsample z,y,x --stop z=2 \
	--levels 3 --ngff --input "$tmp/cmajor.raw" --quiet "$tmp/zd.zarr"
ok $? "the image of the channel-major array, written directly"
for be in $zbackends; do
	"$SP" write --backend $be --shape 3,0,6,7 --chunk 1,2,4,4 \
		--shard-shape 1,4,4,8 --dtype uint16 --codec none \
		--names c,z,y,x --storage-order 3,0,1,2 --downsample z,y,x --stop z=2 \
		--levels 3 --ngff --input "$tmp/in.raw" --quiet \
		"$tmp/zm-$be.zarr" 2> "$tmp/err" &&
		diff -r "$tmp/zm-$be.zarr" "$tmp/zd.zarr" > /dev/null
	ok_shown $? "$be: the image with the append dim stored second, every level the same files" "$tmp/err"
done
"$SP" verify "$tmp/zm-cpu.zarr" > "$tmp/out" 2>&1 &&
	grep -q 'an OME-NGFF image of 3 levels, each equal to the one below it reduced' "$tmp/out"
ok_shown $? "verify recomputes its levels" "$tmp/out"
# Continued: 3 planes, then --append --storage-order of the other 2.
"$SP" write --shape 3,0,6,7 --chunk 1,2,4,4 --shard-shape 1,4,4,8 \
	--dtype uint16 --codec none --names c,z,y,x --storage-order 3,0,1,2 \
	--downsample z,y,x --stop z=2 --levels 3 --ngff --input "$tmp/in1.raw" \
	--quiet "$tmp/zr.zarr" 2> "$tmp/err" &&
	"$SP" write --append --storage-order 3,0,1,2 --input "$tmp/in2.raw" \
	--quiet "$tmp/zr.zarr" 2>> "$tmp/err" &&
	diff -r "$tmp/zr.zarr" "$tmp/zm-cpu.zarr" > /dev/null
ok_shown $? "the image continued with --append --storage-order: the same files, every level" "$tmp/err"
# Continued after 3 of the 5 frames, inside a chunk and a shard row: the
# rows read back are appended again in the input's order.
"$SP" write --shape 0,3,6,7 --chunk 2,1,4,4 --shard-shape 4,3,4,8 \
	--dtype uint16 --names t,c,y,x --storage-order 0,3,1,2 \
	--input "$tmp/in1.raw" --quiet "$tmp/r.zarr" &&
	"$SP" write --append --storage-order 0,3,1,2 --input "$tmp/in2.raw" \
		--quiet "$tmp/r.zarr"
ok $? "write 3 frames, then --append --storage-order the other 2"
diff -r "$tmp/r.zarr" "$tmp/o-zstd.zarr" > /dev/null
ok $? "the same files as the 5 frames written in one run"
# A damaged last shard row along dim 1 (t-shard 1 of the 5 frames):
# --append refuses it, touching nothing; --truncate-to-advertised drops
# the row and continues after the 4 rows before it.
cp -r "$tmp/c-zstd.zarr" "$tmp/d.zarr"
printf 'XXXX' | dd of="$tmp/d.zarr/c/0/1/0/0" bs=1 seek=10 conv=notrunc 2> /dev/null
sum_before=$(tree_sum "$tmp/d.zarr")
"$SP" write --append --storage-order 3,0,1,2 --input "$tmp/in2.raw" \
	--quiet "$tmp/d.zarr" 2> "$tmp/err"
[ $? -eq 1 ] && grep -q 'shard c/0/1/0/0.*nothing was touched' "$tmp/err" &&
	[ "$(tree_sum "$tmp/d.zarr")" = "$sum_before" ]
ok_shown $? "the append dim stored second, its last shard row damaged: --append refuses it, exit 1, nothing touched" "$tmp/err"
head -c $((4 * 6 * 7 * 3 * 2)) "$tmp/in.raw" | cat - "$tmp/in2.raw" > "$tmp/in6.raw"
"$SP" write --shape 3,0,6,7 --chunk 2,2,4,4 --shard-shape 2,4,4,8 \
	--dtype uint16 --codec zstd --names c,t,y,x --storage-order 3,0,1,2 \
	--input "$tmp/in6.raw" --quiet "$tmp/six.zarr" &&
	"$SP" write --append --truncate-to-advertised --storage-order 3,0,1,2 \
	--input "$tmp/in2.raw" --quiet "$tmp/d.zarr" 2> "$tmp/err" &&
	diff -r "$tmp/d.zarr" "$tmp/six.zarr" > /dev/null
ok_shown $? "--truncate-to-advertised: the 4 rows before it and 2 more, the files of those 6 in one run" "$tmp/err"
"$SP" cat "$tmp/o-zstd.zarr" | cmp -s - "$tmp/planar.raw"
ok $? "cat reads it back in storage order"
"$SP" verify --against "$tmp/planar.raw" "$tmp/o-zstd.zarr" > /dev/null
ok $? "verify --against the planar array"
"$SP" bench frames --rows 2 --storage-order 0,1,3,2 --shape 2,2,64,48 \
	--chunk 1,1,32,16 --shard 1,1,2,3 > "$tmp/bench.out" 2>&1
ok $? "bench takes --storage-order"
"$SP" bench frames --rows 2 --storage-order 1,0,2,3 --shape 2,2,64,48 \
	--chunk 1,1,32,16 --shard 1,1,2,3 > "$tmp/bench.out" 2>&1
[ $? -eq 2 ] && grep -q 'stores the append dim as storage dim 1; bench appends along storage dim 0 only' "$tmp/bench.out"
ok $? "bench refuses a moved append dim, exit 2, naming it"

watch=$tmp/w
mkdir "$watch"
watch_absent=$watch/s.zarr
w() {
	"$SP" write --shape 0,3,6,7 --chunk 2,1,4,4 --dtype uint16 \
		--input "$tmp/in.raw" --quiet "$@" "$watch/s.zarr"
}
refused 2 'storage-order.*repeats' "a repeated entry" -- w --storage-order 0,1,1,2
refused 2 'storage-order: entry 4 is 4, outside 0..3' "an entry out of range" -- \
	w --storage-order 0,1,2,4
refused 2 'storage-order: "0,2,1" lists 3 dims, the array has 4' "too few entries" -- \
	w --storage-order 0,2,1
refused 2 'dim 0: size 0 .only the append dim, storage dim 1, may be unbounded' \
	"the append dim moved, dim 0 left unbounded" -- w --storage-order 1,0,2,3
cp -r "$tmp/c-zstd.zarr" "$watch/c.zarr"
refused 2 'dim 1: the store holds 5 rows already, so a bound of 5' \
	"--append with the moved append dim's bound reached" -- \
	"$SP" write --append --storage-order 3,0,1,2 --shape 3,5,6,7 \
	--input "$tmp/in2.raw" --quiet "$watch/c.zarr"
refused 2 'dim 0 size: the store has 3, the description 4' \
	"--append, another size of a dim that is not the append dim" -- \
	"$SP" write --append --storage-order 3,0,1,2 --shape 4,9,6,7 \
	--allow-short --input "$tmp/in2.raw" --quiet "$watch/c.zarr"
rm -rf "$watch/c.zarr"
refused 2 'dim 1 (t): the time axis of an OME-NGFF image comes first' \
	"an image with the time dim, appended, stored after the channels" -- \
	"$SP" write --shape 3,0,6,7 --chunk 2,2,4,4 --dtype uint16 \
	--input "$tmp/in.raw" --quiet --names c,t,y,x --ngff \
	--storage-order 3,0,1,2 "$watch/s.zarr"
refused 2 'storage-order: entry 3 "x" is not a number' "not a number" -- w --storage-order 0,1,x,2
# conform compares each backend's store with the input it transposes
# itself: planar, the append dim moved, and outer dims swapped; codec none,
# so cpu's and reference's files are the same too.
for c in 0,3,1,2:0,3,6,7:2,1,4,4 1,0,2,3:3,0,6,7:1,2,4,4 \
	0,2,1,3:0,6,3,7:2,4,1,4; do
	order=${c%%:*} rest=${c#*:}
	"$SP" conform --backends cpu,reference --shape "${rest%%:*}" \
		--chunk "${rest#*:}" --shard 2,2,2,2 --storage-order "$order" \
		> "$tmp/out" 2>&1 && grep -q '^cpu ~ reference *identical' "$tmp/out"
	ok_shown $? "conform --storage-order $order: the stores decode to the transposed input, cpu's and reference's the same" "$tmp/out"
done
# Not a permutation: the backend's open refuses it (conform's exit 1, "a
# backend failed"), naming the entry; nothing is compared.
"$SP" conform --backends cpu --shape 0,3,6,7 --chunk 2,1,4,4 \
	--storage-order 0,1,1,2 > "$tmp/out" 2>&1
is $? 1 "conform, not a permutation: exit 1"
grep -q 'storage_order\[2\] = 1 repeats' "$tmp/out"
ok_shown $? "conform, not a permutation: the backend's refusal names the entry" "$tmp/out"
done_testing
