#!/bin/sh
# cpu-deal-clones.sh - t/cpu-deal on every clone of the channel dealers
# (doc/design.md §6.2).  The loader picks a clone from the CPU it runs on,
# so a machine runs only its own: here qemu-x86_64 (Debian's qemu-user)
# emulates a CPU of each level, qemu64 for the baseline and Haswell for
# x86-64-v3, and the host runs its own (x86-64-v4 where it has AVX-512).
# Each run, from one printed seed, must pass every case and name the
# clone its CPU selects.
# Skips where configure built the dealers once, under a sanitizer (whose
# runtime qemu cannot host) and without qemu-x86_64.
. "${top_srcdir:-.}/t/lib.sh"
deal=${top_builddir:-.}/t/cpu-deal
case "${SHARDPIPE_SANITIZER:-}" in
?*) skip_all "built with $SHARDPIPE_SANITIZER, which qemu-x86_64 cannot run" ;;
esac
[ -x "$deal" ] || bail_out "t/cpu-deal not built"
scratch cpudealclones
"$deal" > "$tmp/first" 2>&1
cases=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tmp/first")
host=$(sed -n 's/^# dealer clone: //p' "$tmp/first")
[ -n "$cases" ] && [ "$cases" -gt 0 ] && [ -n "$host" ] ||
	bail_out "t/cpu-deal printed no plan or no clone"
[ "$host" != "none (built once)" ] ||
	skip_all "dealers built once (configure: cpu dispatch no)"
command -v qemu-x86_64 > /dev/null 2>&1 ||
	skip_all "no qemu-x86_64 (Debian's qemu-user) to emulate each CPU level"

plan 6
# One seed for every run, so that the clones deal the same data.
test_seed
SHARDPIPE_TEST_SEED=$seed
export SHARDPIPE_TEST_SEED
# run MODEL CLONE: t/cpu-deal on an emulated MODEL (host: none) must pass
# all its cases and select CLONE.
run() {
	if [ "$1" = host ]; then
		"$deal" > "$tmp/out" 2> "$tmp/err"
	else
		# TCG names the host features it leaves out on stderr.
		qemu-x86_64 -cpu "$1" "$deal" > "$tmp/out" 2> "$tmp/err"
	fi
	rc=$?
	passed=$(grep -c '^ok ' "$tmp/out")
	failed=$(grep -c '^not ok ' "$tmp/out")
	[ "$rc" -eq 0 ] && [ "$passed" -eq "$cases" ] && [ "$failed" -eq 0 ]
	ok $? "$1: $passed of $cases cases read back equal (exit $rc)"
	[ "$failed" -eq 0 ] || grep '^not ok ' "$tmp/out" | sed 's/^/#   /'
	is "$(sed -n 's/^# dealer clone: //p' "$tmp/out")" "$2" \
		"$1: the CPU selects the $2 clone"
}
run qemu64 default
run Haswell x86-64-v3
run host "$host"

done_testing
