#!/bin/sh
# cli-group-edges.sh - groups at their edges, as a new user meets them:
# an array named zarr.json or after a file of the user's, verify and cat
# of a path that holds nothing, a group whose child array is damaged, a
# store made inside an array, --overwrite through a link in the chunk
# tree, verify --against a directory, and writers of one new array at
# once.  Each refusal has its exit status (doc/shardpipe.1, EXIT STATUS),
# names what is at fault, and leaves every file as it was.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cligroupedges
test_seed
plan 53

random_bytes 4096 "$tmp/a.raw"
g=$tmp/g.zarr
wa() {
	"$SP" write --shape 0,64 --chunk 8,64 --input "$tmp/a.raw" --quiet "$@"
}

"$SP" group create "$g" && wa --array cam0 "$g"
ok $? "a group with one array"
echo "the user's" > "$g/notes"

watch=$g
# Once an I/O error (exit 1) from opening $g/zarr.json/zarr.json.
refused 2 '--array zarr.json: .*"zarr.json" is the group.s own metadata' \
	"--array zarr.json" -- wa --array zarr.json "$g"
refused 2 '--array zarr.json: .*group.s own metadata' \
	"--array zarr.json --overwrite" -- wa --array zarr.json --overwrite "$g"
# Once an I/O error: "$g/notes/zarr.json: Not a directory".
refused 2 "$g/notes: exists and is not a directory" \
	"--array naming the user's file" -- wa --array notes "$g"
refused 2 "$g/notes: exists and is not a directory" \
	"--array naming the user's file, --overwrite" -- \
	wa --array notes --overwrite "$g"

# A file as the group: once "no zarr.json there" and the advice to make
# a group where none can be.
refused 2 "$g/notes: not a directory, so it is no group" \
	"--array into a file" -- wa --array x "$g/notes"
! grep -q "group create" "$tmp/err"
ok $? "and no advice to make a group there"

# Once the message of the group probe that follows a failed open:
# "no zarr.json there, so it is no group".
refused 1 "verify: $g/none: .*No such file or directory" \
	"verify of a path that holds nothing" -- "$SP" verify "$g/none"
! grep -q "no group" "$tmp/err"
ok $? "and the message is the reader's, not the group probe's"
refused 1 "cat: $g/notes: .*Not a directory" "cat of a file" -- \
	"$SP" cat "$g/notes"

# --against a directory: once exit 3, "ends at byte 0", a mismatch
# where there is no file to compare with.
refused 1 "verify: --against $g: Is a directory" \
	"verify --against a directory" -- "$SP" verify "$g/cam0" --against "$g"

# Names the file system refuses: once "input/output error", exit 1.
long=$(printf '%0256d' 0)
refused 2 "$long/zarr.json: File name too long" \
	"group create of a 256-byte name" -- "$SP" group create "$tmp/$long"
refused 2 "$long: File name too long" "write of a 256-byte name" -- \
	wa "$tmp/$long"
[ -z "$(find "$tmp" -maxdepth 1 -name '0000*')" ]
ok $? "nothing was made"

# A FIFO as zarr.json: once verify, cat and write --array hung in open()
# (t/hostile-store checks verify and cat), and --overwrite removed it.
mkdir "$tmp/fifo" && mkfifo "$tmp/fifo/zarr.json"
refused 2 "$tmp/fifo: zarr.json is not Zarr v3 metadata" \
	"--array into a directory whose zarr.json is a FIFO" -- \
	timeout 60 "$SP" write --shape 0,64 --chunk 8,64 --input "$tmp/a.raw" \
		--array x "$tmp/fifo"
refused 2 "$tmp/fifo/zarr.json: is not a regular file" \
	"--overwrite of a store whose zarr.json is a FIFO" -- \
	timeout 60 "$SP" write --shape 0,64 --chunk 8,64 --input "$tmp/a.raw" \
		--overwrite "$tmp/fifo"
[ -p "$tmp/fifo/zarr.json" ] && [ ! -e "$tmp/fifo/c" ]
ok $? "the FIFO is still there, and nothing beside it"

# Groups are directories only: exit 4 (EXIT STATUS), before any request,
# and no directory "s3:" made.
had=no
[ -e s3: ] && had=yes
"$SP" group create s3://bkt/grp 2> "$tmp/err"
is $? 4 "group create s3://: exit 4"
grep -q "s3://bkt/grp: groups are written to directories only" \
	"$tmp/err" && { [ $had = yes ] || [ ! -e s3: ]; }
ok $? "the message names the URL, nothing was made"

# A store inside an array's directory: once made there, exit 0.
refused 2 "$g/cam0/inner: is inside the Zarr array $g/cam0" \
	"group create inside an array" -- "$SP" group create "$g/cam0/inner"
refused 2 "$g/cam0/x: is inside the Zarr array $g/cam0" \
	"write inside an array" -- wa "$g/cam0/x"
refused 2 "$g/cam0/c: is inside the Zarr array $g/cam0" \
	"write --overwrite of an array's chunk directory" -- \
	wa --overwrite "$g/cam0/c"

# A child array cut short (its zarr.json truncated): once left out of
# the listing, and verify of the group said valid with exit 0.
mkdir "$g/cam1" && head -c 20 "$g/cam0/zarr.json" > "$g/cam1/zarr.json"
"$SP" verify "$g" > "$tmp/out" 2> "$tmp/err"
is $? 1 "verify of a group with a damaged array: exit 1"
grep -q "^shardpipe: verify: $g/cam1: malformed store" "$tmp/err"
ok $? "the message names the damaged array"
grep -q "^$g/cam0: valid, shape 64,64, uint8$" "$tmp/out"
ok $? "the sound array is still verified"
rm -r "$g/cam1"
# An array another writer named outside shardpipe's names: once verified
# beyond the header's count ("group of 1 array(s)", then two lines).
cp -R "$g/cam0" "$g/a b"
"$SP" verify "$g" > "$tmp/out" 2> "$tmp/err"
is $? 0 "verify of a group with an array named \"a b\": exit 0"
is "$(sed -n 1p "$tmp/out")" "$g: Zarr group of 2 array(s)" \
	"the header counts it"
grep -q "^$g/a b: valid, shape 64,64, uint8$" "$tmp/out"
ok $? "and it is verified"
rm -r "$g/a b"
mkdir "$g/sub" && "$SP" group create "$g/sub/inner" &&
	"$SP" group create "$g/child" && "$SP" verify "$g" > /dev/null
ok $? "child groups and the user's directories fail no verify"

# Overwrite through a link in the chunk tree: once it emptied the
# directory the link named (the user's files gone) and wrote the shards
# there.  Now refused before anything goes, the old array whole.
mkdir "$tmp/mine" "$tmp/mine/1" && echo "the user's" > "$tmp/mine/0" &&
	echo "also" > "$tmp/mine/1/2"
mine=$(tree_sum "$tmp/mine")
mv "$g/cam0/c" "$g/cam0/c.real" && ln -s ../../mine "$g/cam0/c"
refused 2 "$g/cam0/c: is a symbolic link, not the store's chunk directory" \
	"--overwrite of an array whose c is a link" -- \
	wa --array cam0 --overwrite "$g"
rm "$g/cam0/c" && mv "$g/cam0/c.real" "$g/cam0/c"
rm -r "$g/cam0/c/1" && ln -s ../../../mine "$g/cam0/c/1"
refused 2 "$g/cam0/c/1: is a symbolic link in the chunk tree" \
	"--overwrite with a link below c" -- wa --overwrite "$g/cam0"
[ "$(tree_sum "$tmp/mine")" = "$mine" ] && [ -f "$g/cam0/zarr.json" ]
ok $? "the linked directory and the old array are as they were"

# Writers of one new array at once, each with its own input: once every
# one exited 0 and the array held a mix of their shards.  Now each
# either wins or is refused (exit 2, nothing of its own written), and the
# array reads back as the winner's input.
base=$seed
for i in 1 2 3 4; do
	seed=$((base + i))
	random_bytes 65536 "$tmp/in$i.raw"
done
seed=$base
for i in 1 2 3 4; do
	( "$SP" write --shape 0,256 --chunk 4,256 --input "$tmp/in$i.raw" \
		--quiet --array same "$g" 2> "$tmp/race$i.err"
	  echo $? > "$tmp/race$i.rc" ) &
done
wait
won=0 winner= other=0
for i in 1 2 3 4; do
	case $(cat "$tmp/race$i.rc") in
	0) won=$((won + 1)) winner=$i ;;
	2) grep -q "$g/same: \(made by another writer\|already holds\)" \
		"$tmp/race$i.err" || other=$((other + 1)) ;;
	*) other=$((other + 1)) ;;
	esac
done
is "$won" 1 "of four writers of one new array, one succeeds"
is "$other" 0 "the others are refused with exit 2, naming the array"
"$SP" cat "$g/same" | cmp -s - "$tmp/in$winner.raw"
ok $? "the array is the winner's input"
"$SP" verify "$g/same" > /dev/null
ok $? "and verifies"
done_testing
