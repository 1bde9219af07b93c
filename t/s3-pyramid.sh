#!/bin/sh
# s3-pyramid.sh - a pyramid or an OME-NGFF image to an S3 store is refused
# at open (doc/design.md §28.5: the S3 store has no child stores yet),
# naming the path, with exit 4 and not one object written; the same write
# without the pyramid options then succeeds to the same URL.
. "${top_srcdir:-.}/t/lib.sh"
. "${top_srcdir:-.}/t/s3-lib.sh"
s3_need
test_seed
s3_start bkt

plan 7

rand_file 30720 "$tmp/in.raw"
w() {
	"$SP" write --shape 0,32,30 --dtype uint16 --chunk 4,16,15 \
		--names t,y,x --input "$tmp/in.raw" --quiet "$@"
}

w --downsample y,x s3://bkt/p.zarr 2> "$tmp/err"
is $? 4 "write --downsample to s3:// exits 4 (unsupported)"
grep -q "s3://bkt/p.zarr: .*needs a directory store" "$tmp/err"
ok $? "and names the path and what it needs: $(cat "$tmp/err")"
w --ngff s3://bkt/n.zarr 2> "$tmp/err"
is $? 4 "write --ngff to s3:// exits 4"
s3_admin objects bkt "" > "$tmp/objects" 2> "$tmp/err"
ok $? "the bucket lists"
ok_empty "$tmp/objects" "the refused writes wrote nothing"
w s3://bkt/p.zarr 2> "$tmp/err"
ok $? "the same write without the pyramid succeeds"
"$SP" verify s3://bkt/p.zarr > /dev/null 2> "$tmp/err"
ok $? "and verifies"
done_testing
