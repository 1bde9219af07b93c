#!/bin/sh
# cli-signals.sh - write stopped by a signal keeps what it read: SIGTERM,
# SIGINT or SIGHUP while it waits on a pipe (a camera that goes quiet, a
# terminal's Ctrl-C, a closed session) ends the reading, the whole rows
# read so far are written, the store is closed and valid, the message says
# how many rows, the exit status is 128 + the signal's number; a signal the
# caller ignores stays ignored (doc/design.md §16.5).  Each case feeds
# rows and a partial row through a FIFO it holds open, waits until write
# is blocked reading the FIFO again (so it has read everything), then
# sends the signal.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
need_wchan
scratch clisig
test_seed
plan 20

row=64
random_bytes $((10 * row + 10)) "$tmp/in.raw"
head -c $((10 * row)) "$tmp/in.raw" > "$tmp/rows.raw"

# feed_and_stop SIG STORE [WRITE-OPTIONS...]: write STORE from a FIFO fed
# with in.raw, then SIG once everything was read; status in $st,
# stderr in $tmp/err.
feed_and_stop() {
	sig=$1 store=$2
	shift 2
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	# A background job of a shell without job control starts with
	# SIGINT ignored; env gives it back its default, as a terminal's
	# foreground job has it.
	env --default-signal=INT "$SP" write --dtype uint8 --input "$tmp/fifo" \
		"$@" "$store" 2> "$tmp/err" &
	pid=$!
	exec 3> "$tmp/fifo"
	cat "$tmp/in.raw" >&3
	if blocked_reading "$pid"; then
		kill -"$sig" "$pid"
	else
		diag "write never blocked reading the FIFO"
		kill -KILL "$pid"
	fi
	wait "$pid"
	st=$?
	exec 3>&-
}

# rows_are STORE N DESCRIPTION: STORE verifies and reads back as the first
# N rows of the input.
rows_are() {
	"$SP" verify "$1" > /dev/null 2>&1 &&
		"$SP" cat "$1" > "$tmp/out.raw" 2> /dev/null &&
		head -c $(($2 * row)) "$tmp/in.raw" | cmp -s - "$tmp/out.raw"
	ok $? "$3"
}

for case in TERM:143 INT:130 HUP:129; do
	sig=${case%:*}
	want=${case#*:}
	feed_and_stop "$sig" "$tmp/$sig.zarr" --shape 0,$row --chunk 4,$row \
		--shard 2,1
	is "$st" "$want" "SIG$sig while reading a pipe: exit $want"
	grep -q "stopped by SIG$sig after 10 whole rows (640 bytes); they are written and the store is closed; a partial row" "$tmp/err"
	ok $? "SIG$sig: the message counts the rows written and the partial row left"
	grep -q '"shape": \[10, 64\]' "$tmp/$sig.zarr/zarr.json"
	ok $? "SIG$sig: zarr.json has the 10 rows read"
	rows_are "$tmp/$sig.zarr" 10 "SIG$sig: the store verifies and holds exactly the rows read"
done

# A bounded array stopped short keeps its shape, rows past the stop
# holding the fill value.
feed_and_stop TERM "$tmp/b.zarr" --shape 16,$row --chunk 4,$row \
	--fill-value 7
is "$st" 143 "a bounded array stopped by SIGTERM: exit 143"
"$SP" cat "$tmp/b.zarr" > "$tmp/out.raw" 2> /dev/null &&
	{ cat "$tmp/rows.raw"; perl -e 'print chr(7) x (6 * 64)'; } |
	cmp -s - "$tmp/out.raw"
ok $? "and reads back as its 10 rows, then 6 rows of the fill value"

# Into a group's array: the same stop, the group still verifies.
"$SP" group create "$tmp/g.zarr" > /dev/null 2>&1
ok $? "group create"
feed_and_stop TERM "$tmp/g.zarr" --array a --shape 0,$row --chunk 4,$row
is "$st" 143 "write --array stopped by SIGTERM: exit 143"
rows_are "$tmp/g.zarr/a" 10 "the array holds the 10 rows read"
"$SP" verify "$tmp/g.zarr" > /dev/null 2>&1
ok $? "and the group verifies"

# A signal the caller ignores (nohup) stays ignored: the input's end, not
# the signal, ends the write.
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
(trap '' HUP && exec "$SP" write --dtype uint8 --input "$tmp/fifo" \
	--shape 0,$row --chunk 4,$row "$tmp/nohup.zarr" 2> "$tmp/err") &
pid=$!
exec 3> "$tmp/fifo"
head -c $((5 * row)) "$tmp/in.raw" >&3
blocked_reading "$pid" && kill -HUP "$pid"
tail -c +$((5 * row + 1)) "$tmp/rows.raw" >&3
exec 3>&-
wait "$pid"
is $? 0 "an ignored SIGHUP does not stop write: exit 0 at the input's end"
rows_are "$tmp/nohup.zarr" 10 "and every row is written"
done_testing
