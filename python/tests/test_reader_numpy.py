"""shardpipe.open() as NumPy and Dask users take it: every index NumPy
takes gives exactly what NumPy gives on a copy of the whole array (value,
shape, dtype and type: a NumPy scalar where NumPy gives one), through one
region read of the smallest box holding the selection; NumPy's refusals
are IndexErrors here too; the array attributes Dask's from_array reads;
__array__ with NumPy 2's dtype and copy; pickling reopens the path and
reads the same data; dask.array.from_array computes what NumPy computes,
on threads and on processes."""

import os
import pickle

import numpy as np
import pytest

import shardpipe

SHAPE = (9, 13, 11)               # edge chunks on every dim
CHUNKS = (2, 4, 4)
SHARDS = (4, 8, 4)


def store(path, a, chunks=CHUNKS, shards=SHARDS):
    with shardpipe.Stream(path, a.shape, chunks, shards, a.dtype,
                          backend="cpu", threads=2) as s:
        s.append(a)
    return shardpipe.open(path)


@pytest.fixture
def arr(rng):
    return rng.integers(-1000, 1000, SHAPE).astype(np.int32)


@pytest.fixture
def reader(tmp_path, arr):
    return store(tmp_path / "a.zarr", arr)


def same(got, want, key):
    assert type(got) is type(want), (key, type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.shape == want.shape, (key, got.shape, want.shape)
        assert got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want, err_msg=repr(key))
    else:
        assert got == want, key


class Spy:
    """The extension's reader, with the regions read recorded."""

    def __init__(self, r):
        self.r, self.regions = r, []

    def read_into(self, start, count, out, step=None):
        self.regions.append((tuple(start), tuple(count),
                             tuple(step) if step else (1,) * len(start)))
        self.r.read_into(start, count, out, step)

    def __getattr__(self, name):
        return getattr(self.r, name)


def keys_of(a, rng):
    """Basic and advanced indexes of an array shaped like a (3-d)."""
    m0 = a[:, 0, 0] > 0
    keys = [
        np.s_[...], (), np.s_[3], np.s_[-1], np.s_[-9], np.s_[8],
        np.s_[1, 2, 3], np.s_[-1, -1, -1], np.s_[np.int64(2), np.uint8(3)],
        np.s_[::-1], np.s_[5:1:-2], np.s_[::-1, ::-1, ::-1],
        np.s_[1:8:3, ::-2, 4], np.s_[-3:, :-9:-3], np.s_[100:], np.s_[:100],
        np.s_[5:2], np.s_[2:5:-1], np.s_[::20], np.s_[-100::-4],
        np.s_[..., 5], np.s_[2, ..., 1:2], np.s_[..., -1, :],
        np.s_[None], np.s_[None, 1, ..., None, 2], np.s_[:, None, 3],
        np.s_[..., None], np.s_[np.newaxis, ::-1, np.newaxis],
        np.s_[True], np.s_[False], np.s_[0, np.True_],
        np.s_[np.array(4)], np.s_[np.array(-2), 3],
        np.s_[[0, 8, 3]], np.s_[[-1, 0, -1]], np.s_[[]],
        np.s_[np.array([[1, 2], [7, 0]])], np.s_[(0, 4),],
        np.s_[[0, 2], :, [1, 3]], np.s_[[0, 2], ..., [1, 3]],
        np.s_[:, [0, 12], None, [10, 1]], np.s_[[0, 1], [[0], [5]]],
        np.s_[[4, 2], 3], np.s_[2, [5, 1], ::-3], np.s_[[], :, [7]],
        np.s_[m0], np.s_[list(m0)], np.s_[a[:, :, 0] > 0], np.s_[:, a[0] > 0],
        np.s_[a > 500], np.s_[a < -2000], np.s_[np.zeros(9, bool), [7]],
        np.s_[m0, 1:5, [2]],
        # Advanced indexes that broadcast to nothing: no array's bounds
        # checked (20 is out of range), the result shaped all the same.
        np.s_[np.eye(9, 13, dtype=bool), np.zeros((0, 9), int)],
        np.s_[[0], np.zeros((0, 1), int), [20]],
        np.s_[m0, np.zeros((0, 1), int)], np.s_[None, [], ..., [20]],
    ]
    for _ in range(30):
        keys.append(tuple(
            slice(int(lo), int(hi), int(st)) for lo, hi, st in
            zip(rng.integers(-14, 14, 3), rng.integers(-14, 15, 3),
                rng.choice([-4, -3, -1, 1, 2, 5], 3))))
    for _ in range(10):
        k = int(rng.integers(1, 4))
        keys.append(tuple(rng.integers(-n, n, k) for n in SHAPE))
    return keys


def test_every_index_numpy_takes(reader, arr, rng):
    for key in keys_of(arr, rng):
        same(reader[key], arr[key], key)


def test_rank_one(tmp_path, rng):
    a = rng.standard_normal(37).astype(np.float32)
    r = store(tmp_path / "v.zarr", a, (5,), (10,))
    for key in [np.s_[...], np.s_[::-1], np.s_[30:2:-7], np.s_[-1],
                np.s_[[3, 3, 36]], np.s_[a > 0], np.s_[None, 4:9],
                np.s_[7, None]]:
        same(r[key], a[key], key)


def test_refusals_are_numpy_s(reader, arr):
    """Where NumPy raises, the reader raises the same class (IndexError
    but for a ragged list, NumPy's ValueError), and reads nothing; an
    out-of-range integer, too many indices and two ellipses in NumPy's
    words (the integer's axis and size named)."""
    bad = [np.s_[9], np.s_[-10], np.s_[0, 13], np.s_[0, 0, -12],
           np.s_[0, 0, 0, 0], np.s_[..., ...], np.s_[1.0], np.s_[[1.0]],
           np.s_[np.array([1.5])], np.s_["x"], np.s_[[0, 9]],
           np.s_[[-10]], np.s_[np.ones(8, bool)],
           np.s_[np.ones((9, 12), bool)], np.s_[[0, 1], [0, 1, 2]],
           np.s_[[None]], np.s_[[slice(1)]], np.s_[[[0, 1], [2]]],
           np.s_[np.ones(3, bool), np.ones(4, bool)], np.s_[0, [20]],
           np.s_[[0, 1], 13]]
    spy = Spy(reader._r)
    reader._r = spy
    for key in bad:
        with pytest.raises(Exception) as want:
            arr[key]
        assert want.type in (IndexError, ValueError), key
        with pytest.raises(want.type) as got:
            reader[key]
        if "out of bounds" in str(want.value) or "too many" in str(
                want.value) or "single ellipsis" in str(want.value):
            assert str(got.value) == str(want.value), key
    assert spy.regions == []
    with pytest.raises(IndexError, match="out of bounds for axis 1 with "
                       "size 13"):
        reader[0, 13]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        reader[::0]


# A slice reads its own elements (start, count, step > 0, whatever its
# sign); integer arrays and masks the box that holds theirs.
@pytest.mark.parametrize("key,start,count,step", [
    (np.s_[::-1], (0, 0, 0), SHAPE, (1, 1, 1)),
    (np.s_[5:1:-2], (3, 0, 0), (2, 13, 11), (2, 1, 1)),
    (np.s_[1:8:3, ::-2, 4], (1, 0, 4), (3, 7, 1), (3, 2, 1)),
    (np.s_[2, 3:9], (2, 3, 0), (1, 6, 11), (1, 1, 1)),
    (np.s_[[6, 2, 4], -1, [0, 10, 3]], (2, 12, 0), (5, 1, 11), (1, 1, 1)),
    (np.s_[None, 3, ..., None], (3, 0, 0), (1, 13, 11), (1, 1, 1)),
    (np.s_[:, ::5, 10:2:-4], (0, 0, 6), (9, 3, 2), (1, 5, 4)),
])
def test_one_region_read_of_the_selection(reader, arr, key, start, count,
                                          step):
    spy = Spy(reader._r)
    reader._r = spy
    same(reader[key], arr[key], key)
    assert spy.regions == [(start, count, step)]


def test_empty_selection_reads_nothing(reader, arr):
    spy = Spy(reader._r)
    reader._r = spy
    for key in (np.s_[5:2], np.s_[[]], np.s_[:, 4:4], np.s_[arr < -2000]):
        same(reader[key], arr[key], key)
    assert spy.regions == []


def test_a_step_returns_its_elements_only(reader, arr):
    """A view of the box read would keep the whole box alive."""
    got = reader[::4, ::6]
    assert got.base is None or got.base.size == got.size
    same(got, arr[::4, ::6], "::4, ::6")


def test_array_attributes(reader, arr):
    r = reader
    assert r.shape == arr.shape and r.ndim == 3 and len(r) == 9
    assert r.dtype == arr.dtype and isinstance(r.dtype, np.dtype)
    assert r.size == arr.size and r.nbytes == arr.nbytes
    assert r.chunks == CHUNKS and isinstance(r.chunks, tuple)
    assert r.shards == SHARDS and isinstance(r.shards, tuple)
    assert all(type(n) is int for n in r.shape + r.chunks + r.shards)
    for got, want in zip(r, arr):
        same(got, want, "iteration")
    assert len(list(r)) == 9


def test_array_protocol(reader, arr):
    same(np.asarray(reader), arr, "asarray")
    same(np.array(reader), arr, "array")
    same(np.asarray(reader, dtype=np.float64), arr.astype(np.float64),
         "asarray(dtype)")
    same(reader.__array__(), arr, "__array__()")
    same(reader.__array__(np.int64, copy=True), arr.astype(np.int64),
         "__array__(int64, copy=True)")
    with pytest.raises(ValueError, match="copy=False"):
        reader.__array__(copy=False)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError, match="copy=False"):
            np.asarray(reader, copy=False)
    assert float(np.mean(reader)) == pytest.approx(float(arr.mean()))


def test_pickle_reopens_the_path(tmp_path, arr, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store("rel.zarr", arr)
    r = shardpipe.open("rel.zarr")
    blob = pickle.dumps(r)
    # Another working directory: the pickle names the store absolutely.
    os.mkdir("elsewhere")
    monkeypatch.chdir("elsewhere")
    back = pickle.loads(blob)
    assert back is not r and back._r is not r._r
    assert (back.shape, back.dtype, back.chunks, back.shards) == (
        r.shape, r.dtype, r.chunks, r.shards)
    same(back[...], arr, "unpickled")
    same(pickle.loads(pickle.dumps(back))[2, ::-1], arr[2, ::-1],
         "pickled twice")


def test_pickle_of_a_store_that_grew_reads_what_it_read(tmp_path, arr):
    p = tmp_path / "grow.zarr"
    with shardpipe.Stream(p, (0,) + SHAPE[1:], CHUNKS, SHARDS, "int32",
                          backend="cpu", threads=2) as s:
        s.append(arr[:5])
    blob = pickle.dumps(shardpipe.open(p))
    with shardpipe.Stream(p, mode="a", backend="cpu", threads=2) as s:
        s.append(arr[5:])
    back = pickle.loads(blob)
    assert back.shape == (5,) + SHAPE[1:]
    same(back[...], arr[:5], "grown")
    assert shardpipe.open(p).shape == SHAPE


def test_pickle_of_a_changed_store_is_refused(tmp_path, arr):
    p = tmp_path / "changed.zarr"
    blob = pickle.dumps(store(p, arr))
    with shardpipe.Stream(p, SHAPE, CHUNKS, SHARDS, "int16", backend="cpu",
                          threads=2, overwrite=True) as s:
        s.append(arr.astype(np.int16))
    with pytest.raises(shardpipe.StorageError,
                       match="changed since this Reader was pickled"):
        pickle.loads(blob)


def dask_array():
    return pytest.importorskip("dask.array")


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_dask_from_array(reader, arr, scheduler):
    da = dask_array()
    import dask

    x = da.from_array(reader, chunks=reader.chunks)
    assert x.shape == arr.shape and x.dtype == arr.dtype
    assert x.chunksize == CHUNKS
    kw = {"scheduler": scheduler}
    if scheduler == "processes":
        kw["num_workers"] = 2     # each worker unpickles the Reader
    # One compute: a process pool is started once.
    total, mean, part, top = dask.compute(
        x.sum(), x.mean(), x[1:8, ::-2, 3], x.max(axis=0), **kw)
    assert int(total) == int(arr.sum())
    assert float(mean) == pytest.approx(float(arr.mean()))
    np.testing.assert_array_equal(part, arr[1:8, ::-2, 3])
    np.testing.assert_array_equal(top, arr.max(axis=0))


def test_dask_auto_chunks_and_name(reader, arr):
    da = dask_array()
    x = da.from_array(reader)     # "auto": from the shards, as for zarr
    np.testing.assert_array_equal(x.compute(scheduler="threads"), arr)
    # The same store gives the same graph name; another store another.
    assert da.from_array(reader, chunks=CHUNKS).name == da.from_array(
        shardpipe.open(reader.path), chunks=CHUNKS).name


def chunks_meeting(start, count, step):
    """The chunks of CHUNKS holding the elements start + k * step."""
    n = 1
    for d in range(3):
        idx = [start[d] + k * step[d] for k in range(count[d])]
        n *= len({i // CHUNKS[d] for i in idx})
    return n


@pytest.mark.parametrize("key", [np.s_[...], np.s_[3], np.s_[::4, ::9, 5],
                                 np.s_[1:8:6, 1:12:8, ::4], np.s_[8, 12, 10]])
def test_only_the_chunks_a_selection_meets_are_decoded(reader, arr, key):
    start, count, step, _ = shardpipe._region(key, arr.shape, np)
    before = reader.stats()
    same(reader[key], arr[key], key)
    after = reader.stats()
    want = chunks_meeting(start, count, step)
    assert after["chunks_decoded"] - before["chunks_decoded"] == want, key
    assert after["bytes_read"] > before["bytes_read"]


@pytest.mark.parametrize("threads", [0, 1, 2, 3, 7])
def test_reads_on_any_number_of_threads_agree(tmp_path, arr, threads):
    store(tmp_path / "a.zarr", arr)
    r = shardpipe.open(tmp_path / "a.zarr", threads=threads)
    assert r.threads == threads
    same(r[...], arr, "...")
    same(r[::2, 1::3, ::-1], arr[::2, 1::3, ::-1], "steps")
    # The threads are kept across pickling.
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.threads == threads
    same(r2[5:, :7], arr[5:, :7], "5:, :7")


@pytest.mark.parametrize("threads,exc,msg", [
    (-1, ValueError, r"^threads = -1: not in 0\.\.\d+$"),
    (10 ** 9, ValueError, r"^threads = 1000000000: not in 0\.\.\d+$"),
    (2.0, TypeError, r"^threads = 2\.0: not an integer$"),
    ("2", TypeError, r"^threads = '2': not an integer$"),
    (True, TypeError, r"^threads = True: not an integer$"),
])
def test_threads_refused(tmp_path, arr, threads, exc, msg):
    store(tmp_path / "a.zarr", arr)
    with pytest.raises(exc, match=msg):
        shardpipe.open(tmp_path / "a.zarr", threads=threads)


def test_read_into_out(reader, arr):
    """read(..., out=) fills the caller's array, returns it, and reads
    into it again: the same bytes as a new array."""
    out = np.full((3, 5, 7), -1, np.int32)
    got = reader.read((2, 4, 1), (3, 5, 7), out=out)
    assert got is out
    np.testing.assert_array_equal(out, arr[2:5, 4:9, 1:8])
    reader.read((6, 8, 4), (3, 5, 7), out=out)
    np.testing.assert_array_equal(out, arr[6:9, 8:13, 4:11])
    empty = np.empty((0, 5, 7), np.int32)
    assert reader.read((9, 0, 0), (0, 5, 7), out=empty) is empty


@pytest.mark.parametrize("bad,exc,msg", [
    (np.zeros((3, 5, 6), np.int32), ValueError,
     r"out has shape \(3, 5, 6\), the region \(3, 5, 7\)"),
    (np.zeros((5, 7, 3), np.int32), ValueError, r"shape \(5, 7, 3\)"),
    (np.zeros(105, np.int32), ValueError, r"shape \(105,\)"),
    (np.zeros((3, 5, 7), np.uint32), TypeError,
     "out has dtype uint32, the array int32"),
    (np.zeros((3, 5, 7), ">i4"), TypeError, "dtype >i4"),
    (np.zeros((3, 5, 14), np.int32)[:, :, ::2], ValueError,
     "not C-contiguous"),
    (np.zeros((3, 5, 7), np.int32, order="F"), ValueError,
     "not C-contiguous"),
    ([[0] * 7] * 5, TypeError, "out must be a NumPy array, not list"),
])
def test_read_into_a_wrong_out_is_refused(reader, bad, exc, msg):
    """An out that is not what read() would return is refused before
    anything is read, naming what differs; the array is left alone."""
    before = np.array(bad, copy=True)
    with pytest.raises(exc, match=msg):
        reader.read((2, 4, 1), (3, 5, 7), out=bad)
    np.testing.assert_array_equal(np.asarray(bad), before)


def test_read_into_a_read_only_out_is_refused(reader):
    out = np.zeros((3, 5, 7), np.int32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        reader.read((2, 4, 1), (3, 5, 7), out=out)
    assert not out.any()
