#!/bin/sh
# cli-group.sh - shardpipe group create and write --array NAME: a group
# with two arrays, each read back by cat and verify; verify of the group
# lists them; every refusal exits with its status, names the flag or path
# at fault, and leaves every file as it was; --overwrite of one array
# leaves the other and the user's files alone.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cligroup
test_seed
plan 42

random_bytes 8192 "$tmp/all.raw"
head -c 3840 "$tmp/all.raw" > "$tmp/a.raw"     # 30 rows of 64 uint16
tail -c 4352 "$tmp/all.raw" > "$tmp/b.raw"     # 68 rows of 64 uint8
g=$tmp/g.zarr
wa() {
	"$SP" write --shape 0,64 --chunk 4,16 --shard-shape 8,32 \
		--dtype uint16 --input "$tmp/a.raw" --quiet "$@"
}
wb() {
	"$SP" write --shape 0,64 --chunk 8,32 --codec gzip:3 \
		--input "$tmp/b.raw" --quiet "$@"
}

"$SP" group create "$g" 2> "$tmp/err"
ok $? "group create"
grep -q '"node_type": "group"' "$g/zarr.json"
ok $? "its zarr.json declares a group"
wa --array cam0 "$g" 2> "$tmp/err"
ok $? "write --array cam0"
wb --array cam1 "$g" 2> "$tmp/err"
ok $? "write --array cam1"
"$SP" cat "$g/cam0" | cmp -s - "$tmp/a.raw"
ok $? "cat STORE/cam0 gives its input"
"$SP" cat "$g/cam1" | cmp -s - "$tmp/b.raw"
ok $? "cat STORE/cam1 gives its input"
"$SP" verify "$g/cam1" --against "$tmp/b.raw" > /dev/null
ok $? "verify STORE/cam1 --against its input"
"$SP" verify "$g" > "$tmp/out" 2> "$tmp/err"
ok $? "verify of the group exits 0"
is "$(sed -n 1p "$tmp/out")" "$g: Zarr group of 2 array(s)" \
	"verify says it is a group of two arrays"
grep -q "^$g/cam0: valid, shape 30,64, uint16$" "$tmp/out" &&
	grep -q "^$g/cam1: valid, shape 68,64, uint8$" "$tmp/out"
ok $? "and verifies each, with its shape"

watch=$g watch_absent=$tmp/none.zarr
refused 2 '--array ..: invalid dimension or array name' "--array .." -- \
	wa --array .. "$g"
refused 2 "--array a/b: .*byte 1 (0x2f)" "--array a/b" -- \
	wa --array a/b "$g"
refused 2 '--array .hidden: .*starts with' "--array .hidden" -- \
	wa --array .hidden "$g"
refused 2 '--array : .*array name is empty' "an empty --array" -- \
	wa --array "" "$g"
refused 2 '__x.*Zarr reserves' "--array __x" -- wa --array __x "$g"
refused 2 "cam0: already holds a store" \
	"an existing array without --overwrite" -- wa --array cam0 "$g"
refused 2 "$g/cam0: zarr.json is an array, not a Zarr v3 group" \
	"--array into an array" -- wa --array x "$g/cam0"
refused 2 "group create $tmp/none.zarr" "--array into no group" -- \
	wa --array x "$tmp/none.zarr"
refused 2 "$g: is a Zarr group, not an array" \
	"--overwrite of the group itself" -- wa --overwrite "$g"
refused 2 "$g: already holds a group" "group create over a group" -- \
	"$SP" group create "$g"
refused 2 "is a Zarr group of 2 array(s)" "cat of the group" -- \
	"$SP" cat "$g"
refused 2 "--against compares one array" "verify --against of a group" \
	-- "$SP" verify "$g" --against "$tmp/a.raw"

mkdir "$g/sub" && "$SP" group create "$g/sub/inner" 2> "$tmp/err"
ok $? "a group inside a directory of the group"
mkdir "$g/mine" && echo "the user's" > "$g/mine/notes.txt"
refused 2 "holds files and no zarr.json" \
	"--overwrite of a directory of the user's files" -- \
	wa --array mine --overwrite "$g"
echo "notes" > "$g/README.txt"
sum1=$(tree_sum "$g/cam1")
wb --array cam0 --overwrite "$g" 2> "$tmp/err"
ok $? "--overwrite of array cam0 with other data"
"$SP" cat "$g/cam0" | cmp -s - "$tmp/b.raw"
ok $? "cam0 reads back its new input"
[ "$(tree_sum "$g/cam1")" = "$sum1" ] &&
	[ "$(cat "$g/README.txt")" = notes ] &&
	[ "$(cat "$g/mine/notes.txt")" = "the user's" ]
ok $? "cam1 and the user's files are untouched"
"$SP" verify "$g" > "$tmp/out" 2> "$tmp/err"
ok $? "verify of the group after the overwrite"
is "$(sed -n 1p "$tmp/out")" "$g: Zarr group of 2 array(s)" \
	"it still holds two arrays (the user's directory is not one)"
done_testing
