#!/bin/sh
# fault-valgrind.sh - the fault, misuse and hostile-store programs under
# valgrind: every stream a fault ends, every refused store and every misuse
# must release all it took (no leak, no invalid read or write).  Runs the
# fault sweeps in their quick form (every 9th or 5th fault point).
. "${top_srcdir:-.}/t/lib.sh"
top_builddir=${top_builddir:-.}
command -v valgrind > /dev/null 2>&1 || skip_all "valgrind is not installed"
case "${SHARDPIPE_SANITIZER:-}" in
?*) skip_all "built with $SHARDPIPE_SANITIZER, which valgrind cannot run" ;;
esac
progs="fault-store fault-sink misuse-api hostile-store"
for p in $progs; do
	[ -x "$top_builddir/t/$p" ] || skip_all "t/$p is not built"
done
valgrind -q --error-exitcode=99 true > /dev/null 2>&1 ||
	skip_all "valgrind does not run here"

scratch vg
test_seed
export SHARDPIPE_TEST_SEED="$seed" SHARDPIPE_FAULT_QUICK=1
# Passive OpenMP threads: spinning ones make valgrind crawl, and the
# programs re-run themselves to set it when it is unset.
export OMP_WAIT_POLICY=passive
export SHARDPIPE_TEST_TIMEOUT_SCALE=20
set -- $progs
plan $#
for p in $progs; do
	# Children the programs start (the CLI, a re-run of themselves in a
	# fresh process) run natively: only the program's own work is
	# checked here.
	"$top_builddir/libtool" --mode=execute valgrind -q \
		--leak-check=full --errors-for-leak-kinds=definite,indirect \
		--error-exitcode=99 --trace-children=no \
		"$top_builddir/t/$p" > "$tmp/$p.tap" 2> "$tmp/$p.err"
	rc=$?
	fails=$(grep -c '^not ok' "$tmp/$p.tap")
	ok $(( rc != 0 || fails != 0 )) "t/$p under valgrind: exit $rc, $fails failed"
	if [ "$rc" -ne 0 ] || [ "$fails" -ne 0 ]; then
		grep '^not ok' "$tmp/$p.tap" | head -5 | while IFS= read -r l; do diag "$l"; done
		head -40 "$tmp/$p.err" | while IFS= read -r l; do diag "$l"; done
	fi
done
done_testing
