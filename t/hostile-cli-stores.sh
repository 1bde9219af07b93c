#!/bin/sh
# hostile-cli-stores.sh - a table of hostile stores through the program:
# shardpipe cat, verify and verify --against must each exit 1 (corrupt,
# malformed) or 4 (unsupported), name the store, and never crash or hang.
. "${srcdir:-.}/t/lib.sh"
need_shardpipe
scratch hostile-stores

GRID='"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}}'
# meta SHAPE CHUNK DTYPE FILL CODECS [EXTRA]: one zarr.json body.
meta() {
	printf '{"zarr_format":3,"node_type":"array","shape":%s,' "$1"
	printf '"data_type":"%s","chunk_grid":{"name":"regular",' "$3"
	printf '"configuration":{"chunk_shape":%s}},%s,' "$2" "$GRID"
	printf '"fill_value":%s,"codecs":%s%s}' "$4" "$5" "${6:-}"
}
# shard INNER [INDEX_CODECS]: a sharding_indexed codec list.
shard() {
	printf '[{"name":"sharding_indexed","configuration":{"chunk_shape":%s,' "$1"
	printf '"codecs":[{"name":"bytes","configuration":{"endian":"little"}}],'
	printf '"index_codecs":%s,"index_location":"end"}}]' \
		"${2:-[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]}"
}
BYTES='[{"name":"bytes","configuration":{"endian":"little"}}]'

n=0
# case NAME JSON [SHARD-KEY SHARD-PERL]: SHARD-PERL prints the shard file.
case_() {
	n=$((n + 1))
	d="$tmp/s$n-$1"
	mkdir -p "$d"
	printf '%s' "$2" > "$d/zarr.json"
	if [ $# -ge 4 ]; then
		mkdir -p "$(dirname "$d/c/$3")"
		perl -e "$4" > "$d/c/$3"
	fi
	echo "$d" >> "$tmp/list"
}
# index N OFFSET-NBYTES...: a little-endian shard index without CRC.
IDX='sub idx { my $s = ""; $s .= pack("Q<Q<", @_[2*$_, 2*$_+1]) for 0..$#_/2; $s }'

S1=$(shard '[4]')
case_ huge-shape "$(meta '[1,1099511627776]' '[16777216,1]' uint8 0 "$BYTES")" 0/0 'print "ab"'
case_ row-over-2-64 "$(meta '[2,4294967296,4294967296]' '[1,1,1]' uint16 0 "$BYTES")" 0/0/0 'print "a"'
case_ shape-chunk-2-64 "$(meta '[18446744073709551615]' '[1]' uint8 0 "$BYTES")" 0 'print ""'
case_ shape-over-2-64 "$(meta '[18446744073709551616]' '[1]' uint8 0 "$BYTES")"
case_ shape-product-wraps "$(meta '[4294967296,4294967296,2]' '[1,1,1]' uint8 0 "$BYTES")" 0/0/0 'print "ab"'
case_ chunk-over-2-64 "$(meta '[4]' '[18446744073709551617]' uint8 0 "$BYTES")"
case_ chunk-larger-truncated "$(meta '[4]' '[8]' uint8 0 "$BYTES")" 0 'print "ab"'
case_ zero-chunk "$(meta '[4]' '[0]' uint8 0 "$BYTES")"
case_ negative-shape "$(meta '[-4]' '[2]' uint8 0 "$BYTES")"
case_ fractional-shape "$(meta '[4.5]' '[2]' uint8 0 "$BYTES")"
case_ negative-chunk "$(meta '[4]' '[-2]' uint8 0 "$BYTES")"
case_ fractional-chunk "$(meta '[4]' '[1.5]' uint8 0 "$BYTES")"
case_ exponent-shape "$(meta '[4e400]' '[2]' uint8 0 "$BYTES")"
case_ shape-string "$(meta '["4"]' '[2]' uint8 0 "$BYTES")"
case_ shape-object "$(meta '{"a":4}' '[2]' uint8 0 "$BYTES")"
case_ shape-null "$(meta 'null' '[2]' uint8 0 "$BYTES")"
case_ rank-mismatch "$(meta '[4,4]' '[2]' uint8 0 "$BYTES")"
case_ rank-17 "$(meta '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' uint8 0 "$BYTES")"
case_ dtype-number "$(meta '[4]' '[2]' 7 0 "$BYTES" | sed 's/"7"/7/')"
case_ dtype-unknown "$(meta '[4]' '[2]' uint9 0 "$BYTES")"
case_ fill-string "$(meta '[4]' '[2]' uint8 '"zero"' "$BYTES")"
case_ fill-fraction "$(meta '[4]' '[2]' uint8 0.5 "$BYTES")"
case_ fill-too-big "$(meta '[4]' '[2]' uint8 300 "$BYTES")"
case_ codecs-object "$(meta '[4]' '[2]' uint8 0 '{"name":"bytes"}')"
case_ codecs-empty "$(meta '[4]' '[2]' uint8 0 '[]')"
case_ codec-unknown "$(meta '[4]' '[2]' uint8 0 '[{"name":"bytes"},{"name":"lzma-9000"}]')"
case_ codec-name-number "$(meta '[4]' '[2]' uint8 0 '[{"name":5}]')"
case_ endian-bad "$(meta '[4]' '[2]' uint16 0 '[{"name":"bytes","configuration":{"endian":"middle"}}]')"
case_ zarr-format-2 "$(meta '[4]' '[2]' uint8 0 "$BYTES" | sed 's/"zarr_format":3/"zarr_format":2/')"
case_ zarr-format-string "$(meta '[4]' '[2]' uint8 0 "$BYTES" | sed 's/"zarr_format":3/"zarr_format":"3"/')"
case_ node-group "$(meta '[4]' '[2]' uint8 0 "$BYTES" | sed 's/"array"/"group"/')"
case_ grid-irregular "$(meta '[4]' '[2]' uint8 0 "$BYTES" | sed 's/"regular"/"rectilinear"/')"
case_ key-encoding-bad "$(meta '[4]' '[2]' uint8 0 "$BYTES" | sed 's/"separator":"\/"/"separator":"\/\/"/')"
case_ json-truncated "$(meta '[4]' '[2]' uint8 0 "$BYTES" | cut -c1-60)"
case_ json-not-object '[1,2,3]'
case_ json-empty ''
case_ json-deep "$(perl -e 'print "[" x 100000')"
case_ shard-not-divisible "$(meta '[8]' '[6]' uint8 0 "$(shard '[4]')")"
case_ nested-sharding "$(meta '[8]' '[8]' uint8 0 '[{"name":"sharding_indexed","configuration":{"chunk_shape":[4],"codecs":'"$(shard '[2]')"',"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}]}}]')"
case_ index-codecs-bad "$(meta '[8]' '[8]' uint8 0 "$(shard '[4]' '[{"name":"gzip"}]')")"
case_ shard-truncated "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 'print "abc"'
case_ shard-empty "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 'print ""'
case_ index-offset-past-end "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 \
	"$IDX"' print "abcdefgh", idx(1000, 4, 4, 4), "\0\0\0\0"'
case_ index-offset-huge "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 \
	"$IDX"' print "abcdefgh", idx(18446744073709551600, 4, 0, 4), "\0\0\0\0"'
case_ index-overlap "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 \
	"$IDX"' print "abcdefgh", idx(0, 6, 2, 6), "\0\0\0\0"'
case_ index-wrong-size "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 \
	"$IDX"' print "abcdefgh", idx(0, 4, 4, 4)'
case_ index-bad-crc "$(meta '[8]' '[8]' uint8 0 "$S1")" 0 \
	"$IDX"' print "abcdefgh", idx(0, 4, 4, 4), "\1\2\3\4"'
case_ chunk-wrong-size "$(meta '[8]' '[8]' uint8 0 "$BYTES")" 0 'print "abc"'
case_ chunk-is-directory "$(meta '[8]' '[8]' uint8 0 "$BYTES")"
mkdir -p "$tmp/s$n-chunk-is-directory/c/0"
case_ zarr-json-directory ''
rm -f "$tmp/s$n-zarr-json-directory/zarr.json"
mkdir "$tmp/s$n-zarr-json-directory/zarr.json"

count=$(wc -l < "$tmp/list")
plan $((count * 3 + 2))
printf 'abcdefgh' > "$tmp/raw"
while IFS= read -r d; do
	name=${d##*/}
	for cmd in cat verify against; do
		case $cmd in
		cat) set -- cat "$d" ;;
		verify) set -- verify "$d" ;;
		against) set -- verify "$d" --against "$tmp/raw" ;;
		esac
		timeout 60 "$SP" "$@" > /dev/null 2> "$tmp/err"
		st=$?
		why=""
		case $st in
		1|4) ;;
		*) why="exit $st" ;;
		esac
		grep -qF "$d" "$tmp/err" || why="${why:+$why, }message does not name $d"
		if [ -z "$why" ]; then
			ok 0 "$name: $cmd exits $st naming the store"
		else
			ok 1 "$name: $cmd: $why"
			diag "$(head -c 300 "$tmp/err")"
		fi
	done
done < "$tmp/list"

# What real writers write and the reader accepts: an integral float as an
# integer array's fill value, and null dimension_names.
mkdir "$tmp/writers"
meta '[4]' '[2]' uint16 7.0 "$BYTES" ',"dimension_names":null' \
	> "$tmp/writers/zarr.json"
"$SP" cat "$tmp/writers" > "$tmp/got" 2> "$tmp/err"
is $? 0 "fill_value 7.0 for uint16 and null dimension_names are read"
perl -e 'print pack("v4", 7, 7, 7, 7)' > "$tmp/want"
cmp -s "$tmp/got" "$tmp/want"
ok $? "the missing chunks read as 7"
done_testing
