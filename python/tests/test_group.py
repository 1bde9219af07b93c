"""Tests of shardpipe.Group: arrays of one group written from several
Python threads at once, read back by the package's reader and by
zarr-python opening the group; the refusals with their library codes."""

import os
import threading

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")


def test_two_arrays_from_two_threads(tmp_path, rng):
    root = tmp_path / "run.zarr"
    a = rng.integers(0, 60000, (37, 24, 19), dtype=np.uint16)
    b = rng.standard_normal((50, 33)).astype(np.float32)
    errors = []

    def feed(stream, data):
        try:
            with stream:
                for row in data:
                    stream.append(row)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with shardpipe.Group(root, create=True, threads=2) as g:
        sa = g.stream("cam0", shape=(0, 24, 19), chunks=(4, 8, 8),
                      shards=(8, 16, 8), dtype="uint16", backend="cpu")
        sb = g.stream("ch.1", shape=(0, 33), chunks=(7, 11),
                      shards=(14, 33), dtype="float32", codec="gzip:2",
                      backend="cpu")
    # The group is closed; its streams go on.
    ts = [threading.Thread(target=feed, args=(sa, a)),
          threading.Thread(target=feed, args=(sb, b))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    np.testing.assert_array_equal(shardpipe.open(root / "cam0")[...], a)
    assert shardpipe.open(root / "ch.1")[...].tobytes() == b.tobytes()
    zg = zarr.open_group(str(root), mode="r")
    assert sorted(n for n, _ in zg.arrays()) == ["cam0", "ch.1"]
    np.testing.assert_array_equal(zg["cam0"][...], a)
    assert zg["ch.1"][...].tobytes() == b.tobytes()
    assert shardpipe.Group(root).arrays == ("cam0", "ch.1")


def test_refusals(tmp_path):
    root = tmp_path / "g.zarr"
    g = shardpipe.Group(root, create=True)
    kw = dict(shape=(0, 4), chunks=(2, 4), shards=(2, 4), dtype="uint8")
    for bad in ("", "..", "a/b", ".hidden", "__x"):
        with pytest.raises(shardpipe.InvalidDescriptionError) as e:
            g.stream(bad, **kw)
        assert e.value.code == 25, bad
    with g.stream("a", **kw) as s:
        s.append(bytes(8))
    with pytest.raises(shardpipe.StorageError) as e:
        g.stream("a", **kw)
    assert e.value.code == 12
    with g.stream("a", overwrite=True, **kw) as s:
        s.append(bytes(range(16)))
    assert shardpipe.open(root / "a")[...].tobytes() == bytes(range(16))
    with pytest.raises(TypeError):
        g.stream("b", threads=2, **kw)
    g.close()
    with pytest.raises(shardpipe.StorageError) as e:
        shardpipe.Group(root, create=True)
    assert e.value.code == 12
    with pytest.raises(shardpipe.StorageError) as e:
        shardpipe.Group(root / "a")
    assert e.value.code == 11
    with pytest.raises(shardpipe.StorageError) as e:
        shardpipe.Group(tmp_path / "none")
    assert e.value.code == 11
    assert not os.path.exists(tmp_path / "none")
