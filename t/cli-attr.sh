#!/bin/sh
# cli-attr.sh - shardpipe write --attr KEY=JSON: the attributes land in
# zarr.json as given (a later KEY replacing an earlier one, odd keys
# escaped), the store reads back, and every bad --attr exits 2 naming it
# with nothing created.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cliattr
test_seed
plan 25

random_bytes $((6 * 10 * 2)) "$tmp/in.raw"
w() {
	"$SP" write --shape 0,10 --chunk 2,5 --shard-shape 4,10 \
		--dtype uint16 --input "$tmp/in.raw" --quiet "$@"
}

w --attr 'name="first"' --attr 'roi={"x": [0, 10]}' --attr 'n=1e3' \
	--attr 'q"k=null' --attr 'name="second"' "$tmp/a.zarr" 2> "$tmp/err"
ok $? "write with --attr"
grep -q '^    "name": "second",$' "$tmp/a.zarr/zarr.json"
ok $? "a later --attr of the same key replaces it, in its place"
grep -q 'first' "$tmp/a.zarr/zarr.json"
is $? 1 "the replaced value is gone"
grep -q '^    "roi": {"x": \[0, 10\]},$' "$tmp/a.zarr/zarr.json"
ok $? "an object is written as given"
grep -q '^    "n": 1e3,$' "$tmp/a.zarr/zarr.json"
ok $? "a number keeps its text"
grep -q '^    "q\\"k": null$' "$tmp/a.zarr/zarr.json"
ok $? "a quote in the key is escaped"
"$SP" cat "$tmp/a.zarr" | cmp -s - "$tmp/in.raw"
ok $? "the store with attributes reads back"

# refused ARG WORD DESCRIPTION: exit 2, nothing created, WORD in the message.
refused() {
	rm -rf "$tmp/b.zarr"
	w --attr "$1" "$tmp/b.zarr" 2> "$tmp/err"
	is $? 2 "$3: exit 2"
	if [ ! -e "$tmp/b.zarr" ] && grep -q -- "$2" "$tmp/err"; then
		ok 0 "$3: nothing created, the message names it"
	else
		ok 1 "$3: nothing created, the message names it"
		diag "$(cat "$tmp/err")"
	fi
}
refused 'bad=[1,' 'attribute "bad": not one JSON value' "JSON cut short"
refused 'ome={}' 'reserved' "the key ome"
refused 'noequals' 'expected KEY=JSON' "no ="
refused '=1' 'needs a key' "an empty key"
rm -rf "$tmp/b.zarr"
w "$tmp/b.zarr" --attr 2> "$tmp/err"
is $? 2 "--attr last, without its argument: exit 2"
[ ! -e "$tmp/b.zarr" ] && grep -q -- '--attr needs a value' "$tmp/err"
ok $? "nothing created, the message says what --attr needs"
refused 'k=NaN' 'attribute "k"' "NaN"
refused "k=$(perl -e 'print "[" x 33, "]" x 33')" 'attribute "k"' \
	"a value nested 33 deep"

# Past 1 MiB together, though each argument is below the kernel's limit
# of 128 KiB: refused at open, before anything is written.
big=$(perl -e 'print "\"", "a" x 120000, "\""')
rm -rf "$tmp/c.zarr"
w --attr "a=$big" --attr "b=$big" --attr "c=$big" --attr "d=$big" \
	--attr "e=$big" --attr "f=$big" --attr "g=$big" --attr "h=$big" \
	--attr "i=$big" "$tmp/c.zarr" 2> "$tmp/err"
is $? 2 "attributes past 1 MiB together: exit 2"
[ ! -e "$tmp/c.zarr" ] && grep -q 'attribute "i"' "$tmp/err"
ok $? "nothing created, the message names the one that passed the bound"
w --attr "a=$big" --attr "b=$big" --attr "c=$big" "$tmp/c.zarr"
ok $? "three of them fit"
"$SP" verify "$tmp/c.zarr" > /dev/null
ok $? "and the store verifies"

done_testing
