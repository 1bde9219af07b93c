# run-python.sh - sourced by t/readers-*.sh: find the Python that holds the
# independent Zarr readers and run one TAP-emitting script under it, or
# report the whole test as skipped with the reason.
#
#   run_python SCRIPT MODULE...   run t/python/SCRIPT with $SHARDPIPE_PYTHON
#                                 when it imports every MODULE
#
# SHARDPIPE_PYTHON is set by .ci/run after scripts/setup-python-readers; on
# a machine without it the tests skip (never pass).  With no MODULE the
# script needs only the standard library, and python3 from PATH stands in
# when SHARDPIPE_PYTHON is unset.
export PYTHONDONTWRITEBYTECODE=1

run_python() {
	script=$1
	shift
	py=$SHARDPIPE_PYTHON
	if [ -z "$py" ]; then
		if [ $# -gt 0 ] || ! command -v python3 > /dev/null 2>&1; then
			echo "1..0 # SKIP SHARDPIPE_PYTHON is not set (run scripts/setup-python-readers and export SHARDPIPE_PYTHON=VENV/bin/python)"
			exit 0
		fi
		py=python3
	fi
	if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 8))' \
		> /dev/null 2>&1; then
		echo "1..0 # SKIP SHARDPIPE_PYTHON=$py cannot be run or is older than Python 3.8"
		exit 0
	fi
	for m in "$@"; do
		if ! "$py" -c "import $m" > /dev/null 2>&1; then
			echo "1..0 # SKIP $py cannot import $m (run scripts/setup-python-readers)"
			exit 0
		fi
	done
	SP=${SHARDPIPE:-./shardpipe}
	if [ ! -x "$SP" ]; then
		echo "1..0 # SKIP shardpipe program not built"
		exit 0
	fi
	exec "$py" "${top_srcdir:-.}/t/python/$script"
}
