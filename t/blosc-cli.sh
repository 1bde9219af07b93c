#!/bin/sh
# blosc-cli.sh - `--codec blosc[:CNAME[:LEVEL[:SHUFFLE[:BLOCKSIZE]]]]`
# end to end: write with each shuffle mode and compressor, zarr.json says
# what was asked, cat and verify --against return the input; the defaults
# of a bare "blosc"; malformed values exit 2 naming the field at fault,
# out-of-range ones exit 2 with the library's message; the kernel
# backends write blosc with zstd (opencl's files equal reference's) and
# refuse the other compressors as an unavailable codec.  Nothing is left behind by
# a refused write.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch blosc-cli

if ! "$SP" write --shape 4 --chunk 2 --codec blosc "$tmp/probe.zarr" \
	< /dev/null 2> "$tmp/err"; then
	grep -q "without c-blosc" "$tmp/err" &&
		skip_all "shardpipe was built without c-blosc"
fi
test_seed
plan 39

# 9 frames of 40 x 56 uint16: a ramp with noise in the low bits.
perl -e 'srand($ARGV[0]); my $s = "";
	 for my $t (0..8) { for my $y (0..39) { for my $x (0..55) {
		$s .= pack("v", ($t * 7 + $y * 3 + $x) * 11 + int(rand(16))) } } }
	 print $s' "$seed" > "$tmp/in.raw"
geo="--shape 9,40,56 --chunk 4,16,16 --shard 2,2,2 --dtype uint16"

n=0
for codec in blosc:zstd:1:shuffle blosc:lz4:5:bitshuffle \
	blosc:zstd:3:noshuffle:1024 blosc:blosclz:9:shuffle:4096; do
	n=$((n + 1))
	"$SP" write $geo --codec $codec --input "$tmp/in.raw" "$tmp/$n.zarr"
	ok $? "write --codec $codec"
	cname=$(echo $codec | cut -d: -f2)
	level=$(echo $codec | cut -d: -f3)
	shuffle=$(echo $codec | cut -d: -f4)
	block=$(echo $codec | cut -d: -f5)
	grep -q "\"name\": \"blosc\", \"configuration\": {\"cname\": \"$cname\", \"clevel\": $level, \"shuffle\": \"$shuffle\", \"typesize\": 2, \"blocksize\": ${block:-0}}" \
		"$tmp/$n.zarr/zarr.json"
	ok $? "  zarr.json records $codec"
	"$SP" cat "$tmp/$n.zarr" | cmp -s - "$tmp/in.raw"
	ok $? "  cat returns the input"
	"$SP" verify "$tmp/$n.zarr" --against "$tmp/in.raw" > /dev/null
	ok $? "  verify --against the input"
done

# A bare "blosc": zstd, level 1, byte shuffle, automatic blocks.  int64
# from stdin, unbounded.
perl -e 'srand($ARGV[0]); print pack("q<*", map { int(rand(1000)) } 1..(7*30))' \
	"$seed" > "$tmp/q.raw"
"$SP" write --shape 0,30 --chunk 3,8 --shard 2,2 --dtype int64 \
	--codec blosc "$tmp/q.zarr" < "$tmp/q.raw"
ok $? "write --codec blosc (defaults) from stdin"
grep -q '"cname": "zstd", "clevel": 1, "shuffle": "shuffle", "typesize": 8, "blocksize": 0' \
	"$tmp/q.zarr/zarr.json"
ok $? "  defaults zstd, level 1, shuffle, typesize 8, automatic blocks"
"$SP" cat "$tmp/q.zarr" | cmp -s - "$tmp/q.raw"
ok $? "  cat returns the input"

# Malformed values: exit 2, the value and its bad field in the message.
for bad in blosc:snappy blosc:zstd:x blosc:zstd:1:byteshuffle blosc::1 \
	blosc:zstd:1:shuffle:0:9 blosc:zstd:1:shuffle:-5 bloscx; do
	"$SP" write --shape 4 --chunk 2 --codec "$bad" "$tmp/bad.zarr" \
		< /dev/null 2> "$tmp/err"
	rc=$?
	grep -q -F -e "--codec: \"$bad\": " "$tmp/err" &&
		grep -q -e 'unknown' -e 'not a whole number' -e 'more than 5' \
		"$tmp/err" && [ "$rc" -eq 2 ] && test ! -e "$tmp/bad.zarr"
	ok $? "--codec $bad exits 2 naming the bad field ($(head -c 90 "$tmp/err")...)"
done

# In range for the parser, not for the library.
"$SP" write --shape 4 --chunk 2 --codec blosc:zstd:12 "$tmp/bad.zarr" \
	< /dev/null 2> "$tmp/err"
is $? 2 "--codec blosc:zstd:12 exits 2"
grep -q "blosc level 12 is outside 0..9" "$tmp/err"
ok $? "  saying the level is outside 0..9"
"$SP" write --shape 4 --chunk 2 --codec blosc:zstd:1:shuffle:64 \
	"$tmp/bad.zarr" < /dev/null 2> "$tmp/err"
rc=$?
grep -q "block size 64" "$tmp/err" && [ "$rc" -eq 2 ]
ok $? "--codec blosc:zstd:1:shuffle:64 exits 2 naming the block size"
# The kernel backends encode blosc with zstd (backends/kernels/
# blosc_encode.h): stores that cat and verify return, and opencl's files
# equal reference's byte for byte.  Other compressors are the cpu
# backend's only: refused as an unavailable codec, nothing written.
for codec in blosc:zstd:1:shuffle blosc:zstd:3:bitshuffle:4096 \
	blosc:zstd:5:noshuffle:1000; do
	SHARDPIPE_BACKEND=reference "$SP" write $geo --codec $codec \
		--input "$tmp/in.raw" --overwrite "$tmp/ref.zarr"
	ok $? "reference: write --codec $codec"
	"$SP" cat "$tmp/ref.zarr" | cmp -s - "$tmp/in.raw" &&
		"$SP" verify "$tmp/ref.zarr" --against "$tmp/in.raw" > /dev/null
	ok $? "  reference: cat and verify return the input"
	if backend_usable opencl; then
		SHARDPIPE_BACKEND=opencl "$SP" write $geo --codec $codec \
			--input "$tmp/in.raw" --overwrite "$tmp/ocl.zarr" &&
			diff -r "$tmp/ref.zarr" "$tmp/ocl.zarr" > /dev/null
		ok $? "  opencl: the same files as reference"
	else
		skip 1 "$backend_why"
	fi
done
SHARDPIPE_BACKEND=reference "$SP" write --shape 4 --chunk 2 \
	--codec blosc:lz4:1 "$tmp/bad.zarr" < /dev/null 2> "$tmp/err"
rc=$?
grep -q "unavailable codec" "$tmp/err" && grep -q "zstd only" "$tmp/err" &&
	[ "$rc" -eq 2 ] && test ! -e "$tmp/bad.zarr"
ok $? "the reference backend refuses blosc:lz4: $(cat "$tmp/err")"
done_testing
