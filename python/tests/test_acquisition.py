"""Tests of the acquisition arguments of shardpipe.Stream: fill_value,
write_empty_chunks, durable, max_memory and attributes, and the methods
skip(), set_attribute() and del_attribute(); every store read back by
zarr-python (fill values, empty chunks and skips by TensorStore too), the
expectation built with NumPy."""

import json
import math
import os
import struct

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")


def read_tensorstore(path):
    ts = pytest.importorskip("tensorstore")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file",
                                           "path": str(path)}}
    return ts.open(spec, read=True).result().read().result()


def shard_files(path):
    out = []
    for root, _, files in os.walk(os.path.join(path, "c")):
        out += [os.path.join(root, f) for f in files if not f.startswith(".")]
    return sorted(out)


def missing_entries(path, per_shard):
    """Index entries (2^64-1, 2^64-1) over every shard file (index at the
    end, read with struct, not the library)."""
    n = 0
    for f in shard_files(path):
        with open(f, "rb") as fh:
            b = fh.read()
        idx = b[len(b) - 16 * per_shard - 4:len(b) - 4]
        for k in range(per_shard):
            off, nb = struct.unpack_from("<QQ", idx, 16 * k)
            n += off == nb == 2**64 - 1
    return n


def frames(rng, n, dtype="uint16"):
    return rng.integers(100, 4000, (n, 16, 20), endpoint=True).astype(dtype)


def stream(path, **kw):
    return shardpipe.Stream(path, (0, 16, 20), (2, 8, 10), (4, 16, 20),
                            kw.pop("dtype", "uint16"), backend="cpu",
                            threads=2, **kw)


def test_fill_value_where_chunks_are_absent(tmp_path, rng):
    a = frames(rng, 12)
    a[4:8] = 7           # a whole shard epoch of fill: no shard file
    a[8:10, 0:8, 0:10] = 7  # one chunk of fill: an empty index entry
    p = tmp_path / "f.zarr"
    with stream(p, fill_value=7) as s:
        s.append(a)
    z = zarr.open_array(str(p), mode="r")
    assert z.fill_value == 7
    assert np.array_equal(z[...], a)
    assert np.array_equal(read_tensorstore(p), a)
    assert not os.path.exists(os.path.join(p, "c", "1", "0", "0"))
    assert len(shard_files(p)) == 2
    assert missing_entries(p, 8) == 1


def test_write_empty_chunks_stores_every_chunk(tmp_path, rng):
    a = frames(rng, 12)
    a[4:8] = 7
    p = tmp_path / "w.zarr"
    with stream(p, fill_value=7, write_empty_chunks=True) as s:
        s.append(a)
    assert len(shard_files(p)) == 3 and missing_entries(p, 8) == 0
    assert np.array_equal(zarr.open_array(str(p), mode="r")[...], a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_nan_fill(tmp_path, rng, dtype):
    a = rng.normal(0, 10, (8, 16, 20)).astype(dtype)
    a[0:4] = np.nan
    a[5, 3] = np.nan
    p = tmp_path / "n.zarr"
    with stream(p, dtype=dtype, fill_value=float("nan")) as s:
        s.append(a)
    z = zarr.open_array(str(p), mode="r")
    assert math.isnan(z.fill_value)
    assert np.array_equal(z[...], a, equal_nan=True)
    assert np.array_equal(read_tensorstore(p), a, equal_nan=True)
    # The epoch of NaN (the spec's NaN, as NumPy makes it) is left out.
    assert shard_files(p) == [os.path.join(p, "c", "1", "0", "0")]
    with open(os.path.join(p, "zarr.json")) as fh:
        assert json.load(fh)["fill_value"] == "NaN"


def test_fill_value_bits_of_a_numpy_scalar(tmp_path):
    payload = np.array([0x7E01], np.uint16).view(np.float16)[0]
    p = tmp_path / "h.zarr"
    with stream(p, dtype="float16", fill_value=payload) as s:
        s.skip(frames=2)
    with open(os.path.join(p, "zarr.json")) as fh:
        assert json.load(fh)["fill_value"] == "0x7e01"
    # zarr-python reads a NaN (NumPy keeps no payload through it); the
    # library's reader returns the exact bits.
    assert np.isnan(zarr.open_array(str(p), mode="r")[...]).all()
    assert (shardpipe.open(p)[...].view(np.uint16) == 0x7E01).all()


def test_skip_frames_and_bytes(tmp_path, rng):
    a = frames(rng, 9)
    want = a.copy()
    want[2:5] = 9
    want[7] = 9
    p = tmp_path / "s.zarr"
    with stream(p, fill_value=9) as s:
        s.append(a[0:2])
        s.skip(frames=3)          # dropped frames
        s.append(a[5:7])
        s.skip(nbytes=a[7].nbytes)
        s.append(a[8])
        assert s.stats.bytes_in == a.nbytes
    assert np.array_equal(zarr.open_array(str(p), mode="r")[...], want)
    assert np.array_equal(read_tensorstore(p), want)


def test_skip_refusals(tmp_path, rng):
    p = tmp_path / "r.zarr"
    with stream(p) as s:
        with pytest.raises(TypeError):
            s.skip()
        with pytest.raises(TypeError):
            s.skip(1, nbytes=2)
        with pytest.raises(TypeError):
            s.skip(True)
        with pytest.raises(TypeError):
            s.skip(1.5)
        with pytest.raises(ValueError):
            s.skip(-1)
        # A count whose bytes do not fit the library's uint64 is named.
        with pytest.raises(OverflowError, match="skip: frames = 2305843009213693952"):
            s.skip(2**61)
        with pytest.raises(OverflowError, match="skip: nbytes"):
            s.skip(nbytes=2**64)
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match="element size 2"):
            s.skip(nbytes=3)
        # Longer than one span and not whole elements: nothing skipped.
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match="element size 2"):
            s.skip(nbytes=(200 << 20) + 1)
        assert s.stats.bytes_in == 0
        a = frames(rng, 1)
        s.append(a)             # the stream goes on after the refusals
    assert np.array_equal(zarr.open_array(str(p), mode="r")[...], a)
    with pytest.raises(shardpipe.ClosedError):
        s.skip(1)


def test_a_long_skip_is_cut_into_spans(tmp_path):
    # 200 MiB of fill in spans of 64 MiB: the same store as appending it.
    p = tmp_path / "long.zarr"
    n = 200 << 20
    with shardpipe.Stream(p, (0, 1 << 20), (8, 1 << 18), (8, 1 << 20),
                          "uint8", backend="cpu", fill_value=3) as s:
        s.append(np.ones(1 << 20, np.uint8))
        s.skip(nbytes=n)
        assert s.stats.bytes_in == (1 << 20) + n
    z = zarr.open_array(str(p), mode="r")
    assert z.shape == (201, 1 << 20)
    assert (z[0] == 1).all() and (z[1:201:50] == 3).all()
    assert len(shard_files(p)) == 1   # the fill's chunks are left out


def test_skip_past_a_bounded_end(tmp_path):
    p = tmp_path / "b.zarr"
    with shardpipe.Stream(p, (3, 4), (1, 4), (1, 4), "uint8",
                          backend="cpu", fill_value=2) as s:
        s.append_bytes(bytes([1, 1, 1, 1]))
        with pytest.raises(shardpipe.BeyondEndError, match="past its size"):
            s.skip(frames=5)
    got = zarr.open_array(str(p), mode="r")[...]
    assert got.tolist() == [[1] * 4, [2] * 4, [2] * 4]


@pytest.mark.parametrize("dtype,value,exc", [
    ("uint8", 300, ValueError), ("int8", -129, ValueError),
    ("uint16", 1.5, ValueError), ("uint16", "7", TypeError),
    ("bool", 2, ValueError), ("float32", 1e300, ValueError),
    ("float16", 10**400, ValueError), ("float32", None, TypeError),
    ("uint8", True, TypeError),
], ids=lambda v: str(v)[:12])
def test_fill_value_refusals(tmp_path, dtype, value, exc):
    p = tmp_path / "x.zarr"
    with pytest.raises(exc, match="fill_value"):
        stream(p, dtype=dtype, fill_value=value)
    assert not p.exists()


def test_durable_reads_back(tmp_path, rng):
    a = frames(rng, 8)
    p = tmp_path / "d.zarr"
    with stream(p, durable=True) as s:
        s.append(a)
    assert np.array_equal(zarr.open_array(str(p), mode="r")[...], a)


def test_max_memory(tmp_path, rng):
    p = tmp_path / "m.zarr"
    with stream(p, max_memory=64 << 20) as s:
        s.append(frames(rng, 4))
        assert 0 < s.stats.pool_bytes <= 64 << 20
        assert s.stats.appends_blocked >= 0
        assert s.stats.seconds_blocked >= 0.0
    with pytest.raises(shardpipe.Error, match="max_memory") as e:
        stream(tmp_path / "m2.zarr", max_memory=1000)
    assert e.value.code == 13  # SHARDPIPE_ERR_NOMEM
    assert not (tmp_path / "m2.zarr").exists()


def test_attributes(tmp_path, rng):
    p = tmp_path / "a.zarr"
    start = {"camera": {"id": 3, "serial": "A-17"}, "unit": "ms"}
    with stream(p, attributes=start) as s:
        with open(os.path.join(p, "zarr.json")) as fh:
            assert json.load(fh)["attributes"] == start
        s.set_attribute("exposure_ms", 12.5)
        s.set_attribute("text", "a str is a JSON string")
        s.set_attribute("big", 2**70)
        s.set_attribute('odd "key"\n', [None, True, "\u00e9"])
        s.set_attribute("unit", "s")          # replaces, keeps its place
        s.set_attribute("gone", 1)
        s.del_attribute("gone")
        s.del_attribute("never set")
        with pytest.raises(ValueError, match="not JSON"):
            s.set_attribute("x", float("nan"))
        with pytest.raises(TypeError, match="'x'"):
            s.set_attribute("x", object())
        with pytest.raises(TypeError):
            s.set_attribute(3, 1)
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match="reserved"):
            s.set_attribute("ome", {})
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match="exceed"):
            s.set_attribute("huge", "x" * (1 << 20))
        deep = 1
        for _ in range(33):
            deep = [deep]
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match="nesting deeper than 32"):
            s.set_attribute("deep", deep)
        with pytest.raises(ValueError, match="set_attribute: key 'nul.x00key' holds a null"):
            s.set_attribute("nul\0key", 1)
        with pytest.raises(ValueError, match="del_attribute: key .* lone surrogate"):
            s.del_attribute("a\ud800")
        with pytest.raises(ValueError, match="attribute 'v': .* lone surrogate"):
            s.set_attribute("v", ["\udc00"])
        s.append(frames(rng, 2))
    z = zarr.open_array(str(p), mode="r")
    want = {"camera": {"id": 3, "serial": "A-17"}, "unit": "s",
            "exposure_ms": 12.5, "text": "a str is a JSON string",
            "big": 2**70, 'odd "key"\n': [None, True, "\u00e9"]}
    assert dict(z.attrs) == want
    assert list(z.attrs) == list(want)
    with pytest.raises(shardpipe.ClosedError):
        s.set_attribute("late", 1)


def test_bad_attributes_refuse_before_anything_is_written(tmp_path):
    p = tmp_path / "bad.zarr"
    with pytest.raises(shardpipe.InvalidDescriptionError, match="reserved"):
        stream(p, attributes={"ok": 1, "ome": {}})
    with pytest.raises(ValueError, match="'v'"):
        stream(p, attributes={"v": float("inf")})
    with pytest.raises(TypeError, match="attributes: key must be a str, not 1"):
        stream(p, attributes={1: 1})
    assert not p.exists()
