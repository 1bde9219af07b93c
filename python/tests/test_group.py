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
        s.append_bytes(bytes(8))
    with pytest.raises(shardpipe.StorageError) as e:
        g.stream("a", **kw)
    assert e.value.code == 12
    with g.stream("a", overwrite=True, **kw) as s:
        s.append_bytes(bytes(range(16)))
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


def test_names_and_reads_that_are_no_array(tmp_path):
    # "zarr.json" is the group's own metadata: an InvalidDescriptionError
    # naming it, not an I/O error, and the metadata is as it was.
    root = tmp_path / "g.zarr"
    kw = dict(shape=(0, 4), chunks=(2, 4), shards=(2, 4), dtype="uint8")
    with shardpipe.Group(root, create=True) as g:
        meta = (root / "zarr.json").read_bytes()
        with pytest.raises(shardpipe.InvalidDescriptionError) as e:
            g.stream("zarr.json", **kw)
        assert e.value.code == 25 and '"zarr.json"' in str(e.value)
        assert (root / "zarr.json").read_bytes() == meta
        (root / "notes").write_text("the user's")
        with pytest.raises(shardpipe.StorageError) as e:
            g.stream("notes", overwrite=True, **kw)
        assert e.value.code == 11 and "not a directory" in str(e.value)
        assert (root / "notes").read_text() == "the user's"
        with g.stream("cam0", **kw) as s:
            s.append_bytes(bytes(8))
    # Opening the group as an array: no "malformed store", but what it
    # is and the arrays it holds.
    with pytest.raises(shardpipe.StorageError) as e:
        shardpipe.open(root)
    assert e.value.code == 11
    assert "is a Zarr group of 1 array(s) (cam0)" in str(e.value)
    assert not isinstance(e.value, shardpipe.CorruptStoreError)
    # A damaged array is still a CorruptStoreError.
    (root / "bad").mkdir()
    (root / "bad" / "zarr.json").write_text('{"zarr_format": 3,')
    with pytest.raises(shardpipe.CorruptStoreError):
        shardpipe.open(root / "bad")


def test_bytes_path(tmp_path):
    # os.fspath() gives bytes for a bytes path: once Group.stream() failed
    # with "Can't mix strings and bytes in path components".
    root = os.fsencode(tmp_path / "b.zarr")
    kw = dict(shape=(0, 4), chunks=(2, 4), shards=(2, 4), dtype="uint8")
    with shardpipe.Group(root, create=True) as g:
        with g.stream("cam0", **kw) as s:
            s.append_bytes(bytes(range(8)))
    assert shardpipe.Group(root).arrays == ("cam0",)
    assert shardpipe.open(tmp_path / "b.zarr" / "cam0")[...].tobytes() == \
        bytes(range(8))
