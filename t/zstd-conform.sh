#!/bin/sh
# zstd-conform.sh - shardpipe conform with codec zstd through the kernel
# driver: at levels 1, 3 and 9 the reference backend's stores decode to the
# input, as the cpu backend's do (L1, every chunk through libzstd), and
# with the content checksum at level 5; where opencl is usable, its stores
# at three local sizes (a fourth with the checksum) are byte-identical to
# reference's (L2), else a skip with the reason.
. "${top_srcdir:-.}/t/lib.sh"
SP=${SHARDPIPE:-./shardpipe}
[ -x "$SP" ] || skip_all "shardpipe program not built"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-zstd-conform-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
test_seed
plan 26

for lv in 1 3 9; do
	"$SP" conform --codec "zstd:$lv" --backends cpu,reference \
		> "$tmp/out" 2>&1
	ok $? "zstd:$lv: reference and cpu stores decode to the input"
	sed 's/^/# /' "$tmp/out"
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

if "$SP" backends | grep '^opencl:' | grep -vq ': unusable'; then
	for lv in 1 3 9; do
		for ls in 1 64 256; do
			SHARDPIPE_KERNEL_LOCAL_SIZE=$ls "$SP" conform \
				--codec "zstd:$lv" --backends opencl,reference \
				> "$tmp/out" 2>&1
			ok $? "zstd:$lv, opencl local size $ls: conform passes"
			grep -q '^opencl ~ reference *identical' "$tmp/out"
			ok $? "zstd:$lv, local $ls: opencl = reference bytes"
		done
	done
	SHARDPIPE_KERNEL_LOCAL_SIZE=7 "$SP" conform \
		--codec zstd:5:checksum --backends opencl,reference \
		> "$tmp/out" 2>&1
	ok $? "zstd:5:checksum, opencl local size 7: conform passes"
	grep -q '^opencl ~ reference *identical' "$tmp/out"
	ok $? "zstd:5:checksum, local 7: opencl = reference bytes"
else
	why=$("$SP" backends | grep '^opencl:' || echo "opencl: not built")
	for i in $(seq 1 20); do
		echo "ok $((tap_n + i)) # SKIP $why"
	done
fi
done_testing
