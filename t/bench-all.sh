#!/bin/sh
# bench-all.sh - `shardpipe bench --all`: every workload with every fill,
# one JSON line each, in the order of bench/README.md's table, each row
# measured in a process of its own so that none starts with the pools an
# earlier row gave back (doc/design.md §27) and reads a peak of 0.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch bench-all
plan 8

"$SP" bench --all --backend cpu --threads 2 --rows 1 --json \
	> "$tmp/out" 2> "$tmp/err"
is $? 0 "bench --all --rows 1 --json"
is "$(wc -l < "$tmp/out" | tr -d ' ')" 12 "one line per workload and fill"

expect=""
for w in frames stack cube; do
	for f in micro noise12 xor zeros; do
		expect="$expect$w/$f "
	done
done
got=$(sed 's/^{"workload": "\([a-z]*\)", "fill": "\([a-z0-9]*\)".*/\1\/\2/' \
	"$tmp/out" | tr '\n' ' ')
is "$got" "$expect" "the rows come in the table's order"

# A row that reused the pools of the row before it read 0, 4 KiB or
# 100 KiB above its baseline; a stream of these workloads writes
# megabytes of staging and shards.
low=$(sed 's/.*"rss_peak_bytes": \([0-9]*\),.*/\1/' "$tmp/out" |
	awk '$1 < 1048576 { n++ } END { print n + 0 }')
is "$low" 0 "every row's peak is its own stream's (at least 1 MiB)"
[ "$(grep -c '"bound": {"gbps"' "$tmp/out")" -eq 12 ]
ok $? "every row has its bound"

"$SP" bench --all --backend nosuch --rows 1 > "$tmp/out" 2> "$tmp/err"
rc=$?
n=$(grep -c 'unknown backend "nosuch"' "$tmp/err")
[ "$rc" -eq 2 ] && [ "$n" -eq 1 ]
ok $? "a row that fails stops --all with its exit status and one message (exit $rc, $n messages)"

# A reader that goes away after the head: the row's process dies of
# SIGPIPE writing its row, and --all ends by the same signal, as one
# row alone would, without a message.
{ "$SP" bench --all --backend cpu --threads 2 --rows 1 2> "$tmp/err"
  echo $? > "$tmp/rc"; } | head -c 1 > /dev/null
is "$(cat "$tmp/rc")" 141 "a closed pipe ends --all by SIGPIPE (128 + 13)"
[ ! -s "$tmp/err" ] || ! grep -q "killed by signal" "$tmp/err"
ok $? "and says nothing of a killed process"
