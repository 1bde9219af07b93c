#!/bin/sh
# s3-refusals.sh - what an S3 store refuses, against a real S3-compatible
# server (moto on 127.0.0.1, checking every signature): a bucket that does
# not exist, wrong or absent credentials, an existing store without
# --overwrite, a prefix holding someone else's objects; each with a message
# that says which and nothing written.  And what it accepts: credentials
# from the shared credentials file, a session token, and an overwrite that
# removes the old store's shards but none of the objects beside them.
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
s3_need
test_seed
s3_start bkt

plan 33

rand_file 122880 "$tmp/in.raw"
rand_file 30720 "$tmp/small.raw"
geom="--shape 0,64,60 --dtype uint16 --chunk 4,32,30 --shard-shape 8,64,30"
w() {
	# w URL [VAR=VALUE...] [-- ARGS...]: write in.raw to URL
	_url=$1
	shift
	_env=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		_env="$_env $1"
		shift
	done
	[ "${1:-}" = -- ] && shift
	# shellcheck disable=SC2086
	env $_env "$SP" write $geom --input "$tmp/in.raw" --quiet "$@" "$_url"
}

# A bucket that does not exist.
w s3://nosuchbucket/a.zarr 2> "$tmp/err"
is $? 2 "write into a missing bucket exits 2"
grep -q "NoSuchBucket" "$tmp/err" && grep -q "does not exist" "$tmp/err"
ok $? "and says the bucket does not exist: $(cat "$tmp/err")"
"$SP" verify s3://nosuchbucket/a.zarr > /dev/null 2> "$tmp/err"
is $? 1 "verify of a missing bucket exits 1, as of a missing directory"
grep -q "bucket nosuchbucket does not exist" "$tmp/err"
ok $? "and says so: $(cat "$tmp/err")"

# Wrong and absent credentials.
w s3://bkt/badsecret.zarr AWS_SECRET_ACCESS_KEY=wrong 2> "$tmp/err"
is $? 1 "write with a wrong secret key exits 1"
grep -q "SignatureDoesNotMatch" "$tmp/err" &&
	grep -q "check the credentials" "$tmp/err"
ok $? "and names S3's SignatureDoesNotMatch: $(cat "$tmp/err")"
env AWS_ACCESS_KEY_ID=AKIANOBODY "$SP" verify s3://bkt/x.zarr \
	> /dev/null 2> "$tmp/err"
is $? 1 "verify with an unknown key id exits 1"
grep -q "InvalidAccessKeyId" "$tmp/err"
ok $? "and names S3's InvalidAccessKeyId: $(cat "$tmp/err")"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$SP" write $geom \
	--input "$tmp/in.raw" --quiet s3://bkt/anonymous.zarr 2> "$tmp/err"
is $? 1 "write without any credentials exits 1"
grep -q "no credentials to write with" "$tmp/err"
ok $? "and says none were found: $(cat "$tmp/err")"

# Credentials from the shared credentials file, by profile and by default.
cat > "$tmp/credentials" <<EOF
[default]
aws_access_key_id = $AWS_ACCESS_KEY_ID
aws_secret_access_key = $AWS_SECRET_ACCESS_KEY

# another
[lab]
aws_access_key_id=$AWS_ACCESS_KEY_ID
aws_secret_access_key=$AWS_SECRET_ACCESS_KEY
EOF
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_PROFILE=lab \
	AWS_SHARED_CREDENTIALS_FILE="$tmp/credentials" "$SP" write $geom \
	--input "$tmp/in.raw" --quiet s3://bkt/profile.zarr 2> "$tmp/err"
ok $? "write with AWS_PROFILE=lab from the shared credentials file"
sed 's/^/#   /' "$tmp/err"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
	AWS_SHARED_CREDENTIALS_FILE="$tmp/credentials" \
	"$SP" cat s3://bkt/profile.zarr 2> "$tmp/err" | cmp -s - "$tmp/in.raw"
ok $? "cat with the file's [default] profile returns the input"
sed 's/^/#   /' "$tmp/err"
w s3://bkt/token.zarr AWS_ACCESS_KEY_ID="$S3_TEMP_KEY_ID" \
	AWS_SECRET_ACCESS_KEY="$S3_TEMP_SECRET" \
	AWS_SESSION_TOKEN="$S3_TEMP_TOKEN" 2> "$tmp/err"
ok $? "temporary credentials with AWS_SESSION_TOKEN write"
sed 's/^/#   /' "$tmp/err"
w s3://bkt/badtoken.zarr AWS_ACCESS_KEY_ID="$S3_TEMP_KEY_ID" \
	AWS_SECRET_ACCESS_KEY="$S3_TEMP_SECRET" \
	AWS_SESSION_TOKEN=not-the-token 2> "$tmp/err"
is $? 1 "and with a wrong token exit 1"
grep -q "InvalidToken" "$tmp/err"
ok $? "naming S3's InvalidToken: $(cat "$tmp/err")"

# An existing store.
w s3://bkt/store.zarr 2> "$tmp/err"
ok $? "write a store"
w s3://bkt/store.zarr 2> "$tmp/err"
is $? 2 "writing it again without --overwrite exits 2"
grep -q "already holds a store (zarr.json)" "$tmp/err"
ok $? "and says why: $(cat "$tmp/err")"
"$SP" cat s3://bkt/store.zarr 2> "$tmp/err" | cmp -s - "$tmp/in.raw"
ok $? "the store is untouched"

# A prefix holding someone else's objects and no zarr.json, and objects
# beside a store's shards: never deleted.
printf 'lab notes\n' > "$tmp/notes"
printf 'not a shard\n' > "$tmp/readme"
s3_admin put bkt user/notes.txt="$tmp/notes" store.zarr/notes.txt="$tmp/notes" \
	store.zarr/c/README="$tmp/readme" store.zarr/c/0/x="$tmp/readme" \
	2> "$tmp/err"
ok $? "put objects of the user's beside and inside the store"
sed 's/^/#   /' "$tmp/err"
w s3://bkt/user 2> "$tmp/err"
is $? 2 "writing into a prefix of other objects exits 2"
grep -q "holds objects and no zarr.json, so it is not a store; nothing was touched" "$tmp/err"
ok $? "and says it is not a store: $(cat "$tmp/err")"
w s3://bkt/user -- --overwrite 2> "$tmp/err"
is $? 2 "with --overwrite too"
# The old store had 16 rows in 2 shard epochs of 2 shards along dim 2;
# the new one has 4 rows: c/1/... must go.
"$SP" write --shape 0,64,60 --dtype uint16 --chunk 4,32,30 \
	--shard-shape 8,64,30 --input "$tmp/small.raw" --quiet --overwrite \
	s3://bkt/store.zarr 2> "$tmp/err"
ok $? "--overwrite replaces the store"
sed 's/^/#   /' "$tmp/err"
"$SP" cat s3://bkt/store.zarr 2> "$tmp/err" | cmp -s - "$tmp/small.raw"
ok $? "and the new array reads back"
"$SP" verify s3://bkt/store.zarr > /dev/null 2> "$tmp/err"
ok $? "and verifies"

s3_admin objects bkt "" > "$tmp/objects" 2> "$tmp/err"
ok $? "list the bucket"
sed 's/^/#   /' "$tmp/err"
etag() { awk -v k="$1" '$1 == k { gsub(/"/, "", $3); print $3 }' "$tmp/objects"; }
md5() { md5sum "$1" | cut -d' ' -f1; }
n=$(md5 "$tmp/notes")
r=$(md5 "$tmp/readme")
is "$(etag user/notes.txt) $(etag store.zarr/notes.txt)" "$n $n" \
	"the user's notes are there, unchanged, beside and inside the store"
is "$(etag store.zarr/c/README) $(etag store.zarr/c/0/x)" "$r $r" \
	"and so are the non-shard objects below c/"
is "$(grep -c '^store.zarr/c/1/' "$tmp/objects")" 0 \
	"the old store's shards beyond the new shape are gone"
is "$(grep -c '^store.zarr/c/0/0/[01] ' "$tmp/objects")" 2 \
	"the new store's two shards are there"
# Refused writes wrote nothing; successful ones only their own keys.
is "$(grep -c -e '^badsecret\.zarr/' -e '^badtoken\.zarr/' -e '^anonymous\.zarr/' -e '^user/zarr' \
	-e '^nosuchbucket' "$tmp/objects")" 0 "the refused writes wrote nothing"
s3_admin uploads bkt > "$tmp/uploads" 2>&1
ok_empty "$tmp/uploads" "no incomplete multipart uploads remain"
done_testing
