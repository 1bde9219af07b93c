"""readers_attrs - zarr-python 3 and TensorStore read the user attributes
that `shardpipe write --attr KEY=JSON` puts into zarr.json.

Each attribute's expected value is json.loads of the text given on the
command line (Python's own parser, not the library's), compared with what
zarr-python's `.attrs` returns and with what TensorStore's json driver reads
at zarr.json's /attributes; TensorStore's zarr3 driver must also open the
array and read the data.  The attributes are chosen to be awkward: keys
with quotes, backslashes, control characters and non-ASCII text, an integer
beyond 64 bits, a float of 17 digits, nesting, unicode escapes, empty
containers, and a value replaced by a later --attr.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, import_readers,  # noqa: E402
                   require_shardpipe, run, scratch_dir, test_seed)

np, ts, zarr = import_readers()

# (key, JSON text) in the order given; "name" is given twice.
ATTRS = [
    ("name", '"first"'),
    ("exposure_ms", "12.5"),
    ("roi", '{"x": [0, 64], "y": [16, 48], "meta": {"by": null}}'),
    ("flags", "[true, false, null]"),
    ("big", "123456789012345678901234567890"),
    ("precise", "0.10000000000000001"),
    ("neg", "-7"),
    ("empty", "{}"),
    ("none", "[]"),
    ("escaped", '"tab\\tquote\\" slash\\\\ \\u00e9 \\ud83d\\ude00"'),
    ('q"uote\\back', '"odd key"'),
    ("ctrl\x01\x1fkey", "1"),
    ("caf\u00e9 \u65e5\u672c", '"\u00fcnicode"'),
    ("name", '"second"'),
]
CHECKS = 6


def expected():
    want = {}
    for k, v in ATTRS:
        want[k] = json.loads(v)
    return want


def same(got, want, who):
    got = dict(got)
    if got == want and list(got) == list(want):
        return None
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    wrong = [k for k in want if k in got and got[k] != want[k]]
    return "%s: missing %r, extra %r, wrong %r; order %r" % (
        who, missing, extra, [(k, got[k], want[k]) for k in wrong],
        list(got))


def main():
    tap = Tap()
    sp = require_shardpipe()
    rng = np.random.default_rng(test_seed())
    work = scratch_dir("readers-attrs")
    tap.plan(CHECKS)
    a = rng.integers(0, 65535, (6, 10, 12), endpoint=True).astype("<u2")
    store = os.path.join(work, "attrs.zarr")
    argv = [sp, "write", "--shape", "0,10,12", "--chunk", "2,4,5",
            "--shard-shape", "4,8,10", "--dtype", "uint16"]
    for k, v in ATTRS:
        argv += ["--attr", "%s=%s" % (k, v)]
    argv.append(store)
    r = run(argv, stdin=a.tobytes())
    if not tap.ok(r.returncode == 0, "shardpipe write with %d --attr"
                  % len(ATTRS), r.describe()):
        for _ in range(CHECKS - 1):
            tap.skip("attributes", "the write failed")
        return tap.finish()
    want = expected()

    def raw_json():
        with open(os.path.join(store, "zarr.json"), "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
        return same(doc.get("attributes", {}), want, "zarr.json as JSON")
    tap.check("zarr.json parses with Python's json and holds the "
              "attributes, in the order first given", raw_json)
    za = zarr.open_array(store, mode="r")
    tap.check("zarr-python's .attrs", lambda: same(za.attrs, want,
                                                   "zarr-python"))

    def zarr_data():
        expect(np.array_equal(za[...], a), "zarr-python reads other data")
    tap.check("zarr-python reads the data", zarr_data)
    ctx = ts.Context()

    def ts_attrs():
        j = ts.open({"driver": "json",
                     "kvstore": {"driver": "file",
                                 "path": os.path.join(store, "zarr.json")},
                     "json_pointer": "/attributes"},
                    context=ctx).result().read().result()
        got = j.item() if hasattr(j, "item") else j
        # The json driver returns members in its own (sorted) order, and
        # holds an integer beyond 64 bits as the nearest double, as RFC
        # 8259 section 6 allows an implementation to.
        ts_want = {k: float(v) if isinstance(v, int) and
                   not isinstance(v, bool) and
                   not -2**63 <= v < 2**64 else v for k, v in want.items()}
        return same(dict(sorted(got.items())), dict(sorted(ts_want.items())),
                    "TensorStore json driver")
    tap.check("TensorStore reads zarr.json's /attributes", ts_attrs)

    def ts_data():
        t = ts.open({"driver": "zarr3",
                     "kvstore": {"driver": "file", "path": store}},
                    read=True, context=ctx).result()
        expect(np.array_equal(t.read().result(), a),
               "TensorStore reads other data")
    tap.check("TensorStore's zarr3 driver opens the array and reads it",
              ts_data)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
