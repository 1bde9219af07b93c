"""readers_group - zarr-python 3 and TensorStore read a group that the
library wrote with several streams at once (t/group --keep).

t/group appends four arrays from four threads into one group sharing its
worker threads, overwrites one of them, and adds a child group, a
directory of the user's files and a file beside the arrays; it leaves the
group, each array's input and a manifest (name, dtype, shape).  Checks:
zarr-python opens the root as a group and lists the arrays among its
members, and reads each array equal to its input; TensorStore's zarr3
driver opens each array and reads the same; and zarr-python sees the child
group as a group.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import Tap, expect, import_readers, run, scratch_dir  # noqa: E402

np, ts, zarr = import_readers()


def main():
    tap = Tap()
    top = os.environ.get("top_builddir", ".")
    prog = os.path.join(top, "t", "group")
    if not os.access(prog, os.X_OK):
        Tap.skip_all("t/group not built")
    d = scratch_dir("readers-group")
    r = run([prog, "--keep", d], timeout=600)
    if r.returncode != 0:
        Tap.bail_out("t/group --keep failed: " + r.describe())
    with open(os.path.join(d, "manifest.json")) as f:
        arrays = json.load(f)
    root = os.path.join(d, "g.zarr")
    tap.plan(3 + 2 * len(arrays))

    def inputs(a):
        with open(os.path.join(d, a["name"] + ".bin"), "rb") as f:
            raw = f.read()
        return np.frombuffer(raw, dtype=np.dtype(a["dtype"]).newbyteorder(
            "=")).reshape(a["shape"])

    def group_opens():
        g = zarr.open_group(root, mode="r")
        names = {name for name, _ in g.arrays()}
        want = {a["name"] for a in arrays}
        expect(want <= names, "arrays %r, want %r among them"
               % (sorted(names), sorted(want)))
    tap.check("zarr-python opens the root as a group listing its arrays",
              group_opens)

    def sub_is_group():
        g = zarr.open_group(root, mode="r")
        expect(isinstance(g["sub"], zarr.Group), "sub is %r" % g["sub"])
    tap.check("zarr-python sees the child group as a group", sub_is_group)

    def zarr_reads(a):
        def check():
            g = zarr.open_group(root, mode="r")
            got = g[a["name"]][...]
            want = inputs(a)
            expect(got.shape == want.shape, "shape %r, want %r"
                   % (got.shape, want.shape))
            # Bytes, so that a NaN of a float array compares too.
            expect(got.tobytes() == want.tobytes(),
                   "values differ from the input")
        return check

    def ts_reads(a):
        def check():
            arr = ts.open({"driver": "zarr3", "kvstore": {
                "driver": "file",
                "path": os.path.join(root, a["name"])}}).result()
            got = arr.read().result()
            want = inputs(a)
            expect(got.shape == want.shape, "shape %r, want %r"
                   % (got.shape, want.shape))
            expect(got.tobytes() == want.tobytes(),
                   "values differ from the input")
        return check

    for a in arrays:
        tap.check("zarr-python reads %s (%s %r) from the group"
                  % (a["name"], a["dtype"], a["shape"]), zarr_reads(a))
        tap.check("TensorStore reads %s" % a["name"], ts_reads(a))

    def attrs_empty():
        g = zarr.open_group(root, mode="r")
        expect(dict(g.attrs) == {}, "attributes %r" % dict(g.attrs))
    tap.check("the group's attributes are empty", attrs_empty)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
