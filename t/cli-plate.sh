#!/bin/sh
# cli-plate.sh - shardpipe group create --plate and write --plate-field:
# a plate of 2 x 3 wells, fields written by two processes at once and out
# of order, a pyramid field, each read back by cat equal to its input;
# the plate lists exactly the wells written, row-major; every refusal
# exits with its status, names what is at fault and changes nothing.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cliplate
test_seed
plan 40

p=$tmp/p.zarr
test_sized "cli-plate rows" 12 4
n=$sized
random_bytes $((n * 40 * 36 * 2)) "$tmp/a.raw"
random_bytes $((n * 40 * 36 * 2)) "$tmp/b.raw"
random_bytes $((n * 40 * 36 * 2)) "$tmp/c.raw"
field() {
	f=$1 in=$2
	shift 2
	"$SP" write --plate-field "$f" --shape 0,40,36 --chunk 2,16,16 \
		--names t,y,x --dtype uint16 --input "$in" --quiet "$@" "$p"
}

"$SP" group create --plate 2,3 --field-count 2 --plate-name screen \
	--acquisitions day1,day2 "$p" 2> "$tmp/err"
ok $? "group create --plate 2,3"
grep -q '"rows": \[{"name": "A"}, {"name": "B"}\]' "$p/zarr.json" &&
	grep -q '"columns": \[{"name": "1"}, {"name": "2"}, {"name": "3"}\]' \
		"$p/zarr.json" && grep -q '"wells": \[\]' "$p/zarr.json"
ok $? "rows A, B, columns 1..3, no wells yet"

field B/3/1 "$tmp/a.raw" --acquisition 1 2> "$tmp/err1" &
pid1=$!
field A/1/0 "$tmp/b.raw" --acquisition 0 2> "$tmp/err2" &
pid2=$!
wait $pid1
ok $? "field B/3/1 written, beside another process"
wait $pid2
ok $? "field A/1/0 written at the same time"
field A/2/0 "$tmp/c.raw" --downsample y,x --levels 2 2> "$tmp/err"
ok $? "field A/2/0, a pyramid of 2 levels"
"$SP" cat "$p/B/3/1" | cmp -s - "$tmp/a.raw"
ok $? "cat of B/3/1 gives its input"
"$SP" cat "$p/A/1/0" | cmp -s - "$tmp/b.raw"
ok $? "cat of A/1/0 gives its input"
"$SP" cat "$p/A/2/0" | cmp -s - "$tmp/c.raw"
ok $? "cat of A/2/0 (level 0) gives its input"
"$SP" verify "$p/A/2/0" > /dev/null 2> "$tmp/err"
ok $? "verify of the pyramid field recomputes its level"
"$SP" verify "$p" > "$tmp/out" 2> "$tmp/err"
ok $? "verify of the plate"
sed 's/^/#   /' "$tmp/err"
grep ': valid' "$tmp/out" | sed "s|^$p/||; s|:.*||" | tr '\n' ' ' > "$tmp/got"
is "$(cat "$tmp/got")" "A/1/0 A/2/0 B/3/1 " "verify of the plate checks every field of every well, in order"
tr -d ' \n' < "$p/zarr.json" > "$tmp/flat"
grep -q '"wells":\[{"path":"A/1","rowIndex":0,"columnIndex":0},{"path":"A/2","rowIndex":0,"columnIndex":1},{"path":"B/3","rowIndex":1,"columnIndex":2}\]' "$tmp/flat"
ok $? "the plate lists A/1, A/2 and B/3, row-major, the empty wells not"
tr -d ' \n' < "$p/B/3/zarr.json" | grep -q '"images":\[{"path":"1","acquisition":1}\]'
ok $? "well B/3 lists field 1 of acquisition 1"

watch=$p watch_absent=$p/B/1
refused 2 'row "C" is not one of its 2 rows' "a well outside the plate" -- \
	field C/1/0 "$tmp/a.raw"
refused 2 'column "4" is not one of its 3 columns' \
	"a column outside the plate" -- field A/4/0 "$tmp/a.raw"
refused 2 'field 2 is outside 0..1' "a field beyond --field-count" -- \
	field B/1/2 "$tmp/a.raw"
refused 2 'acquisition 5 is not one of the plate' \
	"an acquisition the plate lacks" -- \
	field B/1/0 "$tmp/a.raw" --acquisition 5
refused 2 'written already' "a field written twice" -- \
	field A/1/0 "$tmp/a.raw"
refused 2 'written already' "a field written twice, with --overwrite" -- \
	field A/1/0 "$tmp/a.raw" --overwrite
refused 2 'expected ROW/COL/F' "--plate-field A/1" -- \
	field A/1 "$tmp/a.raw"
refused 2 'expected ROW/COL/F' "--plate-field A/1/x" -- \
	field A/1/x "$tmp/a.raw"
refused 2 '2 to 5 dims' "a field that is no OME-NGFF image" -- \
	"$SP" write --plate-field B/1/0 --shape 0 --chunk 4 --names t \
	--input "$tmp/a.raw" "$p"

watch=$tmp/w watch_absent=$tmp/q.zarr
mkdir "$tmp/w"
refused 2 'plate: 0 rows' "--plate 0,3" -- \
	"$SP" group create --plate 0,3 "$tmp/q.zarr"
refused 2 'row 1 "A" repeats row 0' "a repeated row" -- \
	"$SP" group create --rows A,A --columns 1 "$tmp/q.zarr"
refused 2 'column 0 "1-1": byte 1' "a column name with '-'" -- \
	"$SP" group create --rows A --columns 1-1 "$tmp/q.zarr"
refused 2 'field_count 0 is outside' "--field-count 0" -- \
	"$SP" group create --plate 1,1 --field-count 0 "$tmp/q.zarr"

# A damaged field is found by verify of the whole plate (a copy: the
# plate above stays as written).
cp -R "$p" "$tmp/d.zarr"
shard=$(find "$tmp/d.zarr/B/3/1/0/c" -type f | sort | head -n 1)
size=$(wc -c < "$shard")
printf 'XXXX' | dd of="$shard" bs=1 seek=$((size - 20)) conv=notrunc 2> /dev/null
"$SP" verify "$tmp/d.zarr" > /dev/null 2> "$tmp/err"
st=$?
[ "$st" -eq 1 ] && grep -q "${shard#"$tmp/d.zarr/B/3/1/0/"}: index checksum mismatch" "$tmp/err"
ok $? "verify of a plate with a damaged field exits 1 (got $st), naming the shard"
sed 's/^/#   /' "$tmp/err"
