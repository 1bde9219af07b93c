#!/bin/sh
# s3-faults.sh - an S3 server that fails, through a fault-injecting proxy
# in front of a real one (moto on 127.0.0.1; shardpipe itself is never
# mocked): errors that pass (500, SlowDown, 429, dropped connections) are
# retried and the store comes out whole; one that does not pass fails the
# stream naming the key and the HTTP status, and aborts the multipart
# uploads in flight; a proxy killed mid-stream and back at once is
# retried through, and one that stays away longer than the uploads' retries
# fails the stream while the aborts wait for it to come back.  Whatever
# happened, every shard zarr.json advertises is there, and no incomplete
# multipart upload remains (listed through the S3 API).
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
# Its proxies start again on their own ports: a range no other test
# binds in (t/s3-lib.sh).
S3_PROXY_PORTS=47200-47249
s3_need
test_seed
s3_start bkt

plan 22

# Eight shards of 64 rows of 1024 bytes (codec none: 65796 bytes each),
# five parts of 16 KiB each, two uploads at a time.
rand_file 524288 "$tmp/in.raw"
export SHARDPIPE_S3_PART_SIZE=16k SHARDPIPE_S3_UPLOADS=2
via() {
	# via PORT URL: write in.raw to URL through the proxy at PORT
	SHARDPIPE_S3_ENDPOINT=http://127.0.0.1:$1 "$SP" write --shape 0,1024 \
		--chunk 4,1024 --chunks-per-shard 16,1 --codec none \
		--input "$tmp/in.raw" --quiet "$2"
}
# advertised URL: every shard that zarr.json advertises is there and
# holds the input: cat returns exactly the first rows of the input.
advertised() {
	"$SP" cat "$1" > "$tmp/adv.raw" 2> "$tmp/adv.err" || return 1
	rows=$(($(wc -c < "$tmp/adv.raw") / 1024))
	head -c $((rows * 1024)) "$tmp/in.raw" | cmp -s - "$tmp/adv.raw"
}
count() { grep -c -- "$1" "$2"; }

# 1. Failures that pass: every one retried, the store whole.
s3_proxy flaky --rule 500:2:?partNumber= --rule 503:1:?uploads \
	--rule 429:1:zarr.json --rule drop:1:?uploadId= --rule drop:1:list-type=2
AWS_MAX_ATTEMPTS=5 via "$proxy_port" s3://bkt/flaky.zarr 2> "$tmp/err"
ok $? "500 twice, SlowDown, 429, two dropped connections: the write succeeds"
sed 's/^/#   /' "$tmp/err"
is "$(count ' 500$' "$tmp/flaky.log") $(count ' 503$' "$tmp/flaky.log") $(count ' 429$' "$tmp/flaky.log") $(count ' drop$' "$tmp/flaky.log")" \
	"2 1 1 2" "the proxy injected every fault it was told to"
"$SP" verify s3://bkt/flaky.zarr > /dev/null 2> "$tmp/err"
ok $? "the store verifies, read straight from the server"
"$SP" cat s3://bkt/flaky.zarr 2> "$tmp/err" | cmp -s - "$tmp/in.raw"
ok $? "and holds the input"
kill "$proxy_pid"

# 2. A failure that does not pass: the fourth shard's parts always fail.
s3_proxy broken --rule 500:0:/c/3/0?partNumber=
AWS_MAX_ATTEMPTS=3 via "$proxy_port" s3://bkt/broken.zarr 2> "$tmp/err"
is $? 1 "a shard whose parts always fail: the write exits 1"
grep -q "s3://bkt/broken.zarr/c/3/0: PUT: HTTP 500 InternalError (We encountered an internal error (injected by the test proxy).) after 3 attempts" "$tmp/err"
ok $? "naming the key, the status, S3's code and the attempts: $(cat "$tmp/err")"
grep -q '^DELETE /bkt/broken.zarr/c/3/0?uploadId=.* 204$' "$tmp/broken.log"
ok $? "its multipart upload was aborted"
advertised s3://bkt/broken.zarr
ok $? "every shard zarr.json advertises is there ($rows rows advertised)"
"$SP" verify s3://bkt/broken.zarr > /dev/null 2> "$tmp/err"
ok $? "and the store verifies"
sed 's/^/#   /' "$tmp/err"
kill "$proxy_pid"

# killed NAME ATTEMPTS AWAY: write NAME.zarr through a proxy that dies at
# the seventh part (the test then checks its exit status), and is started
# again on the same port AWAY seconds later; $? is the write's status.
# A writer that ends before the proxy dies (one that crashed at start)
# takes the proxy down with it, so the wait below cannot hang; the proxy
# then exits by SIGTERM, not 3, and the test says so.
killed() {
	s3_proxy "$1" --rule die:7:?partNumber=
	_dead=$proxy_pid
	(AWS_MAX_ATTEMPTS=$2 SHARDPIPE_S3_RETRY_SECONDS=60 \
		via "$proxy_port" "s3://bkt/$1.zarr" 2> "$tmp/err"
	 _rc=$?
	 kill -0 "$_dead" 2> /dev/null && kill "$_dead"
	 exit $_rc) &
	_writer=$!
	wait "$_dead"
	is $? 3 "the proxy died mid-stream"
	sleep "$3"
	s3_proxy "$1"
	wait "$_writer"
}

# 3. Back at once: retries carry the stream through.
killed back 20 0
ok $? "restarted at once: the write retries through and succeeds"
sed 's/^/#   /' "$tmp/err"
"$SP" cat s3://bkt/back.zarr 2> "$tmp/err" | cmp -s - "$tmp/in.raw"
ok $? "and the store holds the input"
"$SP" verify s3://bkt/back.zarr > /dev/null 2> "$tmp/err"
ok $? "and verifies"
kill "$proxy_pid"

# 4. Away for longer than the uploads retry (two tries): the stream fails,
# and the aborts, which retry for SHARDPIPE_S3_RETRY_SECONDS, land once
# it is back.
killed gone 2 3
is $? 1 "away past the uploads' retries: the write exits 1"
# The first request to fail may be a part or zarr.json, whichever was in
# flight.
grep -E -q "s3://bkt/gone.zarr/(c/[0-9]+/0|zarr.json): (PUT|POST): .* after [12] attempts? in" "$tmp/err"
ok $? "naming the key and the connection failure: $(cat "$tmp/err")"
grep -q " die$" "$tmp/gone.log"
ok $? "the proxy's log shows where it died"
sed -n '/ die$/,$p' "$tmp/gone.log" |
	grep -q '^DELETE /bkt/gone.zarr/c/[0-9]*/0?uploadId=.* 204$'
ok $? "the multipart upload in flight was aborted after the proxy came back"
grep -q "aborting the multipart upload of .* failed" "$tmp/err"
is $? 1 "so the message does not say that parts remain"
advertised s3://bkt/gone.zarr
ok $? "every shard zarr.json advertises is there ($rows rows advertised)"
"$SP" verify s3://bkt/gone.zarr > /dev/null 2> "$tmp/err"
ok $? "and the store verifies"
sed 's/^/#   /' "$tmp/err"
kill "$proxy_pid"

s3_admin uploads bkt > "$tmp/uploads" 2>&1
ok_empty "$tmp/uploads" "no incomplete multipart uploads remain, in any of the four"
done_testing
