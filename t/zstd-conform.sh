#!/bin/sh
# zstd-conform.sh - shardpipe conform with codec zstd through the kernel
# driver: at levels 1, 3 and 9 the reference backend's stores decode to the
# input, as the cpu backend's do (L1, every chunk through libzstd), and
# with the content checksum at level 5; where opencl is usable, its stores
# at three local sizes (a fourth with the checksum) are byte-identical to
# reference's (L2), else a skip with the reason; stores `shardpipe write`
# makes with each kernel backend come back through `shardpipe cat`;
# SHARDPIPE_KERNEL_DEBUG refuses an unknown word and a bad local size.
. "${top_srcdir:-.}/t/lib.sh"
SP=${SHARDPIPE:-./shardpipe}
[ -x "$SP" ] || skip_all "shardpipe program not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-zstd-conform-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
test_seed
plan 40

for lv in 1 3 9; do
	"$SP" conform --codec "zstd:$lv" --backends cpu,reference \
		> "$tmp/out" 2>&1
	ok $? "zstd:$lv: reference and cpu stores decode to the input"
	sed 's/^/# /' "$tmp/out"
done
# The kernel driver's debug entry refuses what it does not know, naming it,
# before any kernel runs.
for bad in "sync,bogus:bogus" "local=0:0 is not a local size"; do
	SHARDPIPE_KERNEL_DEBUG=${bad%%:*} "$SP" conform --codec zstd:1 \
		--backends cpu,reference > "$tmp/out" 2>&1
	test $? -eq 1
	ok $? "SHARDPIPE_KERNEL_DEBUG=${bad%%:*}: conform fails"
	grep -q "reference: invalid argument: SHARDPIPE_KERNEL_DEBUG=.*${bad#*:}" \
		"$tmp/out"
	ok $? "SHARDPIPE_KERNEL_DEBUG=${bad%%:*}: the refusal names it"
done
# A 2-d uint16 array in chunks of 64 KiB and 320 KiB (three blocks).
for shape in "0,512:64,512" "0,640:256,640"; do
	dims=${shape%%:*}
	chunk=${shape##*:}
	"$SP" conform --codec zstd:1 --backends cpu,reference --shape "$dims" \
		--chunk "$chunk" --shard 2,1 --dtype uint16 --rows 700 \
		> "$tmp/out" 2>&1
	ok $? "zstd:1 uint16 shape $dims chunk $chunk: reference decodes"
done
# The content checksum: libzstd verifies it on every chunk it decodes.
"$SP" conform --codec zstd:5:checksum --backends cpu,reference \
	> "$tmp/out" 2>&1
ok $? "zstd:5:checksum: reference and cpu stores decode to the input"

# shardpipe write with a kernel backend, shardpipe cat back: a byte stream
# of short runs and copies from up to 60 KB back, 400 rows of 1000 bytes
# in chunks of 150 rows (two zstd blocks each, the last chunk partial).
perl -e 'srand($ARGV[0]); my $s = "";
	while (length($s) < $ARGV[1]) {
		if (rand() < 0.5 && length($s) > 100) {
			my $m = length($s) < 60000 ? length($s) : 60000;
			$s .= substr($s, -(1 + int(rand($m))), 1 + int(rand(200)));
		} else {
			$s .= pack("C", 65 + int(rand(12))) x (1 + int(rand(3)));
		}
	}
	print substr($s, 0, $ARGV[1])' "$seed" 400000 > "$tmp/in"
write_cat() {
	# write_cat BACKEND: 5 tests
	for codec in zstd:1 zstd:5:checksum; do
		rm -rf "$tmp/w.zarr"
		"$SP" write --shape 0,1000 --chunk 150,1000 --shard 2,1 \
			--codec "$codec" --backend "$1" --input "$tmp/in" \
			"$tmp/w.zarr" > "$tmp/out" 2>&1
		ok_shown $? "$1 writes with $codec" "$tmp/out"
		"$SP" cat "$tmp/w.zarr" > "$tmp/back" 2> "$tmp/out" &&
			cmp -s "$tmp/back" "$tmp/in"
		ok $? "$1, $codec: shardpipe cat returns the input"
	done
	grep -q '"checksum": true' "$tmp/w.zarr/zarr.json"
	ok $? "$1, zstd:5:checksum: zarr.json records the checksum"
}
write_cat reference

if backend_usable opencl; then
	write_cat opencl
	for lv in 1 3 9; do
		for ls in 1 64 256; do
			SHARDPIPE_KERNEL_DEBUG=local=$ls "$SP" conform \
				--codec "zstd:$lv" --backends opencl,reference \
				> "$tmp/out" 2>&1
			ok_shown $? "zstd:$lv, opencl local size $ls: conform passes" \
				"$tmp/out"
			grep -q '^opencl ~ reference *identical' "$tmp/out"
			ok $? "zstd:$lv, local $ls: opencl = reference bytes"
		done
	done
	SHARDPIPE_KERNEL_DEBUG=local=7 "$SP" conform \
		--codec zstd:5:checksum --backends opencl,reference \
		> "$tmp/out" 2>&1
	ok_shown $? "zstd:5:checksum, opencl local size 7: conform passes" \
		"$tmp/out"
	grep -q '^opencl ~ reference *identical' "$tmp/out"
	ok $? "zstd:5:checksum, local 7: opencl = reference bytes"
else
	skip 25 "$backend_why"
fi
done_testing
