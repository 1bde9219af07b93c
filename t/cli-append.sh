#!/bin/sh
# cli-append.sh - shardpipe write --append: a store written in two runs,
# rows 0..k-1 and then k..N-1 with --append, holds the files of one run,
# byte for byte (zarr.json included), for k at 0, inside a chunk, at a
# chunk edge, at a shard edge and at N, with zstd, gzip (index at start)
# and blosc where built; it verifies against the input and reads back as
# it.  Three runs, a writer killed mid-stream, --array, --attr, a bound
# given at --append, --allow-short and --pad-partial likewise.  Refused,
# changing nothing: no store, a --dtype, --chunk, --codec or other
# dimension size other than the store's (the message names the field and
# both values), --overwrite, a pyramid option, a bounded store that is
# full, input longer than the bound, a store another writer holds.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cliappend
test_seed

blosc=1
if ! "$SP" write --shape 0 --chunk 2 --codec blosc --quiet \
	"$tmp/probe.zarr" < /dev/null 2> "$tmp/err"; then
	grep -q "without c-blosc" "$tmp/err" || bail_out "blosc probe: $(cat "$tmp/err")"
	blosc=0
fi
rm -rf "$tmp/probe.zarr"
wchan=0
[ -r /proc/self/wchan ] && command -v mkfifo > /dev/null 2>&1 && wchan=1
plan 116

# 15 rows of 6 x 10 uint16 (120 bytes a row); the array is the first 13,
# which do not fill the last shard row (4 rows of 2-row chunks a shard).
row=120
random_bytes $((15 * row)) "$tmp/in15.raw"
head -c $((13 * row)) "$tmp/in15.raw" > "$tmp/in.raw"
# The layout is given once, when a store is made; --append takes it from
# the store (names and fill value too: zarr.json shows they were kept).
geo="--chunk 2,3,5 --shard-shape 4,6,10 --dtype uint16 --names t,y,x
	--fill-value 7 --backend cpu"
mk() { "$SP" write --shape 0,6,10 $geo --quiet "$@"; }
more() { "$SP" write --append --backend cpu "$@"; }

# rows FROM TO FILE: rows FROM..TO-1 of the input into FILE.
rows() {
	tail -c +$(($1 * row + 1)) "$tmp/in15.raw" | head -c $((($2 - $1) * row)) > "$3"
}

# same_tree A B: B holds exactly A's files, each with A's bytes; else the
# first difference (names, or the first differing byte and both values)
# as a comment, and status 1.
same_tree() {
	for _d in "$1" "$2"; do
		[ -d "$_d" ] && continue
		diag "$_d: no such store"
		return 1
	done
	(cd "$1" && find . -type f | LC_ALL=C sort) > "$tmp/files-a"
	(cd "$2" && find . -type f | LC_ALL=C sort) > "$tmp/files-b"
	if ! cmp -s "$tmp/files-a" "$tmp/files-b"; then
		diag "the files differ: $(diff "$tmp/files-a" "$tmp/files-b" |
			grep '^[<>]' | head -4 | tr '\n' ' ')"
		return 1
	fi
	while IFS= read -r f; do
		cmp -s "$1/$f" "$2/$f" && continue
		diag "$f: $(cmp "$1/$f" "$2/$f" 2>&1 | head -1)"
		diag "  first differing byte (offset, octal values): $(cmp -l \
			"$1/$f" "$2/$f" 2> /dev/null | head -1)"
		return 1
	done < "$tmp/files-a"
	return 0
}

# reads_as STORE RAW WHAT: two points, verify --against RAW, and cat
# returning RAW's bytes.
reads_as() {
	"$SP" verify "$1" --against "$2" > "$tmp/vout" 2>&1
	st=$?
	ok $st "$3: verify --against the input"
	[ $st -eq 0 ] || diag "$(cat "$tmp/vout")"
	"$SP" cat "$1" > "$tmp/out.raw" 2> "$tmp/cerr" &&
		cmp -s "$tmp/out.raw" "$2"
	st=$?
	ok $st "$3: cat returns the input"
	[ $st -eq 0 ] || diag "$(cat "$tmp/cerr") $(cmp "$tmp/out.raw" "$2" 2>&1)"
}

# resumed STORE K WHAT -- APPEND-OPTIONS...: --append rows K..12 to
# STORE; one point for the exit status and the line naming K.
resumed() {
	_store=$1 _k=$2 _what=$3
	shift 4
	rows "$_k" 13 "$tmp/tail.raw"
	more --input "$tmp/tail.raw" "$@" "$_store" 2> "$tmp/err"
	_st=$?
	if [ "$_k" -eq 1 ]; then _n="1 row"; else _n="$_k rows"; fi
	[ $_st -eq 0 ] &&
		grep -q "^shardpipe: write: $_store: continuing after $_n$" "$tmp/err"
	ok $? "$_what: --append exits 0, saying it continues after $_n"
	[ $_st -eq 0 ] || diag "exit $_st: $(cat "$tmp/err")"
}

n=0
for codec in zstd:3 gzip:6 blosc:lz4:5:bitshuffle; do
	n=$((n + 1))
	opts="--codec $codec"
	[ $codec = gzip:6 ] && opts="$opts --index-location start"
	if [ $codec = blosc:lz4:5:bitshuffle ] && [ $blosc = 0 ]; then
		skip 21 "shardpipe was built without c-blosc"
		continue
	fi
	mk $opts --input "$tmp/in.raw" "$tmp/one-$n.zarr"
	ok $? "$codec: rows 0..12 in one run"
	# 0: nothing first; 3: inside a chunk; 2: a chunk's edge inside a
	# shard; 8: a shard's edge; 13: nothing appended.
	for k in 0 3 2 8 13; do
		b="$tmp/two-$n-$k.zarr"
		rows 0 "$k" "$tmp/head.raw"
		mk $opts --input "$tmp/head.raw" "$b"
		resumed "$b" $k "$codec, k $k (rows 0..k-1, then k..12)" --
		same_tree "$tmp/one-$n.zarr" "$b"
		ok $? "$codec, k $k: the files of one run"
		reads_as "$b" "$tmp/in.raw" "$codec, k $k"
	done
done

# Three runs, the middle one from standard input.
rows 0 2 "$tmp/p.raw"
mk --codec zstd:3 --input "$tmp/p.raw" "$tmp/three.zarr"
rows 2 9 "$tmp/p.raw"
more --quiet "$tmp/three.zarr" < "$tmp/p.raw"
ok $? "three runs: rows 2..8 appended from stdin"
resumed "$tmp/three.zarr" 9 "three runs: rows 9..12" --
same_tree "$tmp/one-1.zarr" "$tmp/three.zarr"
ok $? "three runs: the files of one run"

# --array NAME: the array of a group, continued.
"$SP" group create "$tmp/g.zarr" &&
	rows 0 3 "$tmp/p.raw" &&
	"$SP" write --array cam --shape 0,6,10 $geo --codec zstd:3 --quiet \
		--input "$tmp/p.raw" "$tmp/g.zarr"
ok $? "--array cam of a group: rows 0..2"
rows 3 13 "$tmp/p.raw"
more --quiet --array cam --input "$tmp/p.raw" "$tmp/g.zarr"
ok $? "--append --array cam: rows 3..12"
same_tree "$tmp/one-1.zarr" "$tmp/g.zarr/cam"
ok $? "--append --array cam: the files of one run"
watch="$tmp/g.zarr"
refused 2 'holds no array other' "--append --array of an array the group lacks" -- \
	more --array other "$tmp/g.zarr" < /dev/null
unset watch

# --attr over the store's: a new value replaces the old, others stay.
mk --codec zstd:3 --attr 'x=1' --attr 'y="b"' --input "$tmp/in.raw" \
	"$tmp/attr-one.zarr"
rows 0 5 "$tmp/p.raw"
mk --codec zstd:3 --attr 'x=1' --attr 'y="a"' --input "$tmp/p.raw" \
	"$tmp/attr.zarr"
rows 5 13 "$tmp/p.raw"
more --quiet --attr 'y="b"' --input "$tmp/p.raw" "$tmp/attr.zarr"
ok $? "--append --attr"
same_tree "$tmp/attr-one.zarr" "$tmp/attr.zarr"
ok $? "--append --attr y: the files of one run with x=1 and the new y"

# A bound given at --append: the array ends there, as a bounded --shape
# written in one run.
"$SP" write --shape 13,6,10 $geo --codec zstd:3 --quiet \
	--input "$tmp/in.raw" "$tmp/b-one.zarr"
ok $? "bounded 13 rows in one run"
rows 0 5 "$tmp/p.raw"
mk --codec zstd:3 --input "$tmp/p.raw" "$tmp/b.zarr"
resumed "$tmp/b.zarr" 5 "--append --shape 13,6,10 after 5 rows" -- \
	--shape 13,6,10
same_tree "$tmp/b-one.zarr" "$tmp/b.zarr"
ok $? "--append --shape 13,6,10: the files of the bounded run"
reads_as "$tmp/b.zarr" "$tmp/in.raw" "--append --shape 13,6,10"

# --allow-short: rows 5..10 of a bound of 13, the rest the fill value.
head -c $((11 * row)) "$tmp/in.raw" > "$tmp/short.raw"
"$SP" write --shape 13,6,10 $geo --codec zstd:3 --quiet --allow-short \
	--input "$tmp/short.raw" "$tmp/s-one.zarr"
rows 0 5 "$tmp/p.raw"
mk --codec zstd:3 --input "$tmp/p.raw" "$tmp/s.zarr"
rows 5 11 "$tmp/p.raw"
watch="$tmp/s.zarr"
refused 2 'fewer than the 960 bytes of rows 5..12 of --shape 13,6,10' \
	"--append --shape 13,6,10 with rows 5..10 only" -- \
	more --shape 13,6,10 --input "$tmp/p.raw" "$tmp/s.zarr"
rows 5 15 "$tmp/long.raw"
refused 2 'more than the 960 bytes of rows 5..12 of --shape 13,6,10' \
	"--append --shape 13,6,10 with rows 5..14" -- \
	more --shape 13,6,10 --input "$tmp/long.raw" "$tmp/s.zarr"
unset watch
more --quiet --shape 13,6,10 --allow-short --input "$tmp/p.raw" "$tmp/s.zarr"
ok $? "--append --shape 13,6,10 --allow-short with rows 5..10"
same_tree "$tmp/s-one.zarr" "$tmp/s.zarr"
ok $? "--allow-short: the files of one run with --allow-short"

# --pad-partial: a last partial row, filled, as in one run.
head -c $((12 * row + 50)) "$tmp/in.raw" > "$tmp/part.raw"
mk --codec gzip:6 --pad-partial --input "$tmp/part.raw" "$tmp/pp-one.zarr"
rows 0 8 "$tmp/p.raw"
mk --codec gzip:6 --input "$tmp/p.raw" "$tmp/pp.zarr"
tail -c +$((8 * row + 1)) "$tmp/part.raw" > "$tmp/p.raw"
watch="$tmp/pp.zarr"
refused 2 'not a whole number of rows of 120 bytes' \
	"--append of a file ending inside a row" -- \
	more --input "$tmp/p.raw" "$tmp/pp.zarr"
unset watch
more --quiet --pad-partial "$tmp/pp.zarr" < "$tmp/p.raw"
ok $? "--append --pad-partial of rows 12 and part of 13"
same_tree "$tmp/pp-one.zarr" "$tmp/pp.zarr"
ok $? "--pad-partial: the files of one run with --pad-partial"

# Refusals: each exits as it should, names what is wrong, and changes
# nothing in the store (refused, t/lib.sh).
mkdir "$tmp/empty"
watch="$tmp/empty" watch_absent="$tmp/empty/none.zarr"
refused 2 'holds no store.*without --append, write starts a new store there' \
	"--append on a path with no store" -- \
	more "$tmp/empty/none.zarr" < /dev/null
unset watch_absent
rows 0 3 "$tmp/p.raw"
mk --codec zstd:3 --input "$tmp/p.raw" "$tmp/r.zarr"
watch="$tmp/r.zarr"
refused 2 'dtype: the store has "uint16", the description "uint8"' \
	"--append --dtype uint8 on uint16" -- \
	more --dtype uint8 "$tmp/r.zarr" < /dev/null
refused 2 'dim 2 chunk: the store has 5, the description 10' \
	"--append --chunk 2,3,10 on chunks 2,3,5" -- \
	more --chunk 2,3,10 "$tmp/r.zarr" < /dev/null
refused 2 'codec: the store has zstd, the description gzip' \
	"--append --codec gzip on zstd" -- \
	more --codec gzip "$tmp/r.zarr" < /dev/null
refused 2 'dim 1 size: the store has 6, the description 7' \
	"--append --shape 0,7,10 on 0,6,10" -- \
	more --shape 0,7,10 "$tmp/r.zarr" < /dev/null
refused 2 '--append continues the store.*--overwrite replaces it' \
	"--append --overwrite" -- \
	more --overwrite "$tmp/r.zarr" < "$tmp/p.raw"
refused 2 "an image's pyramid is the store's" \
	"--append --downsample y,x" -- \
	more --downsample y,x --levels 2 "$tmp/r.zarr" < "$tmp/p.raw"
watch="$tmp/b-one.zarr"
refused 2 'holds 13 rows already' "--append --shape 13,6,10 on a full bounded store" -- \
	more --shape 13,6,10 "$tmp/b-one.zarr" < "$tmp/p.raw"
unset watch

# A writer holds the store until it closes it; one killed mid-stream is
# resumed from the rows its zarr.json advertises.
if [ $wchan = 1 ]; then
	# fifo_writer STORE [OPTIONS...]: a write of STORE from a FIFO the
	# test holds open on fd 3, in the background ($pid).  Opened for
	# reading and writing, so that a writer that exits before opening
	# it cannot leave the test waiting.
	fifo_writer() {
		_store=$1
		shift
		rm -f "$tmp/fifo"
		mkfifo "$tmp/fifo"
		"$SP" write --quiet --input "$tmp/fifo" "$@" "$_store" \
			2> "$tmp/err-bg" &
		pid=$!
		exec 3<> "$tmp/fifo"
	}
	# reading PID: PID, the program itself (not libtool's wrapper
	# script, whose shell reads pipes of its own before it execs the
	# program), waits reading its input, having read all of it: its
	# stream is open.  1 after 60 s of neither.
	reading() {
		_n=0
		until case $(readlink /proc/"$1"/exe 2> /dev/null) in
			*shardpipe*) true ;; *) false ;; esac; do
			[ $_n -lt 600 ] || return 1
			sleep 0.1
			_n=$((_n + 1))
		done
		blocked_reading "$1"
	}
	rows 0 6 "$tmp/p.raw"
	mk --codec zstd:3 --input "$tmp/p.raw" "$tmp/busy.zarr"
	fifo_writer "$tmp/busy.zarr" --append --backend cpu
	rows 6 9 "$tmp/p.raw"
	cat "$tmp/p.raw" >&3
	reading $pid
	ok $? "a writer continuing a store waits on its FIFO"
	watch="$tmp/busy.zarr"
	refused 1 'another writer holds the store' \
		"--append while another writer holds the store" -- \
		more "$tmp/busy.zarr" < /dev/null
	unset watch
	rows 9 13 "$tmp/p.raw"
	cat "$tmp/p.raw" >&3
	exec 3>&-
	wait $pid
	st=$?
	ok $st "the first writer finishes"
	[ $st -eq 0 ] || diag "exit $st: $(cat "$tmp/err-bg")"
	same_tree "$tmp/one-1.zarr" "$tmp/busy.zarr"
	ok $? "and its store holds the files of one run"

	# Enough rows (1003 of 1030) for shards to leave the writer
	# before it is killed.
	perl -e 'srand($ARGV[0] + 1); my $s = "";
		 $s .= pack("C", int(rand(256))) for 1..$ARGV[1]; print $s' \
		"$seed" $((1030 * row)) > "$tmp/k.raw"
	mk --codec zstd:3 --input "$tmp/k.raw" "$tmp/k-one.zarr"
	fifo_writer "$tmp/killed.zarr" --shape 0,6,10 $geo --codec zstd:3
	head -c $((1003 * row)) "$tmp/k.raw" >&3
	reading $pid || diag "write never blocked reading the FIFO"
	kill -KILL $pid
	wait $pid 2> /dev/null
	exec 3>&-
	# Where to go on: the rows the killed writer's zarr.json
	# advertises, whole shard rows only (4 rows each).
	r=$(sed -n 's/^  "shape": \[\([0-9]*\),.*/\1/p' "$tmp/killed.zarr/zarr.json")
	[ -n "$r" ] && [ "$r" -le 1003 ] && [ $((r % 4)) -eq 0 ]
	ok $? "a writer killed after 1003 rows advertises whole shard rows of them (${r:-none})"
	tail -c +$((${r:-0} * row + 1)) "$tmp/k.raw" > "$tmp/p.raw"
	more --input "$tmp/p.raw" "$tmp/killed.zarr" 2> "$tmp/err"
	st=$?
	[ $st -eq 0 ] && grep -q "continuing after ${r:-0} rows$" "$tmp/err"
	ok $? "resumed after the kill: --append exits 0, continuing after ${r:-0} rows"
	[ $st -eq 0 ] || diag "exit $st: $(cat "$tmp/err")"
	same_tree "$tmp/k-one.zarr" "$tmp/killed.zarr"
	ok $? "resumed after the kill: the files of one run of 1030 rows"
else
	skip 8 "no /proc/PID/wchan or mkfifo to see a writer blocked reading"
fi

# A damaged last shard row: refused naming the shard; with
# --truncate-to-advertised that row (rows 12..12 of 13) is dropped and the
# input from row 12 on gives the files of one run of 15 rows.
mk --codec zstd:3 --input "$tmp/in15.raw" "$tmp/t-one.zarr"
head -c $((13 * row)) "$tmp/in15.raw" > "$tmp/t13.raw"
mk --codec zstd:3 --input "$tmp/t13.raw" "$tmp/t.zarr"
perl -e 'open(my $f, "+<", $ARGV[0]) or die; binmode $f; seek($f, -2, 2);
	 read($f, my $c, 1); seek($f, -2, 2); print $f chr(ord($c) ^ 0x5a)' \
	"$tmp/t.zarr/c/3/0/0"
rows 13 15 "$tmp/p.raw"
more --input "$tmp/p.raw" "$tmp/t.zarr" 2> "$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q "c/3/0/0" "$tmp/err"
ok $? "a damaged shard in the last shard row: exit 1 (got $st), the shard named"
rows 12 15 "$tmp/p.raw"
more --truncate-to-advertised --input "$tmp/p.raw" "$tmp/t.zarr" 2> "$tmp/err"
st=$?
[ $st -eq 0 ] && grep -q "continuing after 12 rows$" "$tmp/err"
ok $? "--truncate-to-advertised: exit 0 (got $st), continuing after 12 rows"
[ $st -eq 0 ] || diag "$(cat "$tmp/err")"
same_tree "$tmp/t-one.zarr" "$tmp/t.zarr"
ok $? "--truncate-to-advertised, rows 12..14 appended: the files of one run"
"$SP" write --truncate-to-advertised --shape 0,6,10 $geo "$tmp/t2.zarr" \
	< /dev/null 2> "$tmp/err"
st=$?
[ $st -eq 2 ] && grep -q "give --append" "$tmp/err" && [ ! -e "$tmp/t2.zarr" ]
ok $? "--truncate-to-advertised without --append: exit 2, nothing made"

done_testing
