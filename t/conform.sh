#!/bin/sh
# conform.sh - shardpipe conform: every usable backend agrees on synthetic
# and file input (L1 decode, L2 byte equality with codec none); zstd runs
# on every backend; bad command lines exit 2; --keep never empties a
# directory of the user's files.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch conform
test_seed
plan 16

"$SP" conform > "$tmp/out" 2> "$tmp/err"
ok $? "conform on synthetic input passes with every usable backend"
grep -q '^cpu ~ reference *identical' "$tmp/out" ||
	grep -q '^reference ~ cpu *identical' "$tmp/out"
ok $? "cpu and reference stores are byte-identical"
sed 's/^/# /' "$tmp/out"

# 2-d uint8 from a file, odd extents, index at start.
random_bytes $((11 * 37)) "$tmp/in.raw"
"$SP" conform --backends cpu,reference --shape 0,37 --chunk 3,8 \
	--shard 2,3 --index-location start --input "$tmp/in.raw" \
	> "$tmp/out" 2>&1
ok $? "conform on file input, index at start"
grep -q '11 rows' "$tmp/out"
ok $? "the rows come from the file"

if backend_usable opencl; then
	"$SP" conform --backends opencl,reference,cpu --shape 0,19,23 \
		--chunk 4,5,7 --shard 2,3,2 --dtype float32 --rows 17 \
		> "$tmp/out" 2>&1
	ok $? "opencl, reference and cpu agree on a 3-d float32 array"
	grep -q '^opencl ~ reference *identical' "$tmp/out"
	ok $? "opencl and reference stores are byte-identical"
else
	skip 2 "$backend_why"
fi

# Chunks all fill value: every backend finds them itself (design §22.2)
# and leaves out the same ones.  17 rows of 19 x 23 uint8, fill 5 in rows
# 8..15 (a whole shard epoch: 4 shards not written) and in chunk (0,0,0).
perl -e 'srand($ARGV[0]); for $r (0..16) { for $y (0..18) { for $x (0..22) {
	print pack("C", ($r >= 8 && $r < 16) || ($r < 4 && $y < 5 && $x < 7)
		? 5 : 1 + int(rand(250))) } } }' "$seed" > "$tmp/fill.raw"
backends=cpu,reference
"$SP" backends | grep '^opencl:' | grep -vq ': unusable' &&
	backends=$backends,opencl
"$SP" conform --backends $backends --shape 0,19,23 --chunk 4,5,7 \
	--shard 2,3,2 --fill-value 5 --input "$tmp/fill.raw" > "$tmp/out" 2>&1
ok $? "$backends agree on a store with chunks of fill value left out"
[ "$(grep -c 'identical (9 files)' "$tmp/out")" -eq \
	"$(grep -c ' ~ ' "$tmp/out")" ]
ok $? "every pair identical, 4 of 12 shards left out on each"
sed 's/^/# /' "$tmp/out"

# zstd has a kernel encoder now (issue 6): no backend is left out.
"$SP" conform --codec zstd:3 > "$tmp/out" 2> "$tmp/err"
ok $? "zstd conform passes with every usable backend"
grep -q 'leaving out' "$tmp/err"
is $? 1 "and leaves none of them out"

"$SP" conform --codec zstd:3 --backends cpu,reference > "$tmp/out" 2>&1
is $? 0 "zstd on reference, asked for, passes"
grep -q 'cpu ~ reference\|reference ~ cpu' "$tmp/out"
ok $? "comparing reference with cpu"

# --keep DIR where DIR/cpu.zarr holds the user's file and no store: that
# run is refused, naming it, and the file survives (it was rm -rf'ed);
# a store of an earlier run is replaced.
mkdir -p "$tmp/keep/cpu.zarr"
echo mine > "$tmp/keep/cpu.zarr/notes.txt"
"$SP" conform --backends cpu,reference --keep "$tmp/keep" > "$tmp/out" 2>&1
st=$?
grep -q "cpu.zarr: directory holds files and no zarr.json" "$tmp/out" &&
	[ "$st" -eq 1 ] && [ "$(cat "$tmp/keep/cpu.zarr/notes.txt")" = mine ]
ok $? "conform --keep leaves a directory of the user's files alone (exit $st)"
"$SP" conform --backends reference --keep "$tmp/keep" > "$tmp/out" 2>&1 &&
	"$SP" conform --backends reference --keep "$tmp/keep" > "$tmp/out" 2>&1
ok $? "and replaces a store of an earlier run"

"$SP" conform --backends cpu,nosuch > /dev/null 2>&1
is $? 2 "an unknown backend exits 2"
printf 'abc' > "$tmp/short.raw"
"$SP" conform --backends cpu --shape 0,4 --chunk 2,2 \
	--input "$tmp/short.raw" > /dev/null 2>&1
is $? 2 "input of partial rows exits 2"
done_testing
