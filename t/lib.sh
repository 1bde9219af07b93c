# lib.sh - TAP helpers for shell tests: plan, ok, is, skip, skip_all, diag.
# Sourced by t/*.sh; SHARDPIPE (the built program) and top_builddir come
# from the test environment.
tap_n=0
tap_fail=0
plan() { echo "1..$1"; }
diag() { printf '# %s\n' "$*"; }
ok() {
	# ok CONDITION-EXIT-STATUS DESCRIPTION
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2"
	else
		echo "not ok $tap_n - $2"
		tap_fail=$((tap_fail + 1))
	fi
}
is() {
	# is GOT WANTED DESCRIPTION
	tap_n=$((tap_n + 1))
	if [ "$1" = "$2" ]; then
		echo "ok $tap_n - $3"
	else
		echo "not ok $tap_n - $3"
		diag "     got: $1"
		diag "  wanted: $2"
		tap_fail=$((tap_fail + 1))
	fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# bail_out REASON: the test cannot go on and fails (TAP "Bail out!").
bail_out() { echo "Bail out! $*"; exit 1; }
skip() {
	# skip N REASON: the next N tests, reported as skipped for REASON
	_skip_n=$1
	shift
	while [ "$_skip_n" -gt 0 ]; do
		tap_n=$((tap_n + 1))
		echo "ok $tap_n # SKIP $*"
		_skip_n=$((_skip_n - 1))
	done
}
done_testing() { [ "$tap_fail" -eq 0 ]; }

# test_seed: SHARDPIPE_TEST_SEED or the clock; printed for replay.
test_seed() {
	seed=${SHARDPIPE_TEST_SEED:-$(date +%s)}
	diag "seed $seed (set SHARDPIPE_TEST_SEED=$seed to replay)"
}

# random_bytes N FILE: N pseudo-random bytes from the seed (perl is part of
# every Debian system).
random_bytes() {
	perl -e 'srand($ARGV[0]); my $n = $ARGV[1]; my $s = "";
		 $s .= pack("C", int(rand(256))) for 1..$n; print $s' \
		"$seed" "$1" > "$2"
}

# need_shardpipe: SP names the built program; without one the whole test is
# skipped.
need_shardpipe() {
	SP=${SHARDPIPE:-./shardpipe}
	[ -x "$SP" ] || skip_all "shardpipe program not built"
}

# scratch TAG: tmp names a new directory, removed when the test exits.
scratch() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-$1-XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
}

# ok_empty FILE DESCRIPTION [LABEL]: one test, passing when FILE is empty;
# otherwise each of its lines follows as a comment, after LABEL.
ok_empty() {
	if [ -s "$1" ]; then
		ok 1 "$2"
		while IFS= read -r line || [ -n "$line" ]; do
			diag "  ${3:+$3 }$line"
		done < "$1"
	else
		ok 0 "$2"
	fi
}
