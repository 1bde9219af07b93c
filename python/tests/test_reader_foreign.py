"""shardpipe.open() on stores other writers made: zarr-python's and
TensorStore's, sharded with the index at either end (with and without the
crc32c index codec) and unsharded, zstd, gzip and blosc, with part of the
array never written (read as the fill value).  Every selection (steps,
negative indices and steps, empty ranges, integers) equals what the
writer's own library reads: its whole array, indexed by NumPy, and for
TensorStore its own read of the selection too where its indexing is
NumPy's (no negative index or step)."""

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")
from zarr.codecs import (BloscCodec, BytesCodec, Crc32cCodec,  # noqa: E402
                         GzipCodec, ShardingCodec, ZstdCodec)

SHAPE = (9, 13, 11)
SHARD = (4, 8, 4)
CHUNK = (2, 4, 4)
FILL = 7

SELECTIONS = [
    (Ellipsis,),
    (slice(None, None, 2), slice(3, 10, 3), 1),
    (Ellipsis, slice(None, None, -1)),
    (-1, slice(-3, None), slice(None, None, -2)),
    (slice(5, 5),),
    (slice(None, None, 3), slice(None, None, -4), slice(2, 9, 2)),
    (3,),
    (-2, 4, -1),
    (slice(8, 0, -3), slice(12, None, -5), slice(None, None, 7)),
]


def data(rng, dtype):
    a = rng.integers(0, 200, SHAPE).astype(dtype)
    # The last shard row is never written: the fill value there.
    a[8:] = FILL
    return a


def zarr_store(path, a, codecs):
    z = zarr.create(shape=a.shape, chunks=codecs[1], dtype=a.dtype,
                    zarr_format=3, store=str(path), fill_value=FILL,
                    codecs=codecs[0])
    z[:8] = a[:8]
    return z[...]


ZARR_LAYOUTS = {
    "zarr-python sharded zstd, index at start": lambda: (
        [ShardingCodec(chunk_shape=CHUNK,
                       codecs=[BytesCodec(), ZstdCodec(level=1)],
                       index_location="start")], SHARD),
    "zarr-python sharded gzip, crc32c index at end": lambda: (
        [ShardingCodec(chunk_shape=CHUNK,
                       codecs=[BytesCodec(), GzipCodec(level=5)],
                       index_codecs=[BytesCodec(), Crc32cCodec()],
                       index_location="end")], SHARD),
    "zarr-python sharded blosc, chunks crc32c": lambda: (
        [ShardingCodec(chunk_shape=CHUNK,
                       codecs=[BytesCodec(),
                               BloscCodec(cname="zstd", clevel=1,
                                          shuffle="shuffle"),
                               Crc32cCodec()])], SHARD),
    "zarr-python unsharded zstd, big-endian": lambda: (
        [BytesCodec(endian="big"), ZstdCodec(level=3)], CHUNK),
}


@pytest.mark.parametrize("layout", sorted(ZARR_LAYOUTS))
@pytest.mark.parametrize("dtype", ["uint16", "float32"])
def test_zarr_python_stores(tmp_path, rng, layout, dtype):
    a = data(rng, dtype)
    want = zarr_store(tmp_path / "z.zarr", a, ZARR_LAYOUTS[layout]())
    np.testing.assert_array_equal(want, a)
    r = shardpipe.open(str(tmp_path / "z.zarr"), threads=3)
    for sel in SELECTIONS:
        got = r[sel]
        np.testing.assert_array_equal(got, want[sel], err_msg=repr(sel))
        assert np.shape(got) == want[sel].shape, sel


def ts_spec(path, dtype, codecs):
    return {"driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(path)},
            "metadata": {"shape": list(SHAPE), "data_type": dtype,
                         "fill_value": FILL,
                         "chunk_grid": {"name": "regular",
                                        "configuration": {
                                            "chunk_shape": list(codecs[1])}},
                         "codecs": codecs[0]},
            "create": True, "delete_existing": True}


LE = {"name": "bytes", "configuration": {"endian": "little"}}
TS_LAYOUTS = {
    "tensorstore sharded gzip, crc32c index at end": (
        [{"name": "sharding_indexed",
          "configuration": {"chunk_shape": list(CHUNK),
                            "codecs": [LE, {"name": "gzip",
                                            "configuration": {"level": 5}}],
                            "index_codecs": [LE, {"name": "crc32c"}],
                            "index_location": "end"}}], SHARD),
    "tensorstore sharded blosc, index at start": (
        [{"name": "sharding_indexed",
          "configuration": {"chunk_shape": list(CHUNK),
                            "codecs": [LE, {"name": "blosc", "configuration": {
                                "cname": "lz4", "clevel": 5,
                                "shuffle": "bitshuffle", "typesize": 2,
                                "blocksize": 0}}],
                            "index_codecs": [LE, {"name": "crc32c"}],
                            "index_location": "start"}}], SHARD),
    "tensorstore unsharded zstd": (
        [LE, {"name": "zstd", "configuration": {"level": 1}}], CHUNK),
}


@pytest.mark.parametrize("layout", sorted(TS_LAYOUTS))
def test_tensorstore_stores(tmp_path, rng, layout):
    a = data(rng, "uint16")
    t = ts.open(ts_spec(tmp_path / "t.zarr", "uint16",
                        TS_LAYOUTS[layout])).result()
    t[:8] = a[:8]
    r = shardpipe.open(str(tmp_path / "t.zarr"), threads=2)
    whole = np.asarray(t.read().result())
    np.testing.assert_array_equal(whole, a)
    for sel in SELECTIONS:
        want = whole[sel]
        got = r[sel]
        np.testing.assert_array_equal(got, want, err_msg=repr(sel))
        assert np.shape(got) == want.shape, sel
        # TensorStore's own strided read, where its indexing is NumPy's
        # (it does not count negative indices from the end).
        if not negative(sel):
            np.testing.assert_array_equal(
                got, np.asarray(t[sel].read().result()), err_msg=repr(sel))


def negative(sel):
    for s in sel:
        if isinstance(s, int) and s < 0:
            return True
        if isinstance(s, slice) and any(
                v is not None and v < 0 for v in (s.start, s.stop, s.step)):
            return True
    return False
