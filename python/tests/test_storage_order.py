"""Storage order through the package (doc/design.md §3.3):
Stream(..., storage_order=order) stores appended.transpose(order), which
zarr-python and the package's reader read back equal to np.transpose of
the input, byte for byte the files of the transposed array written
directly, the append dim stored first or elsewhere; appends are checked
against the append-order row shape, and every bad storage_order raises
before anything is written."""

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


@pytest.mark.parametrize("order, grows", [((1, 0, 2, 3), True),
                                          ((2, 3, 0, 1), False),
                                          ((3, 2, 1, 0), True)])
def test_append_dim_moved(tmp_path, rng, order, grows):
    # The append dim stored as storage dim order.index(0): its rows
    # still arrive as append order's first dim, and zarr.json grows it.
    a = order.index(0)
    storage = [3, 7, 20, 24]
    storage[a], storage[1] = storage[1], storage[a]
    ashape = [0] * 4
    for i, d in enumerate(order):
        ashape[d] = storage[i]
    data = rng.integers(0, 1 << 16, size=ashape, dtype=np.uint16)
    want = np.transpose(data, order)
    shape = list(storage)
    if grows:
        shape[a] = 0
    kw = dict(shape=tuple(shape), chunks=(2, 2, 8, 8), shards=(2, 4, 16, 8))
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
               ngff=True)
    assert "an OME-NGFF image or pyramid" in str(e.value)
    assert not os.path.exists(tmp_path / "s.zarr")
    with stream(tmp_path / "r.zarr", (1, 0, 2, 3),
                shape=(3, 0, 20, 24)) as s:
        s.append(np.zeros((2, 3, 20, 24), np.uint16))
    before = files(tmp_path / "r.zarr")
    with pytest.raises(shardpipe.UnsupportedError) as e:
        shardpipe.Stream(tmp_path / "r.zarr", mode="a", backend="cpu",
                         storage_order=(1, 0, 2, 3))
    assert "continuing such a store is not supported" in str(e.value)
    assert files(tmp_path / "r.zarr") == before


def test_append_shape_is_append_order(tmp_path):
    with stream(tmp_path / "o.zarr", (0, 3, 1, 2)) as s:
        with pytest.raises(ValueError):
            s.append(np.zeros((3, 20, 24), np.uint16))   # storage order
        s.append(np.zeros((20, 24, 3), np.uint16))


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
