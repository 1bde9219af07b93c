# run-python.sh - sourced by t/readers-*.sh: find the Python that holds the
# independent Zarr readers and run one TAP-emitting script under it.
#
#   run_python SCRIPT MODULE...   run t/python/SCRIPT with $SHARDPIPE_PYTHON
#                                 when it imports every MODULE
#
# SHARDPIPE_PYTHON is set by .ci/run after scripts/setup-python-readers.
# Without it the tests skip (never pass); with it, a Python that cannot
# import a reader fails (need_python in t/lib.sh).  With no MODULE the
# script needs only the standard library, and python3 from PATH stands in
# when SHARDPIPE_PYTHON is unset.
. "${top_srcdir:-.}/t/lib.sh"
export PYTHONDONTWRITEBYTECODE=1

run_python() {
	script=$1
	shift
	need_python 8 "$@"
	need_shardpipe
	exec "$PY" "${top_srcdir:-.}/t/python/$script"
}
