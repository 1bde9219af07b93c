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
# ok_shown STATUS DESCRIPTION FILE: ok, and on failure FILE's lines as
# diagnostics: the log says why a command failed, and run-sanitizers
# reads a sanitizer's report there (asan_again).
ok_shown() {
	ok "$1" "$2"
	[ "$1" -eq 0 ] || sed 's/^/# /' "$3"
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
todo() {
	# todo CONDITION-EXIT-STATUS DESCRIPTION REASON: a known shortfall,
	# reported as TAP TODO (in the log, not a failure) until it is met
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2 # TODO $3"
	else
		echo "not ok $tap_n - $2 # TODO $3"
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

# test_sized WHAT FULL SMALL: the count for the suite's size in force
# (SHARDPIPE_TEST_SIZE, full or small; t/testutil.h says why), printed as
# a comment, in sized.
test_sized() {
	case ${SHARDPIPE_TEST_SIZE:-full} in
	full) sized=$2 ;;
	small) sized=$3 ;;
	*) bail_out "SHARDPIPE_TEST_SIZE=$SHARDPIPE_TEST_SIZE: neither full nor small" ;;
	esac
	diag "$1: $sized (SHARDPIPE_TEST_SIZE ${SHARDPIPE_TEST_SIZE:-full})"
}

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

# The skip policy (doc/design.md §18.1).  A backend that configure built
# (SHARDPIPE_TEST_BACKENDS, from the test environment, lists the plugins)
# may be skipped only for the documented absence of its device, and the
# Python readers, once SHARDPIPE_PYTHON names them (as CI does), not at
# all: anything else that makes them unusable fails the test, for a skip
# would hide the breakage.  t/testutil.c and t/python/sptap.py apply the
# same rule.

# device_absent REASON: whether a probe's REASON is the documented absence
# of a device.
device_absent() {
	case $1 in
	"no CUDA device"*|"no OpenCL platform"*|"no OpenCL device"*) return 0 ;;
	esac
	return 1
}

# backend_built NAME: whether this build has backend NAME.
backend_built() {
	case $1 in cpu|reference) return 0 ;; esac
	case " ${SHARDPIPE_TEST_BACKENDS-} " in *" $1 "*) return 0 ;; esac
	return 1
}

# backend_usable NAME: 0 when `$SP backends` says NAME runs here.
# Otherwise backend_why says why, for the caller's skip, and the status is
# 1, when the skip is allowed: the backend is not built, or its device is
# absent.  A built backend unusable for any other reason (a plugin that
# does not load, a probe that fails) ends the test as a failure.
backend_usable() {
	_out=$("$SP" backends 2>&1) ||
		bail_out "shardpipe backends failed: $_out"
	_line=$(printf '%s\n' "$_out" | grep "^$1: ")
	case $_line in
	"$1: unusable: "*) backend_why=${_line#"$1: unusable: "} ;;
	"$1: "*) backend_why=; return 0 ;;
	*) backend_why="shardpipe backends lists no $1 backend" ;;
	esac
	if ! backend_built "$1"; then
		backend_why="the $1 backend is not built (configure found no $1)"
		return 1
	fi
	device_absent "$backend_why" && return 1
	bail_out "$1 is built but unusable: $backend_why"
}

# python_usable MINOR [MODULE...]: 0 when PY, SHARDPIPE_PYTHON, is Python
# 3.MINOR or later and imports every MODULE.  Without SHARDPIPE_PYTHON, PY
# is python3 from PATH for a test with no MODULE (the standard library
# only); otherwise, or when that does not do, the status is 1 and
# python_why says why, for a skip.  With SHARDPIPE_PYTHON set (the readers
# are enabled), a Python that does not run or lacks a module fails the
# test.
python_usable() {
	_minor=$1
	shift
	PY=${SHARDPIPE_PYTHON-}
	_need=1
	if [ -z "$PY" ]; then
		_need=0
		python_why="SHARDPIPE_PYTHON is not set (run scripts/setup-python-readers and export SHARDPIPE_PYTHON=VENV/bin/python)"
		[ $# -eq 0 ] && command -v python3 > /dev/null 2>&1 || return 1
		PY=python3
	fi
	python_why=
	if ! "$PY" -c "import sys; sys.exit(sys.version_info < (3, $_minor))" \
		> /dev/null 2>&1; then
		python_why="$PY cannot be run or is older than Python 3.$_minor"
	else
		for _m; do
			_err=$("$PY" -c "import $_m" 2>&1) && continue
			python_why="$PY cannot import $_m: $(printf '%s\n' "$_err" | tail -1) (run scripts/setup-python-readers)"
			break
		done
	fi
	[ -z "$python_why" ] && return 0
	[ $_need = 1 ] && bail_out "SHARDPIPE_PYTHON: $python_why"
	return 1
}

# need_python MINOR [MODULE...]: python_usable, or skip the whole test.
need_python() { python_usable "$@" || skip_all "$python_why"; }

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

# tree_sum DIR: one checksum of every file's bytes under DIR, with their
# names' order, to show a refusal changed nothing.
tree_sum() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs cat | cksum); }

# refused STATUS WORDS DESCRIPTION -- COMMAND...: COMMAND exits STATUS,
# its message holds WORDS (a grep pattern), nothing under $watch changed
# and $watch_absent, when set, was not created.  Two test points.
refused() {
	want=$1 words=$2 what=$3
	shift 4
	before=$(tree_sum "$watch")
	"$@" > /dev/null 2> "$tmp/err"
	is $? "$want" "$what: exit $want"
	if grep -q -- "$words" "$tmp/err" &&
	   [ "$(tree_sum "$watch")" = "$before" ] &&
	   { [ -z "${watch_absent:-}" ] || [ ! -e "$watch_absent" ]; }; then
		ok 0 "$what: the message names it, nothing changed"
	else
		ok 1 "$what: the message names it, nothing changed"
		diag "$(cat "$tmp/err")"
	fi
}

# blocked_reading PID: wait (up to 60 s) until PID's main thread sleeps in
# a read of a pipe, having read all that was in it; 1 when it never does.
# For a signal sent once a writer has taken its input, without a timed
# guess.
blocked_reading() {
	_n=0
	while [ $_n -lt 600 ]; do
		case $(cat /proc/"$1"/wchan 2> /dev/null) in
		*pipe_read | pipe_wait) return 0 ;;
		esac
		sleep 0.1
		_n=$((_n + 1))
	done
	return 1
}

# need_wchan: skip the whole test where blocked_reading cannot see.
need_wchan() {
	[ -r /proc/self/wchan ] ||
		skip_all "no /proc/PID/wchan to see a blocked read"
	command -v mkfifo > /dev/null 2>&1 || skip_all "no mkfifo"
}
