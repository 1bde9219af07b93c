#!/bin/sh
# python-package.sh - the Python package (python/, issue 17): build it with
# pip against this build's libshardpipe, as `pip install ./python` does,
# and run its pytest suite, one TAP line per pytest test.
#
# It runs under $SHARDPIPE_PYTHON, the virtual environment made by
# scripts/setup-python-readers (numpy, zarr 3, tensorstore, pytest,
# setuptools); without one the test is skipped, with the reason.  With one,
# a module missing from it or a package that does not build is a failure.  Nothing is downloaded: pip
# builds with --no-build-isolation --no-index into the build tree, from a
# copy of python/ (the source tree may be read-only, as under distcheck).
. "${top_srcdir:-.}/t/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
need_python 11 pip setuptools pytest numpy
py=$PY
build=${top_builddir:-.}
[ -f "$build/.libs/libshardpipe.so" ] ||
	skip_all "no shared library built (.libs/libshardpipe.so)"

work=$build/t/python-package
rm -rf "$work"
mkdir -p "$work"
cp -R "${top_srcdir:-.}/python" "$work/src"
chmod -R u+w "$work/src"
rm -rf "$work/src/build" "$work/src/src/"*.egg-info
if ! SHARDPIPE_BUILD_DIR=$(cd "$build" && pwd) "$py" -m pip install \
	--no-build-isolation --no-index --no-deps --disable-pip-version-check \
	--target "$work/site" "$work/src" > "$work/pip.log" 2>&1; then
	echo "1..1"
	echo "not ok 1 - pip install ./python against this build"
	sed 's/^/# /' "$work/pip.log"
	exit 1
fi
# pytest's report goes to stderr (the log), its TAP to our stdout.
PYTHONPATH="$work/site:${top_srcdir:-.}/t/python" SHARDPIPE_TAP_FD=3 \
	"$py" -m pytest -p pytest_tap -p no:cacheprovider -rs \
	--rootdir "$work/src" "$work/src/tests" 3>&1 1>&2
status=$?
[ "${SHARDPIPE_KEEP_TMP:-0}" = 1 ] || rm -rf "$work"
# The TAP lines carry the verdict; 0 and 1 are "all passed" and "some
# failed", anything else was reported as a failure by the plugin.
exit 0
