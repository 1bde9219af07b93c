#!/bin/sh
# s3-region.sh - many writers of one array on S3 (doc/design.md §30),
# against a real S3-compatible server (moto on 127.0.0.1, checking every
# signature).  Region writers write an array split into shard-aligned
# boxes (cuts at random shard multiples, from the seed) in a random order,
# each box a process of its own (t/s3-region-box): before publish the
# prefix holds shards only, no zarr.json; after it every object equals the
# file of one ordinary stream's directory store, byte for byte, zarr.json
# included; shardpipe verify and cat, and zarr-python through its own S3
# store, read the input back.  Once with shards in one PUT, once with
# multipart uploads (parts of 1 KiB).  Then, on the written array: the
# same box again succeeds with the same objects (its conditional PUTs find
# them taken, compare and accept); the whole array with other data, a box
# overlapping every other one, written after them, is refused
# (SHARDPIPE_ERR_EXISTS naming a shard key) with the objects as they were
# and no upload left; publish refuses another array naming the field; a
# region writer refuses a prefix holding a user's object.  Through a
# proxy: a conditional write stored but its answer lost is retried, finds
# its own bytes (412) and succeeds, for a one-PUT shard and a multipart
# Complete; 409 ConditionalRequestConflict is retried.  The overlap
# refusals need a server that honours If-None-Match on PutObject and
# CompleteMultipartUpload: the test asks the server first, and skips them,
# saying so, when it does not.
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
s3_need
box=${top_builddir:-.}/t/s3-region-box
[ -x "$box" ] || skip_all "t/s3-region-box is not built"
test_seed
s3_start bkt

plan 36

# SHARDPIPE_ERR_* values are stable (include/shardpipe.h).
EXISTS=12

# What the test asks the server directly, through boto3, never through
# shardpipe: the expectations do not come from the code under test.
cat > "$tmp/admin.py" <<'EOF'
import sys

import botocore.exceptions
from s3_admin import client, compare, contents, files

s3 = client()
B = "bkt"


def objects(prefix):
    return contents(s3, B, prefix)


def same(prefix, top, skip):
    """The objects below prefix/ are the files below top, keys and bytes,
    but for the keys skip names: "same", or the first difference."""
    y = files(top)
    for k in skip:
        y.pop(k, None)
    return compare(objects(prefix + "/"), y, ("S3", "the directory"))


def conditional():
    """Whether the server refuses a second PutObject with If-None-Match *
    (412), and a CompleteMultipartUpload with it over an object."""
    key = "probe/conditional"
    s3.put_object(Bucket=B, Key=key, Body=b"first", IfNoneMatch="*")
    try:
        s3.put_object(Bucket=B, Key=key, Body=b"second", IfNoneMatch="*")
        return "PutObject ignores If-None-Match"
    except botocore.exceptions.ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] != 412:
            return "PutObject with If-None-Match over an object: %s" % e
    u = s3.create_multipart_upload(Bucket=B, Key=key)["UploadId"]
    tag = s3.upload_part(Bucket=B, Key=key, UploadId=u, PartNumber=1,
                         Body=b"part")["ETag"]
    try:
        s3.complete_multipart_upload(
            Bucket=B, Key=key, UploadId=u, IfNoneMatch="*",
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": tag}]})
        return "CompleteMultipartUpload ignores If-None-Match"
    except botocore.exceptions.ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] != 412:
            return "CompleteMultipartUpload with If-None-Match: %s" % e
    finally:
        try:
            s3.abort_multipart_upload(Bucket=B, Key=key, UploadId=u)
        except botocore.exceptions.ClientError:
            pass
        s3.delete_object(Bucket=B, Key=key)
    return "honoured"


def main(a):
    cmd = a[0]
    if cmd == "same":
        print(same(a[1], a[2], a[3:]))
    elif cmd == "keys":
        for p in s3.get_paginator("list_objects_v2").paginate(Bucket=B,
                                                              Prefix=a[1]):
            for o in p.get("Contents", []):
                print(o["Key"], o["Size"], o["ETag"])
    elif cmd == "put":
        s3.put_object(Bucket=B, Key=a[1], Body=a[2].encode())
    elif cmd == "conditional":
        print(conditional())
    elif cmd == "uploads":
        r = s3.list_multipart_uploads(Bucket=B)
        for u in r.get("Uploads", []):
            print(u["Key"])
    return 0


sys.exit(main(sys.argv[1:]))
EOF
adm() { PYTHONPATH="$pyt" "$py" "$tmp/admin.py" "$@"; }

cond=$(adm conditional 2>&1)
diag "If-None-Match on this server: $cond"

# case NAME DTYPE CODEC SHAPE CHUNK CPS: the whole story on one array
# (13 test points).
case_() {
	name=$1 g="$2 $3 $4 $5 $6"
	url=s3://bkt/$name
	raw=$tmp/$name.raw
	# shellcheck disable=SC2086
	set -- $g
	bytes=$(echo "$3" | tr ',' '*')
	es=2
	[ "$1" = uint8 ] && es=1
	rand_file $((bytes * es)) "$raw"
	rows=${3%%,*}
	# shellcheck disable=SC2086
	"$box" $g "$raw" stream "$tmp/$name.ref" 2> "$tmp/err"
	ok $? "$name: the reference, one ordinary stream to a directory"
	sed 's/^/#   /' "$tmp/err"
	# shellcheck disable=SC2086
	"$box" $g - boxes "$seed" > "$tmp/$name.boxes"
	n=$(wc -l < "$tmp/$name.boxes")
	st=0
	while read -r lo hi; do
		# shellcheck disable=SC2086
		"$box" $g "$raw" write "$url" "$lo" "$hi" 2> "$tmp/err" < /dev/null || {
			st=1
			diag "box $lo $hi:"
			sed 's/^/#   /' "$tmp/err"
		}
	done < "$tmp/$name.boxes"
	ok $st "$name: $n box(es) written by region writers, in a random order"
	is "$(adm same "$name" "$tmp/$name.ref" zarr.json 2>&1)" same \
		"$name: before publish, the shards of one stream byte for byte and no zarr.json"
	# shellcheck disable=SC2086
	"$box" $g - publish "$url" "$rows" 2> "$tmp/err"
	ok $? "$name: publish"
	sed 's/^/#   /' "$tmp/err"
	is "$(adm same "$name" "$tmp/$name.ref" 2>&1)" same \
		"$name: every object of one stream's store, zarr.json included"
	"$SP" verify "$url" > "$tmp/out" 2>&1
	st=$?
	ok $st "$name: shardpipe verify"
	[ $st -eq 0 ] || sed 's/^/#   /' "$tmp/out"
	"$SP" cat "$url" 2> "$tmp/err" | cmp -s - "$raw"
	ok $? "$name: shardpipe cat returns the input"
	is "$(s3_admin zarr "$raw" "$url" 2>&1)" "$url equal" \
		"$name: zarr-python reads the input back"

	# The first box again: every PUT finds its key taken by the same
	# bytes (a retried task).
	read -r lo hi < "$tmp/$name.boxes"
	# shellcheck disable=SC2086
	"$box" $g "$raw" write "$url" "$lo" "$hi" 2> "$tmp/err"
	ok $? "$name: the box $lo..$hi written again: success"
	sed 's/^/#   /' "$tmp/err"
	is "$(adm same "$name" "$tmp/$name.ref" 2>&1)$(adm uploads)" same \
		"$name: the same objects, no upload left"

	# Other data in a box overlapping every box written.
	(seed=$((seed + 1)) && rand_file $((bytes * es)) "$raw.other")
	lo=$(echo "$3" | sed 's/[0-9][0-9]*/0/g')
	if [ "$cond" = honoured ]; then
		# shellcheck disable=SC2086
		"$box" $g "$raw.other" write "$url" "$lo" "$3" 2> "$tmp/err"
		is $? $EXISTS "$name: other data in the box $lo..$3 over them: SHARDPIPE_ERR_EXISTS"
		if grep -q "s3://bkt/$name/c/[0-9/]*: another writer stored this shard with other bytes" "$tmp/err"; then
			ok 0 "$name: the message names the shard and says another writer wrote it"
		else
			ok 1 "$name: the message names the shard and says another writer wrote it"
			sed 's/^/#   /' "$tmp/err"
		fi
		is "$(adm same "$name" "$tmp/$name.ref" 2>&1)$(adm uploads)" same \
			"$name: every object as it was, no upload left"
	else
		skip 3 "the server ($cond): overlaps cannot be detected"
	fi
}

case_ put uint16 zstd:1 13,20,18 2,4,5 2,2,2
# Full shards of 4 x 16 x 20 uint16 (2560 bytes and the index): three
# parts of 1 KiB; edge shards smaller, some one PUT.
export SHARDPIPE_S3_PART_SIZE=1k
case_ multipart uint16 gzip:1 10,24,45 2,8,10 2,2,2
unset SHARDPIPE_S3_PART_SIZE
adm keys multipart/c/ > "$tmp/keys"
grep -q -- '-3"$' "$tmp/keys"
ok $? "multipart: some shards are multipart uploads of 3 parts (their ETags)"

# Through a proxy: a conditional write whose answer is lost after the
# server stored it is retried, finds its key taken by its own bytes and
# succeeds (a one-PUT shard, and a multipart Complete); 409
# ConditionalRequestConflict is retried.  Each writer writes the whole
# array; its objects must be the reference's shards.
s3_proxy p --rule "lost:1:PUT /bkt/lost/c/" --rule "lost:1:?uploadId=" \
	--rule "409:2:PUT /bkt/conflict/c/"
through() {
	name=$1 ref=$2 g=$3
	shift 3
	# shellcheck disable=SC2086
	env "$@" SHARDPIPE_S3_ENDPOINT="http://127.0.0.1:$proxy_port" \
		"$box" $g "$tmp/$ref.raw" write "s3://bkt/$name" \
		"$(echo "${g#* * }" | sed 's/ .*//; s/[0-9][0-9]*/0/g')" \
		"$(echo "${g#* * }" | sed 's/ .*//')" 2> "$tmp/err"
	st=$?
	[ $st -eq 0 ] || sed 's/^/#   /' "$tmp/err"
	return $st
}
through lost put "uint16 zstd:1 13,20,18 2,4,5 2,2,2"
st=$?
key=$(sed -n 's|^PUT /bkt/lost/\(c/[0-9/]*\) lost 200$|\1|p' "$tmp/p.log")
[ -n "$key" ] && grep -q "^PUT /bkt/lost/$key 412$" "$tmp/p.log"
ok $((st + $?)) "a one-PUT shard ($key) stored, its answer lost, retried: 412, then success"
is "$(adm same lost "$tmp/put.ref" zarr.json 2>&1)" same \
	"and the shards are one stream's"
through lostmp multipart "uint16 gzip:1 10,24,45 2,8,10 2,2,2" \
	SHARDPIPE_S3_PART_SIZE=1k
st=$?
grep -q "^POST /bkt/lostmp/c/.*uploadId=.* lost 200" "$tmp/p.log"
ok $((st + $?)) "a multipart Complete done, its answer lost, retried: success"
is "$(adm same lostmp "$tmp/multipart.ref" zarr.json 2>&1)$(adm uploads)" same \
	"and the shards are one stream's, no upload left"
through conflict put "uint16 zstd:1 13,20,18 2,4,5 2,2,2"
st=$?
[ "$(grep -c "^PUT /bkt/conflict/c/.* 409" "$tmp/p.log")" -eq 2 ]
ok $((st + $?)) "409 ConditionalRequestConflict twice: retried, success"

# Publish refuses another array, naming the field, and leaves zarr.json.
adm keys put/zarr.json > "$tmp/before"
"$box" uint8 zstd:1 13,20,18 2,4,5 2,2,2 - publish s3://bkt/put 13 2> "$tmp/err"
is $? $EXISTS "publish of another data type over the array: SHARDPIPE_ERR_EXISTS"
adm keys put/zarr.json > "$tmp/after"
grep -q 'data_type' "$tmp/err" && cmp -s "$tmp/before" "$tmp/after"
ok $? "the message names data_type, zarr.json unchanged ($(cat "$tmp/err"))"

# A prefix holding a user's object is not an array's.
adm put user/notes.txt "mine"
"$box" uint16 zstd:1 13,20,18 2,4,5 2,2,2 "$tmp/put.raw" write s3://bkt/user \
	0,0,0 4,8,10 2> "$tmp/err"
is $? $EXISTS "a region writer on a prefix holding notes.txt: SHARDPIPE_ERR_EXISTS"
grep -q 'notes.txt' "$tmp/err" &&
	[ "$(adm keys user/ | awk '{ print $1 }')" = user/notes.txt ]
ok $? "the message names notes.txt, nothing written ($(cat "$tmp/err"))"

done_testing
