#!/bin/sh
# cli-pyramid.sh - shardpipe write's pyramid options as a user meets them:
# the OME-NGFF layout they write, verify and cat on the group and on one
# level, overwrite between a single array and a group (the user's files
# left alone), and every refusal: exit 2, nothing created, the message
# naming the option and its value.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch clipyramid
test_seed
plan 99

random_bytes $((9 * 21 * 14)) "$tmp/in.raw"
# The dims' names: a refusal below names them otherwise (no option
# repeats).
names=t,y,x
w() {
	"$SP" write --shape 9,21,14 --chunk 4,8,8 --names "$names" \
		--input "$tmp/in.raw" --quiet "$@"
}

w --downsample y,x --method max --units y=micrometer,x=micrometer \
	--scale y=0.25,x=0.25 "$tmp/p.zarr"
ok $? "write --downsample y,x --method max"
for f in zarr.json 0/zarr.json 1/zarr.json 2/zarr.json; do
	[ -f "$tmp/p.zarr/$f" ]
	ok $? "the image has $f"
done
[ ! -e "$tmp/p.zarr/3" ] && [ ! -e "$tmp/p.zarr/c" ]
ok $? "three levels (y and x fit a chunk at level 2), no array at the top"
grep -q '"node_type": "group"' "$tmp/p.zarr/zarr.json" &&
	grep -q '"type": "max"' "$tmp/p.zarr/zarr.json" &&
	grep -q '"version": "0.5"' "$tmp/p.zarr/zarr.json"
ok $? "the group's zarr.json is OME-NGFF 0.5, type max"
grep -q '"scale": \[1, 1, 1\]}, {"type": "translation", "translation": \[0, 0.375, 0.375\]' \
	"$tmp/p.zarr/zarr.json"
ok $? "level 2: scale 4 times 0.25, translation (4-1)/2 times 0.25"
grep -q '"shape": \[9, 6, 4\]' "$tmp/p.zarr/2/zarr.json"
ok $? "level 2 is 9 x 6 x 4 (21 and 14 halved twice, rounding up)"
grep -q '"chunk_shape": \[4, 6, 4\]' "$tmp/p.zarr/2/zarr.json"
ok $? "its chunks are clamped to its shape"

"$SP" verify "$tmp/p.zarr" > "$tmp/out"
ok $? "verify checks the image"
grep -q '3 levels, each equal to the one below it reduced' "$tmp/out"
ok $? "and says it recomputed every level"
"$SP" verify --against "$tmp/in.raw" "$tmp/p.zarr" > /dev/null
ok $? "verify --against compares level 0 with the input"
"$SP" cat "$tmp/p.zarr" | cmp -s - "$tmp/in.raw"
ok $? "cat writes level 0"
"$SP" verify "$tmp/p.zarr/1" > "$tmp/out"
ok $? "verify STORE/1 checks level 1 alone"
grep -q 'shape 9,11,7, uint8' "$tmp/out"
ok $? "level 1 is 9 x 11 x 7"
"$SP" cat "$tmp/p.zarr/2" | wc -c | grep -q '^216$'
ok $? "cat STORE/2 writes its 216 bytes"

w "$tmp/plain.zarr"
cmp -s "$tmp/plain.zarr/c/0/0/0" "$tmp/p.zarr/0/c/0/0/0" &&
	cmp -s "$tmp/plain.zarr/zarr.json" "$tmp/p.zarr/0/zarr.json"
ok $? "level 0 is the single array written without --downsample"

w --ngff "$tmp/n.zarr"
ok $? "write --ngff"
[ -f "$tmp/n.zarr/0/zarr.json" ] && [ ! -e "$tmp/n.zarr/1" ] &&
	"$SP" verify "$tmp/n.zarr" | grep -q 'image of 1 level;'
ok $? "--ngff alone writes a one-level image"

# A level whose bytes no longer reduce to it fails verify, naming it.
w --downsample y,x --codec none "$tmp/bad.zarr"
shard=$(find "$tmp/bad.zarr/1/c" -type f | sort | head -1)
printf '\000\000' | dd of="$shard" bs=1 seek=3 conv=notrunc 2> /dev/null
"$SP" verify "$tmp/bad.zarr" > /dev/null 2> "$tmp/err"
is $? 1 "verify fails on a level that is not the one below it reduced"
grep -q 'level 1: element (0, 0, 3) is 0x00, level 0 reduced by mean gives' "$tmp/err"
ok $? "naming the level, the element and both values"

w --downsample y,x "$tmp/n3.zarr"
ok $? "an image of three levels, mean"
# A level whose scale or translation does not follow from the halvings
# fails verify, naming the level, the dim and what it should be; a
# translation left out is no fault (OME-NGFF makes it optional).
for edit in 's/"scale": \[1, 2, 2\]/"scale": [1, 2, 3]/' \
	's/"translation": \[0, 0.5, 0.5\]/"translation": [0, 0.5, 0]/'; do
	rm -rf "$tmp/tf.zarr"
	cp -R "$tmp/n3.zarr" "$tmp/tf.zarr"
	sed "$edit" "$tmp/n3.zarr/zarr.json" > "$tmp/tf.zarr/zarr.json"
	"$SP" verify "$tmp/tf.zarr" > /dev/null 2> "$tmp/err"
	st=$?
	case $edit in
	*scale*) want="level 1: dim 2's scale is 3, but its elements cover 2 of level 0's (scale 1): 2" ;;
	*) want="level 1: dim 2's translation is 0, 0.5 for elements covering 2 of level 0's by mean" ;;
	esac
	[ "$st" -eq 1 ] && grep -qF "$want" "$tmp/err"
	ok $? "verify refuses ${edit%%\\*}..., exit $st: $(cat "$tmp/err")"
done
rm -rf "$tmp/tf.zarr"
cp -R "$tmp/n3.zarr" "$tmp/tf.zarr"
sed 's/, {"type": "translation", "translation": \[[0-9., ]*\]}//' \
	"$tmp/n3.zarr/zarr.json" > "$tmp/tf.zarr/zarr.json"
! grep -q translation "$tmp/tf.zarr/zarr.json" &&
	"$SP" verify "$tmp/tf.zarr" > /dev/null 2> "$tmp/err"
ok $? "an image without translations verifies: $(cat "$tmp/err")"
rm -rf "$tmp/tf.zarr"

# Overwrite: an image over a single array and back; the user's files stay.
echo mine > "$tmp/plain.zarr/notes.txt"
mkdir "$tmp/plain.zarr/7" && echo mine > "$tmp/plain.zarr/7/keep"
w --downsample y,x --overwrite "$tmp/plain.zarr"
ok $? "an image overwrites a single array"
[ ! -e "$tmp/plain.zarr/c" ] && [ -f "$tmp/plain.zarr/1/zarr.json" ] &&
	"$SP" verify "$tmp/plain.zarr" > /dev/null
ok $? "the old shards are gone and the image verifies"
[ -f "$tmp/plain.zarr/notes.txt" ] && [ -f "$tmp/plain.zarr/7/keep" ]
ok $? "the user's files, a numbered directory among them, are left"
w --overwrite "$tmp/plain.zarr"
ok $? "a single array overwrites an image"
[ ! -e "$tmp/plain.zarr/0" ] && [ ! -e "$tmp/plain.zarr/1" ] &&
	[ -f "$tmp/plain.zarr/c/0/0/0" ] && [ -f "$tmp/plain.zarr/7/keep" ]
ok $? "its levels are gone, the user's directory stays"
w --downsample y,x "$tmp/plain.zarr" 2> "$tmp/err"
is $? 2 "an image over a store without --overwrite: exit 2"

"$SP" conform --backends cpu,reference --names t,y,x --downsample y,x \
	--dtype int16 --method median > "$tmp/out"
ok $? "conform compares every level of a pyramid on cpu and reference"
grep -q 'an OME-NGFF image of 4 levels' "$tmp/out" &&
	grep -q 'cpu ~ reference .*identical' "$tmp/out"
ok $? "and finds them identical"

# Anisotropic (doc/design.md §28.1): t halves once, y and x go on; the
# scales and translations follow each dim's own halvings.
w --downsample t,y,x --stop t=2 --levels 4 "$tmp/an.zarr"
ok $? "write --downsample t,y,x --stop t=2 --levels 4"
grep -q '"shape": \[5, 3, 2\]' "$tmp/an.zarr/3/zarr.json" &&
	grep -q '"shape": \[5, 11, 7\]' "$tmp/an.zarr/1/zarr.json"
ok $? "t is 9, then 5 at every level; y and x halve three times"
grep -q '"scale": \[2, 8, 8\]}, {"type": "translation", "translation": \[0.5, 3.5, 3.5\]' \
	"$tmp/an.zarr/zarr.json" &&
	grep -q '"stop": {"t": 2}' "$tmp/an.zarr/zarr.json"
ok $? "level 3: scale 2, 8, 8 and translation 0.5, 3.5, 3.5; the stop in kwargs"
"$SP" verify "$tmp/an.zarr" | grep -q '4 levels, each equal to the one below it reduced'
ok $? "verify recomputes every level with its own factors"
w --downsample t,y,x --stop t=2 "$tmp/an2.zarr" &&
	[ -f "$tmp/an2.zarr/2/zarr.json" ] && [ ! -e "$tmp/an2.zarr/3" ]
ok $? "by default, levels until every dim still halving fits a chunk (3)"
# Continued by --append: the stop comes back from the group's zarr.json
# and the files are the one run's.
"$SP" write --shape 0,21,14 --chunk 2,8,8 --names t,y,x --downsample t,y,x \
	--stop t=2 --levels 3 --input "$tmp/in.raw" --quiet "$tmp/one.zarr"
head -c $((4 * 21 * 14)) "$tmp/in.raw" | "$SP" write --shape 0,21,14 \
	--chunk 2,8,8 --names t,y,x --downsample t,y,x --stop t=2 --levels 3 \
	--quiet "$tmp/two.zarr" &&
	tail -c +$((4 * 21 * 14 + 1)) "$tmp/in.raw" |
	"$SP" write --append --quiet "$tmp/two.zarr"
ok $? "an anisotropic image, 4 rows then --append the other 5"
diff -r "$tmp/one.zarr" "$tmp/two.zarr" > /dev/null
ok $? "gives the one run's files, every level"

# refused WORD DESCRIPTION ARGS...: exit 2, nothing created, WORD in the
# message.
refused() {
	word=$1
	what=$2
	shift 2
	rm -rf "$tmp/r.zarr"
	w "$@" "$tmp/r.zarr" 2> "$tmp/err"
	is $? 2 "$what: exit 2"
	if [ ! -e "$tmp/r.zarr" ] && grep -q -- "$word" "$tmp/err"; then
		ok 0 "$what: nothing created, the message names it"
	else
		ok 1 "$what: nothing created, the message names it"
		diag "$(cat "$tmp/err")"
	fi
}
refused '--downsample: no dim is named "q"' "an unknown dim" --downsample q
refused '--levels 9: .* at most 6 levels' "more levels than the dims halve" \
	--downsample y,x --levels 9
refused '"maen" is not mean, .*did you mean mean' "a misspelt method" \
	--downsample y --method maen
refused '--append-method max: .* which --downsample does not halve' \
	"an append method without dim 0" --downsample y --append-method max
refused '"micron" is not one of OME-NGFF.s space units' "an unknown unit" \
	--downsample y --units x=micron
refused '--stop: dim 0 (t): 2, but --downsample does not halve it' \
	"a stop on a dim not downsampled" --downsample y,x --stop t=2
refused "--stop: dim 1 (y): 5 levels, beyond the pyramid's 3" \
	"a stop beyond the pyramid's levels" --downsample y,x --stop y=5
refused "--stop: dim 1 (y): 3 levels, beyond the pyramid's 2 (--levels)" \
	"a stop beyond --levels" --downsample y,x --stop y=3 --levels 2
refused '--stop: dim 1 (y): 7 levels, but it is 1 element at level 5, so at most 6' \
	"a stop beyond what the dim can halve" --downsample y,x --stop y=7 \
	--levels 6
refused '--stop: "0" for dim 1 is not a count of levels in 2..32' \
	"a stop of 0" --downsample y,x --stop y=0
refused '--stop: "-2" for dim 1 is not a count of levels' \
	"a negative stop" --downsample y,x --stop y=-2
refused '--stop: "1" for dim 1 is not a count of levels' \
	"a stop of 1" --downsample y,x --stop y=1
refused '--stop: no dim is named "z"' "a stop on an unknown dim" \
	--downsample y,x --stop z=2
refused '--stop: "y" is not DIM=VALUE' "a stop without a count" \
	--downsample y,x --stop y
refused '--levels 5: no downsampled dim halves past level 3' \
	"more levels than the stopped dims halve" --downsample y,x \
	--stop y=3,x=4 --levels 5
names=c,y,x
refused 'dim 0 (c) is a channel axis' "a channel axis" --downsample c,y
names=y,t,x
refused 'the time axis of an OME-NGFF image comes first' "time after space" \
	--downsample y
names=t,y,x
refused '--levels 3, but --downsample halves no dim' "levels without a flag" \
	--levels 3
names=,y,x
refused 'dim 0 has no name' "unnamed dims" --downsample 1
names=t,y,x
rm -rf "$tmp/r.zarr"
"$SP" write --shape 9,1,14 --chunk 4,1,8 --names t,y,x --downsample y \
	--allow-short --input /dev/null "$tmp/r.zarr" 2> "$tmp/err"
is $? 2 "a flag on a dim of size 1: exit 2"
[ ! -e "$tmp/r.zarr" ] && grep -q -- '--downsample: dim 1 (y) has size 1' "$tmp/err"
ok $? "a flag on a dim of size 1: nothing created, the message names it"
rm -rf "$tmp/r.zarr"
"$SP" write --shape 0,21,14 --chunk 4,8,8 --names t,y,x --downsample t \
	--input "$tmp/in.raw" "$tmp/r.zarr" 2> "$tmp/err"
is $? 2 "an unbounded dim 0 alone without --levels: exit 2"
[ ! -e "$tmp/r.zarr" ] && grep -q -- 'give --levels' "$tmp/err"
ok $? "nothing created, the message says to give --levels"

# An image as an array of a group (doc/design.md §26, §28.5): the group
# lists it, and verify of the group checks its levels.
"$SP" group create "$tmp/g.zarr" &&
	w --downsample y,x --array img "$tmp/g.zarr" 2> "$tmp/err"
ok $? "write --array img --downsample y,x into a group"
"$SP" verify "$tmp/g.zarr" > "$tmp/out" 2> "$tmp/err"
is $? 0 "verify of the group passes"
grep -q 'Zarr group of 1 array' "$tmp/out" &&
	grep -q 'img: valid, an OME-NGFF image of 3 levels, each equal to' "$tmp/out"
ok $? "it lists the image and recomputes its levels: $(cat "$tmp/out")"

# A level is the image's, written with it: a store written in its place
# or beside it is refused and leaves the image as it was; verify refuses
# a level that is itself an image (which the reader would open at its own
# level 0, equal to the image's level 0).
w --downsample y,x "$tmp/own.zarr" && sums_before=$(tree_sum "$tmp/own.zarr")
w --overwrite "$tmp/own.zarr/1" 2> "$tmp/err"
is $? 2 "write --overwrite STORE/1 of an image: exit 2"
grep -q 'own.zarr/1: is inside the OME-NGFF image' "$tmp/err"
ok $? "the message names the level and the image: $(cat "$tmp/err")"
w "$tmp/own.zarr/extra" 2> "$tmp/err"
is $? 2 "a new array inside an image: exit 2"
[ ! -e "$tmp/own.zarr/extra" ] &&
	[ "$(tree_sum "$tmp/own.zarr")" = "$sums_before" ]
ok $? "the image is byte for byte as it was, nothing created beside it"
rm -rf "$tmp/own.zarr/1" && w --downsample y,x "$tmp/lvl.zarr" &&
	mv "$tmp/lvl.zarr" "$tmp/own.zarr/1"
"$SP" verify "$tmp/own.zarr" > /dev/null 2> "$tmp/err"
is $? 1 "verify of an image whose level 1 is an image: exit 1"
grep -q 'level 1: .*own.zarr/1 is an OME-NGFF image, not an array' "$tmp/err"
ok $? "the message names the level: $(cat "$tmp/err")"

# An image whose levels verify compares in more than one slab (64 MiB at
# a time): 72 rows of 1 MiB, level 1's rows 51.. in the second.  It
# verifies, and a level-1 element changed in the second slab is named by
# its own row.
random_bytes 1048576 "$tmp/row.raw"
for i in $(seq 72); do cat "$tmp/row.raw"; done > "$tmp/big.raw"
"$SP" write --shape 72,1024,1024 --chunk 8,512,512 --names t,y,x \
	--codec none --downsample y,x --input "$tmp/big.raw" --quiet \
	"$tmp/big.zarr"
ok $? "write an image of 72 x 1024 x 1024"
"$SP" verify "$tmp/big.zarr" > "$tmp/out" 2> "$tmp/err"
st=$?
is $st 0 "verify compares its levels slab by slab: $(cat "$tmp/err")"
shard="$tmp/big.zarr/1/c/8/0/0"
was=$(od -An -tu1 -j3 -N1 "$shard" | tr -d ' ')
printf "\\$(printf %o $(((was + 1) % 256)))" |
	dd of="$shard" bs=1 seek=3 conv=notrunc 2> /dev/null
"$SP" verify "$tmp/big.zarr" > /dev/null 2> "$tmp/err"
is $? 1 "a level-1 element of the second slab changed: verify fails"
grep -q "level 1: element (64, 0, 3) is 0x$(printf %02x $(((was + 1) % 256))), level 0 reduced by mean gives 0x$(printf %02x "$was")" "$tmp/err"
ok $? "naming its row, 64, and both values: $(cat "$tmp/err")"
rm -f "$tmp/big.raw" "$tmp/row.raw"
rm -rf "$tmp/big.zarr"

# bench --output with a pyramid keeps the pyramid: the plain run it is
# measured against goes to a directory of its own beside DIR, removed
# after; a user's file beside DIR stays.
mkdir "$tmp/bo"
echo mine > "$tmp/bo/notes.txt"
"$SP" bench frames --fill micro --rows 2 --downsample y,x --levels 2 \
	--backend cpu --threads 2 --output "$tmp/bo/img.zarr/" \
	> "$tmp/out" 2> "$tmp/err"
is $? 0 "bench --levels 2 --output DIR/: $(tail -1 "$tmp/err")"
grep -q '"node_type": "group"' "$tmp/bo/img.zarr/zarr.json" &&
	[ -f "$tmp/bo/img.zarr/1/zarr.json" ] &&
	"$SP" verify "$tmp/bo/img.zarr" | grep -q 'image of 2 levels'
ok $? "DIR holds the pyramid, and it verifies"
[ "$(ls -A "$tmp/bo")" = "$(printf 'img.zarr\nnotes.txt')" ] &&
	[ "$(cat "$tmp/bo/notes.txt")" = mine ]
ok $? "nothing else is left beside it, the user's file as it was: $(ls -A "$tmp/bo" | tr '\n' ' ')"
rm -rf "$tmp/bo"

done_testing
