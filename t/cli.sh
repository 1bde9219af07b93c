#!/bin/sh
# cli.sh - the shardpipe program end to end: write from a file and from
# stdin, cat returns the input, verify accepts it and catches a corrupted
# shard, bad command lines exit 2 and leave nothing behind.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cli
test_seed
plan 30

# 3-d uint16, 13 x 50 x 70, not dividing the chunks.
random_bytes $((13 * 50 * 70 * 2)) "$tmp/in.raw"
"$SP" write --shape 13,50,70 --chunk 4,16,32 --shard 2,2,2 --dtype uint16 \
	--codec zstd:3 --names t,y,x --input "$tmp/in.raw" "$tmp/a.zarr"
ok $? "write from a file"
"$SP" cat "$tmp/a.zarr" > "$tmp/out.raw"
ok $? "cat"
cmp -s "$tmp/in.raw" "$tmp/out.raw"
ok $? "cat returns the input bytes"
"$SP" verify "$tmp/a.zarr" --against "$tmp/in.raw" > /dev/null
ok $? "verify --against the input"

# Unbounded dim 0 from stdin, gzip, index at start; 9 rows of 33 x 20 int32.
random_bytes $((9 * 33 * 20 * 4)) "$tmp/u.raw"
"$SP" write --shape 0,33,20 --chunk 2,8,8 --shard 3,2,2 --dtype int32 \
	--codec gzip:6 --index-location start "$tmp/u.zarr" < "$tmp/u.raw"
ok $? "write an unbounded dim 0 from stdin"
grep -q '"shape": \[9, 33, 20\]' "$tmp/u.zarr/zarr.json"
ok $? "zarr.json records the 9 rows written"
"$SP" cat "$tmp/u.zarr" | cmp -s - "$tmp/u.raw"
ok $? "cat returns the unbounded input"

"$SP" write --shape 13,50,70 --chunk 4,16,32 --dtype uint16 \
	--input "$tmp/in.raw" "$tmp/a.zarr" 2> "$tmp/err"
is $? 2 "writing over an existing store exits 2"
grep -q "already holds a store" "$tmp/err"
ok $? "and says why"
"$SP" write --shape 13,50,70 --chunk 4,16,32 --dtype uint16 --overwrite \
	--codec none --input "$tmp/in.raw" "$tmp/a.zarr"
ok $? "--overwrite replaces it"
"$SP" cat "$tmp/a.zarr" | cmp -s - "$tmp/in.raw"
ok $? "the replacement reads back"

"$SP" write --shape 10,0 --chunk 2,2 "$tmp/bad.zarr" < /dev/null 2> "$tmp/err"
is $? 2 "size 0 on dim 1 exits 2"
grep -q "dim 1" "$tmp/err"
ok $? "the message names dim 1"
test ! -e "$tmp/bad.zarr"
ok $? "nothing was created"
"$SP" write --shape 10,10 --chunk 2,2 --codec zstd:99 "$tmp/bad.zarr" \
	< /dev/null 2> /dev/null
is $? 2 "zstd level 99 exits 2"
"$SP" write --shape 10,10 --chunk 2 "$tmp/bad.zarr" < /dev/null 2> /dev/null
is $? 2 "a chunk list of the wrong rank exits 2"

# demo and bench refuse like write: exit 2, nothing created, before any
# frame is generated or streamed.
"$SP" demo --frames 1 --codec zstd:99 "$tmp/d.zarr" > /dev/null 2> "$tmp/err"
is $? 2 "demo with zstd level 99 exits 2"
test ! -e "$tmp/d.zarr"
ok $? "and creates nothing"
"$SP" demo --frames 1 --backend nope "$tmp/d.zarr" > /dev/null 2> "$tmp/err"
is $? 2 "demo with an unknown backend exits 2"
"$SP" bench --shape 4,64,64 --chunk 2,32,32 --shard 1,1,1 --rows 2 \
	--output "$tmp/b.zarr" > /dev/null 2>&1
ok $? "bench writes a real store"
"$SP" bench --shape 4,64,64 --chunk 2,32,32 --shard 1,1,1 --rows 2 \
	--output "$tmp/b.zarr" > /dev/null 2> "$tmp/err"
is $? 2 "bench over an existing store exits 2"
"$SP" verify "$tmp/b.zarr" > /dev/null
ok $? "and leaves it valid"
# Spans of an epoch (3 rows) and of 7 bytes over a pattern of 2 rows: the
# same array as one row per append.
for span in row epoch 7; do
	"$SP" bench --shape 9,10,12 --chunk 3,4,8 --shard 1,2,2 --fill xor \
		--frames 2 --span $span --output "$tmp/span-$span.zarr" \
		> /dev/null 2>&1 && "$SP" cat "$tmp/span-$span.zarr" \
		> "$tmp/span-$span.raw"
	ok $? "bench --span $span writes a store"
done
cmp -s "$tmp/span-row.raw" "$tmp/span-epoch.raw" &&
	cmp -s "$tmp/span-row.raw" "$tmp/span-7.raw"
ok $? "of the same bytes whatever the span"

# Corrupt one byte of a shard's index: verify must name the shard.
shard="$tmp/a.zarr/c/1/1/1"
size=$(wc -c < "$shard")
printf '\377' | dd of="$shard" bs=1 seek=$((size - 3)) conv=notrunc 2> /dev/null
"$SP" verify "$tmp/a.zarr" > /dev/null 2> "$tmp/err"
is $? 1 "verify rejects a corrupted index"
grep -q "c/1/1/1" "$tmp/err"
ok $? "and names the shard: $(cat "$tmp/err")"

"$SP" backends | grep -q "^cpu: "
ok $? "backends lists cpu"
for cmd in write demo verify cat backends; do
	"$SP" $cmd --help > /dev/null || exit 1
done
ok $? "every command answers --help"
done_testing
