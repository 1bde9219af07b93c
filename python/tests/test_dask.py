"""shardpipe.dask.to_store (design §30): a dask array written block by
block by region writers, the client publishing zarr.json, gives the files
of one shardpipe.Stream writing the same numpy array, byte for byte, and
zarr-python reads it back equal; on the threaded scheduler and on a
dask.distributed LocalCluster (>= 1 GiB, and a worker killed in a task,
retried), to a directory and to S3 (moto)."""

import filecmp
import os

import numpy as np
import pytest

import shardpipe

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

from shardpipe import dask as spd  # noqa: E402


def _files(root):
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def _same_tree(a, b):
    fa, fb = _files(a), _files(b)
    assert fa == fb, "files differ: %s" % sorted(fa ^ fb)[:5]
    assert not [f for f in fa if os.path.basename(f).startswith(".")]
    for f in fa:
        assert filecmp.cmp(os.path.join(a, f), os.path.join(b, f),
                           shallow=False), f
    return len(fa)


def _reference(path, x, **kw):
    with shardpipe.Stream(str(path), shape=x.shape, dtype=x.dtype, **kw) as s:
        step = max(1, x.shape[0] // 8)
        for i in range(0, x.shape[0], step):
            s.append(np.asarray(x[i:i + step]))


@pytest.mark.parametrize("codec", ["none", "zstd:3", "gzip:1",
                                   "blosc:lz4:1:shuffle"])
def test_threaded_unaligned_blocks(tmp_path, rng, codec):
    zarr = pytest.importorskip("zarr")
    shape = (23, 17, 11)
    a = rng.integers(0, 1000, size=shape).astype("uint16")
    x = da.from_array(a, chunks=(5, 7, 4))     # not shard-aligned
    kw = dict(chunks=(2, 3, 2), shards=(4, 6, 4), codec=codec,
              backend="cpu")
    with dask.config.set(scheduler="threads"):
        st = spd.to_store(x, tmp_path / "d.zarr", threads=1, **kw)
    _reference(tmp_path / "s.zarr", a, **kw)
    assert _same_tree(tmp_path / "d.zarr", tmp_path / "s.zarr") > 0
    assert st["bytes_in"] == a.nbytes
    assert st["bytes_stored"] > 0 and st["tasks"]
    z = zarr.open_array(str(tmp_path / "d.zarr"), mode="r")
    np.testing.assert_array_equal(z[...], a)
    # The reader's dask array, chunks of shards by default.
    r = shardpipe.open(tmp_path / "d.zarr").to_dask()
    assert r.chunks[1][0] == 6
    np.testing.assert_array_equal(r.compute(scheduler="threads"), a)


def test_numpy_input(tmp_path, rng):
    """A NumPy array is taken as a dask array of whole shards; something
    that is no array is a TypeError naming its type, nothing made."""
    a = rng.integers(0, 50, size=(9, 10)).astype("int16")
    kw = dict(chunks=(2, 5), shards=(4, 10), backend="cpu")
    with dask.config.set(scheduler="threads"):
        spd.to_store(a, tmp_path / "d.zarr", threads=1, **kw)
    _reference(tmp_path / "s.zarr", a, **kw)
    assert _same_tree(tmp_path / "d.zarr", tmp_path / "s.zarr") > 0
    with pytest.raises(TypeError, match="list"):
        spd.to_store([[1, 2]], tmp_path / "e.zarr", **kw)
    assert not (tmp_path / "e.zarr").exists()


def test_refusals_leave_nothing(tmp_path):
    """A description every task refuses leaves no directory behind (a
    directory that was there stays, with what it held); a path that is a
    file is a StorageError naming it; to_dask's chunks below 1 are a
    ValueError naming the dim."""
    x = da.zeros((8, 8), chunks=4, dtype="uint8")
    with dask.config.set(scheduler="threads"):
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match=r"chunks\[0\]"):
            spd.to_store(x, tmp_path / "d.zarr", chunks=(0, 2),
                         shards=(4, 4))
        assert not (tmp_path / "d.zarr").exists()
        (tmp_path / "mine").mkdir()
        with pytest.raises(shardpipe.InvalidDescriptionError):
            spd.to_store(x, tmp_path / "mine", chunks=(0, 2),
                         shards=(4, 4))
        assert (tmp_path / "mine").is_dir()
        (tmp_path / "f.raw").write_bytes(b"mine")
        with pytest.raises(shardpipe.StorageError, match="f.raw"):
            spd.to_store(x, tmp_path / "f.raw", chunks=(2, 2),
                         shards=(4, 4))
        assert (tmp_path / "f.raw").read_bytes() == b"mine"
        spd.to_store(x, tmp_path / "ok.zarr", chunks=(2, 2), shards=(4, 4))
    r = shardpipe.open(tmp_path / "ok.zarr")
    with pytest.raises(ValueError, match=r"chunks\[1\] = 0"):
        r.to_dask(chunks=(4, 0))
    with pytest.raises(ValueError, match="3 entries"):
        r.to_dask(chunks=(4, 4, 4))
    assert r.to_dask(chunks=(4, -1)).chunks == ((4, 4), (8,))


def test_rechunk_false_refused(tmp_path):
    x = da.zeros((8, 8), chunks=(3, 8), dtype="uint8")
    with pytest.raises(ValueError, match=r"dim 0.*\[3, 6, 8\]"):
        spd.to_store(x, tmp_path / "d.zarr", chunks=(2, 2), shards=(4, 4),
                     rechunk=False)
    assert not (tmp_path / "d.zarr").exists()


def test_region_refusals(tmp_path):
    kw = dict(shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="uint8")
    p = tmp_path / "r.zarr"
    p.mkdir()
    with pytest.raises(shardpipe.InvalidDescriptionError,
                       match="dim 1.*0..4,0..4"):
        shardpipe.Stream(p, region=((0, 1), (4, 4)), **kw)
    with shardpipe.Stream(p, region=((0, 0), (4, 4)), **kw) as s:
        with pytest.raises(ValueError, match=r"\(4, 3\).*\(k, 4\)"):
            s.append(np.zeros((4, 3), "uint8"))
        s.append(np.zeros((4, 4), "uint8"))
    shardpipe.publish(p, **kw)
    with pytest.raises(shardpipe.StorageError, match="data_type"):
        shardpipe.publish(p, **dict(kw, dtype="uint16"))
    assert os.listdir(p) == ["zarr.json"]


def _cluster():
    distributed = pytest.importorskip("distributed")
    return distributed.Client(distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True,
        dashboard_address=":0", silence_logs=40))


def _pattern(block, block_info=None):
    # A cheap seeded pattern from each element's global position.
    loc = block_info[None]["array-location"]
    idx = np.ogrid[tuple(slice(a, b) for a, b in loc)]
    v = idx[0] * 2654435761 + idx[1] * 40503 + idx[2] * 97
    return ((v >> 5) & 0x3FF).astype("uint16")


def test_distributed_one_gib(tmp_path):
    client = _cluster()
    zarr = pytest.importorskip("zarr")
    shape = (256, 2048, 1024)                       # 1 GiB of uint16
    x = da.zeros(shape, chunks=(32, 1024, 1024), dtype="uint16")
    x = x.map_blocks(_pattern, dtype="uint16")
    kw = dict(chunks=(16, 256, 256), shards=(32, 512, 1024),
              codec="zstd:1", backend="cpu")
    try:
        st = spd.to_store(x, tmp_path / "d.zarr", **kw)
    finally:
        client.close()
    assert st["bytes_in"] == 2 * 256 * 2048 * 1024
    with dask.config.set(scheduler="threads"):
        _reference(tmp_path / "s.zarr", x, threads=2, **kw)
    assert _same_tree(tmp_path / "d.zarr", tmp_path / "s.zarr") > 0
    z = zarr.open_array(str(tmp_path / "d.zarr"), mode="r")
    for i in (0, 131, 255):
        np.testing.assert_array_equal(z[i], np.asarray(x[i]))


def _dies_once(block, marker=None, block_info=None):
    loc = block_info[None]["array-location"]
    if loc[0][0] == 4 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(9)
    return block + np.uint16(loc[0][0])


def test_distributed_killed_task_retried(tmp_path):
    client = _cluster()
    a = np.arange(12 * 8 * 6, dtype="uint16").reshape(12, 8, 6)
    x = da.from_array(a, chunks=(4, 8, 6)).map_blocks(
        _dies_once, marker=str(tmp_path / "marker"), dtype="uint16")
    kw = dict(chunks=(2, 4, 3), shards=(4, 8, 6), codec="zstd:1",
              backend="cpu")
    try:
        spd.to_store(x, tmp_path / "d.zarr", **kw)
    finally:
        client.close()
    assert (tmp_path / "marker").exists()
    with dask.config.set(scheduler="threads"):
        _reference(tmp_path / "s.zarr", x.compute(scheduler="threads"),
                   **kw)
    assert _same_tree(tmp_path / "d.zarr", tmp_path / "s.zarr") > 0


def _objects(endpoint, bucket, prefix):
    """{key below prefix/: bytes} of the objects there, through boto3."""
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    out = {}
    for p in s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix + "/"):
        for o in p.get("Contents", []):
            out[o["Key"][len(prefix) + 1:]] = s3.get_object(
                Bucket=bucket, Key=o["Key"])["Body"].read()
    return out


# 1 GiB of uint16, which the pattern compresses about 45 times: the
# objects moto (a Python server, in this test's process) takes are small.
S3_SHAPE = (256, 2048, 1024)


def test_distributed_s3(s3, tmp_path, monkeypatch):
    """to_store to an s3:// URL on a LocalCluster of 2 workers: nothing is
    made on S3 before the tasks, zarr.json is published at the end; the
    objects are the files of one Stream writing the same array to a
    directory, byte for byte, multipart shards among them; zarr-python
    and TensorStore, through their own S3 clients, read it back.  Then
    other data over it is refused (StorageError, SHARDPIPE_ERR_EXISTS,
    naming a shard) with every
    object as it was."""
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("s3fs", reason="s3fs is not installed "
                        "(scripts/setup-python-readers installs it)")
    # Parts of 64 KiB: every shard (about 370 KB) a multipart upload,
    # its Complete conditional.
    monkeypatch.setenv("SHARDPIPE_S3_PART_SIZE", "64k")
    x = da.zeros(S3_SHAPE, chunks=(32, 1024, 1024), dtype="uint16")
    x = x.map_blocks(_pattern, dtype="uint16")
    kw = dict(chunks=(16, 256, 256), shards=(16, 512, 1024),
              codec="zstd:1", backend="cpu")
    url = "s3://pkg/big.zarr"
    client = _cluster()
    try:
        try:
            st = spd.to_store(x, url, **kw)
        except shardpipe.UnsupportedError as e:
            pytest.skip("this library has no S3 support: %s" % e)
        assert st["bytes_in"] == x.nbytes and len(st["tasks"]) == 16
    finally:
        client.close()
    with dask.config.set(scheduler="threads"):
        _reference(tmp_path / "s.zarr", x, threads=2, **kw)
    got = _objects(s3, "pkg", "big.zarr")
    want = {f: (tmp_path / "s.zarr" / f).read_bytes()
            for f in _files(tmp_path / "s.zarr")}
    assert sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []
    assert min(len(got[k]) for k in got if k != "zarr.json") > 64 << 10
    opts = {"endpoint_url": s3, "key": "testing", "secret": "testing"}
    z = zarr.open_array(zarr.storage.FsspecStore.from_url(
        url, read_only=True, storage_options=opts), mode="r")
    for i in (0, 131, 255):
        np.testing.assert_array_equal(z[i], np.asarray(x[i]))
    ts = pytest.importorskip("tensorstore")
    t = ts.open({"driver": "zarr3", "kvstore": {
        "driver": "s3", "bucket": "pkg", "path": "big.zarr/",
        "endpoint": s3, "aws_region": "us-east-1"}}).result()
    np.testing.assert_array_equal(t[5].read().result(), np.asarray(x[5]))
    # Other data in a box over the array's: another writer's shards.
    with pytest.raises(shardpipe.StorageError,
                       match="big.zarr/c/0/0/0") as refused:
        shardpipe.write_region(url, dict(kw, shape=S3_SHAPE,
                                         dtype="uint16"),
                               (0, 0, 0), np.ones((16, 512, 1024),
                                                  "uint16"))
    assert refused.value.code == 12  # SHARDPIPE_ERR_EXISTS, not BUSY
    assert _objects(s3, "pkg", "big.zarr") == got
