"""readers_plate - an OME-NGFF 0.5 plate written by the library (t/plate
--keep: five fields of four wells written in a scrambled order, the first
two streaming at once from two threads, one field a pyramid, eight wells
left empty), read by the independent readers:

  - the plate's, every well's and every field's attributes validate
    against the 0.5 JSON schemas strict_plate, strict_well and
    strict_image (the copy the ngff-zarr package carries);
  - ome-zarr-models loads it as an HCS whose wells all exist;
  - ome-zarr opens it as a plate and stitches its wells: every well's
    tile is its field 0, the empty wells zero;
  - zarr-python reads every field equal to its input.
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ngff_schema import validators  # noqa: E402
from sptap import Tap, expect, run, scratch_dir, versions  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402


def main():
    tap = Tap()
    Tap.diag(versions(("numpy", "zarr", "ome-zarr", "ome-zarr-models",
                       "jsonschema", "ngff-zarr")))
    top = os.environ.get("top_builddir", ".")
    prog = os.path.join(top, "t", "plate")
    if not os.access(prog, os.X_OK):
        Tap.skip_all("t/plate not built")
    d = scratch_dir("readers-plate")
    r = run([prog, "--keep", d], timeout=300)
    if r.returncode != 0:
        Tap.bail_out("t/plate --keep failed: " + r.describe())
    root = os.path.join(d, "a.zarr")
    inputs = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".bin"):
            row, col, field = f[:-4].split("_")
            inputs["%s/%s/%s" % (row, col, field)] = os.path.join(d, f)
    tap.plan(4 + len(inputs))

    def attrs(path):
        return zarr.open_group(os.path.join(root, path), mode="r") \
            .attrs.asdict()

    def schemas():
        v = validators()
        plate = attrs("")
        errs = [e.message for e in v["plate"].iter_errors(plate)]
        wells = [w["path"] for w in plate["ome"]["plate"]["wells"]]
        for w in wells:
            wa = attrs(w)
            errs += ["%s: %s" % (w, e.message)
                     for e in v["well"].iter_errors(wa)]
            for im in wa["ome"]["well"]["images"]:
                p = w + "/" + im["path"]
                errs += ["%s: %s" % (p, e.message)
                         for e in v["image"].iter_errors(attrs(p))]
        expect(not errs, "schema: %s" % errs[:3])
        listed = {w + "/" + im["path"] for w in wells
                  for im in attrs(w)["ome"]["well"]["images"]}
        expect(listed == set(inputs), "fields listed %s, written %s"
               % (sorted(listed), sorted(inputs)))
    tap.check("plate, wells and fields valid against OME-NGFF 0.5's "
              "strict schemas, listing every field written", schemas)

    def models():
        from ome_zarr_models.v05.hcs import HCS
        with warnings.catch_warnings():
            # ome-zarr-models asks for plate.version, which 0.5 moved to
            # ome.version (the schema has no such member).
            warnings.simplefilter("ignore")
            h = HCS.from_zarr(zarr.open_group(root, mode="r"))
        expect(h.n_wells == 4 and len(list(h.well_groups)) == 4,
               "%d wells, %d found" % (h.n_wells, len(list(h.well_groups))))
    tap.check("ome-zarr-models loads it as an HCS plate of 4 wells, each "
              "there", models)

    def read(path):
        a = np.asarray(zarr.open_group(os.path.join(root, path),
                                       mode="r")["0"][...])
        want = np.fromfile(inputs[path], dtype="=u2").reshape(a.shape)
        return a, want

    def ome_zarr_plate():
        from ome_zarr.io import parse_url
        from ome_zarr.reader import Reader
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nodes = list(Reader(parse_url(root))())
        expect(nodes and any(type(s).__name__ == "Plate"
                             for s in nodes[0].specs), "no plate found")
        grid = np.asarray(nodes[0].data[0])
        t0, ny, nx = read("A/1/0")[0].shape
        expect(grid.shape == (t0, 3 * ny, 4 * nx),
               "stitched %s" % (grid.shape,))
        for r, row in enumerate("ABC"):
            for c, col in enumerate("1234"):
                tile = grid[:, r * ny:(r + 1) * ny, c * nx:(c + 1) * nx]
                key = "%s/%s/0" % (row, col)
                want = read(key)[1] if key in inputs else \
                    np.zeros_like(tile)
                expect(np.array_equal(tile, want), "well %s/%s differs"
                       % (row, col))
    tap.check("ome-zarr opens it as a plate: each well its field 0, the "
              "empty ones zero", ome_zarr_plate)

    def ome_zarr_pyramid():
        from ome_zarr.io import parse_url
        from ome_zarr.reader import Reader
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nodes = list(Reader(parse_url(os.path.join(root, "B/2/0")))())
        expect(nodes and len(nodes[0].data) == 3,
               "%d levels" % (len(nodes[0].data) if nodes else 0))
    tap.check("ome-zarr opens the pyramid field B/2/0, 3 levels",
              ome_zarr_pyramid)

    for path in sorted(inputs):
        def same(path=path):
            got, want = read(path)
            bad = np.argwhere(got != want)
            expect(not len(bad), "%d elements differ, first at %s"
                   % (len(bad), tuple(bad[0]) if len(bad) else None))
        tap.check("zarr-python reads field %s equal to its input" % path,
                  same)
    sys.exit(tap.finish())


main()
