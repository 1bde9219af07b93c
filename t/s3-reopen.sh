#!/bin/sh
# s3-reopen.sh - continuing an s3:// store (doc/design.md §29), against a
# real S3-compatible server (moto on 127.0.0.1, checking every signature):
# rows 0..k-1 written, then k..N-1 with `write --append`, give every object
# of one run byte for byte (zarr.json included), for k at 0, inside a
# chunk, at a chunk edge, at a shard edge and inside the last shard row,
# with zstd and with gzip and the index first, shards in one PUT and in
# multipart uploads.  What a killed writer leaves is cleaned up: shard
# objects past the advertised rows are deleted, its unfinished multipart
# uploads of the array aborted, and nothing else touched (objects and
# uploads beside the shards, under a prefix that starts with the same
# letters), along dim 1 when a storage order stores the append dim there.
# A shard of the rewritten row left empty is deleted.  Refused,
# changing nothing: a damaged shard in the last shard row (named), a
# prefix with no store.
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
s3_need
test_seed
s3_start bkt

plan 49

# What the test asks the server directly, through boto3, never through
# shardpipe: the expectations do not come from the code under test.
cat > "$tmp/admin.py" <<'EOF'
import sys

from s3_admin import client, compare, contents

s3 = client()
B = "bkt"


def objects(prefix):
    return contents(s3, B, prefix)


def same(a, b, skip):
    """The objects below a/ and b/ are the same keys and bytes, except the
    keys below b/ that skip names: "same", or the first difference."""
    y = objects(b + "/")
    for k in skip:
        y.pop(k, None)
    return compare(objects(a + "/"), y, (a, b))


def main(a):
    cmd = a[0]
    if cmd == "same":
        print(same(a[1], a[2], a[3:]))
    elif cmd == "keys":
        # Keys, sizes and ETags below a prefix: a listing to compare.
        for p in s3.get_paginator("list_objects_v2").paginate(Bucket=B,
                                                              Prefix=a[1]):
            for o in p.get("Contents", []):
                print(o["Key"], o["Size"], o["ETag"])
    elif cmd == "put":
        s3.put_object(Bucket=B, Key=a[1], Body=a[2].encode())
    elif cmd == "copy":
        s3.copy_object(Bucket=B, Key=a[2],
                       CopySource={"Bucket": B, "Key": a[1]})
    elif cmd == "get":
        sys.stdout.buffer.write(s3.get_object(Bucket=B,
                                              Key=a[1])["Body"].read())
    elif cmd == "flip":
        # The byte at offset a[2] (from the end when negative) inverted.
        body = bytearray(s3.get_object(Bucket=B, Key=a[1])["Body"].read())
        body[int(a[2])] ^= 0xFF
        s3.put_object(Bucket=B, Key=a[1], Body=bytes(body))
    elif cmd == "upload":
        # A multipart upload begun, one part sent, never completed: what
        # a writer killed mid-upload leaves.
        for key in a[1:]:
            u = s3.create_multipart_upload(Bucket=B, Key=key)
            s3.upload_part(Bucket=B, Key=key, UploadId=u["UploadId"],
                           PartNumber=1, Body=b"x" * 2048)
    elif cmd == "uploads":
        keys = []
        kw = {}
        while True:
            r = s3.list_multipart_uploads(Bucket=B, **kw)
            keys += [u["Key"] for u in r.get("Uploads", [])]
            if not r.get("IsTruncated"):
                break
            kw = {"KeyMarker": r["NextKeyMarker"],
                  "UploadIdMarker": r["NextUploadIdMarker"]}
        for k in sorted(keys):
            print(k)
    return 0


sys.exit(main(sys.argv[1:]))
EOF
adm() { PYTHONPATH="$pyt" "$py" "$tmp/admin.py" "$@"; }

# 15 rows of 40 x 40 uint16 (3200 bytes a row); chunks 2,16,20 in shards
# 4,32,40: four shard rows (the last one of 3 rows), two shards a row
# (one an edge shard along dim 1).  Random data does not compress, so a
# full shard is over 10 KiB: with parts of 4 KiB it is a multipart upload
# of 3 parts, the edge shard one PUT.
export SHARDPIPE_S3_PART_SIZE=4k
row=3200
rand_file $((15 * row)) "$tmp/in.raw"
geom="--shape 0,40,40 --dtype uint16 --chunk 2,16,20 --shard-shape 4,32,40"
# rows FROM TO FILE: rows FROM..TO-1 of the input.
rows() {
	tail -c +$(($1 * row + 1)) "$tmp/in.raw" | head -c $((($2 - $1) * row)) > "$3"
}
more() { "$SP" write --append "$@"; }

# Byte identity over k, two layouts.
for cfg in zstd:1:end gzip:5:start; do
	codec=${cfg%:*}
	where=${cfg##*:}
	# shellcheck disable=SC2086
	"$SP" write $geom --codec "$codec" --index-location "$where" \
		--input "$tmp/in.raw" --quiet "s3://bkt/one-$where" 2> "$tmp/err"
	ok $? "$codec, index at $where: the one run of 15 rows"
	sed 's/^/#   /' "$tmp/err"
	case $where in
	end) ks="0 3 8 13" ;;
	*) ks="6 12" ;;
	esac
	for k in $ks; do
		url=s3://bkt/k$k-$where
		rows 0 "$k" "$tmp/a.raw"
		rows "$k" 15 "$tmp/b.raw"
		# shellcheck disable=SC2086
		"$SP" write $geom --codec "$codec" --index-location "$where" \
			--input "$tmp/a.raw" --quiet "$url" 2> "$tmp/err" &&
			more --input "$tmp/b.raw" "$url" 2>> "$tmp/err"
		st=$?
		first="rows 0..$((k - 1))"
		[ "$k" -gt 0 ] || first="no rows"
		[ $st -eq 0 ] && grep -q "continuing after $k rows$" "$tmp/err"
		ok $? "$codec, index at $where, k=$k: $first, then --append of $k..14"
		[ $st -eq 0 ] || sed 's/^/#   /' "$tmp/err"
		is "$(adm same "one-$where" "k$k-$where" 2>&1)" same \
			"$codec, index at $where, k=$k: every object of the one run, byte for byte"
	done
	"$SP" cat "s3://bkt/k$k-$where" 2> "$tmp/err" | cmp -s - "$tmp/in.raw"
	ok $? "$codec, index at $where, k=$k: cat returns the input"
done
# How the rewritten last row was uploaded, from its ETags: "...-N" for a
# multipart upload of N parts, a plain one for one PUT.  Its full shard
# (3 rows, about 7.9 KiB) takes 2 parts of 4 KiB, its edge shard one.
adm keys k13-end/c/3/ > "$tmp/keys" 2>&1
got=$(awk '{ tag = $3; gsub(/"/, "", tag); k = split(tag, a, "-")
	printf "%s %s ", $1, k == 1 ? "put" : a[2] " parts" }' "$tmp/keys")
is "$got" "k13-end/c/3/0/0 2 parts k13-end/c/3/1/0 put " \
	"k=13: the rewritten row's full shard is a multipart upload, its edge shard one PUT"

# What a killed writer leaves, cleaned up by the next one.  The store
# advertises 9 rows (shard rows 0 and 1 whole, one row of shard row 2);
# the writer killed had written shards of shard rows 3 and 4 and begun
# uploads it never completed.
rows 0 9 "$tmp/a.raw"
rows 9 15 "$tmp/b.raw"
# shellcheck disable=SC2086
"$SP" write $geom --codec zstd:1 --input "$tmp/a.raw" --quiet \
	s3://bkt/orph 2> "$tmp/err"
ok $? "a store of 9 rows for the orphans"
sed 's/^/#   /' "$tmp/err"
# Orphans: shard keys past the advertised rows, one out of the grid,
# one whose first coordinate no uint64 holds.
for key in orph/c/4/0/0 orph/c/3/0/1 orph/c/123456789012345678901234/0/0; do
	adm copy orph/c/0/0/0 "$key" || bail_out "cannot plant $key"
done
# Not the array's: names no chunk key has, below c/ and in an orphan's
# row; the same key under another prefix that begins with "orph".
for key in orph/c/README orph/c/4/notes.txt orph/notes.txt orph2/c/4/0/0; do
	adm put "$key" "not a shard: $key" || bail_out "cannot plant $key"
done
adm upload orph/c/3/0/0 orph/c/5/1/0 orph/zarr.json orph/c/notes \
	orph2/c/1/0/0 orph/sub/c/0 || bail_out "cannot begin the uploads"
adm uploads > "$tmp/up" 2>&1
is "$(tr '\n' ' ' < "$tmp/up")" \
	"orph/c/3/0/0 orph/c/5/1/0 orph/c/notes orph/sub/c/0 orph/zarr.json orph2/c/1/0/0 " \
	"six unfinished multipart uploads begun"
more --quiet --input "$tmp/b.raw" s3://bkt/orph 2> "$tmp/err"
ok $? "--append of rows 9..14 over the orphans"
sed 's/^/#   /' "$tmp/err"
is "$(adm same one-end orph c/README c/4/notes.txt notes.txt 2>&1)" same \
	"every object of the one run, byte for byte, and no orphan left"
for key in orph/c/README orph/c/4/notes.txt orph/notes.txt orph2/c/4/0/0; do
	is "$(adm get "$key" 2>&1)" "not a shard: $key" "$key: kept as it was"
done
adm uploads > "$tmp/up" 2>&1
is "$(tr '\n' ' ' < "$tmp/up")" "orph/c/notes orph/sub/c/0 orph2/c/1/0/0 " \
	"the array's unfinished uploads aborted (c/3/0/0, c/5/1/0, zarr.json), the others kept"
"$SP" cat s3://bkt/orph 2> "$tmp/err" | cmp -s - "$tmp/in.raw"
ok $? "and cat returns the input"

# The append dim stored second (--storage-order 1,0,2, design §3.3): the
# rows run along dim 1 of the keys.  9 rows, orphans past them planted at
# t-shards 3 and 5, then rows 9..14: the objects of the one run, a file
# that is no chunk key kept.
mv="--shape 40,0,40 --dtype uint16 --chunk 16,2,20 --shard-shape 32,4,40 --storage-order 1,0,2"
rows 0 9 "$tmp/a.raw"
rows 9 15 "$tmp/b.raw"
# shellcheck disable=SC2086
"$SP" write $mv --codec zstd:1 --input "$tmp/in.raw" --quiet s3://bkt/mv-one \
	2> "$tmp/err" &&
	"$SP" write $mv --codec zstd:1 --input "$tmp/a.raw" --quiet s3://bkt/mv \
	2>> "$tmp/err"
ok $? "the append dim stored second: the one run of 15 rows, and one of 9"
sed 's/^/#   /' "$tmp/err"
for key in mv/c/0/3/0 mv/c/1/5/0; do
	adm copy mv/c/0/0/0 "$key" || bail_out "cannot plant $key"
done
adm put mv/c/1/notes.txt "not a shard" || bail_out "cannot plant mv/c/1/notes.txt"
more --storage-order 1,0,2 --quiet --input "$tmp/b.raw" s3://bkt/mv 2> "$tmp/err"
ok $? "--append --storage-order 1,0,2 of rows 9..14 over the orphans"
sed 's/^/#   /' "$tmp/err"
is "$(adm same mv-one mv c/1/notes.txt 2>&1)" same \
	"every object of the one run, byte for byte, and no orphan left"
is "$(adm get mv/c/1/notes.txt 2>&1)" "not a shard" "mv/c/1/notes.txt: kept as it was"

# A shard of the rewritten row that is now empty goes: rows of zeros (the
# fill value) written with --write-empty-chunks, continued without.
head -c $((15 * row)) /dev/zero > "$tmp/zero.raw"
head -c $((9 * row)) /dev/zero > "$tmp/a.raw"
head -c $((6 * row)) /dev/zero > "$tmp/b.raw"
# shellcheck disable=SC2086
"$SP" write $geom --write-empty-chunks --input "$tmp/a.raw" --quiet \
	s3://bkt/empty 2> "$tmp/err"
ok $? "9 rows of zeros with --write-empty-chunks"
sed 's/^/#   /' "$tmp/err"
adm keys empty/c/ | awk '{ print $1 }' > "$tmp/keys"
is "$(tr '\n' ' ' < "$tmp/keys")" \
	"empty/c/0/0/0 empty/c/0/1/0 empty/c/1/0/0 empty/c/1/1/0 empty/c/2/0/0 empty/c/2/1/0 " \
	"six shards stored, row 2's among them"
more --quiet --input "$tmp/b.raw" s3://bkt/empty 2> "$tmp/err"
ok $? "--append of 6 rows of zeros without --write-empty-chunks"
sed 's/^/#   /' "$tmp/err"
adm keys empty/c/ | awk '{ print $1 }' > "$tmp/keys"
is "$(tr '\n' ' ' < "$tmp/keys")" \
	"empty/c/0/0/0 empty/c/0/1/0 empty/c/1/0/0 empty/c/1/1/0 " \
	"the rewritten row's shards, empty now, are deleted; rows 0 and 1 kept"
"$SP" cat s3://bkt/empty 2> "$tmp/err" | cmp -s - "$tmp/zero.raw"
ok $? "and cat returns 15 rows of zeros"

# refused_s3 STATUS WORDS PREFIX DESCRIPTION -- COMMAND...: COMMAND exits
# STATUS, its message holds WORDS, and neither the objects below PREFIX
# (keys, sizes, ETags) nor the bucket's unfinished uploads changed.  Two
# test points.
refused_s3() {
	want=$1 words=$2 where=$3 what=$4
	shift 5
	adm keys "$where" > "$tmp/before" 2>&1
	adm uploads > "$tmp/up-before" 2>&1
	"$@" > /dev/null 2> "$tmp/err"
	is $? "$want" "$what: exit $want"
	adm keys "$where" > "$tmp/after" 2>&1
	adm uploads > "$tmp/up-after" 2>&1
	if grep -q -- "$words" "$tmp/err" &&
	   cmp -s "$tmp/before" "$tmp/after" &&
	   cmp -s "$tmp/up-before" "$tmp/up-after"; then
		ok 0 "$what: the message names it, nothing changed"
	else
		ok 1 "$what: the message names it, nothing changed"
		diag "$(cat "$tmp/err")"
		diff "$tmp/before" "$tmp/after" | sed 's/^/#   /'
		diff "$tmp/up-before" "$tmp/up-after" | sed 's/^/#   /'
	fi
}

# A damaged shard in the last shard row refuses the append, naming it,
# before anything is written: the orphan and the unfinished upload planted
# beside it stay too.  Rows 0..9 (row 2 partial), its shard's CRC broken;
# rows 0..7 (row 1 whole, decoded as a check), its edge shard cut short.
rows 0 15 "$tmp/b.raw"
for c in 10:c/2/0/0:flip 8:c/1/1/0:cut; do
	k=${c%%:*}
	rest=${c#*:}
	key=${rest%:*}
	how=${rest#*:}
	rows 0 "$k" "$tmp/a.raw"
	# shellcheck disable=SC2086
	"$SP" write $geom --codec zstd:1 --input "$tmp/a.raw" --quiet \
		"s3://bkt/bad$k" 2> "$tmp/err" ||
		bail_out "cannot write s3://bkt/bad$k: $(cat "$tmp/err")"
	if [ "$how" = flip ]; then
		adm flip "bad$k/$key" -1
	else
		adm get "bad$k/$key" > "$tmp/shard"
		head -c $(($(wc -c < "$tmp/shard") - 100)) "$tmp/shard" > "$tmp/cut"
		s3_admin put bkt "bad$k/$key=$tmp/cut"
	fi || bail_out "cannot damage bad$k/$key"
	if ! adm copy "bad$k/c/0/0/0" "bad$k/c/7/0/0" ||
		! adm upload "bad$k/c/7/1/0"; then
		bail_out "cannot plant in bad$k"
	fi
	rows "$k" 15 "$tmp/b.raw"
	refused_s3 1 "c/${key#c/}" "bad$k/" \
		"rows 0..$((k - 1)), $key damaged ($how)" -- \
		more --input "$tmp/b.raw" "s3://bkt/bad$k"
	grep -q "cannot continue it" "$tmp/err" && grep -q "nothing was touched" "$tmp/err"
	ok $? "$key damaged ($how): the message says nothing was touched: $(cat "$tmp/err")"
done

# A prefix without a store: nothing is made there.
refused_s3 2 'holds no store (no zarr.json) to continue' none/ \
	"--append to a prefix with no store" -- \
	more --input "$tmp/b.raw" s3://bkt/none
is "$(adm keys none/ 2>&1)" "" "and no object was made there"
# The description's fields against the store's, as for a directory.
refused_s3 2 'dtype: the store has "uint16", the description "uint8"' k0-end/ \
	"--append --dtype uint8 on a uint16 store" -- \
	more --dtype uint8 --input "$tmp/b.raw" s3://bkt/k0-end
# Credentials are needed to continue a store, as to write one.
refused_s3 1 "no credentials" k0-end/ \
	"--append without credentials" -- \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$SP" write \
	--append --input "$tmp/b.raw" s3://bkt/k0-end
done_testing
