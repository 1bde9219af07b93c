"""Tests of the shardpipe package: round trips read back by independent
readers, threads, the GIL, refusals, the sink, Ctrl-C and the exceptions."""

import importlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import shardpipe

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "float16", "float32", "float64"]
CODECS = ["none", "zstd:1", "zstd:3:checksum", "gzip:6",
          "blosc:zstd:1:shuffle", "blosc:lz4:5:bitshuffle"]


def random_array(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.3
    if dt.kind == "f":
        # Smooth plus noise, so compressors have something to find.
        base = np.cumsum(rng.standard_normal(shape), axis=-1)
        return base.astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)


def blosc_available():
    return any(b.name == "cpu" and b.usable for b in shardpipe.backends())


def need(module):
    """The independent reader `module`, imported.  Without it a test skips,
    unless SHARDPIPE_PYTHON names this Python as the readers' (as make
    check under CI does): then its absence is a failure, for the skip
    would hide a broken environment (the skip policy of t/lib.sh)."""
    if os.environ.get("SHARDPIPE_PYTHON"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


def read_zarr(path):
    zarr = need("zarr")
    return zarr.open_array(str(path), mode="r")[...]


def read_tensorstore(path):
    ts = need("tensorstore")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file",
                                           "path": str(path)}}
    return ts.open(spec, read=True).result().read().result()


def write(path, a, chunks, shards, codec, **kw):
    with shardpipe.Stream(path, a.shape, chunks, shards, a.dtype,
                          codec=codec, backend="cpu", threads=2, **kw) as s:
        s.append(a)
    return s


# ------------------------------------------------------------ round trips

@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip(tmp_path, rng, dtype, codec):
    """Every dtype and codec: zarr-python 3, TensorStore and shardpipe's
    own reader all return the array appended (ragged edges included)."""
    a = random_array(rng, dtype, (7, 19, 23))
    p = tmp_path / "a.zarr"
    loc = "start" if (DTYPES.index(dtype) + CODECS.index(codec)) % 2 else "end"
    try:
        s = shardpipe.Stream(p, (0, 19, 23), (2, 8, 8), (4, 16, 8), dtype,
                             codec=codec, dimension_names=("t", "y", None),
                             index_location=loc, backend="cpu", threads=2)
    except shardpipe.InvalidDescriptionError as e:
        if codec.startswith("blosc") and "blosc" in str(e):
            pytest.skip("this library has no c-blosc: %s" % e)
        raise
    with s:
        # Uneven spans: whole rows and fractions of them.
        raw = a.tobytes()
        cut = [0, 5, a.itemsize * 19 * 23 + 3, len(raw) // 2, len(raw)]
        for lo, hi in zip(cut, cut[1:]):
            s.append_bytes(raw[lo:hi])
    assert s.stats.bytes_in == a.nbytes
    np.testing.assert_array_equal(read_zarr(p), a)
    np.testing.assert_array_equal(read_tensorstore(p), a)
    r = shardpipe.open(p)
    assert r.shape == a.shape and r.dtype == a.dtype
    assert r.chunks == (2, 8, 8) and r.shards == (4, 16, 8)
    assert r.dimension_names == ("t", "y", None)
    r.check()
    np.testing.assert_array_equal(r[...], a)


def test_reader_slices(tmp_path, rng):
    """Basic slices (steps, negative steps and indices, Ellipsis) give what
    NumPy gives on the same array."""
    a = random_array(rng, "int32", (9, 13, 11))
    p = tmp_path / "s.zarr"
    write(p, a, (2, 4, 4), (4, 8, 4), "zstd:1")
    r = shardpipe.open(p)
    keys = [np.s_[...], np.s_[3], np.s_[-1, 2:9], np.s_[1:8:3, ::-2, 4],
            np.s_[..., 5], np.s_[2, ..., 1:2], np.s_[::-1, -3:, :-9:-3],
            np.s_[5:2], np.s_[:, 12, 10]]
    for _ in range(20):
        keys.append(tuple(slice(int(lo), int(hi), int(st)) for lo, hi, st in
                          zip(rng.integers(-12, 12, 3), rng.integers(-12, 14, 3),
                              rng.choice([-3, -1, 1, 2, 5], 3))))
    for k in keys:
        np.testing.assert_array_equal(r[k], a[k], err_msg=repr(k))
    with pytest.raises(IndexError, match="out of bounds for axis 1"):
        r[0, 13]
    with pytest.raises(IndexError):
        r[0, 0, 0, 0]


# ------------------------------------------------------------ threads, GIL

def test_threads_on_distinct_streams(tmp_path, rng):
    """Eight threads, one stream each, appending frame by frame at once:
    every store holds its own thread's frames."""
    n = 8
    arrays = [random_array(rng, "uint16", (12, 64, 48)) for _ in range(n)]
    errors = []
    start = threading.Barrier(n)

    def run(i):
        try:
            with shardpipe.Stream(tmp_path / ("t%d.zarr" % i), (0, 64, 48),
                                  (2, 32, 16), (4, 64, 48), "uint16",
                                  codec=CODECS[i % 4], backend="cpu",
                                  threads=1) as s:
                start.wait()
                for frame in arrays[i]:
                    s.append(frame)
        except BaseException as e:  # reported below
            errors.append((i, e))

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    for i in range(n):
        np.testing.assert_array_equal(read_zarr(tmp_path / ("t%d.zarr" % i)),
                                      arrays[i])


def test_one_stream_refuses_a_second_thread(tmp_path):
    """Calls on one stream may not overlap; a second thread gets a
    RuntimeError instead of corrupting the stream."""
    seen = []

    def sink(coords, data):
        # The writer thread is inside the append; try another call.
        if not seen:
            try:
                s.flush()
            except (RuntimeError, shardpipe.ClosedError) as e:
                seen.append(str(e))
        return None

    # Not the fill value: chunks all equal to it are not written, and the
    # sink would never run.
    a = np.ones((8, 64, 64), np.uint8)
    s = shardpipe.Stream(None, a.shape, (1, 64, 64), (1, 64, 64), "uint8",
                         codec="none", backend="cpu", sink=sink)
    s.append(a)
    s.close()
    assert seen and ("in use by another thread" in seen[0] or
                     "closed" in seen[0])


def test_append_releases_the_gil(tmp_path, rng):
    """A second Python thread keeps running while one large append is in
    the library."""
    a = random_array(rng, "uint16", (48, 512, 1024))  # 48 MiB, one span
    counts = []
    stop = threading.Event()

    def count():
        n = 0
        while not stop.is_set():
            n += 1
            if n % 1000 == 0:
                counts.append((time.perf_counter(), n))

    t = threading.Thread(target=count)
    with shardpipe.Stream(tmp_path / "g.zarr", a.shape, (1, 512, 1024),
                          (1, 512, 1024), "uint16", codec="gzip:6",
                          backend="cpu", threads=1) as s:
        t.start()
        time.sleep(0.05)
        t0 = time.perf_counter()
        s.append(a)
        t1 = time.perf_counter()
    stop.set()
    t.join()
    inside = [n for when, n in counts if t0 < when < t1]
    print("append took %.3f s; the other thread counted %d times inside it"
          % (t1 - t0, len(inside)))
    assert t1 - t0 > 0.05, "the append was too quick to tell"
    assert len(inside) >= 10


# ------------------------------------------------------------ refusals

def test_refusals(tmp_path):
    p = tmp_path / "r.zarr"
    s = shardpipe.Stream(p, (0, 16, 16), (1, 8, 8), (2, 16, 16), "uint16",
                         backend="cpu")
    a = np.zeros((2, 16, 16), np.uint16)
    with pytest.raises(TypeError, match="dtype mismatch.*uint16.*int16"):
        s.append(a.astype(np.int16))
    with pytest.raises(TypeError, match="dtype mismatch.*uint16.*float32"):
        s.append(a.astype(np.float32))
    with pytest.raises(TypeError, match="dtype mismatch.*>u2"):
        s.append(a.astype(">u2"))
    with pytest.raises(TypeError, match="dtype mismatch.*uint16.*int16"):
        s.append_bytes(a.astype(np.int16))
    with pytest.raises(ValueError, match="not C-contiguous"):
        s.append(memoryview(np.zeros((2, 16, 32), np.uint16)[:, :, ::2]))
    with pytest.raises(ValueError, match="not C-contiguous"):
        s.append_bytes(np.zeros((2, 16, 32), np.uint16)[:, :, ::2])
    with pytest.raises(ValueError, match=r"shape \(16, 16, 2\)"):
        s.append(a.T)
    with pytest.raises(TypeError, match="list is not an array"):
        s.append([1, 2, 3])
    with pytest.raises(TypeError, match="append_bytes"):
        s.append(bytearray(a.tobytes()))
    with pytest.raises(TypeError, match="not a buffer"):
        s.append_bytes([1, 2, 3])
    # A refused append consumes nothing: the stream goes on.
    s.append(a)
    s.append_bytes(bytearray(a.tobytes()))
    s.append(memoryview(a))
    # A strided array of the right shape is copied into C order.
    s.append(np.zeros((2, 16, 32), np.uint16)[:, :, ::2])
    s.close()
    assert shardpipe.open(p).shape == (8, 16, 16)

    bad = [
        (dict(codec="zstd:x"), 'level "x" .field 2. is not a whole number'),
        (dict(codec="blosc:snappy"), 'compressor "snappy" .field 2.'),
        (dict(codec="lzma"), 'unknown codec "lzma" .field 1.'),
        (dict(codec="zstd:99"), "level"),
        (dict(dtype="complex64"), "complex64"),
        (dict(dtype="int12"), "not a data type"),
        (dict(shards=(2, 16, 12)), r"shards\[2\] = 12: not a multiple"),
        (dict(chunks=(1, 8)), "chunks has 2 entries"),
        (dict(shape=(0, 0, 16)), "dim 1"),
        (dict(backend="fpga"), "fpga"),
    ]
    for change, words in bad:
        kw = dict(path=tmp_path / "bad.zarr", shape=(0, 16, 16),
                  chunks=(1, 8, 8), shards=(2, 16, 16), dtype="uint16",
                  backend="cpu")
        kw.update(change)
        with pytest.raises((shardpipe.InvalidDescriptionError, TypeError),
                           match=words):
            shardpipe.Stream(**kw)
        assert not (tmp_path / "bad.zarr").exists(), change
    with pytest.raises(ValueError, match="native byte order"):
        shardpipe.Stream(tmp_path / "bad.zarr", (4,), (2,), (2,), ">u2")
    with pytest.raises(ValueError, match="index_location"):
        shardpipe.Stream(tmp_path / "bad.zarr", (4,), (2,), (2,), "u2",
                         index_location="middle")
    assert not (tmp_path / "bad.zarr").exists()
    with pytest.raises(shardpipe.StorageError, match="already holds a store"):
        shardpipe.Stream(p, (4,), (2,), (2,), "uint8")


def test_bytes_beyond_a_bounded_array(tmp_path):
    # Raw bytes: what fits is taken.
    p = tmp_path / "b.zarr"
    s = shardpipe.Stream(p, (4, 8), (2, 8), (2, 8), "uint8", backend="cpu")
    with pytest.raises(shardpipe.BeyondEndError, match="beyond|past") as e:
        s.append_bytes(np.arange(48, dtype=np.uint8))
    assert e.value.code == 17 and isinstance(e.value, ValueError)
    assert not s.closed
    s.close()
    np.testing.assert_array_equal(read_zarr(p).ravel(), np.arange(32))
    # An array: refused whole, before anything is appended.
    q = tmp_path / "a.zarr"
    s = shardpipe.Stream(q, (4, 8), (2, 8), (2, 8), "uint8", backend="cpu")
    s.append(np.arange(8, dtype=np.uint8))
    with pytest.raises(shardpipe.BeyondEndError, match="3 left") as e:
        s.append(np.arange(48, dtype=np.uint8).reshape(6, 8))
    assert e.value.code == 17 and not s.closed
    s.append(np.arange(24, dtype=np.uint8).reshape(3, 8))
    s.close()
    np.testing.assert_array_equal(
        read_zarr(q), np.concatenate([np.arange(8), np.arange(24)]).reshape(
            4, 8))


def test_closed_stream(tmp_path):
    s = shardpipe.Stream(tmp_path / "c.zarr", (4,), (2,), (2,), "uint8",
                         allow_short=True)
    s.close()
    s.close()
    assert s.closed
    with pytest.raises(shardpipe.ClosedError):
        s.append_bytes(b"ab")
    with pytest.raises(shardpipe.ClosedError):
        s.append(np.zeros(2, np.uint8))
    with pytest.raises(shardpipe.ClosedError):
        s.skip(1)
    assert s.stats.bytes_in == 0


# ------------------------------------------------------------ the sink

def test_sink_receives_the_shard_files(tmp_path, rng):
    """The sink gets every shard, with the bytes the file store writes."""
    a = random_array(rng, "uint16", (10, 40, 24))
    for loc in ("end", "start"):
        got = {}

        def sink(coords, data):
            assert isinstance(coords, tuple) and isinstance(data, bytes)
            assert coords not in got
            got[coords] = data

        kw = dict(codec="zstd:1", index_location=loc, backend="cpu")
        with shardpipe.Stream(None, a.shape, (2, 8, 8), (4, 16, 16),
                              "uint16", sink=sink, **kw) as s:
            s.append(a)
        p = tmp_path / ("f-%s.zarr" % loc)
        write(p, a, (2, 8, 8), (4, 16, 16), kw.pop("codec"), **{
            "index_location": loc})
        files = {tuple(int(x) for x in os.path.relpath(d, p / "c").split(os.sep)
                       + [f]): (os.path.join(d, f))
                 for d, _, fs in os.walk(p / "c") for f in fs}
        assert sorted(got) == sorted(files)
        for c, f in files.items():
            with open(f, "rb") as fh:
                assert got[c] == fh.read(), (loc, c)
        np.testing.assert_array_equal(read_zarr(p), a)


def test_sink_exception_fails_the_stream(tmp_path):
    """An exception in the sink fails the stream with SHARDPIPE_ERR_SINK
    and is raised again, itself, from the next call."""

    class Boom(Exception):
        pass

    calls = []

    def sink(coords, data):
        calls.append(coords)
        raise Boom("no room at %s" % (coords,))

    frame = np.ones((1, 64, 64), np.uint8)  # not the fill value (see above)
    s = shardpipe.Stream(None, (0, 64, 64), (1, 64, 64), (1, 64, 64),
                         "uint8", codec="none", backend="cpu", sink=sink)
    with pytest.raises(Boom, match="no room at"):
        for _ in range(64):
            s.append(frame)
        s.flush()
        s.close()
    assert len(calls) == 1
    with pytest.raises(shardpipe.Error) as e:
        s.append(frame)
    assert e.value.code == 19 or isinstance(e.value, shardpipe.ClosedError)
    # close returns the stream's first error: the sink's.
    with pytest.raises(shardpipe.SinkError, match="sink"):
        s.close()
    s.close()


# ------------------------------------------------------------ Ctrl-C

INTERRUPTED = r"""
import os, signal, sys, threading, time
import numpy as np
import shardpipe

path = sys.argv[1]
a = np.empty((64, 1024, 2048), np.uint16)        # 256 MiB, one append
a[...] = np.arange(2048, dtype=np.uint16)
s = shardpipe.Stream(path, (0, 1024, 2048), (1, 256, 256), (2, 1024, 1024),
                     "uint16", codec="gzip:6", backend="cpu", threads=1)
s.append(a[:2])
print("started", flush=True)
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    s.append(a)
except KeyboardInterrupt:
    print("interrupted closed=%s bytes_in_rows>=2" % s.closed, flush=True)
    sys.exit(130)
print("not interrupted", flush=True)
"""


def test_keyboard_interrupt_leaves_a_valid_closed_store(tmp_path):
    """Ctrl-C during a long append raises KeyboardInterrupt, closes the
    stream, and leaves a store that checks clean and reads back."""
    p = tmp_path / "i.zarr"
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    r = subprocess.run([sys.executable, str(script), str(p)],
                       capture_output=True, text=True, timeout=120)
    print(r.stdout, r.stderr)
    assert "interrupted closed=True" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 130
    rd = shardpipe.open(p)
    rd.check()
    z = read_zarr(p)
    assert z.shape[1:] == (1024, 2048) and 2 <= z.shape[0] < 66
    want = np.arange(2048, dtype=np.uint16)
    # Every row the store advertises holds what was appended, or the fill
    # value (0) in the padding of the last shard epoch.
    for t in range(z.shape[0]):
        row = z[t]
        assert (row == want).all() or (row == 0).all(), t
    assert (z[:2] == want).all()


# ------------------------------------------------------------ arguments

GOOD = dict(shape=(4, 6), chunks=(2, 2), shards=(2, 4), threads=1)


@pytest.mark.parametrize("arg, value, words", [
    ("shape", (4, -3), r"^shape\[1\] = -3: negative$"),
    ("shape", (4, 1 << 64),
     r"^shape\[1\] = 18446744073709551616: above 18446744073709551615"),
    ("shape", (-(1 << 70), 6), r"^shape\[0\] = -1180591620717411303424: neg"),
    ("chunks", (2, -1), r"^chunks\[1\] = -1: negative$"),
    ("chunks", (2, 0), r"^chunks\[1\] = 0: below 1$"),
    ("chunks", (1 << 64, 2), r"^chunks\[0\] = 18446744073709551616: above"),
    ("shards", (2, -4), r"^shards\[1\] = -4: negative$"),
    ("shards", (2, 1 << 65), r"^shards\[1\] = 36893488147419103232: above"),
    ("shards", (2, 3), r"^shards\[1\] = 3: not a multiple of chunks\[1\] = 2"),
    ("threads", -1, r"^threads = -1: negative$"),
    ("threads", 1 << 40, r"^threads = 1099511627776: above 4096$"),
    ("threads", 4097, r"^threads = 4097: above 4096$"),
])
def test_argument_out_of_range(tmp_path, arg, value, words):
    """An entry out of range is an InvalidDescriptionError (a ValueError)
    naming the argument, its index and its value, not Python's bare
    OverflowError; nothing is created."""
    kw = dict(GOOD, **{arg: value})
    with pytest.raises(shardpipe.InvalidDescriptionError, match=words) as e:
        shardpipe.Stream(tmp_path / "a.zarr", dtype="uint8", **kw)
    assert isinstance(e.value, ValueError) and e.value.code is not None
    assert not (tmp_path / "a.zarr").exists()


@pytest.mark.parametrize("arg, value, words", [
    ("shape", (4.5, 6), r"^shape\[0\] = 4\.5: not an integer$"),
    ("shape", ("4", 6), r"^shape\[0\] = '4': not an integer$"),
    ("shape", (True, 6), r"^shape\[0\] = True: not an integer$"),
    ("chunks", (2, None), r"^chunks\[1\] = None: not an integer$"),
    ("shards", (2.0, 4), r"^shards\[0\] = 2\.0: not an integer$"),
    ("shape", 4, r"^shape = 4: not a sequence of integers$"),
    ("shape", "46", r"^shape = '46': not a sequence of integers$"),
    # A dict iterates its keys and a set its hash order: neither is the
    # shape it seems to spell.
    ("shape", {0: 4, 1: 6}, r"^shape = \{0: 4, 1: 6\}: not a sequence of "
     r"integers$"),
    ("chunks", {2, 3}, r"^chunks = \{2, 3\}: not a sequence of integers$"),
    ("threads", 1.5, r"^threads = 1\.5: not an integer$"),
    ("threads", "2", r"^threads = '2': not an integer$"),
])
def test_argument_not_an_integer(tmp_path, arg, value, words):
    """A float, string or bool is refused, naming it, rather than
    truncated or parsed (int(4.5) is 4)."""
    kw = dict(GOOD, **{arg: value})
    with pytest.raises(TypeError, match=words):
        shardpipe.Stream(tmp_path / "a.zarr", dtype="uint8", **kw)
    assert not (tmp_path / "a.zarr").exists()


@pytest.mark.parametrize("arg, value, exc, words", [
    ("dimension_names", (1, 2), TypeError,
     r"^dimension_names\[0\] = 1: not a str$"),
    ("dimension_names", "ab", TypeError,
     r"^dimension_names = 'ab': not a sequence of names$"),
    ("dimension_names", {"y": 0, "x": 1}, TypeError,
     r"^dimension_names = \{'y': 0, 'x': 1\}: not a sequence of names$"),
    ("dimension_names", ("a\0b", "c"), shardpipe.InvalidDescriptionError,
     r"^dimension_names\[0\] = 'a\\x00b': holds a NUL character$"),
    ("codec", None, TypeError, r"^codec = None: not a str$"),
    ("codec", 3, TypeError, r"^codec = 3: not a str$"),
    ("codec", "zstd\0:9", shardpipe.InvalidDescriptionError,
     r"^codec = 'zstd\\x00:9': holds a NUL character$"),
    ("backend", None, TypeError, r"^backend = None: not a str$"),
    ("index_location", 1, TypeError, r"^index_location = 1: not a str$"),
    ("overwrite", "no", TypeError, r"^overwrite = 'no': not a bool$"),
    ("overwrite", 2, TypeError, r"^overwrite = 2: not a bool$"),
    ("dtype", None, TypeError, r"^dtype = None: not a data type$"),
    ("durable", "yes", TypeError, r"^durable = 'yes': not a bool$"),
    ("write_empty_chunks", [1], TypeError,
     r"^write_empty_chunks = \[1\]: not a bool$"),
    ("max_memory", -1, shardpipe.InvalidDescriptionError,
     r"^max_memory = -1: negative$"),
    ("max_memory", 1.5e9, TypeError, r"^max_memory = 1500000000\.0: not an "
     r"integer$"),
])
def test_argument_of_the_wrong_kind(tmp_path, arg, value, exc, words):
    """Strings, names and flags of the wrong kind are refused naming the
    argument, not converted: NumPy reads dtype None as float64, bool("no")
    is True, and C would cut a name at its NUL."""
    (tmp_path / "a.zarr").mkdir()
    (tmp_path / "a.zarr" / "zarr.json").write_text("{}")
    kw = dict(GOOD, dtype="uint8")
    kw[arg] = value
    with pytest.raises(exc, match=words):
        shardpipe.Stream(tmp_path / "a.zarr", **kw)
    assert (tmp_path / "a.zarr" / "zarr.json").read_text() == "{}"


def test_numpy_integers_are_integers(tmp_path):
    """NumPy's integer scalars are integers (operator.index takes them)."""
    n = np.int64
    with shardpipe.Stream(tmp_path / "a.zarr", (n(4), n(6)), (n(2), n(2)),
                          (n(2), n(4)), "uint8", threads=np.uint8(1),
                          overwrite=np.False_) as s:
        s.append(np.arange(24, dtype=np.uint8).reshape(4, 6))
    assert shardpipe.open(tmp_path / "a.zarr").shape == (4, 6)


def test_read_arguments(tmp_path):
    """Reader.read names a bad start or count entry, and a region past the
    shape, as IndexError (TypeError for a non-integer)."""
    write(tmp_path / "r.zarr", np.arange(24, dtype=np.uint8).reshape(4, 6),
          (2, 2), (2, 4), "none")
    r = shardpipe.open(tmp_path / "r.zarr")
    for start, count, words in [
            ((-1, 0), (1, 1), r"^start\[0\] = -1: negative$"),
            ((0, 0), (1, -2), r"^count\[1\] = -2: negative$"),
            ((0, 0), (1 << 64, 1), r"^count\[0\] = 18446744073709551616"),
            ((3, 0), (2, 1), r"^start\[0\] \+ count\[0\] = 5: beyond "
             r"shape\[0\] = 4$"),
            ((0, 0), (1,), r"need 2 entries, not 2 and 1")]:
        with pytest.raises(IndexError, match=words):
            r.read(start, count)
    with pytest.raises(TypeError, match=r"start\[1\] = 0\.5"):
        r.read((0, 0.5), (1, 1))
    np.testing.assert_array_equal(r.read((1, 2), (2, 3)),
                                  [[8, 9, 10], [14, 15, 16]])


def test_impossible_paths_name_the_reason(tmp_path):
    """A path that cannot hold a store is refused with a StorageError that
    names the path and the real reason, not a bare I/O error."""
    f = tmp_path / "file"
    f.write_text("keep")
    cases = [
        (f / "x.zarr", [str(f) + " is not a directory"]),
        (tmp_path / "no" / "x.zarr", ["parent directory",
                                      "does not exist"]),
    ]
    # A file system that makes no new directories: as root, mkdir says
    # ENOENT there; as anyone else, permission is denied first.
    if os.path.isdir("/proc/self"):
        cases.append(("/proc/shardpipe-test.zarr", ["/proc"]))
    for path, words in cases:
        with pytest.raises(shardpipe.StorageError) as e:
            shardpipe.Stream(path, (4,), (2,), (2,), "uint8")
        msg = str(e.value)
        assert str(path) in msg and "input/output error" not in msg, msg
        for w in words:
            assert w in msg, msg
        if str(path).startswith("/proc/"):
            assert ("makes no new directories" in msg or
                    "ermission denied" in msg), msg
    assert f.read_text() == "keep"


# ------------------------------------------------------------ errors

def test_exception_hierarchy(tmp_path):
    E = shardpipe
    for cls in (E.InvalidDescriptionError, E.StorageError,
                E.CorruptStoreError, E.UnsupportedError, E.DeviceError,
                E.SinkError, E.ClosedError):
        assert issubclass(cls, E.Error)
    assert issubclass(E.InvalidDescriptionError, ValueError)
    assert issubclass(E.StorageError, OSError)

    with pytest.raises(E.InvalidDescriptionError) as e:
        E.Stream(tmp_path / "x.zarr", (4,), (0,), (0,), "uint8")
    assert e.value.code is not None

    with pytest.raises(E.Error) as e:
        E.open(tmp_path / "missing.zarr")
    assert "missing.zarr" in str(e.value)

    # A corrupt shard index: CorruptStoreError naming the shard.
    p = tmp_path / "k.zarr"
    write(p, np.arange(64, dtype=np.uint8).reshape(8, 8), (2, 8), (4, 8),
          "zstd:1")
    shard = p / "c" / "1" / "0"
    raw = bytearray(shard.read_bytes())
    raw[-5] ^= 0xFF
    shard.write_bytes(bytes(raw))
    r = E.open(p)
    with pytest.raises(E.CorruptStoreError, match="c/1/0"):
        r.check()
    with pytest.raises(E.CorruptStoreError):
        r[...]
    np.testing.assert_array_equal(r[:4], np.arange(32).reshape(4, 8))

    # A store with a codec shardpipe lacks: UnsupportedError naming it.
    zarr = need("zarr")
    q = tmp_path / "u.zarr"
    z = zarr.create_array(str(q), shape=(8,), chunks=(4,), dtype="uint8",
                          serializer=zarr.codecs.BytesCodec(),
                          compressors=[zarr.codecs.ZstdCodec(level=1)])
    z[...] = np.arange(8)
    meta = (q / "zarr.json").read_text().replace('"zstd"', '"lzma"')
    (q / "zarr.json").write_text(meta)
    with pytest.raises(E.UnsupportedError, match="lzma"):
        E.open(q)


# ------------------------------------------------------------ one grammar

@pytest.mark.parametrize("codec", CODECS + [
    "zstd", "gzip", "blosc", "blosc:zstd:3:noshuffle:4096", "zstd:0",
    "zstd:x", "gzip:1:2", "blosc:zstd:1:byteshuffle", "lz4", "zstd:99",
    "blosc:zstd:1:shuffle:0:9", "none:3", ""])
def test_codec_grammar_is_the_cli_s(tmp_path, cli, codec):
    """The package and `shardpipe write --codec` accept and refuse the same
    strings."""
    data = bytes(range(64))
    r = subprocess.run([cli, "write", "--shape", "64", "--chunk", "8",
                        "--codec", codec, "--backend", "cpu",
                        str(tmp_path / "cli.zarr")], input=data,
                       capture_output=True)
    try:
        with shardpipe.Stream(tmp_path / "py.zarr", (64,), (8,), (8,),
                              "uint8", codec=codec, backend="cpu") as s:
            s.append_bytes(data)
        py_ok = True
    except shardpipe.InvalidDescriptionError:
        py_ok = False
    assert py_ok == (r.returncode == 0), r.stderr
    if py_ok:
        assert (read_zarr(tmp_path / "py.zarr") ==
                read_zarr(tmp_path / "cli.zarr")).all()
        for f in ("zarr.json",):
            assert ((tmp_path / "py.zarr" / f).read_text() ==
                    (tmp_path / "cli.zarr" / f).read_text())


def test_backends_match_the_cli(cli):
    """backends() lists what `shardpipe backends` lists."""
    names = [b.name for b in shardpipe.backends()]
    assert "cpu" in names
    assert all(isinstance(b.usable, bool) for b in shardpipe.backends())
    out = subprocess.run([cli, "backends"], capture_output=True,
                         text=True).stdout
    for b in shardpipe.backends():
        assert b.name in out
    cpu = next(b for b in shardpipe.backends() if b.name == "cpu")
    assert cpu.usable and cpu.detail


def test_stats_and_backend(tmp_path):
    a = np.ones((8, 32, 32), np.float32)
    with shardpipe.Stream(tmp_path / "st.zarr", (0, 32, 32), (2, 32, 32),
                          (4, 32, 32), np.float32, backend="cpu") as s:
        assert s.backend == "cpu"
        s.append(a)
        s.flush()
        st = s.stats
        assert isinstance(st, shardpipe.Stats)
        assert st.bytes_in == a.nbytes
        assert st.shards_written == 2 and st.rows_written == 8
        assert 0 < st.bytes_out < a.nbytes


# ------------------------------------------------------------------- S3

def test_s3_write_and_read(s3, rng):
    """A Stream to an s3:// URL: the package's reader and zarr-python,
    through its own S3 store (fsspec's s3fs), return the array; writing
    there again needs overwrite, as for a directory."""
    a = random_array(rng, "uint16", (9, 21, 17))
    url = "s3://pkg/frames.zarr"
    try:
        s = shardpipe.Stream(url, (0, 21, 17), (2, 8, 8), (4, 16, 8),
                             "uint16", codec="zstd:3", backend="cpu")
    except shardpipe.UnsupportedError as e:
        pytest.skip("this library has no S3 support: %s" % e)
    with s:
        for t in range(a.shape[0]):
            s.append(a[t])
    r = shardpipe.open(url)
    assert r.shape == a.shape and r.shards == (4, 16, 8)
    r.check()
    np.testing.assert_array_equal(r[...], a)
    np.testing.assert_array_equal(r[3:7, ::2, 5], a[3:7, ::2, 5])
    zarr = need("zarr")
    pytest.importorskip("s3fs", reason="s3fs is not installed "
                        "(scripts/setup-python-readers installs it)")
    store = zarr.storage.FsspecStore.from_url(
        url, read_only=True, storage_options={
            "endpoint_url": s3, "key": "testing", "secret": "testing"})
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], a)
    with pytest.raises(shardpipe.StorageError, match="already holds a store"):
        shardpipe.Stream(url, (0, 21, 17), (2, 8, 8), (4, 16, 8), "uint16")
