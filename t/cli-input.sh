#!/bin/sh
# cli-input.sh - write tells the truth about what it wrote: input that is
# not whole rows, or does not fill or overflows a bounded shape, exits 2
# with the exact byte counts and creates nothing when the input is a regular
# file; the summary line describes the store; shard options in elements and
# chunks; warnings; typos named with the closest word; demo's overwrite rule.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cliinput
test_seed
plan 86

# has FILE TEXT: FILE contains TEXT (fixed string).
has() { grep -q -F -e "$2" "$1"; }
# stored DIR: the bytes of every file of a store, counted by the shell.
stored() { find "$1" -type f -exec cat {} + | wc -c | tr -d ' '; }

# 9 rows (frames) of 24 x 20 uint16.
row=$((24 * 20 * 2))
size=$((9 * row))
random_bytes $size "$tmp/f.raw"
W="$SP write --chunk 4,8,10"

# Wrong dtype and wrong width from a regular file: refused up front.
$W --shape 0,24,20 --dtype uint32 --input "$tmp/f.raw" "$tmp/a.zarr" \
	2> "$tmp/err"
is $? 2 "uint32 over uint16 rows exits 2"
has "$tmp/err" "holds $size bytes" && has "$tmp/err" "$((row * 2)) bytes" &&
	has "$tmp/err" uint32
ok $? "and names the file size, the row size and the dtype"
test ! -e "$tmp/a.zarr"
ok $? "and creates nothing"
$W --shape 0,24,19 --dtype uint16 --input "$tmp/f.raw" "$tmp/a.zarr" \
	2> "$tmp/err"
is $? 2 "a wrong width exits 2"
has "$tmp/err" "$((24 * 19 * 2)) bytes" &&
	has "$tmp/err" "$((size % (24 * 19 * 2))) bytes over"
ok $? "and says how many bytes are over the whole rows"
test ! -e "$tmp/a.zarr"
ok $? "and creates nothing"

# A bounded shape the file does not fill, or overflows: refused up front.
$W --shape 12,24,20 --dtype uint16 --input "$tmp/f.raw" "$tmp/a.zarr" \
	2> "$tmp/err"
is $? 2 "a file shorter than a bounded shape exits 2"
has "$tmp/err" "$((3 * row)) fewer" && has "$tmp/err" --allow-short
ok $? "and says by how much, and the way to accept it"
test ! -e "$tmp/a.zarr"
ok $? "and creates nothing"
$W --shape 6,24,20 --dtype uint16 --input "$tmp/f.raw" "$tmp/a.zarr" \
	2> "$tmp/err"
is $? 2 "a file longer than a bounded shape exits 2"
has "$tmp/err" "$((3 * row)) more" && has "$tmp/err" "--shape 0,24,20"
ok $? "and says by how much, and suggests streaming"
test ! -e "$tmp/a.zarr"
ok $? "and creates nothing"

# The same from stdin: known only at the end, the store says what it is.
$W --shape 12,24,20 --dtype uint16 "$tmp/s.zarr" < "$tmp/f.raw" 2> "$tmp/err"
is $? 2 "stdin shorter than a bounded shape exits 2"
has "$tmp/err" "after $size of the $((12 * row)) bytes"
ok $? "and says how much came"
"$SP" verify "$tmp/s.zarr" > /dev/null
ok $? "the store written stays valid"
"$SP" cat "$tmp/s.zarr" > "$tmp/out"
[ "$(wc -c < "$tmp/out")" -eq $((12 * row)) ]
ok $? "and keeps its 12 rows"
head -c $size "$tmp/out" | cmp -s - "$tmp/f.raw"
ok $? "the input rows read back"
[ "$(tail -c $((3 * row)) "$tmp/out" | tr -d '\000' | wc -c)" -eq 0 ]
ok $? "the missing rows are the fill value"
$W --shape 12,24,20 --dtype uint16 --allow-short --input "$tmp/f.raw" \
	"$tmp/as.zarr" 2> "$tmp/err"
ok $? "--allow-short accepts a short file"
"$SP" cat "$tmp/as.zarr" | cmp -s - "$tmp/out"
ok $? "and writes the same array"

$W --shape 6,24,20 --dtype uint16 "$tmp/o.zarr" < "$tmp/f.raw" 2> "$tmp/err"
is $? 2 "stdin longer than a bounded shape exits 2"
has "$tmp/err" "$((3 * row)) bytes more than the $((6 * row)) bytes"
ok $? "and counts exactly the bytes left: $(head -1 "$tmp/err")"
has "$tmp/err" "--shape 0,24,20"
ok $? "and suggests --shape 0,24,20"
head -c $((6 * row)) "$tmp/f.raw" > "$tmp/head6"
"$SP" cat "$tmp/o.zarr" | cmp -s - "$tmp/head6"
ok $? "the store holds the first 6 rows"
# Only the frame shape declared for a stream of frames.
$SP write --chunk 8,10 --shape 24,20 --dtype uint16 "$tmp/fr.zarr" \
	< "$tmp/f.raw" 2> "$tmp/err"
is $? 2 "a frame shape for a stream of frames exits 2"
has "$tmp/err" "$((8 * row)) bytes more" && has "$tmp/err" "--shape 0,24,20"
ok $? "and suggests --shape 0,24,20"

# Input ending mid-row: the whole rows, nothing invented.
part=$((row / 2 + 7))
head -c $((3 * row + part)) "$tmp/f.raw" > "$tmp/p.raw"
$W --shape 0,24,20 --dtype uint16 "$tmp/p.zarr" < "$tmp/p.raw" 2> "$tmp/err"
is $? 2 "stdin ending inside a row exits 2"
has "$tmp/err" "$part bytes into a row of $row bytes"
ok $? "and says where"
head -c $((3 * row)) "$tmp/f.raw" > "$tmp/p3.raw"
"$SP" cat "$tmp/p.zarr" | cmp -s - "$tmp/p3.raw"
ok $? "the 3 whole rows are written, the partial one is not"
$W --shape 0,24,20 --dtype uint16 --input "$tmp/p.raw" "$tmp/p2.zarr" \
	2> "$tmp/err"
is $? 2 "a file ending inside a row exits 2"
test ! -e "$tmp/p2.zarr"
ok $? "and creates nothing"
$W --shape 0,24,20 --dtype uint16 --pad-partial "$tmp/pp.zarr" \
	< "$tmp/p.raw" 2> /dev/null
ok $? "--pad-partial accepts it"
"$SP" cat "$tmp/pp.zarr" > "$tmp/out"
[ "$(wc -c < "$tmp/out")" -eq $((4 * row)) ] &&
	head -c $((3 * row + part)) "$tmp/out" | cmp -s - "$tmp/p.raw" &&
	[ "$(tail -c $((row - part)) "$tmp/out" | tr -d '\000' | wc -c)" -eq 0 ]
ok $? "and fills the rest of the row with the fill value"
$W --shape 0,24,20 --dtype uint16 --pad-partial --input "$tmp/p.raw" \
	"$tmp/pf.zarr" 2> /dev/null
ok $? "--pad-partial accepts a file ending inside a row"
"$SP" cat "$tmp/pf.zarr" | cmp -s - "$tmp/out"
ok $? "and writes the same array"
# Ending inside an element too ($part is odd), with a fill value whose
# bytes differ: the element is completed with the fill's second byte,
# whole fill elements follow.
{
	cat "$tmp/p.raw"
	printf '\001'
	i=0
	while [ $i -lt $(((row - part - 1) / 2)) ]; do
		printf '\002\001'
		i=$((i + 1))
	done
} > "$tmp/pv.want"
for be in cpu reference; do
	$W --shape 0,24,20 --dtype uint16 --pad-partial \
		--fill-value 258 --backend $be --input "$tmp/p.raw" \
		"$tmp/pv-$be.zarr" 2> /dev/null
	ok $? "--pad-partial --fill-value 258 ($be): accepted"
	"$SP" cat "$tmp/pv-$be.zarr" | cmp -s - "$tmp/pv.want"
	ok $? "and the byte after the input is the fill's second, in phase"
done

# The summary line, and --quiet.
$W --shape 0,24,20 --dtype uint16 --shard-shape 8,16,20 --codec zstd:3 \
	--input "$tmp/f.raw" "$tmp/sum.zarr" 2> "$tmp/err"
ok $? "write from a whole file"
is "$(wc -l < "$tmp/err" | tr -d ' ')" 1 "prints one line"
has "$tmp/err" "shape 9,24,20 uint16, chunks 4,8,10, shards 8,16,20, zstd:3"
ok $? "with the shape written, dtype, chunks, shards and codec"
has "$tmp/err" "$size bytes in, $(stored "$tmp/sum.zarr") stored"
ok $? "and the bytes in and stored"
has "$tmp/err" "ratio " && has "$tmp/err" " s"
ok $? "and the ratio and time"
$W --shape 0,24,20 --dtype uint16 --quiet --input "$tmp/f.raw" \
	"$tmp/q.zarr" 2> "$tmp/err"
ok $? "--quiet writes"
test ! -s "$tmp/err"
ok $? "and prints nothing"

# Shards in elements and in chunks: the same store.
$W --shape 0,24,20 --dtype uint16 --chunks-per-shard 2,2,2 --codec zstd:3 \
	--input "$tmp/f.raw" "$tmp/cps.zarr" 2> /dev/null
ok $? "--chunks-per-shard writes"
diff -r "$tmp/sum.zarr" "$tmp/cps.zarr" > /dev/null
ok $? "the same store as --shard-shape in elements"
$W --shape 0,24,20 --dtype uint16 --shard-shape 8,12,20 \
	--input "$tmp/f.raw" "$tmp/b.zarr" 2> "$tmp/err"
is $? 2 "a shard shape not a multiple of the chunk exits 2"
has "$tmp/err" "12 on dim 1" && has "$tmp/err" "chunk 8"
ok $? "and names the dim and the chunk"
test ! -e "$tmp/b.zarr"
ok $? "and creates nothing"
$W --shape 0,24,20 --shard-shape 8,16,20 --shard 2,2,2 "$tmp/b.zarr" \
	< /dev/null 2> /dev/null
is $? 2 "two shard options exit 2"
# zarr-python's shards= given to --shard.
$SP write --shape 0,2048,2048 --chunk 4,256,256 --shard 32,1024,1024 \
	--dtype uint16 "$tmp/b.zarr" < /dev/null 2> "$tmp/err"
is $? 2 "--shard with a shard shape in elements exits 2"
has "$tmp/err" "counts chunks per shard" &&
	has "$tmp/err" "--shard-shape 32,1024,1024"
ok $? "and says what it meant and what to use"
test ! -e "$tmp/b.zarr"
ok $? "and creates nothing"
$SP write --shape 0,2048,2048 --chunk 4,256,256 --shard 8,4,4 \
	--dtype uint16 --quiet "$tmp/b.zarr" < /dev/null
ok $? "--shard with chunk counts still writes"

# Warnings.
$SP write --shape 4,8,8 --chunk 1,1,1 --chunks-per-shard 4,8,8 \
	--allow-short "$tmp/w.zarr" < /dev/null 2> "$tmp/err"
ok $? "a shard mostly index writes"
has "$tmp/err" "warning: each shard index ($((16 * 256 + 4)) bytes"
ok $? "and warns that the index is larger than its data"
$SP write --shape 0,32768,32768 --chunk 1,1024,1024 --dtype uint32 \
	--shard-shape 1,32768,32768 "$tmp/w2.zarr" < /dev/null 2> "$tmp/err"
ok $? "a 4 GiB shard writes"
has "$tmp/err" "warning: one shard spans 4.0 GiB"
ok $? "and warns that it exceeds 2 GiB"
# A description the library refuses gets its refusal alone: a warning
# about its shards (sized from the overflowing shape) would mislead.
printf ab | $SP write --shape 4294967296,4294967296,16 --chunk 1,1,16 \
	--shard 65536,65536,1 --dtype uint8 --input - "$tmp/w3.zarr" \
	2> "$tmp/err"
is $? 2 "a shape whose bytes overflow 64 bits is refused, exit 2"
has "$tmp/err" "bytes in the array overflows 64 bits" &&
	! grep -q warning "$tmp/err" && [ ! -e "$tmp/w3.zarr" ]
ok $? "with the overflow named, no warning before it, nothing written"

# Typos: the bad field and the closest word.
for c in "blosc:zstd:1:shufle|shuffle \"shufle\"|\"shuffle\"" \
	"ztsd:1|codec \"ztsd\"|\"zstd\"" \
	"zstd=3|separated by ':'|\"zstd:3\"" \
	"blosc:lz5|compressor \"lz5\"|\"lz4\"" \
	"zstd:1:chksum|flag \"chksum\"|\"checksum\"" \
	"bolsc:zstd:1|codec \"bolsc\"|\"blosc\""; do
	codec=${c%%|*}
	rest=${c#*|}
	$W --shape 0,24,20 --codec "$codec" "$tmp/t.zarr" < /dev/null \
		2> "$tmp/err"
	is $? 2 "--codec $codec exits 2"
	has "$tmp/err" "${rest%%|*}" && has "$tmp/err" "${rest#*|}"
	ok $? "and names the field and the closest word: $(cat "$tmp/err")"
done
test ! -e "$tmp/t.zarr"
ok $? "no codec typo created a store"
$W --shpe 0,24,20 "$tmp/t.zarr" < /dev/null 2> "$tmp/err"
is $? 2 "an option typo exits 2"
has "$tmp/err" "did you mean --shape?"
ok $? "and names the closest option"
$W --shape 0,24,20 --pad-partal "$tmp/t.zarr" < /dev/null 2> "$tmp/err"
has "$tmp/err" "did you mean --pad-partial?"
ok $? "--pad-partal: did you mean --pad-partial?"
# Two letters swapped are one typo: "medain" is median's, not mean's,
# though both are two single-letter edits away.
$W --shape 0,24,20 --downsample 1,2 --method medain "$tmp/t.zarr" \
	< /dev/null 2> "$tmp/err"
is $? 2 "--method medain exits 2"
has "$tmp/err" "did you mean median?" && test ! -e "$tmp/t.zarr"
ok $? "and names median, creating nothing: $(cat "$tmp/err")"

# demo follows write's overwrite rule.
cksum "$tmp/sum.zarr/zarr.json" > "$tmp/before"
"$SP" demo --frames 1 "$tmp/sum.zarr" > /dev/null 2> "$tmp/err"
is $? 2 "demo over an existing store exits 2"
cksum "$tmp/sum.zarr/zarr.json" | cmp -s - "$tmp/before" &&
	diff -r "$tmp/sum.zarr" "$tmp/cps.zarr" > /dev/null
ok $? "and leaves it untouched"
"$SP" demo --frames 1 --overwrite "$tmp/sum.zarr" > /dev/null 2>&1
ok $? "demo --overwrite replaces it"
# A directory that holds the user's files and no store is refused, with
# or without --overwrite, and nothing in it changes.
mkdir "$tmp/notes" && echo mine > "$tmp/notes/notes.txt"
printf '0123456789abcdef' |
	"$SP" write --shape 16 --chunk 4 --chunks-per-shard 2 "$tmp/notes" 2> "$tmp/err"
is $? 2 "write into a directory holding files and no zarr.json exits 2"
has "$tmp/err" "$tmp/notes"
ok $? "and names the directory"
[ "$(ls -A "$tmp/notes")" = notes.txt ] &&
	[ "$(cat "$tmp/notes/notes.txt")" = mine ]
ok $? "and leaves only the user's file, unchanged"
done_testing
