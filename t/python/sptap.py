"""sptap - TAP output and shardpipe helpers for the Python reader tests.

Only the standard library is used here, so that a test needing no
third-party package (the metadata checks) can import it from any Python 3.

The test programs print TAP themselves: a plan line first, then one
"ok N - ..." or "not ok N - ..." line per check, and "# ..." comments.
Automake's TAP driver (build-aux/tap-driver.sh) reads that output.
"""

import os
import subprocess
import sys
import tempfile
import time
import traceback


class Tap:
    """A TAP producer whose checks never raise: an exception inside a check
    is a failure with its reason printed as a comment."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.planned = None
        self.started = time.monotonic()

    def plan(self, n):
        self.planned = n
        print("1..%d" % n, flush=True)

    @staticmethod
    def skip_all(reason):
        print("1..0 # SKIP %s" % reason, flush=True)
        sys.exit(0)

    @staticmethod
    def bail_out(reason):
        """End the test as a failure (TAP "Bail out!")."""
        print("Bail out! %s" % reason, flush=True)
        sys.exit(1)

    @staticmethod
    def diag(msg):
        for line in str(msg).splitlines() or [""]:
            print("# " + line)
        sys.stdout.flush()

    def ok(self, passed, desc, why=None, todo=None):
        self.n += 1
        desc = desc.replace("#", "\\#")
        line = "%s %d - %s" % ("ok" if passed else "not ok", self.n, desc)
        if todo:
            line += " # TODO " + todo
        print(line)
        if not passed:
            if not todo:
                self.failed += 1
            if why:
                self.diag(why)
        sys.stdout.flush()
        return passed

    def skip(self, desc, reason):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, desc.replace("#", "\\#"),
                                       reason.replace("#", "")), flush=True)

    def check(self, desc, fn, todo=None):
        """Run fn(); it passes when it returns None or True, fails with the
        returned text (or the exception) otherwise.  Returns pass/fail."""
        try:
            r = fn()
        except CheckFailed as e:
            return self.ok(False, desc, str(e), todo)
        except Exception:  # noqa: BLE001 - any error is the check failing
            return self.ok(False, desc, traceback.format_exc(limit=4), todo)
        if r is None or r is True:
            return self.ok(True, desc, todo=todo)
        return self.ok(False, desc, "failed" if r is False else str(r), todo)

    def finish(self):
        if self.planned is not None and self.n != self.planned:
            self.diag("planned %d checks, ran %d" % (self.planned, self.n))
        self.diag("%d checks, %d failed, %.1f s" %
                  (self.n, self.failed, time.monotonic() - self.started))
        return 0 if self.failed == 0 and self.n == self.planned else 1


class CheckFailed(Exception):
    """Raised inside a check with the reason it failed."""


def expect(cond, why):
    if not cond:
        raise CheckFailed(why)


def test_seed():
    """SHARDPIPE_TEST_SEED or the clock; printed so that a run replays."""
    env = os.environ.get("SHARDPIPE_TEST_SEED", "")
    seed = int(env) if env.strip() else int(time.time())
    Tap.diag("seed %d (set SHARDPIPE_TEST_SEED=%d to replay)" % (seed, seed))
    return seed


def shardpipe_program():
    """The built CLI (the test environment exports SHARDPIPE) or None."""
    sp = os.environ.get("SHARDPIPE")
    if not sp:
        top = os.environ.get("top_builddir", ".")
        sp = os.path.join(top, "shardpipe")
    return sp if os.access(sp, os.X_OK) else None


def require_shardpipe():
    """The built CLI; without one the whole test is skipped."""
    sp = shardpipe_program()
    if sp is None:
        Tap.skip_all("shardpipe program not built")
    return sp


# The probe reasons that mean the device is absent: the one reason a
# backend this build has may be left out (t/lib.sh's device_absent).
DEVICE_ABSENT = ("no CUDA device", "no OpenCL platform", "no OpenCL device")


def usable_backends(sp):
    """The backends `shardpipe backends` calls usable here.  One that this
    build has (cpu, reference, or a plugin SHARDPIPE_TEST_BACKENDS lists)
    but that is unusable for any reason other than DEVICE_ABSENT ends the
    test as a failure, as t/lib.sh's backend_usable does."""
    r = run([sp, "backends"])
    if r.returncode != 0:
        Tap.bail_out("shardpipe backends failed: " + r.describe())
    built = ["cpu", "reference"] + os.environ.get(
        "SHARDPIPE_TEST_BACKENDS", "").split()
    names = []
    for line in r.stdout.decode("utf-8", "replace").splitlines():
        name, _, rest = line.partition(": ")
        if not rest.startswith("unusable: "):
            names.append(name)
            continue
        why = rest[len("unusable: "):]
        if name in built and not why.startswith(DEVICE_ABSENT):
            Tap.bail_out("%s is built but unusable: %s" % (name, why))
    return names


def import_readers():
    """numpy, tensorstore and zarr (zarr-python 3), imported here and not at
    the top so that this module needs only the standard library.  Without
    any of them the whole test is skipped, unless SHARDPIPE_PYTHON names
    this Python as the readers' (as CI does): then it fails, for a skip
    would hide a broken environment (need_python in t/lib.sh)."""
    try:
        import numpy
        import tensorstore
        import zarr
    except ImportError as e:
        why = "zarr-python, tensorstore or numpy missing (%s)" % e
        if os.environ.get("SHARDPIPE_PYTHON"):
            Tap.bail_out("SHARDPIPE_PYTHON: " + why)
        Tap.skip_all(why)
    return numpy, tensorstore, zarr


def only_configs(configs):
    """The configurations SHARDPIPE_READERS_ONLY=N[,M..] names by number,
    or all of them when it is unset."""
    only = os.environ.get("SHARDPIPE_READERS_ONLY", "").strip()
    if not only:
        return configs
    keep = {int(x) for x in only.split(",")}
    return [c for c in configs if c.number in keep]


class Result:
    def __init__(self, argv, returncode, stdout, stderr):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def describe(self):
        err = self.stderr.decode("utf-8", "replace").strip()
        return "%s\nexit %d%s" % (" ".join(self.argv), self.returncode,
                                   ("\nstderr: " + err) if err else "")


def run(argv, stdin=None, timeout=120, env=None):
    """Run a command; stdin is bytes or None.  Returns a Result."""
    p = subprocess.run(argv, input=stdin if stdin is not None else b"",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, env=env)
    return Result([str(a) for a in argv], p.returncode, p.stdout, p.stderr)


def versions(packages=("zarr", "tensorstore", "numpy", "numcodecs")):
    """"zarr 3.1.6, tensorstore 0.1.86, ..." for the log."""
    from importlib import metadata
    out = []
    for p in packages:
        try:
            out.append("%s %s" % (p, metadata.version(p)))
        except metadata.PackageNotFoundError:
            out.append("%s (none)" % p)
    return ", ".join(out)


def scratch_dir(tag):
    """A temporary directory removed at exit unless SHARDPIPE_KEEP_TMP is
    set (then its path is printed so that stores can be inspected)."""
    d = tempfile.mkdtemp(prefix="shardpipe-%s-" % tag,
                         dir=os.environ.get("TMPDIR") or None)
    if os.environ.get("SHARDPIPE_KEEP_TMP"):
        Tap.diag("keeping stores in %s" % d)
    else:
        import atexit
        import shutil
        atexit.register(shutil.rmtree, d, True)
    return d
