#!/bin/sh
# s3-roundtrip.sh - stores written to a real S3-compatible server (moto, on
# 127.0.0.1, checking every request's signature) read back: every codec,
# the index at either end, through `shardpipe verify` and `cat` and through
# zarr-python's own S3 store; shards just under, at and over the multipart
# part size become one object of the right size each, in one PUT or in as
# many parts as the part size makes; `bench --output s3://` writes a store.
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
s3_need
test_seed
s3_start bkt

blosc=no
grep -q '^#define HAVE_BLOSC 1' "${top_builddir:-.}/config.h" && blosc=yes

plan 33

# 40 rows of 96 x 80 uint16; chunks 4,32,40, shards 8,64,80: edge shards
# along dim 1, five shard epochs.
rand_file 614400 "$tmp/in.raw"
geom="--shape 0,96,80 --dtype uint16 --chunk 4,32,40 --shard-shape 8,64,80"
zarr_args=
n=0
for cfg in none:end zstd:3:checksum:start gzip:5:end \
	blosc:zstd:1:shuffle:start; do
	codec=${cfg%:*}
	where=${cfg##*:}
	n=$((n + 1))
	url=s3://bkt/codecs/$n.zarr
	if [ "$codec" != "${codec#blosc}" ] && [ "$blosc" = no ]; then
		skip 3 "this build has no c-blosc (configure --with-blosc)"
		continue
	fi
	# shellcheck disable=SC2086
	"$SP" write $geom --codec "$codec" --index-location "$where" \
		--input "$tmp/in.raw" --quiet "$url" 2> "$tmp/err"
	ok $? "$codec, index at $where: write to $url"
	sed 's/^/#   /' "$tmp/err"
	"$SP" verify "$url" > /dev/null 2> "$tmp/err"
	ok $? "$codec, index at $where: verify reads every shard back over S3"
	sed 's/^/#   /' "$tmp/err"
	"$SP" cat "$url" > "$tmp/out.raw" 2> "$tmp/err" &&
		cmp -s "$tmp/out.raw" "$tmp/in.raw"
	ok $? "$codec, index at $where: cat returns the input"
	zarr_args="$zarr_args $url"
done

# zarr-python through fsspec's s3fs, all stores in one interpreter.
# shellcheck disable=SC2086
s3_admin zarr "$tmp/in.raw" $zarr_args > "$tmp/zarr.out" 2>&1
for url in $zarr_args; do
	line=$(grep "^$url " "$tmp/zarr.out")
	is "$line" "$url equal" "zarr-python reads $url over S3 and finds the input"
done
grep -v " equal$" "$tmp/zarr.out" | sed 's/^/#   /' 
[ "$blosc" = yes ] || skip 1 "this build has no c-blosc (configure --with-blosc)"

# Multipart boundaries: codec none makes every shard 64 rows of 1024
# bytes and an index of 16 chunks, 16 * 16 + 4 bytes: 65796 bytes.
rand_file 262144 "$tmp/mp.raw"
shard=$((65536 + 16 * 16 + 4))
for c in under:$((shard + 1)):1 at:$shard:1 over:$((shard - 1)):2 \
	five:16384:5; do
	name=${c%%:*}
	rest=${c#*:}
	part=${rest%:*}
	SHARDPIPE_S3_PART_SIZE=$part "$SP" write --shape 0,1024 --chunk 4,1024 \
		--chunks-per-shard 16,1 --codec none --input "$tmp/mp.raw" \
		--quiet "s3://bkt/mp/$name.zarr" 2> "$tmp/err" &&
		"$SP" cat "s3://bkt/mp/$name.zarr" 2> "$tmp/err" |
		cmp -s - "$tmp/mp.raw"
	ok $? "shards of $shard bytes, part size $part: written and read back"
	sed 's/^/#   /' "$tmp/err"
done
# One listing, checked for all four: four shards each, every one
# $shard bytes, in one PUT (a plain ETag) or in N parts (ETag "...-N").
s3_admin objects bkt mp/ > "$tmp/objects" 2>&1
for c in under:1 at:1 over:2 five:5; do
	name=${c%%:*}
	parts=${c#*:}
	got=$(awk -v p="mp/$name.zarr/c/" -v size="$shard" -v parts="$parts" '
		index($1, p) == 1 {
			n++
			tag = $3; gsub(/"/, "", tag)
			k = split(tag, a, "-")
			got = k == 1 ? 1 : a[2]
			if ($2 != size || got != parts) bad++
		}
		END { print n + 0, bad + 0 }' "$tmp/objects")
	is "$got" "4 0" "$name: 4 shard objects of $shard bytes in $parts part(s) each"
done

# A prefix of characters URLs and SigV4 escape (the server checks the
# signature of each request, listing included).
odd="s3://bkt/odd/my data+ü=(1)&x~.zarr"
"$SP" write --shape 0,1024 --chunk 4,1024 --chunks-per-shard 16,1 \
	--input "$tmp/mp.raw" --quiet "$odd" 2> "$tmp/err" &&
	"$SP" verify "$odd" > /dev/null 2>> "$tmp/err"
ok $? "a prefix with a space, +, &, =, (), ~ and UTF-8: written and verified"
sed 's/^/#   /' "$tmp/err"
"$SP" cat "$odd" 2> "$tmp/err" | cmp -s - "$tmp/mp.raw"
ok $? "and read back"

# bench writes to S3 like to a directory.
"$SP" bench --shape 16,64,64 --chunk 4,32,32 --shard 2,1,1 --rows 16 \
	--output s3://bkt/bench.zarr > "$tmp/bench.out" 2> "$tmp/err" &&
	"$SP" verify s3://bkt/bench.zarr > /dev/null 2>> "$tmp/err"
ok $? "bench --output s3:// writes a store that verifies"
sed 's/^/#   /' "$tmp/err"
grep -q "to s3://bkt/bench.zarr" "$tmp/bench.out"
ok $? "and its report names the S3 store"

# The store as the server holds it: no temporary or stray objects.
s3_admin objects bkt codecs/1.zarr/ > "$tmp/objects" 2>&1
bad=$(awk '$1 !~ /^codecs\/1\.zarr\/(zarr\.json|c(\/[0-9]+)+)$/' "$tmp/objects")
is "$bad" "" "the store holds zarr.json and shard keys only"
is "$(grep -c . "$tmp/objects")" 11 "ten shards and zarr.json"

# A write to S3 stopped by SIGTERM while it waits on a pipe: the rows
# read are written, the last shard's upload completed (doc/design.md §16.5).
# 100 rows of 1024 bytes: one full shard and one of 36 rows, in parts
# of 16 KiB.
if [ -r /proc/self/wchan ]; then
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	SHARDPIPE_S3_PART_SIZE=16k "$SP" write --shape 0,1024 --chunk 4,1024 \
		--chunks-per-shard 16,1 --codec none --input "$tmp/fifo" \
		--quiet s3://bkt/stopped.zarr 2> "$tmp/err" &
	pid=$!
	exec 3> "$tmp/fifo"
	head -c $((100 * 1024)) "$tmp/mp.raw" >&3
	blocked_reading "$pid" && kill -TERM "$pid"
	wait "$pid"
	is $? 143 "a write to s3:// stopped by SIGTERM: exit 143"
	exec 3>&-
	head -c $((100 * 1024)) "$tmp/mp.raw" > "$tmp/100.raw"
	"$SP" cat s3://bkt/stopped.zarr 2>> "$tmp/err" |
		cmp -s - "$tmp/100.raw"
	ok $? "and the store holds the 100 rows read, the partial last shard too"
	sed 's/^/#   /' "$tmp/err"
else
	skip 2 "no /proc/PID/wchan to see a blocked read"
fi

# Every upload the writes started was completed.
s3_admin uploads bkt > "$tmp/uploads" 2>&1
ok_empty "$tmp/uploads" "no incomplete multipart uploads remain"
done_testing
