"""Stream(path, mode="a"): continuing an array a closed stream left
(shardpipe_stream_reopen).  Expected values come from NumPy and the files
of a store written in one run: k rows, close, reopen, N - k rows gives
the same files; zarr-python reads what was appended across the runs;
wrong rows after a reopen are refused against the store's shape, a field
that differs from the store's is refused naming it, a path without a
store, a store another stream holds and modes that are not "w", "w-" or
"a" are refused."""

import os

import numpy as np
import pytest

import shardpipe

INNER = (24, 20)                 # edge chunks on both inner dims
CHUNKS = (3, 8, 8)
SHARDS = (6, 16, 16)             # a shard row is 6 rows of dim 0
N = 20                           # 3 shard rows and 2 rows of a fourth


def frames(rng, n, dtype=np.uint16, inner=INNER):
    """Random rows with some all-zero (fill) chunks, so that some chunks
    are left out of the store and the index says so."""
    a = rng.integers(0, 1000, (n,) + inner).astype(dtype)
    a[3:6, :8, :8] = 0
    a[12:, 16:, :] = 0
    return a


def new(path, shape=(0,) + INNER, **kw):
    kw.setdefault("backend", "cpu")
    kw.setdefault("threads", 2)
    return shardpipe.Stream(path, shape, CHUNKS, SHARDS, "uint16", **kw)


def reopen(path, **kw):
    kw.setdefault("backend", "cpu")
    kw.setdefault("threads", 2)
    return shardpipe.Stream(path, mode="a", **kw)


def files(root):
    """Every file under root, by its path relative to root: its bytes."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def zarr_read(path):
    zarr = pytest.importorskip("zarr")
    return zarr.open_array(str(path), mode="r")[...]


# ------------------------------------------------------------ the README

def test_readme_pause_and_resume(tmp_path, rng):
    """python/README.md, "Pausing and resuming": 50 frames, close, mode
    "a", 50 more; zarr-python reads the 100 frames given."""
    want = rng.integers(0, 4096, (100, 256, 256)).astype(np.uint16)
    p = str(tmp_path / "run.zarr")
    with shardpipe.Stream(p, shape=(0, 256, 256), chunks=(8, 128, 128),
                          shards=(32, 256, 256), dtype="uint16",
                          backend="cpu") as s:
        s.append(want[:50])
        assert s.start_row == 0
    with shardpipe.Stream(p, mode="a", backend="cpu") as s:
        assert s.start_row == 50
        s.append(want[50:])
    got = zarr_read(p)
    assert got.shape == (100, 256, 256) and got.dtype == np.uint16
    np.testing.assert_array_equal(got, want)
    a = shardpipe.open(p)
    assert a.shape == (100, 256, 256)
    a.check()


# ------------------------------------------------------- byte identity

# k: 0 (a store of no rows), 1 and 4 (inside a chunk), 9 (a chunk edge
# inside a shard row), 12 (a shard edge), 19 (inside the last chunk).
@pytest.mark.parametrize("k", [0, 1, 4, 9, 12, 19])
@pytest.mark.parametrize("variant", ["store", "given"])
def test_two_runs_give_the_files_of_one(tmp_path, rng, k, variant):
    """Every file of N rows written in one run equals those of k rows,
    close, mode "a" (the fields from the store, or all of them given,
    equal to the store's), N - k rows; zarr-python reads the rows."""
    want = frames(rng, N)
    one, two = tmp_path / "one.zarr", tmp_path / "two.zarr"
    with new(one) as s:
        s.append(want)
    with new(two) as s:
        s.append(want[:k])
    if variant == "given":
        kw = dict(shape=(0,) + INNER, chunks=CHUNKS, shards=SHARDS,
                  dtype="uint16", codec="zstd:1", index_location="end",
                  fill_value=0, dimension_names=(None, None, None))
    else:
        kw = {}
    with reopen(two, **kw) as s:
        assert s.start_row == k
        s.append(want[k:])
    a, b = files(one), files(two)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    np.testing.assert_array_equal(zarr_read(two), want)


@pytest.mark.parametrize("k", [2, 6, 13])
def test_two_runs_other_layout(tmp_path, rng, k):
    """The same with the index at the start of each shard, gzip, a fill
    value of 7 (chunks all 7 left out), names and attributes: the reopen
    keeps the store's settings and its attributes."""
    want = frames(rng, N)
    want[6:12, :8, :] = 7
    kw = dict(codec="gzip:1", index_location="start", fill_value=7,
              dimension_names=("t", "y", "x"), attributes={"run": 1})
    one, two = tmp_path / "one.zarr", tmp_path / "two.zarr"
    with new(one, **kw) as s:
        s.append(want)
    with new(two, **kw) as s:
        s.append(want[:k])
    with reopen(two, fill_value=7) as s:    # its dtype from the store
        assert s.start_row == k
        s.append(want[k:])
    a, b = files(one), files(two)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    np.testing.assert_array_equal(zarr_read(two), want)


def test_three_runs_and_a_bound(tmp_path, rng):
    """7 rows, then 5, then a run bounded at row N (shape[0] = N): its
    appends stop there (BeyondEndError, nothing appended, as for a new
    bounded stream), and the files equal one run of a bounded stream."""
    want = frames(rng, N)
    one, two = tmp_path / "one.zarr", tmp_path / "two.zarr"
    with new(one, shape=(N,) + INNER) as s:
        s.append(want)
    with new(two) as s:
        s.append(want[:7])
    with reopen(two) as s:
        s.append(want[7:12])
    with reopen(two, shape=(N,) + INNER) as s:
        assert s.start_row == 12
        # Checked before anything is appended: 9 rows do not fit in 8.
        with pytest.raises(shardpipe.BeyondEndError,
                           match="12 written, 8 left; nothing appended"):
            s.append(np.concatenate([want[12:], want[:1]]))
        assert s.stats.bytes_in == 0
        s.append(want[12:])
        with pytest.raises(shardpipe.BeyondEndError,
                           match="20 written, 0 left"):
            s.append(want[:1])
        assert s.stats.bytes_in == want[12:].nbytes
    got = zarr_read(two)
    np.testing.assert_array_equal(got, want)
    a, b = files(one), files(two)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name


def test_bytes_and_skips_after_reopen(tmp_path, rng):
    """append_bytes() in spans that cut rows, and skip(), continue from
    the reopened row: the files equal one run's doing the same."""
    want = frames(rng, N)
    row = want[0].nbytes
    one, two = tmp_path / "one.zarr", tmp_path / "two.zarr"
    with new(one) as s:
        s.append(want[:5])
        s.skip(2)
        s.append(want[7:])
    with new(two) as s:
        s.append(want[:5])
    with reopen(two) as s:
        s.skip(nbytes=row + 100)          # a row and 50 elements of fill
        s.skip(nbytes=row - 100)
        raw = want[7:].tobytes()
        for a, b in ((0, 7), (7, row + 3), (row + 3, len(raw))):
            s.append_bytes(raw[a:b])
        assert s.stats.bytes_in == len(raw) + 2 * row
    a, b = files(one), files(two)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    got = zarr_read(two)
    want[5:7] = 0
    np.testing.assert_array_equal(got, want)


def test_short_bounded_run_after_reopen(tmp_path, rng):
    """A run bounded at N that stops short: close() writes the rows,
    then raises IncompleteError counting the array's rows (those of the
    earlier run included); allow_short=True accepts it."""
    want = frames(rng, N)
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(want[:12])
    with pytest.raises(shardpipe.IncompleteError,
                       match=r"rows 15 and after holding the fill value"):
        with reopen(p, shape=(N,) + INNER) as s:
            s.append(want[12:15])
    got = zarr_read(p)
    assert got.shape == (N,) + INNER
    np.testing.assert_array_equal(got[:15], want[:15])
    assert (got[15:] == 0).all()
    q = tmp_path / "b.zarr"
    with new(q) as s:
        s.append(want[:12])
    with reopen(q, shape=(N,) + INNER, allow_short=True) as s:
        s.append(want[12:15])
    assert files(p) == files(q)


def test_close_with_nothing_appended_changes_nothing(tmp_path, rng):
    """A reopen closed without appending leaves the same files."""
    want = frames(rng, 10)
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(want)
    before = files(p)
    with reopen(p) as s:
        assert s.start_row == 10
    assert files(p) == before


# ------------------------------------------------------------- refusals

def test_wrong_rows_after_reopen(tmp_path, rng):
    """After a reopen that gave no shape, append() checks rows against
    the store's shape: another row shape raises ValueError naming both,
    another dtype TypeError, appending nothing; the stream stays usable
    and the store holds exactly the rows accepted."""
    want = frames(rng, 8)
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(want[:5])
    with reopen(p) as s:
        for bad in (np.zeros((20, 24), np.uint16),
                    np.zeros((2, 24, 21), np.uint16),
                    np.zeros((24 * 20,), np.uint16)):
            with pytest.raises(ValueError, match=r"\(k, 24, 20\) or "
                               r"\(24, 20\)") as e:
                s.append(bad)
            assert str(bad.shape) in str(e.value)
            assert "nothing appended" in str(e.value)
            assert s.stats.bytes_in == 0
        with pytest.raises(TypeError, match="uint16"):
            s.append(want[5:].astype(np.uint8))
        assert s.stats.bytes_in == 0
        s.append(want[5:])
    got = zarr_read(p)
    assert got.shape == (8,) + INNER
    np.testing.assert_array_equal(got, want)


def test_mismatching_dtype_is_refused(tmp_path, rng):
    """A dtype given in mode "a" other than the store's is refused before
    anything changes, the message naming the field and both values."""
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(frames(rng, 4))
    before = files(p)
    with pytest.raises(shardpipe.InvalidDescriptionError) as e:
        reopen(p, dtype="uint8")
    msg = str(e.value)
    assert "dtype" in msg and "uint16" in msg and "uint8" in msg, msg
    assert isinstance(e.value, ValueError) and e.value.code is not None
    assert files(p) == before
    with reopen(p) as s:                  # the refusal left no lock
        assert s.start_row == 4


# The field as the library names it, the store's value, the one given.
@pytest.mark.parametrize("arg, value, field, store, given", [
    ("chunks", (3, 8, 4), "dim 2 chunk", "8", "4"),
    ("shards", (12, 16, 16), "dim 0 chunks per shard", "2", "4"),
    ("codec", "zstd:5", "codec level", "1", "5"),
    ("codec", "gzip:1", "codec", "zstd", "gzip"),
    ("codec", "zstd:1:checksum", "zstd checksum", "0", "1"),
    ("fill_value", 3, "fill value", "0x0000", "0x0003"),
    ("index_location", "start", "index location", '"end"', '"start"'),
    ("shape", (0, 24, 21), "dim 2 size", "20", "21"),
    ("dimension_names", ("t", None, None), "dim 0 name", '""', '"t"'),
])
def test_other_mismatches_are_refused(tmp_path, rng, arg, value, field,
                                      store, given):
    """Each array field given in mode "a" must equal the store's: the
    library's message names the field and both values, and nothing
    changes."""
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(frames(rng, 4))
    before = files(p)
    with pytest.raises(shardpipe.InvalidDescriptionError) as e:
        reopen(p, **{arg: value})
    msg = str(e.value)
    assert str(p) in msg, msg
    tail = msg.split(str(p), 1)[1]
    assert field in tail and store in tail and given in tail, msg
    assert tail.index(store) < tail.rindex(given), msg
    assert files(p) == before


def test_a_bound_below_the_rows_is_refused(tmp_path, rng):
    """shape[0] in mode "a" bounds the array: one not above the rows the
    store holds leaves nothing to append, BeyondEndError at open."""
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(frames(rng, 4))
    before = files(p)
    for bound in (3, 4):
        with pytest.raises(shardpipe.BeyondEndError, match="4 rows") as e:
            reopen(p, shape=(bound,) + INNER)
        assert e.value.code == 17
    assert files(p) == before
    with reopen(p, shape=(5,) + INNER) as s:
        s.append(frames(rng, 1))
    assert shardpipe.open(p).shape == (5,) + INNER


def test_wrong_rank_is_refused(tmp_path, rng):
    """A field given with another number of entries than the store's
    dims, and shards that are not whole chunks of the store's, are
    refused by the package, naming them."""
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(frames(rng, 2))
    before = files(p)
    for arg, value in (("shape", (0, 24)), ("chunks", (3, 8, 8, 1)),
                       ("shards", (6,)), ("dimension_names", ("t", "y"))):
        with pytest.raises(shardpipe.InvalidDescriptionError,
                           match=r"^%s has %d entries; the array at .* has "
                           r"3 dimensions$" % (arg, len(value))):
            reopen(p, **{arg: value})
    with pytest.raises(shardpipe.InvalidDescriptionError,
                       match=r"^shards\[2\] = 12: not a multiple of "
                       r"chunks\[2\] = 8, the store's"):
        reopen(p, shards=(6, 16, 12))
    assert files(p) == before


def test_no_store_at_path(tmp_path):
    """mode "a" where there is no array: the library's path error
    (StorageError, code 11), and nothing is created."""
    for p in (tmp_path / "none.zarr", tmp_path / "empty.zarr"):
        if p.name == "empty.zarr":
            p.mkdir()
        with pytest.raises(shardpipe.StorageError) as e:
            reopen(p)
        assert e.value.code == 11, e.value
        assert isinstance(e.value, OSError)
    assert not (tmp_path / "none.zarr").exists()
    assert os.listdir(tmp_path / "empty.zarr") == []
    # The fill value's dtype is read from the store first: the same error.
    with pytest.raises(shardpipe.StorageError) as e:
        reopen(tmp_path / "none.zarr", fill_value=1)
    assert e.value.code == 11


def test_a_second_stream_is_busy(tmp_path, rng):
    """While a stream holds the store (made or reopened), a reopen is
    refused with BusyError (a StorageError, code 27) and changes nothing;
    after its close the store can be reopened."""
    want = frames(rng, 9)
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(want[:3])
        with pytest.raises(shardpipe.BusyError) as e:
            reopen(p)
        assert isinstance(e.value, shardpipe.StorageError)
        assert e.value.code == 27
        s.append(want[3:5])
    with reopen(p) as first:
        with pytest.raises(shardpipe.BusyError):
            reopen(p)
        with pytest.raises(shardpipe.BusyError):
            new(p, overwrite=True)
        first.append(want[5:])
    with reopen(p) as s:
        assert s.start_row == 9
    np.testing.assert_array_equal(zarr_read(p), want)


@pytest.mark.parametrize("mode", ["r", "r+", "x", "", "W", "a+", "w+", "a-"])
def test_bad_modes(tmp_path, mode):
    with pytest.raises(ValueError, match=r"^mode = %s: not one of"
                       % repr(mode).replace("+", r"\+")):
        shardpipe.Stream(tmp_path / "a.zarr", (0, 4), (1, 4), (1, 4),
                         "uint8", mode=mode)
    assert not (tmp_path / "a.zarr").exists()


def test_mode_of_another_kind(tmp_path):
    with pytest.raises(TypeError, match=r"^mode = 1: not a str$"):
        shardpipe.Stream(tmp_path / "a.zarr", (0, 4), (1, 4), (1, 4),
                         "uint8", mode=1)


@pytest.mark.parametrize("mode", ["w", "w-"])
def test_w_and_w_minus_create(tmp_path, rng, mode):
    """"w" and "w-" make a new array, refuse an existing store (code 12)
    unless overwrite=True, and need shape, chunks, shards and dtype."""
    p = tmp_path / "a.zarr"
    a = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    with shardpipe.Stream(p, (0, 4), (1, 4), (2, 4), "uint8", mode=mode,
                          backend="cpu") as s:
        assert s.start_row == 0
        s.append(a)
    with pytest.raises(shardpipe.StorageError) as e:
        shardpipe.Stream(p, (0, 4), (1, 4), (2, 4), "uint8", mode=mode)
    assert e.value.code == 12
    with shardpipe.Stream(p, (0, 4), (1, 4), (2, 4), "uint8", mode=mode,
                          overwrite=True, backend="cpu") as s:
        s.append(a[:1])
    np.testing.assert_array_equal(zarr_read(p), a[:1])
    with pytest.raises(TypeError, match=r"missing 1 required argument: "
                       r"'shards'"):
        shardpipe.Stream(p, (0, 4), (1, 4), dtype="uint8", mode=mode)
    with pytest.raises(TypeError, match=r"missing 2 required arguments: "
                       r"'shards' and 'dtype'"):
        shardpipe.Stream(p, (0, 4), (1, 4), mode=mode)
    with pytest.raises(TypeError, match=r"missing 4 required arguments: "
                       r"'shape', 'chunks', 'shards', and 'dtype'"):
        shardpipe.Stream(p, mode=mode)
    with pytest.raises(TypeError, match=r"^dtype = None: not a data type$"):
        shardpipe.Stream(p, (0, 4), (1, 4), (2, 4), mode=mode)


@pytest.mark.parametrize("kw, words", [
    (dict(overwrite=True), "overwrite=True"),
    (dict(sink=lambda c, d: None), "sink"),
    (dict(downsample=("y", "x")), "reopening a pyramid is not supported"),
    (dict(levels=2), "reopening a pyramid is not supported"),
    (dict(ngff=True), "reopening a pyramid is not supported"),
    (dict(method="max"), "reopening a pyramid is not supported"),
    (dict(units={"x": "micrometer"}), "reopening a pyramid"),
])
def test_what_mode_a_refuses(tmp_path, rng, kw, words):
    p = tmp_path / "a.zarr"
    with new(p) as s:
        s.append(frames(rng, 2))
    before = files(p)
    with pytest.raises(ValueError, match=words) as e:
        reopen(p, **kw)
    assert not isinstance(e.value, shardpipe.Error)
    assert files(p) == before


def test_mode_a_needs_a_path_and_no_group(tmp_path, rng):
    """No path, or a Group's stream: ValueError.  A group's array is
    continued at its own path once its stream is closed; the group's
    path holds no array to continue."""
    with pytest.raises(ValueError, match="needs the path"):
        shardpipe.Stream(None, mode="a")
    want = rng.integers(0, 255, (3, 4)).astype(np.uint8)
    g_path = tmp_path / "g.zarr"
    with shardpipe.Group(g_path, create=True) as g:
        with pytest.raises(ValueError, match="mode 'a'"):
            g.stream("a", (0, 4), (1, 4), (1, 4), "uint8", mode="a")
        with g.stream("a", (0, 4), (1, 4), (1, 4), "uint8",
                      backend="cpu") as s:
            s.append(want[:2])
            with pytest.raises(shardpipe.BusyError):
                reopen(g_path / "a")
    with pytest.raises(shardpipe.StorageError, match="group") as e:
        reopen(g_path)
    assert e.value.code == 11
    with reopen(g_path / "a") as s:
        assert s.start_row == 2
        s.append(want[2])
    np.testing.assert_array_equal(zarr_read(g_path / "a"), want)


# ------------------------------------------------- a damaged last shard row

def test_damaged_last_row_refused_or_dropped(tmp_path, rng):
    """A shard of the last shard row whose index CRC does not match
    refuses mode "a" naming it, the store left as it was; with
    truncate_to_advertised=True that row (rows 12..13 of 14) is dropped,
    start_row is 12, and rows 12.. appended give the files of one run."""
    a = frames(rng, N)
    with new(tmp_path / "one.zarr") as s:
        s.append(a)
    p = tmp_path / "cut.zarr"
    with new(p) as s:
        s.append(a[:14])
    shard = p / "c" / "2" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[-2] ^= 0x5A
    shard.write_bytes(bytes(data))
    before = files(p)
    with pytest.raises(shardpipe.Error, match="c/2/0/0"):
        reopen(p)
    assert files(p) == before
    with pytest.raises(ValueError, match="truncate_to_advertised"):
        new(tmp_path / "fresh.zarr", truncate_to_advertised=True)
    with reopen(p, truncate_to_advertised=True) as s:
        assert s.start_row == 12
        s.append(a[12:])
    assert files(p) == files(tmp_path / "one.zarr")
