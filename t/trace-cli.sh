#!/bin/sh
# trace-cli.sh - SHARDPIPE_TRACE through the program (doc/design.md §23):
# a file that is not a trace exits 2 and stays as it was, a path that
# cannot be created exits 1, neither creates a store; an empty value
# traces nothing; one `shardpipe` run writes a trace that bench/trace-svg.py
# reads, says the overlap of, and draws as well-formed SVG.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
scratch tracecli
test_seed
plan 12

PY=${SHARDPIPE_PYTHON:-python3}
has() { grep -q -F -e "$2" "$1"; }

# 6 rows of 64 x 64 uint16 in 1024 chunks: a batch each.
random_bytes $((6 * 64 * 64 * 2)) "$tmp/f.raw"
W="$SP write --backend reference --shape 0,64,64 --chunk 1,2,2 --dtype uint16
	--chunks-per-shard 2,32,32 --input $tmp/f.raw"

printf 'my notes\n' > "$tmp/notes"
SHARDPIPE_TRACE="$tmp/notes" $W "$tmp/a.zarr" 2> "$tmp/err"
is $? 2 "a file that is not a trace exits 2"
has "$tmp/err" "$tmp/notes" && has "$tmp/err" "not a shardpipe trace"
ok $? "and the message names the file and why"
[ "$(cat "$tmp/notes")" = "my notes" ] && [ ! -e "$tmp/a.zarr" ]
ok $? "and the file is as it was, and no store is created"

SHARDPIPE_TRACE="$tmp/none/t.json" $W "$tmp/a.zarr" 2> "$tmp/err"
is $? 1 "a trace in a missing directory exits 1"
has "$tmp/err" "$tmp/none/t.json" && [ ! -e "$tmp/a.zarr" ]
ok $? "naming the file, creating no store"

SHARDPIPE_TRACE= $W "$tmp/b.zarr" > /dev/null 2>&1
is $? 0 "an empty SHARDPIPE_TRACE traces nothing"

SHARDPIPE_TRACE="$tmp/t.json" $W "$tmp/c.zarr" > /dev/null 2> "$tmp/err"
is $? 0 "a traced write succeeds"
head -c 60 "$tmp/t.json" | grep -q -F '{"otherData":{"writer":"shardpipe trace"}'
ok $? "and the file starts as a shardpipe trace"
# The same file again: a trace may be replaced.
SHARDPIPE_TRACE="$tmp/t.json" $W --overwrite "$tmp/c.zarr" > /dev/null 2>&1
is $? 0 "an existing trace is replaced"

if ! "$PY" -c 'import json, xml.dom.minidom' 2> /dev/null; then
	skip 3 "no python3 for bench/trace-svg.py"
	done_testing
	exit
fi
"$PY" "$top_srcdir/bench/trace-svg.py" "$tmp/t.json" "$tmp/t.svg" \
	> "$tmp/out" 2> "$tmp/err"
is $? 0 "trace-svg.py reads the trace"
has "$tmp/out" "for 5 of 5 batches"
ok $? "and finds batch k+1 uploaded before batch k is fetched in every pair"
"$PY" -c 'import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1]); sys.exit(len(d.getElementsByTagName("rect")) < 50)' \
	"$tmp/t.svg"
ok $? "and draws it as SVG that parses, one bar per span"
done_testing
