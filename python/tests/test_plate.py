"""Tests of shardpipe.Plate (OME-NGFF 0.5 plates, doc/design.md §28.8):
fields written from Python in a scrambled order, two of them opened and
streaming at once from two threads, a pyramid field, wells left empty;
every field read back by zarr-python equal to its input; the plate's,
wells' and fields' metadata valid against the 0.5 strict schemas (as
t/python/readers_plate.py checks them) and ome-zarr-models' HCS; the same
metadata whatever the order; and every refusal a Python user could meet,
with its exception and nothing written."""

import json
import os
import threading
import warnings

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")

ROWS, COLS = ["A", "B", "C"], ["1", "2", "3", "4"]
# row, column, field, acquisition id (None: none), a pyramid
FIELDS = [("C", "4", 0, 1, False), ("A", "1", 0, 0, False),
          ("B", "2", 0, None, True), ("A", "1", 1, 1, False),
          ("A", "3", 0, 0, False)]
NY, NX = 24, 20


def field_kwargs(pyramid):
    kw = dict(shape=(0, NY, NX), chunks=(2, 8, 8), shards=(4, 8, 16),
              dtype="uint16", dimension_names=("t", "y", "x"),
              backend="cpu", codec="zstd:1")
    if pyramid:
        kw.update(downsample=("y", "x"), levels=3)
    return kw


def tree(root):
    """Every file under root and its bytes, every directory as None: what
    a refusal must leave as it was."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs:
            out[os.path.relpath(os.path.join(d, n), root)] = None
        for n in files:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def attrs(root, path=""):
    with open(os.path.join(root, path, "zarr.json")) as f:
        return json.load(f)["attributes"]


def write_plate(root, order, inputs, threaded):
    """The fields of FIELDS in `order`, the first two (when threaded)
    opened and streamed from two threads at once."""
    with shardpipe.Plate(root, rows=ROWS, columns=COLS, field_count=2,
                         name="screen 1", acquisitions=["first", "second"],
                         threads=2) as p:
        errors = []

        def one(k):
            row, col, f, acq, pyr = FIELDS[k]
            try:
                with p.field(row, col, f, acq, **field_kwargs(pyr)) as s:
                    for frame in inputs[k]:
                        s.append(frame)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        first = 2 if threaded else 0
        ts = [threading.Thread(target=one, args=(k,)) for k in order[:first]]
        for t in ts:
            t.start()
        for k in order[first:]:
            one(k)
        for t in ts:
            t.join()
        assert errors == []


def test_plate_written_from_python(tmp_path, rng):
    root = str(tmp_path / "p.zarr")
    inputs = [rng.integers(0, 65536, (int(rng.integers(3, 9)), NY, NX),
                           dtype=np.uint16) for _ in FIELDS]
    order = [int(k) for k in rng.permutation(len(FIELDS))]
    print("order", [FIELDS[k][:3] for k in order])
    write_plate(root, order, inputs, threaded=True)

    # Every field reads back whole through zarr-python; the pyramid has
    # its three levels.
    for k, (row, col, f, acq, pyr) in enumerate(FIELDS):
        g = zarr.open_group(os.path.join(root, row, col, str(f)), mode="r")
        np.testing.assert_array_equal(g["0"][...], inputs[k])
        assert sorted(n for n, _ in g.arrays()) == \
            (["0", "1", "2"] if pyr else ["0"])
        if pyr:
            assert g["2"].shape == (len(inputs[k]), NY // 4, NX // 4)

    # The wells written, in row-major order; the empty ones are no node.
    plate = attrs(root)["ome"]["plate"]
    assert plate["name"] == "screen 1" and plate["field_count"] == 2
    assert [w["path"] for w in plate["wells"]] == ["A/1", "A/3", "B/2", "C/4"]
    assert [(w["rowIndex"], w["columnIndex"]) for w in plate["wells"]] == \
        [(0, 0), (0, 2), (1, 1), (2, 3)]
    assert [a["name"] for a in plate["acquisitions"]] == ["first", "second"]
    assert not os.path.exists(os.path.join(root, "B", "1"))
    assert not os.path.exists(os.path.join(root, "A", "2"))
    images = attrs(root, "A/1")["ome"]["well"]["images"]
    assert images == [{"path": "0", "acquisition": 0},
                      {"path": "1", "acquisition": 1}]
    assert attrs(root, "B/2")["ome"]["well"]["images"] == [{"path": "0"}]

    # The same fields in sorted order, one at a time: the same metadata,
    # byte for byte.
    again = str(tmp_path / "q.zarr")
    write_plate(again, list(range(len(FIELDS))), inputs, threaded=False)
    for w in ("", "A", "B", "C", "A/1", "A/3", "B/2", "C/4"):
        with open(os.path.join(root, w, "zarr.json"), "rb") as a, \
                open(os.path.join(again, w, "zarr.json"), "rb") as b:
            assert a.read() == b.read(), w


def test_plate_schemas(tmp_path, rng):
    pytest.importorskip("jsonschema")
    pytest.importorskip("ngff_zarr")
    ngff_schema = pytest.importorskip(
        "ngff_schema", reason="t/python is not on PYTHONPATH "
        "(t/python-package.sh puts it there)")
    root = str(tmp_path / "p.zarr")
    inputs = [rng.integers(0, 65536, (4, NY, NX), dtype=np.uint16)
              for _ in FIELDS]
    write_plate(root, [int(k) for k in rng.permutation(len(FIELDS))],
                inputs, threaded=False)
    v = ngff_schema.validators()
    plate = attrs(root)
    errs = [e.message for e in v["plate"].iter_errors(plate)]
    listed = set()
    for w in plate["ome"]["plate"]["wells"]:
        wa = attrs(root, w["path"])
        errs += ["%s: %s" % (w["path"], e.message)
                 for e in v["well"].iter_errors(wa)]
        for im in wa["ome"]["well"]["images"]:
            p = w["path"] + "/" + im["path"]
            listed.add(p)
            errs += ["%s: %s" % (p, e.message)
                     for e in v["image"].iter_errors(attrs(root, p))]
    assert errs == []
    assert listed == {"%s/%s/%d" % f[:3] for f in FIELDS}
    models = pytest.importorskip("ome_zarr_models.v05.hcs")
    with warnings.catch_warnings():
        # ome-zarr-models asks for plate.version, which 0.5 moved to
        # ome.version.
        warnings.simplefilter("ignore")
        h = models.HCS.from_zarr(zarr.open_group(root, mode="r"))
    assert h.n_wells == 4 and len(list(h.well_groups)) == 4


def test_plate_bytes_path_and_reopen(tmp_path):
    root = os.fsencode(tmp_path / "b.zarr")
    kw = field_kwargs(False)
    with shardpipe.Plate(root, rows=["A"], columns=["1", "2"]) as p:
        with p.field("A", "2", **kw) as s:
            assert s.path == os.path.join(root, b"A", b"2", b"0")
            s.append(np.full((2, NY, NX), 7, np.uint16))
    # Opened again, by another Plate, to write more fields.
    with shardpipe.Plate(root, create=False) as p:
        with p.field("A", "1", **kw) as s:
            s.append(np.full((1, NY, NX), 9, np.uint16))
    wells = attrs(os.fsdecode(root))["ome"]["plate"]["wells"]
    assert [w["path"] for w in wells] == ["A/1", "A/2"]
    g = zarr.open_group(str(tmp_path / "b.zarr" / "A" / "1" / "0"), mode="r")
    assert (g["0"][...] == 9).all()
    # A field's stream outlives its plate, which nothing holds.
    s = shardpipe.Plate(str(tmp_path / "c.zarr"), rows=["A"],
                        columns=["1"]).field("A", "1", **kw)
    s.append(np.full((3, NY, NX), 5, np.uint16))
    s.close()
    g = zarr.open_group(str(tmp_path / "c.zarr" / "A" / "1" / "0"), mode="r")
    assert g["0"].shape == (3, NY, NX) and (g["0"][...] == 5).all()


def test_plate_names_from_numpy(tmp_path):
    """Rows and columns as NumPy arrays of str, as a plate map gives them;
    a 2-D array or one of numbers is refused, naming the argument."""
    root = str(tmp_path / "n.zarr")
    with shardpipe.Plate(root, rows=np.array(["A", "B"]),
                         columns=np.array(["1", "2", "3"])) as p:
        with p.field("B", "3", **field_kwargs(False)) as s:
            s.append(np.full((1, NY, NX), 4, np.uint16))
    plate = attrs(root)["ome"]["plate"]
    assert [r["name"] for r in plate["rows"]] == ["A", "B"]
    assert [c["name"] for c in plate["columns"]] == ["1", "2", "3"]
    assert [w["path"] for w in plate["wells"]] == ["B/3"]
    with pytest.raises(TypeError, match="rows"):
        shardpipe.Plate(str(tmp_path / "m.zarr"),
                        rows=np.array([["A"], ["B"]]), columns=["1"])
    with pytest.raises((TypeError, ValueError), match=r"columns\[0\]"):
        shardpipe.Plate(str(tmp_path / "m.zarr"), rows=["A"],
                        columns=np.arange(3))
    assert not os.path.exists(tmp_path / "m.zarr")


def refused(root, exc, code, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises exc (with the library's code, unless
    code is None) and leaves the tree at root as it was."""
    before = tree(root) if os.path.exists(root) else None
    with pytest.raises(exc) as e:
        fn(*args, **kwargs)
    if code is not None:
        assert e.value.code == code, (args, kwargs, e.value)
    after = tree(root) if os.path.exists(root) else None
    assert after == before, (args, kwargs)
    return str(e.value)


def test_plate_refusals(tmp_path):
    new = str(tmp_path / "new.zarr")
    bad = shardpipe.InvalidDescriptionError

    def make(**kw):
        args = dict(rows=["A", "B"], columns=["1", "2"])
        args.update(kw)
        shardpipe.Plate(new, **args)

    # A plate that cannot be: nothing is made at the path.
    assert "0 rows" in refused(new, bad, 1, make, rows=[])
    assert "0 columns" in refused(new, bad, 1, make, columns=())
    assert 'row 1 "A" repeats row 0' in \
        refused(new, bad, 25, make, rows=["A", "A"])
    assert 'column 1 "2" repeats' in \
        refused(new, bad, 25, make, columns=["2", "2"])
    assert '"A-1"' in refused(new, bad, 25, make, rows=["A-1"])
    refused(new, bad, 25, make, rows=["A/1"])
    refused(new, bad, 25, make, columns=[""])
    assert "field_count 0" in refused(new, bad, 1, make, field_count=0)
    refused(new, bad, 1, make, field_count=-3)
    assert "rows = 'AB'" in refused(new, TypeError, None, make, rows="AB")
    refused(new, TypeError, None, make, rows={"A", "B"})
    assert "rows[1] = 2" in refused(new, TypeError, None, make, rows=["A", 2])
    refused(new, TypeError, None, make, columns=[b"1"])
    refused(new, TypeError, None, make, columns=None)
    assert "name = 3" in refused(new, TypeError, None, make, name=3)
    refused(new, TypeError, None, make, name=b"plate")
    refused(new, bad, 1, make, name="a\0b")
    refused(new, bad, 1, make, name="\udcff")
    refused(new, TypeError, None, make, acquisitions="day1")
    refused(new, TypeError, None, make, acquisitions=["day1", None])
    refused(new, TypeError, None, make, field_count=1.5)
    refused(new, TypeError, None, make, field_count=True)
    refused(new, bad, 1, make, threads=-1)
    refused(new, TypeError, None, make, create="no")
    assert not os.path.exists(new)
    # create=False: no description taken, and a plate must be there.
    refused(new, ValueError, None, shardpipe.Plate, new, rows=["A"],
            create=False)
    refused(new, shardpipe.StorageError, 11, shardpipe.Plate, new,
            create=False)
    assert not os.path.exists(new)
    group = str(tmp_path / "g.zarr")
    shardpipe.Group(group, create=True).close()
    refused(group, shardpipe.StorageError, 11, shardpipe.Plate, group,
            create=False)
    refused(group, shardpipe.StorageError, 12, shardpipe.Plate, group,
            rows=["A"], columns=["1"])

    root = str(tmp_path / "p.zarr")
    p = shardpipe.Plate(root, rows=["A", "B"], columns=["1", "2"],
                        field_count=2, acquisitions=["day1"])
    kw = field_kwargs(False)
    # A field outside the plate, of a wrong type, or a stream the library
    # refuses: no row or well is made for it.
    assert 'row "C" is not one of its 2 rows' in \
        refused(root, bad, 25, p.field, "C", "1", **kw)
    assert 'column "3"' in refused(root, bad, 25, p.field, "A", "3", **kw)
    assert "field 2 is outside 0..1" in \
        refused(root, bad, 1, p.field, "A", "1", 2, **kw)
    assert "field = -1" in refused(root, bad, 1, p.field, "A", "1", -1, **kw)
    assert "acquisition 1 is not one of" in \
        refused(root, bad, 1, p.field, "A", "1", 0, 1, **kw)
    refused(root, bad, 1, p.field, "A", "1", 0, -1, **kw)
    assert "row = 1" in refused(root, TypeError, None, p.field, 1, "1", **kw)
    refused(root, TypeError, None, p.field, "A", None, **kw)
    refused(root, TypeError, None, p.field, "A", "1", 1.0, **kw)
    refused(root, TypeError, None, p.field, "A", "1", "0", **kw)
    refused(root, TypeError, None, p.field, "A", "1", 0, "0", **kw)
    for k, v in (("path", root), ("sink", print), ("threads", 1),
                 ("mode", "a"), ("overwrite", True), ("ngff", True)):
        assert "takes no " + k in \
            refused(root, TypeError, None, p.field, "B", "2", **kw, **{k: v})
    unnamed = dict(kw, dimension_names=None)
    assert "names every axis" in \
        refused(root, bad, None, p.field, "B", "2", **unnamed)
    refused(root, bad, 5, p.field, "B", "2", **dict(kw, chunks=(3, 8, 8)))
    refused(root, TypeError, None, p.field, "B", "2", **dict(kw, dtype=None))
    assert tree(root) == {"zarr.json": tree(root)["zarr.json"]}

    # A field is written once: while its stream is open, and after.
    with p.field("A", "1", 1, 0, **kw) as s:
        s.append(np.zeros((1, NY, NX), np.uint16))
        assert "written already" in \
            refused(root, shardpipe.StorageError, 12, p.field, "A", "1", 1,
                    **kw)
    refused(root, shardpipe.StorageError, 12, p.field, "A", "1", 1, **kw)
    refused(root, shardpipe.StorageError, 12,
            shardpipe.Plate(root, create=False).field, "A", "1", 1, **kw)
    # The same field opened from two threads at once: one gets it.
    got, lost = [], []

    def race():
        try:
            got.append(p.field("B", "1", 1, **kw))
        except shardpipe.StorageError as e:
            lost.append(e.code)

    ts = [threading.Thread(target=race) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(got) == 1 and lost == [12]
    got[0].close()
    assert attrs(root, "B/1")["ome"]["well"]["images"] == [{"path": "1"}]
    # A well's place holding something that is no well.
    with open(os.path.join(root, "A", "2"), "w") as f:
        f.write("the user's")
    assert "not the plate's well group" in \
        refused(root, shardpipe.StorageError, 12, p.field, "A", "2", **kw)
    # The plate's path is no new plate's.
    refused(root, shardpipe.StorageError, 12, shardpipe.Plate, root,
            rows=["A"], columns=["1"])
    p.close()
    p.close()
    assert p.closed and "closed" in repr(p)
    refused(root, shardpipe.ClosedError, 18, p.field, "B", "1", **kw)


def test_plate_field_retried_after_a_refused_first_append(tmp_path):
    """A field whose first append was refused is closed by `with` with no
    row; it is not written yet, so the same field opens again and takes
    its frames (doc/design.md §28.8)."""
    root = str(tmp_path / "retry.zarr")
    p = shardpipe.Plate(root, rows=["A"], columns=["1"], field_count=1)
    kw = field_kwargs(False)
    with pytest.raises(ValueError):
        with p.field("A", "1", 0, **kw) as s:
            s.append(np.zeros((1, NY + 1, NX), np.uint16))
    frames = np.arange(2 * NY * NX, dtype=np.uint16).reshape(2, NY, NX)
    with p.field("A", "1", 0, **kw) as s:
        s.append(frames)
    got = zarr.open_array(os.path.join(root, "A", "1", "0", "0"), mode="r")
    assert np.array_equal(got[:], frames)
    assert [i["path"] for i in attrs(root, "A/1")["ome"]["well"]["images"]] \
        == ["0"]
    # Written now: a second time is refused, with the tree as it was.
    assert "written already" in refused(root, shardpipe.StorageError, 12,
                                        p.field, "A", "1", 0, **kw)
    p.close()
