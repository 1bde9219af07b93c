"""Tests of per-frame metadata from Python (issue 42 item 2,
doc/design.md §28.9): Stream(frame_meta=...) and append(frame, meta=...)
for an image, a pyramid, a group's image and a plate's field; every
field read back by zarr-python equal to the values given (a skipped
frame's NaN, 0, false, "skipped" true); xarray's zarr engine opening the
image with the fields as coordinates of dim 0; and every refusal a
Python user could meet, naming the field, with nothing appended."""

import json
import os

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")

NY, NX = 8, 6
FIELDS = {"time": "float64", "z_um": "float64", "n": "int64",
          "flag": "bool"}


def kwargs(**more):
    kw = dict(shape=(0, NY, NX), chunks=(2, 4, 3), shards=(4, 8, 6),
              dtype="uint16", dimension_names=("t", "y", "x"),
              backend="cpu", codec="zstd:1", frame_meta=FIELDS)
    kw.update(more)
    return kw


def write(stream, rng, frames=9, skip_at=5):
    """frames frames one by one, a skip at skip_at and a stack of three
    at the end; the frames and the expected columns."""
    imgs = rng.integers(0, 60000, (frames, NY, NX), dtype=np.uint16)
    want = {k: [] for k in list(FIELDS) + ["skipped"]}

    def expect(t, z, n, f, skipped=False):
        for k, v in (("time", t), ("z_um", z), ("n", n), ("flag", f),
                     ("skipped", skipped)):
            want[k].append(v)

    with stream as s:
        for i in range(frames - 3):
            if i == skip_at:
                s.skip(1)
                imgs[i] = 0
                expect(np.nan, np.nan, 0, False, True)
                continue
            t, z = float(rng.random()), float(rng.normal())
            n, f = int(rng.integers(-2**62, 2**62)), bool(rng.integers(2))
            # One as NumPy scalars: taken as their values.
            if i == 1:
                s.append(imgs[i], meta={"time": np.float64(t),
                                        "z_um": z, "n": np.int64(n),
                                        "flag": np.bool_(f)})
            else:
                s.append(imgs[i], meta={"time": t, "z_um": z, "n": n,
                                        "flag": f})
            expect(t, z, n, f)
        t = rng.random(3)
        s.append(imgs[frames - 3:], meta={"time": t, "z_um": [1, 2.5, 3],
                                          "n": [4, 5.0, 6],
                                          "flag": [True, False, True]})
        for k in range(3):
            expect(float(t[k]), [1.0, 2.5, 3.0][k], [4, 5, 6][k],
                   [True, False, True][k])
    return imgs, want


def check_fields(root, want):
    g = zarr.open_group(root, mode="r")
    for k, v in want.items():
        got = g[k][:]
        assert got.dtype == np.dtype(FIELDS.get(k, "bool")), k
        assert np.array_equal(got, np.array(v, got.dtype), equal_nan=True) \
            if got.dtype.kind == "f" else np.array_equal(got, v), k
    attrs = json.load(open(os.path.join(root, "zarr.json")))["attributes"]
    assert set(attrs["shardpipe"]["frame_meta"]) == set(want)


def test_image_fields_read_back(tmp_path, rng):
    root = str(tmp_path / "img.zarr")
    imgs, want = write(shardpipe.Stream(root, ngff=True, **kwargs()), rng)
    check_fields(root, want)
    assert np.array_equal(zarr.open_array(root + "/0", mode="r")[:], imgs)


def test_xarray_sees_coordinates_of_dim_0(tmp_path, rng):
    xr = pytest.importorskip("xarray")
    root = str(tmp_path / "img.zarr")
    imgs, want = write(shardpipe.Stream(root, ngff=True, **kwargs()), rng)
    ds = xr.open_zarr(root, consolidated=False)
    assert set(ds.coords) == set(want)
    for k, v in want.items():
        assert ds.coords[k].dims == ("t",)
        got = ds.coords[k].values
        assert np.array_equal(got, np.array(v, got.dtype),
                              equal_nan=got.dtype.kind == "f"), k
    assert ds["0"].dims == ("t", "y", "x")
    assert np.array_equal(ds["0"].values, imgs)
    assert np.array_equal(ds["0"].coords["time"].values,
                          np.array(want["time"]), equal_nan=True)


def test_pyramid_group_and_plate(tmp_path, rng):
    root = str(tmp_path / "pyr.zarr")
    imgs, want = write(shardpipe.Stream(
        root, downsample=("y", "x"), levels=2, **kwargs()), rng)
    check_fields(root, want)
    xr = pytest.importorskip("xarray")
    # Levels above 0 have other y, x: xarray opens level 0 beside them.
    ds = xr.open_zarr(root, consolidated=False, drop_variables=["1"])
    assert set(ds.coords) == set(want)

    groot = str(tmp_path / "g.zarr")
    with shardpipe.Group(groot, create=True) as g:
        imgs, want = write(g.stream("cam", ngff=True, **kwargs()), rng)
    check_fields(os.path.join(groot, "cam"), want)

    proot = str(tmp_path / "p.zarr")
    p = shardpipe.Plate(proot, rows=["A"], columns=["1"], field_count=1)
    imgs, want = write(p.field("A", "1", 0, **kwargs()), rng)
    p.close()
    check_fields(os.path.join(proot, "A", "1", "0"), want)


def rows(root):
    return json.load(open(os.path.join(root, "0", "zarr.json")))["shape"][0]


def test_refusals_name_the_field(tmp_path):
    root = str(tmp_path / "img.zarr")
    frame = np.zeros((NY, NX), np.uint16)
    good = {"time": 1.0, "z_um": 2.0, "n": 3, "flag": True}
    with shardpipe.Stream(root, ngff=True, **kwargs()) as s:
        cases = [
            (ValueError, "lacks field 'n'",
             {k: v for k, v in good.items() if k != "n"}),
            (ValueError, "meta['zz']: not a field",
             dict(good, zz=1.0)),
            (TypeError, "meta['time'] = 'now'", dict(good, time="now")),
            (TypeError, "field 'time' is float64, not bool",
             dict(good, time=True)),
            (TypeError, "'n' is int64, not float with a fraction",
             dict(good, n=1.5)),
            (TypeError, "field 'flag' is bool, not int",
             dict(good, flag=1)),
            (ValueError, "outside int64", dict(good, n=2**63)),
            (TypeError, "not a dict", [1.0, 2.0, 3, True]),
        ]
        for exc, word, meta in cases:
            with pytest.raises(exc) as e:
                s.append(frame, meta=meta)
            assert word in str(e.value), (word, str(e.value))
        with pytest.raises(ValueError, match="give meta"):
            s.append(frame)
        with pytest.raises(ValueError, match="append_bytes: the stream has"):
            s.append_bytes(frame.tobytes())
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match="lists the stream's frame fields"):
            s.set_attribute("shardpipe", {"frame_meta": {}})
        with pytest.raises(ValueError, match="has 1 values for 2 rows"):
            s.append(np.zeros((2, NY, NX), np.uint16),
                     meta=dict(good, time=[1.0]))
        with pytest.raises(ValueError, match="one value for 2 rows"):
            s.append(np.zeros((2, NY, NX), np.uint16), meta=good)
        assert s.stats.bytes_in == 0
        s.append(frame, meta=good)
    assert rows(root) == 1
    assert zarr.open_group(root, mode="r")["time"][:].tolist() == [1.0]

    # A stream without fields refuses meta; open refusals write nothing.
    plain = str(tmp_path / "plain.zarr")
    with shardpipe.Stream(plain, **kwargs(frame_meta=None)) as s:
        with pytest.raises(ValueError, match="no frame_meta fields"):
            s.append(frame, meta=good)
    for bad, exc, word in (
            ({"t": "float32"}, ValueError, "'float64', 'int64' or 'bool'"),
            (["time"], TypeError, "not a dict"),
            ({"skipped": "bool"}, shardpipe.InvalidDescriptionError,
             "the field the library adds"),
            ({"0": "int64"}, shardpipe.InvalidDescriptionError,
             "digits only"),
            ({"a b": "int64"}, shardpipe.InvalidDescriptionError,
             "is not one of")):
        path = str(tmp_path / "bad.zarr")
        with pytest.raises(exc) as e:
            shardpipe.Stream(path, ngff=True, **kwargs(frame_meta=bad))
        assert word in str(e.value)
        assert not os.path.exists(path)
    path = str(tmp_path / "array.zarr")
    with pytest.raises(shardpipe.InvalidDescriptionError,
                       match="frame metadata needs an image"):
        shardpipe.Stream(path, **kwargs())
    assert not os.path.exists(path)
    # Continuing the image with other fields: refused naming the field,
    # its files as they were.
    for bad, word in (
            (dict(FIELDS, n="float64"),
             'frame field "n": the store has dtype int64, the description '
             'float64'),
            (dict(FIELDS, extra="bool"), 'frame field 4 "extra": the store '
             'has 4 field(s)'),
            ({k: v for k, v in FIELDS.items() if k != "flag"},
             'frame field 3 "flag": the store has it')):
        with pytest.raises(shardpipe.InvalidDescriptionError) as e:
            shardpipe.Stream(root, mode="a", frame_meta=bad)
        assert word in str(e.value)
    assert rows(root) == 1


def tree(root):
    """Every file under root, by its path relative to root: its bytes."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def test_mode_a_continues_the_fields(tmp_path, rng):
    """k frames, close, Stream(mode="a") and the rest, for k at 0,
    inside a chunk, at a shard row's edge and past the skip, with
    frame_meta given or the store's: the files of one run, and
    zarr-python reads every field equal to the values given."""
    n = 11
    imgs = rng.integers(0, 60000, (n, NY, NX), dtype=np.uint16)
    imgs[6] = 0
    cols = {"time": rng.random(n), "z_um": rng.normal(size=n),
            "n": rng.integers(-2**62, 2**62, n),
            "flag": rng.integers(0, 2, n).astype(bool)}

    def frames(s, a, b):
        for i in range(a, b):
            if i == 6:
                s.skip(1)
            else:
                s.append(imgs[i], meta={k: v[i].item()
                                        for k, v in cols.items()})

    one = str(tmp_path / "one.zarr")
    with shardpipe.Stream(one, ngff=True, **kwargs()) as s:
        frames(s, 0, n)
    want = tree(one)
    for k in (0, 3, 4, 7, 10):
        for given in (False, True):
            two = str(tmp_path / ("two-%d-%d.zarr" % (k, given)))
            with shardpipe.Stream(two, ngff=True, **kwargs()) as s:
                frames(s, 0, k)
            extra = {"frame_meta": FIELDS} if given else {}
            with shardpipe.Stream(two, mode="a", backend="cpu",
                                  **extra) as s:
                assert s.start_row == k
                frames(s, k, n)
            assert tree(two) == want, (k, given)
    g = zarr.open_group(two, mode="r")
    for k, v in cols.items():
        got = g[k][:]
        assert got[6] == (False if k == "flag" else 0) or np.isnan(got[6])
        assert np.array_equal(np.delete(got, 6), np.delete(v, 6)), k
    assert g["skipped"][:].tolist() == [i == 6 for i in range(n)]
    assert np.array_equal(g["0"][:], imgs)


def test_overwrite_removes_the_old_fields_only(tmp_path, rng):
    """An image overwritten drops the field arrays its zarr.json listed,
    as it drops its levels; a directory of the user's stays."""
    root = str(tmp_path / "img.zarr")
    write(shardpipe.Stream(root, ngff=True, **kwargs()), rng)
    os.makedirs(os.path.join(root, "notes"))
    with open(os.path.join(root, "notes", "zarr.json"), "w") as f:
        f.write("mine")
    new = {"z": "int64"}
    with shardpipe.Stream(root, ngff=True, overwrite=True,
                          **kwargs(frame_meta=new)) as s:
        s.append(np.zeros((NY, NX), np.uint16), meta={"z": 7})
    assert sorted(os.listdir(root)) == ["0", "notes", "skipped", "z",
                                        "zarr.json"]
    assert open(os.path.join(root, "notes", "zarr.json")).read() == "mine"
    assert zarr.open_group(root, mode="r")["z"][:].tolist() == [7]
    with shardpipe.Stream(root, ngff=True, overwrite=True,
                          **kwargs(frame_meta=None)) as s:
        s.append(np.zeros((NY, NX), np.uint16))
    assert sorted(os.listdir(root)) == ["0", "notes", "zarr.json"]


def test_image_with_fields_is_still_valid_ome_ngff(tmp_path, rng):
    """The fields beside the levels and the attributes listing them leave
    the image valid against OME-NGFF 0.5's strict image schema, and
    ome-zarr-models still opens it."""
    pytest.importorskip("jsonschema")
    pytest.importorskip("ngff_zarr")
    ngff_schema = pytest.importorskip(
        "ngff_schema", reason="t/python is not on PYTHONPATH "
        "(t/python-package.sh puts it there)")
    root = str(tmp_path / "pyr.zarr")
    write(shardpipe.Stream(root, downsample=("y", "x"), levels=2,
                           **kwargs()), rng)
    a = json.load(open(os.path.join(root, "zarr.json")))["attributes"]
    errs = [e.message for e in ngff_schema.validators()["image"]
            .iter_errors(a)]
    assert errs == []
    models = pytest.importorskip("ome_zarr_models.v05.image")
    img = models.Image.from_zarr(zarr.open_group(root, mode="r"))
    assert len(img.attributes.ome.multiscales[0].datasets) == 2
