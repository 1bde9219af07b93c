"""Storage order through the package (doc/design.md §3.3):
Stream(..., storage_order=order) stores appended.transpose(order), which
zarr-python and the package's reader read back equal to np.transpose of
the input, byte for byte the files of the transposed array written
directly, the append dim stored first or elsewhere; appends are checked
against the append-order row shape, and every bad storage_order raises
before anything is written."""

import json
import os

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")


def stream(path, order=None, **kw):
    args = dict(shape=(0, 3, 20, 24), chunks=(2, 1, 8, 8),
                shards=(4, 3, 16, 8), dtype="uint16",
                dimension_names=("t", "c", "y", "x"), codec="zstd:1",
                backend="cpu")
    args.update(kw)
    return shardpipe.Stream(path, storage_order=order, **args)


def files(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


@pytest.mark.parametrize("order", [(0, 3, 1, 2), (0, 1, 3, 2)])
def test_transposed_store(tmp_path, rng, order):
    # Appended frames: storage dim i is append dim order[i].
    storage = (7, 3, 20, 24)
    ashape = [0] * 4
    for i, a in enumerate(order):
        ashape[a] = storage[i]
    data = rng.integers(0, 1 << 16, size=ashape, dtype=np.uint16)
    want = np.transpose(data, order)
    with stream(tmp_path / "o.zarr", order) as s:
        s.append(data[:3])
        s.append(data[3])
        s.append(data[4:])
    with stream(tmp_path / "d.zarr") as s:
        s.append(np.ascontiguousarray(want))
    z = zarr.open_array(str(tmp_path / "o.zarr"), mode="r")
    assert z.shape == want.shape
    assert np.array_equal(z[...], want)
    assert np.array_equal(shardpipe.open(tmp_path / "o.zarr")[...], want)
    assert files(tmp_path / "o.zarr") == files(tmp_path / "d.zarr")


def moved_input(rng, order, rows):
    """The storage shape (3, rows, 20, 24) with the rows swapped to storage
    dim a = order.index(0), where order stores the append dim, and random
    input of its append-order shape."""
    a = order.index(0)
    storage = [3, rows, 20, 24]
    storage[a], storage[1] = storage[1], storage[a]
    ashape = [0] * 4
    for i, d in enumerate(order):
        ashape[d] = storage[i]
    return a, storage, rng.integers(0, 1 << 16, size=ashape, dtype=np.uint16)


@pytest.mark.parametrize("order, grows", [((1, 0, 2, 3), True),
                                          ((2, 3, 0, 1), False),
                                          ((3, 2, 1, 0), True)])
def test_append_dim_moved(tmp_path, rng, order, grows):
    # The append dim stored as storage dim order.index(0): its rows
    # still arrive as append order's first dim, and zarr.json grows it.
    # Ragged along every dim, with a nonzero fill value: the padding is
    # the fill value along each (design §22.1), as the direct write's.
    a, storage, data = moved_input(rng, order, 7)
    want = np.transpose(data, order)
    shape = list(storage)
    if grows:
        shape[a] = 0
    kw = dict(shape=tuple(shape), chunks=(2, 2, 8, 8), shards=(2, 4, 16, 8),
              fill_value=0x5AA5)
    with stream(tmp_path / "o.zarr", order, **kw) as s:
        s.append(data[:3])
        s.append(data[3])
        s.append(data[4:])
    kw["shape"] = tuple(storage)
    with stream(tmp_path / "d.zarr", **kw) as s:
        s.append(np.ascontiguousarray(want))
    z = zarr.open_array(str(tmp_path / "o.zarr"), mode="r")
    assert z.shape == want.shape
    assert np.array_equal(z[...], want)
    assert np.array_equal(shardpipe.open(tmp_path / "o.zarr")[...], want)
    assert files(tmp_path / "o.zarr") == files(tmp_path / "d.zarr")


def test_append_dim_moved_bound(tmp_path):
    # A bounded append dim stored second: 4 rows, and no more.
    with stream(tmp_path / "o.zarr", (1, 0, 2, 3), shape=(3, 4, 20, 24),
                chunks=(1, 2, 8, 8), shards=(1, 4, 16, 8)) as s:
        with pytest.raises(ValueError):
            s.append(np.zeros((4, 20, 24), np.uint16))   # a row of dim 0
        s.append(np.zeros((3, 3, 20, 24), np.uint16))
        with pytest.raises(shardpipe.BeyondEndError) as e:
            s.append(np.zeros((2, 3, 20, 24), np.uint16))
        assert "size 4" in str(e.value)
        s.append(np.ones((3, 20, 24), np.uint16))
    z = zarr.open_array(str(tmp_path / "o.zarr"), mode="r")
    assert z.shape == (3, 4, 20, 24)
    assert np.array_equal(z[:, 3], np.ones((3, 20, 24), np.uint16))


def test_append_dim_moved_refusals(tmp_path):
    with pytest.raises(shardpipe.InvalidDescriptionError) as e:
        stream(tmp_path / "s.zarr", (1, 0, 2, 3))        # dim 0 unbounded
    assert "only the append dim, storage dim 1, may be unbounded" in \
        str(e.value)
    with pytest.raises(shardpipe.InvalidDescriptionError) as e:
        stream(tmp_path / "s.zarr", (1, 0, 2, 3), shape=(3, 0, 20, 24),
               dimension_names=("c", "t", "y", "x"), ngff=True)
    assert "dim 1 (t): the time axis of an OME-NGFF image comes first" in \
        str(e.value)
    assert not os.path.exists(tmp_path / "s.zarr")


def test_image_append_dim_moved(tmp_path, rng):
    # A z-stack appended plane by plane, (z, c, y, x), stored as the
    # OME-NGFF image (c, z, y, x): every level's files are those of the
    # transposed array written directly, z halving along the append dim;
    # per-frame values run along z, where xarray finds them.
    xr = pytest.importorskip("xarray")
    data = rng.integers(0, 1 << 16, size=(9, 3, 20, 24), dtype=np.uint16)
    want = np.transpose(data, (1, 0, 2, 3))
    kw = dict(chunks=(1, 2, 8, 8), shards=(1, 4, 16, 8),
              dimension_names=("c", "z", "y", "x"), ngff=True,
              downsample=("z", "y", "x"), levels=3, method="median")
    z = rng.random(9)
    with stream(tmp_path / "o.zarr", (1, 0, 2, 3), shape=(3, 0, 20, 24),
                frame_meta={"z_um": "float64"}, **kw) as s:
        s.append(data[:4], meta={"z_um": z[:4]})
        for k in range(4, 9):
            s.append(data[k], meta={"z_um": z[k]})
    with stream(tmp_path / "d.zarr", shape=want.shape, **kw) as s:
        s.append(np.ascontiguousarray(want))
    for level in ("0", "1", "2"):
        got, direct = (files(tmp_path / w / level) for w in ("o.zarr",
                                                             "d.zarr"))
        if level == "0":
            # Level 0 alone names the fields as its coordinates.
            assert b'"coordinates": "z_um skipped"' in got.pop("zarr.json")
            direct.pop("zarr.json")
        assert got == direct, level
    assert np.array_equal(zarr.open_array(str(tmp_path / "o.zarr/0"),
                                          mode="r")[...], want)
    # Valid OME-NGFF 0.5 (the spec's JSON schema), and ome-zarr reads
    # each level.
    ngff_schema = pytest.importorskip(
        "ngff_schema", reason="t/python is not on PYTHONPATH "
        "(the suite's t/python-package.sh sets it)")
    a = json.load(open(tmp_path / "o.zarr" / "zarr.json"))["attributes"]
    assert [e.message for e in ngff_schema.validators()["image"]
            .iter_errors(a)] == []
    ome_io = pytest.importorskip("ome_zarr.io")
    ome_reader = pytest.importorskip("ome_zarr.reader")
    node = next(iter(ome_reader.Reader(
        ome_io.parse_url(str(tmp_path / "o.zarr")))()))
    assert [tuple(d.shape) for d in node.data] == \
        [(3, 9, 20, 24), (3, 5, 10, 12), (3, 3, 5, 6)]
    assert np.array_equal(np.asarray(node.data[0]), want)
    ds = xr.open_zarr(str(tmp_path / "o.zarr"), consolidated=False,
                      drop_variables=["1", "2"])
    assert ds["0"].dims == ("c", "z", "y", "x")
    assert ds.coords["z_um"].dims == ("z",)
    assert np.array_equal(ds.coords["z_um"].values, z)


@pytest.mark.parametrize("order", [(1, 0, 2, 3), (2, 3, 0, 1),
                                   (3, 2, 1, 0)])
def test_mode_a_append_dim_moved(tmp_path, rng, order):
    # The append dim stored as storage dim a, unbounded: 3 frames (inside
    # a chunk and a shard row along it), closed, 3 more with mode "a"
    # (across a shard row), closed, 2 more: the files of the 8 in one run.
    a, storage, data = moved_input(rng, order, 8)
    shape = list(storage)
    shape[a] = 0
    chunks, shards = [2, 2, 8, 8], [2, 4, 16, 8]
    chunks[a], chunks[1] = chunks[1], chunks[a]
    shards[a], shards[1] = shards[1], shards[a]
    kw = dict(shape=tuple(shape), chunks=tuple(chunks), shards=tuple(shards))
    with stream(tmp_path / "r.zarr", order, **kw) as s:
        s.append(data[:3])
    for lo, hi in ((3, 6), (6, 8)):
        with shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                              storage_order=order) as s:
            assert s.start_row == lo
            s.append(data[lo:hi])
    with stream(tmp_path / "o.zarr", order, **kw) as s:
        s.append(data)
    assert files(tmp_path / "r.zarr") == files(tmp_path / "o.zarr")
    assert np.array_equal(zarr.open_array(str(tmp_path / "r.zarr"),
                                          mode="r")[...],
                          np.transpose(data, order))


def test_mode_a_append_dim_moved_bound(tmp_path, rng):
    # A bound given in mode "a" is the append dim's, storage dim 1 here:
    # one at the rows the store holds is refused, touching nothing; a
    # higher one takes the rows up to it and no more.
    order = (1, 0, 2, 3)
    kw = dict(shape=(3, 0, 20, 24), chunks=(1, 2, 8, 8), shards=(1, 4, 16, 8))
    data = rng.integers(0, 1 << 16, size=(6, 3, 20, 24), dtype=np.uint16)
    with stream(tmp_path / "r.zarr", order, **kw) as s:
        s.append(data[:3])
    before = files(tmp_path / "r.zarr")
    with pytest.raises(shardpipe.BeyondEndError) as e:
        shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                         storage_order=order, shape=(3, 3, 20, 24))
    assert "dim 1: the store holds 3 rows already" in str(e.value)
    assert files(tmp_path / "r.zarr") == before
    with pytest.raises(shardpipe.InvalidDescriptionError) as e:
        shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                         storage_order=order, shape=(4, 5, 20, 24))
    assert "dim 0 size: the store has 3, the description 4" in str(e.value)
    assert files(tmp_path / "r.zarr") == before
    with shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                          storage_order=order, shape=(3, 5, 20, 24)) as s:
        s.append(data[3:5])
        with pytest.raises(shardpipe.BeyondEndError):
            s.append(data[5])
    z = zarr.open_array(str(tmp_path / "r.zarr"), mode="r")
    assert z.shape == (3, 5, 20, 24)
    assert np.array_equal(z[...], np.transpose(data[:5], order))


def test_mode_a_image_append_dim_moved(tmp_path, rng):
    # An image whose append dim is stored second, with per-frame values:
    # 3 planes, closed, 4 more with mode "a" and the same storage_order,
    # closed, 2 more: the files of the 9 in one run, every level and
    # field.
    data = rng.integers(0, 1 << 16, size=(9, 3, 20, 24), dtype=np.uint16)
    z = rng.random(9)
    kw = dict(chunks=(1, 2, 8, 8), shards=(1, 4, 16, 8),
              dimension_names=("c", "z", "y", "x"), ngff=True,
              downsample=("z", "y", "x"), levels=3,
              frame_meta={"z_um": "float64"})
    order = (1, 0, 2, 3)
    with stream(tmp_path / "o.zarr", order, shape=(3, 0, 20, 24),
                **kw) as s:
        s.append(data, meta={"z_um": z})
    with stream(tmp_path / "r.zarr", order, shape=(3, 0, 20, 24),
                **kw) as s:
        s.append(data[:3], meta={"z_um": z[:3]})
    for lo, hi in ((3, 7), (7, 9)):
        with shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                              storage_order=order) as s:
            assert s.start_row == lo
            s.append(data[lo:hi], meta={"z_um": z[lo:hi]})
    assert files(tmp_path / "r.zarr") == files(tmp_path / "o.zarr")
    # A bound on the append dim, which halves: refused, touching nothing.
    before = files(tmp_path / "r.zarr")
    with pytest.raises(shardpipe.UnsupportedError) as e:
        shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                         storage_order=order, shape=(3, 12, 20, 24))
    assert "an image whose append dim (dim 1) halves is continued " \
        "unbounded only" in str(e.value)
    assert files(tmp_path / "r.zarr") == before


def test_append_shape_is_append_order(tmp_path):
    with stream(tmp_path / "o.zarr", (0, 3, 1, 2)) as s:
        with pytest.raises(ValueError):
            s.append(np.zeros((3, 20, 24), np.uint16))   # storage order
        s.append(np.zeros((20, 24, 3), np.uint16))


def test_append_shape_names_the_moved_dim(tmp_path):
    # Channel-major (c, t, y, x) appended as (t, c, y, x) rows.
    with stream(tmp_path / "o.zarr", (1, 0, 2, 3), shape=(3, 0, 20, 24),
                chunks=(1, 2, 8, 8), shards=(3, 2, 16, 8)) as s:
        with pytest.raises(ValueError) as e:
            s.append(np.zeros((2, 20, 24), np.uint16))
        assert "takes (k, 3, 20, 24) or (3, 20, 24) (rows of the append " \
            "dim, stored as dim 1); nothing appended" in str(e.value)
        s.append(np.zeros((2, 3, 20, 24), np.uint16))


@pytest.mark.parametrize("order, err, words", [
    ((0, 1, 1, 2), shardpipe.InvalidDescriptionError, "repeats"),
    ((0, 1, 2, 4), shardpipe.InvalidDescriptionError, "storage_order[3] = 4"),
    ((0, 1, 2, -1), shardpipe.InvalidDescriptionError, "negative"),
    ((0, 2, 1), shardpipe.InvalidDescriptionError, "3 entries"),
    ((0, 1, 2.0, 3), TypeError, "not an integer"),
    ("0123", TypeError, "not a sequence"),
    ({0: 0, 1: 3, 2: 1, 3: 2}, TypeError, "not a sequence"),
    ({0, 3, 1, 2}, TypeError, "not a sequence"),
])
def test_refusals(tmp_path, order, err, words):
    with pytest.raises(err) as e:
        stream(tmp_path / "s.zarr", order)
    assert words in str(e.value)
    assert not os.path.exists(tmp_path / "s.zarr")


def test_pyramid(tmp_path, rng):
    # Every level of the image is the transposed array's image's.
    data = rng.integers(0, 1 << 16, size=(6, 20, 24, 3), dtype=np.uint16)
    kw = dict(downsample=("t", "y", "x"), levels=3)
    with stream(tmp_path / "o.zarr", (0, 3, 1, 2), **kw) as s:
        s.append(data)
    with stream(tmp_path / "d.zarr", **kw) as s:
        s.append(np.ascontiguousarray(np.transpose(data, (0, 3, 1, 2))))
    assert files(tmp_path / "o.zarr") == files(tmp_path / "d.zarr")
    assert np.array_equal(zarr.open_array(str(tmp_path / "o.zarr/0"),
                                          mode="r")[...],
                          np.transpose(data, (0, 3, 1, 2)))


def test_mode_a_continues_in_append_order(tmp_path, rng):
    # 3 frames (inside a chunk and a shard row), closed, then 2 more with
    # mode "a": the files of the 5 written in one run.
    data = rng.integers(0, 1 << 16, size=(5, 20, 24, 3), dtype=np.uint16)
    with stream(tmp_path / "r.zarr", (0, 3, 1, 2)) as s:
        s.append(data[:3])
    with shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                          storage_order=(0, 3, 1, 2)) as s:
        s.append(data[3:])
    with stream(tmp_path / "o.zarr", (0, 3, 1, 2)) as s:
        s.append(data)
    assert files(tmp_path / "r.zarr") == files(tmp_path / "o.zarr")
    assert np.array_equal(zarr.open_array(str(tmp_path / "r.zarr"),
                                          mode="r")[...],
                          np.transpose(data, (0, 3, 1, 2)))
