#!/bin/sh
# s3-read.sh - reading an S3 store with the requests it needs and no more
# (doc/design.md §24.4): each shard's index comes with its open, in one
# ranged GET; the chunks that lie end to end in a shard come in one GET
# of at most SHARDPIPE_S3_READ_SIZE bytes; SHARDPIPE_S3_READS of them at
# once.  The GETs are counted by a proxy in front of the server and
# compared with a count made from the shard indexes of a directory copy
# of the store by t/python/s3_runs.py, which reads them by the Zarr
# sharding layout and not through shardpipe.
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
s3_need
test_seed
s3_start bkt

plan 21

# 40 rows of 96 x 80 uint16, small values (zstd compresses them), the
# rows 8..15 zeros (their chunks are empty: absent from the index);
# chunks 4,16,20, shards 8,64,80: 32 chunks a shard, edge shards along
# dim 1, ten shards of which two are empty (not written): a whole-array
# read asks for them, a check lists the store.
"$py" -c '
import random, struct, sys
random.seed(int(sys.argv[1]))
rows = []
for t in range(40):
    for i in range(96 * 80):
        rows.append(0 if 8 <= t < 16 else random.randrange(0, 64))
sys.stdout.buffer.write(struct.pack("<%dH" % len(rows), *rows))
' "$seed" > "$tmp/in.raw"
geom="--shape 0,96,80 --dtype uint16 --chunk 4,16,20 --shard-shape 8,64,80"
n=0
for cfg in zstd:1:end none:start; do
	codec=${cfg%:*}
	where=${cfg##*:}
	n=$((n + 1))
	url=s3://bkt/r$n.zarr
	# shellcheck disable=SC2086
	"$SP" write $geom --codec "$codec" --index-location "$where" \
		--input "$tmp/in.raw" --quiet "$tmp/r$n.zarr" 2> "$tmp/err" &&
		"$SP" write $geom --codec "$codec" --index-location "$where" \
			--input "$tmp/in.raw" --quiet "$url" 2>> "$tmp/err"
	ok $? "$codec, index at $where: written to a directory and to $url"
	sed 's/^/#   /' "$tmp/err"

	s3_proxy count$n
	for cap in 6000 8m; do
		bytes=$cap
		[ "$cap" = 8m ] && bytes=8388608
		set -- $("$py" "$pyt/s3_runs.py" "$tmp/r$n.zarr" "$bytes")
		want=$1 missing=$2
		: > "$tmp/count$n.log"
		SHARDPIPE_S3_ENDPOINT=http://127.0.0.1:$proxy_port \
			SHARDPIPE_S3_READ_SIZE=$cap SHARDPIPE_S3_READS=4 \
			"$SP" cat "$url" > "$tmp/out.raw" 2> "$tmp/err" &&
			cmp -s "$tmp/out.raw" "$tmp/in.raw"
		ok $? "$codec, index at $where, reads of up to $cap: cat returns the input"
		sed 's/^/#   /' "$tmp/err"
		got=$(grep -c "^GET /bkt/r$n.zarr/c/" "$tmp/count$n.log")
		is "$got" "$((want + missing))" "$codec, index at $where, reads of up to $cap: cat's GETs of shards: one per shard ($missing missing) and one per run of neighbouring chunks"
		: > "$tmp/count$n.log"
		SHARDPIPE_S3_ENDPOINT=http://127.0.0.1:$proxy_port \
			SHARDPIPE_S3_READ_SIZE=$cap SHARDPIPE_S3_READS=4 \
			"$SP" verify "$url" > /dev/null 2> "$tmp/err"
		ok $? "$codec, index at $where, reads of up to $cap: verify accepts it"
		sed 's/^/#   /' "$tmp/err"
		got=$(grep -c "^GET /bkt/r$n.zarr/c/" "$tmp/count$n.log")
		is "$got" "$want" "$codec, index at $where, reads of up to $cap: verify's GETs of shards are as many"
	done
done

# The settings are checked before any request: the variable is named.
for bad in SHARDPIPE_S3_READS=0 SHARDPIPE_S3_READS=65 \
	SHARDPIPE_S3_READ_SIZE=lots; do
	env "$bad" "$SP" cat s3://bkt/r1.zarr > /dev/null 2> "$tmp/err"
	st=$?
	[ "$st" -ne 0 ] && grep -q "${bad%%=*}=${bad#*=}" "$tmp/err"
	ok $? "$bad is refused, naming it (exit $st)"
	sed 's/^/#   /' "$tmp/err"
done
done_testing
