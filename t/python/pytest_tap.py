"""pytest_tap - a pytest plugin that reports one TAP line per test.

t/python-package.sh loads it with -p; the TAP goes to the file descriptor
named by SHARDPIPE_TAP_FD (pytest's own report goes to the log), so that
Automake's TAP driver counts every pytest test in `make check`'s closing
lines.  A test is "not ok" when any of its phases failed, "ok # SKIP" with
pytest's reason when skipped; collection errors and a pytest exit status
other than 0 or 1 are failures too, so a broken suite never passes.
"""

import os

_out = None
_n = 0
_state = {}


def _emit(line):
    _out.write(line + "\n")
    _out.flush()


def pytest_configure(config):
    global _out
    _out = os.fdopen(int(os.environ.get("SHARDPIPE_TAP_FD", "1")), "w",
                     closefd=False)


def pytest_collectreport(report):
    global _n
    if report.failed:
        _n += 1
        _emit("not ok %d - collecting %s" % (_n, report.nodeid))


def pytest_runtest_logreport(report):
    st = _state.setdefault(report.nodeid, {"failed": False, "skip": None})
    if report.failed:
        st["failed"] = True
    elif report.skipped:
        reason = report.longrepr
        if isinstance(reason, tuple):
            reason = reason[2]
        st["skip"] = str(reason).replace("Skipped: ", "")


def pytest_runtest_logfinish(nodeid, location):
    global _n
    st = _state.pop(nodeid, {"failed": True, "skip": None})
    _n += 1
    name = nodeid.replace("#", "\\#")
    if st["failed"]:
        _emit("not ok %d - %s" % (_n, name))
    elif st["skip"] is not None:
        _emit("ok %d - %s # SKIP %s" % (_n, name,
                                        st["skip"].replace("\n", " ")))
    else:
        _emit("ok %d - %s" % (_n, name))


def pytest_sessionfinish(session, exitstatus):
    global _n
    if int(exitstatus) not in (0, 1):
        _n += 1
        _emit("not ok %d - pytest exited with status %d" % (_n,
                                                            int(exitstatus)))
    _emit("1..%d" % _n)
