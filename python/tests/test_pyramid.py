"""Pyramids through the package: Stream(..., downsample=..., method=...,
levels=...) writes an OME-NGFF image whose levels the package's reader
opens, each equal to a NumPy model of the level below it; the bad values
of every pyramid argument raise before anything is written."""

import json
import os

import numpy as np
import pytest

import shardpipe


def blocks_2x2(a, reduce):
    """The 2 x 2 blocks of the last two axes (even sizes), reduced."""
    n, y, x = a.shape
    return reduce(a.reshape(n, y // 2, 2, x // 2, 2), axis=(2, 4))


def write(path, data, **kw):
    with shardpipe.Stream(path, shape=(0,) + data.shape[1:],
                          chunks=(2, 8, 8), shards=(2, 16, 16),
                          dtype=data.dtype, dimension_names=("t", "y", "x"),
                          codec="zstd:1", backend="cpu", **kw) as s:
        s.append(data)


def test_levels_read_back(tmp_path, rng):
    data = rng.integers(0, 1 << 16, size=(5, 32, 24), dtype=np.uint16)
    path = str(tmp_path / "img.zarr")
    write(path, data, downsample=("y", "x"), method="max",
          units={"x": "micrometer", "y": "micrometer"}, scale={"x": 0.5},
          attributes={"lab": "x"})
    top = shardpipe.open(path)
    assert top.levels == 3
    np.testing.assert_array_equal(top[...], data)
    top.check()
    below = data
    for level in (1, 2):
        r = shardpipe.open(path + "/%d" % level)
        assert r.levels == 0
        want = blocks_2x2(below, np.max)
        np.testing.assert_array_equal(r[...], want)
        below = want
    with open(os.path.join(path, "zarr.json")) as f:
        attrs = json.load(f)["attributes"]
    ms = attrs["ome"]["multiscales"][0]
    assert attrs["lab"] == "x" and ms["type"] == "max"
    assert [d["path"] for d in ms["datasets"]] == ["0", "1", "2"]
    assert ms["datasets"][2]["coordinateTransformations"][0]["scale"] == \
        [1, 4, 2]
    assert ms["axes"][2] == {"name": "x", "type": "space",
                             "unit": "micrometer"}


def test_levels_by_index_and_count(tmp_path, rng):
    data = rng.integers(0, 255, size=(4, 32, 32), dtype=np.uint8)
    path = str(tmp_path / "img.zarr")
    write(path, data, downsample=(1, 2), levels=2, method="mean")
    assert shardpipe.open(path).levels == 2
    a = data.astype(np.int64)
    s = a.reshape(4, 16, 2, 16, 2).sum(axis=(2, 4))
    q, r = s // 4, s % 4
    want = (q + ((r > 2) | ((r == 2) & (q % 2 == 1)))).astype(np.uint8)
    np.testing.assert_array_equal(shardpipe.open(path + "/1")[...], want)


@pytest.mark.parametrize("method, rank", [("second_max", -2),
                                          ("second_min", 1)])
def test_second_extremes(tmp_path, rng, method, rank):
    # Few values, so that blocks tie; the block sorted, duplicates kept.
    data = rng.integers(0, 4, size=(3, 32, 24), dtype=np.int16) - 2
    path = str(tmp_path / "img.zarr")
    write(path, data, downsample=("y", "x"), levels=2, method=method)
    want = np.sort(data.reshape(3, 16, 2, 12, 2).transpose(0, 1, 3, 2, 4)
                   .reshape(3, 16, 12, 4), axis=-1)[..., rank]
    np.testing.assert_array_equal(shardpipe.open(path + "/1")[...], want)
    shardpipe.open(path).check()


def test_stop(tmp_path, rng):
    # y halves once, x twice: level 2 halves x alone, its scale says so.
    data = rng.integers(0, 1 << 16, size=(3, 32, 24), dtype=np.uint16)
    path = str(tmp_path / "img.zarr")
    write(path, data, downsample=("y", "x"), levels=3, stop={"y": 2},
          method="max")
    r = shardpipe.open(path)
    assert r.levels == 3
    r.check()
    one = blocks_2x2(data, np.max)
    two = one.reshape(3, 16, 6, 2).max(axis=3)
    np.testing.assert_array_equal(shardpipe.open(path + "/2")[...], two)
    with open(os.path.join(path, "zarr.json")) as f:
        ms = json.load(f)["attributes"]["ome"]["multiscales"][0]
    assert ms["datasets"][2]["coordinateTransformations"][0]["scale"] == \
        [1, 2, 4]
    assert ms["metadata"]["kwargs"]["stop"] == {"y": 2}


@pytest.mark.parametrize("kw, word", [
    (dict(downsample=("q",)), "no dim is named 'q'"),
    (dict(downsample=(7,)), "dim 7 is beyond"),
    (dict(downsample=("y",), method="maen"), "method: 'maen' is not"),
    (dict(downsample=("y",), method="max_sup"), "second_max, second_min"),
    (dict(downsample=("y",), levels=0), "levels: 0 is not"),
    (dict(downsample=("y",), units={"x": "micron"}), "micron"),
    (dict(downsample=("y",), axis_types={"x": "spcae"}), "spcae"),
    (dict(downsample=("y", "x"), levels=30), "at most"),
    (dict(downsample=("y",), append_method="max"), "append_method"),
    (dict(downsample=("y",), stop={"x": 2}), "downsample does not halve"),
    (dict(downsample=("y",), stop={"y": 4}), "beyond the pyramid's 3"),
    (dict(downsample=("y",), stop={"y": 0}), "stop: 0 for dim 1"),
    (dict(downsample=("y",), stop={"y": True}), "stop: True"),
    (dict(downsample=("y",), stop={"q": 2}), "no dim is named 'q'"),
])
def test_refusals(tmp_path, kw, word):
    path = tmp_path / "r.zarr"
    data = np.zeros((2, 32, 24), dtype=np.uint16)
    with pytest.raises((ValueError, shardpipe.Error)) as e:
        write(str(path), data, **kw)
    assert word in str(e.value)
    assert not path.exists()


@pytest.mark.parametrize("kw, word", [
    (dict(downsample=("y", "x")), "downsample writes"),
    (dict(ngff=True), "ngff=True writes"),
    (dict(frame_meta={"exposure": "float64"}), "frame_meta writes"),
])
def test_sink_refuses_an_image(kw, word):
    got = []
    with pytest.raises(shardpipe.InvalidDescriptionError) as e:
        shardpipe.Stream(None, shape=(0, 32, 24), chunks=(2, 8, 8),
                         shards=(2, 16, 16), dtype=np.uint16,
                         dimension_names=("t", "y", "x"), backend="cpu",
                         sink=lambda coords, data: got.append(coords), **kw)
    assert word in str(e.value) and "needs a path" in str(e.value)
    assert got == []
