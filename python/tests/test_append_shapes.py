"""Stream.append() of arrays whose shape is not whole rows of dim 0
(issue 38): each is refused with nothing appended, the stream stays
usable, and a following correct append gives a store that zarr-python
reads equal to exactly the accepted frames (expected values from NumPy).
Also append_bytes() (raw bytes in spans of any size), close() of input
that ends inside a row or short of a bounded dim 0 (pad_partial,
allow_short: the command line's --pad-partial and --allow-short), and
appends past a bounded dim 0."""

import numpy as np
import pytest

import shardpipe

zarr = pytest.importorskip("zarr")

INNER = (64, 64)
FRAME_BYTES = 64 * 64 * 2


def stream(path, shape=(0,) + INNER, dtype="uint16", **kw):
    rank = len(shape)
    chunks = (1,) + (32,) * (rank - 1)
    shards = (2,) + (64,) * (rank - 1)
    return shardpipe.Stream(path, shape, chunks, shards, dtype,
                            backend="cpu", threads=1, **kw)


def read(path):
    return zarr.open_array(str(path), mode="r")[...]


def frames(rng, n, dtype=np.uint16, inner=INNER):
    return rng.integers(1, 60000, (n,) + inner).astype(dtype)


def refused_then_good(path, rng, bad, exc, words=None):
    """Each of `bad` is refused with `exc` and appends nothing; the stream
    then takes a good frame, and the store holds that frame alone."""
    good = frames(rng, 1)
    with stream(path) as s:
        for b in bad:
            with pytest.raises(exc, match=words) as e:
                s.append(b)
            assert s.stats.bytes_in == 0
            assert not s.closed
        s.append(good[0])
    got = read(path)
    assert got.shape == (1,) + INNER
    np.testing.assert_array_equal(got, good)
    return e.value


# ------------------------------------------------------------ wrong shapes

@pytest.mark.parametrize("shape", [
    (64, 63), (32, 128), (64, 65), (63, 64), (1, 64, 63), (2, 32, 128),
    (64,), (4096,), (64, 64, 1), (1, 1, 64, 64), (0, 64, 63), (0,), (8192,),
], ids=str)
def test_wrong_shape_is_refused(tmp_path, rng, shape):
    """Whatever the bytes add up to, a shape that is not (k, 64, 64) or
    (64, 64) raises ValueError naming both shapes."""
    a = rng.integers(0, 100, shape).astype(np.uint16)
    e = refused_then_good(tmp_path / "w.zarr", rng, [a], ValueError)
    msg = str(e)
    assert str(shape) in msg and "(k, 64, 64) or (64, 64)" in msg, msg
    assert "nothing appended" in msg
    assert not isinstance(e, shardpipe.Error)


def test_sheared_pair_is_refused(tmp_path, rng):
    """(64, 63) then (64, 65): together a whole number of frames, each of
    them refused."""
    refused_then_good(tmp_path / "p.zarr", rng,
                      [np.zeros((64, 63), np.uint16),
                       np.zeros((64, 65), np.uint16)], ValueError,
                      r"\(64, 6[35]\)")


def test_zero_d_and_scalars_for_a_frame_stream(tmp_path, rng):
    refused_then_good(tmp_path / "z.zarr", rng,
                      [np.array(5, np.uint16), np.uint16(5)], ValueError,
                      r"shape \(\); the stream of shape \(0, 64, 64\)")


@pytest.mark.parametrize("dtype", [np.int16, np.float32, ">u2", np.bool_,
                                   np.uint8, np.uint32, np.int64])
def test_wrong_dtype_is_refused(tmp_path, rng, dtype):
    a = np.ones((2,) + INNER, dtype)
    e = refused_then_good(tmp_path / "d.zarr", rng, [a, a[0]], TypeError,
                          "dtype mismatch")
    assert "uint16" in str(e) and str(np.dtype(dtype)) in str(e)


def test_not_arrays_are_refused(tmp_path, rng):
    """bytes and bytearray carry no shape: TypeError pointing to
    append_bytes(); lists, tuples and other objects: TypeError."""
    f = frames(rng, 2)
    refused_then_good(tmp_path / "b.zarr", rng,
                      [f.tobytes(), bytearray(f.tobytes()), f[0].tobytes()],
                      TypeError, "append_bytes")
    refused_then_good(tmp_path / "l.zarr", rng, [list(f), tuple(f), [f[0]]],
                      TypeError, r"not an array.*numpy\.stack")
    refused_then_good(tmp_path / "o.zarr", rng,
                      [None, 3, 2.5, "frame", object(), f[0].tolist()],
                      TypeError, "not an array")


def test_memoryviews(tmp_path, rng):
    """A memoryview is taken as the array it describes: shape and format
    must match, and it must be C-contiguous (not copied)."""
    f = frames(rng, 3)
    p = tmp_path / "m.zarr"
    with stream(p) as s:
        with pytest.raises(TypeError, match="dtype mismatch.*append_bytes"):
            s.append(memoryview(f.tobytes()))           # format "B"
        with pytest.raises(ValueError, match=r"shape \(128, 64\)"):
            s.append(memoryview(f[:2].reshape(128, 64)))
        wide = np.zeros((64, 128), np.uint16)
        with pytest.raises(ValueError, match="not C-contiguous"):
            s.append(memoryview(wide[:, ::2]))            # strides
        with pytest.raises(ValueError, match="not C-contiguous"):
            s.append_bytes(memoryview(wide[:, ::2]))
        with pytest.raises(ValueError, match="not C-contiguous"):
            s.append_bytes(memoryview(f.tobytes())[::2])
        assert s.stats.bytes_in == 0
        s.append(memoryview(f[0]))
        s.append(memoryview(f[1:]))
    np.testing.assert_array_equal(read(p), f)


# ------------------------------------------------------------ accepted forms

def test_accepted_forms(tmp_path, rng):
    """A frame, a 3-D stack, an empty stack, read-only, Fortran-ordered,
    transposed and strided arrays of the right shape: each appends what
    NumPy says it holds."""
    f = frames(rng, 12)
    want = []
    p = tmp_path / "a.zarr"
    with stream(p) as s:
        s.append(f[0])                                    # one frame
        want.append(f[0:1])
        s.append(f[1:4])                                  # a stack
        want.append(f[1:4])
        s.append(np.empty((0,) + INNER, np.uint16))       # nothing
        ro = f[4].copy()
        ro.flags.writeable = False                        # read-only
        s.append(ro)
        want.append(f[4:5])
        fo = np.asfortranarray(f[5])                      # Fortran order
        assert not fo.flags.c_contiguous
        s.append(fo)
        want.append(f[5:6])
        s.append(f[6].T)                                  # a transpose
        want.append(f[6].T[None])
        st = np.transpose(f[7:9], (0, 2, 1))              # stack, permuted
        s.append(st)
        want.append(st)
        wide = np.repeat(f[9], 2, axis=1)                 # (64, 128)
        s.append(wide[:, ::2])                            # strided view
        want.append(f[9:10])
        s.append(f[10:12][::-1])                          # negative stride
        want.append(f[10:12][::-1])
    np.testing.assert_array_equal(read(p), np.concatenate(want))


class Recorder:
    """The extension's stream, recording what append() hands it."""

    def __init__(self, inner):
        self.inner = inner
        self.seen = []

    def append(self, buf):
        self.seen.append(buf)
        return self.inner.append(buf)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_c_contiguous_array_is_not_copied(tmp_path, rng):
    """The array itself reaches the extension (which takes its buffer and
    releases the GIL); only one that is not C-contiguous is copied."""
    f = frames(rng, 3)
    p = tmp_path / "c.zarr"
    with stream(p) as s:
        s._s = rec = Recorder(s._s)
        one, two = f[0], f[1:]
        s.append(one)
        s.append(two)
        fo = np.asfortranarray(f[0])
        s.append(fo)
        s._s = rec.inner
    assert rec.seen[0] is one and rec.seen[1] is two
    assert rec.seen[2] is not fo and rec.seen[2].flags.c_contiguous
    np.testing.assert_array_equal(read(p), np.concatenate([f, f[:1]]))


def test_rank_one_stream(tmp_path, rng):
    """inner is (): (k,) is k elements, a 0-d array or NumPy scalar one;
    (k, 1) and (1, k) are refused."""
    p = tmp_path / "r.zarr"
    a = rng.integers(0, 60000, 10).astype(np.uint16)
    with shardpipe.Stream(p, (0,), (4,), (8,), "uint16", backend="cpu") as s:
        for bad in (a[:3].reshape(3, 1), a[:3].reshape(1, 3)):
            with pytest.raises(ValueError, match=r"takes \(k,\) or \(\)"):
                s.append(bad)
        with pytest.raises(TypeError, match="dtype mismatch"):
            s.append(np.int64(3))
        s.append(a[:4])
        s.append(np.array(a[4]))          # 0-d
        s.append(a[5])                    # a NumPy scalar
        s.append(a[6:6])                  # empty
        s.append(a[6:])
    np.testing.assert_array_equal(read(p), a)


def test_bool_stream(tmp_path, rng):
    p = tmp_path / "b.zarr"
    f = rng.random((3, 8, 8)) < 0.5
    with stream(p, shape=(0, 8, 8), dtype="bool") as s:
        with pytest.raises(TypeError, match="dtype mismatch.*bool.*uint8"):
            s.append(f.astype(np.uint8))
        with pytest.raises(ValueError, match=r"\(8, 4\)"):
            s.append(f[0, :, :4])
        s.append(f[0])
        s.append(f[1:])
    np.testing.assert_array_equal(read(p), f)


def test_uint8_stream_takes_a_shaped_memoryview_not_bytes(tmp_path, rng):
    p = tmp_path / "u.zarr"
    f = rng.integers(0, 255, (2, 4, 4)).astype(np.uint8)
    with stream(p, shape=(0, 4, 4), dtype="uint8") as s:
        with pytest.raises(TypeError, match="append_bytes"):
            s.append(f[0].tobytes())
        with pytest.raises(ValueError, match=r"\(16,\)"):
            s.append(memoryview(f[0].tobytes()))
        s.append(memoryview(f[0].tobytes()).cast("B", (4, 4)))
        s.append_bytes(f[1].tobytes())
    np.testing.assert_array_equal(read(p), f)


# ------------------------------------------------------------ raw bytes

def test_append_bytes_spans_of_any_size(tmp_path, rng):
    """Raw bytes cut anywhere, mid-element too, give the frames."""
    f = frames(rng, 5)
    raw = f.tobytes()
    cuts = [0, 1, 3, FRAME_BYTES - 1, FRAME_BYTES, FRAME_BYTES + 7,
            3 * FRAME_BYTES + 2, 3 * FRAME_BYTES + 2, len(raw)]
    p = tmp_path / "s.zarr"
    with stream(p) as s:
        for lo, hi in zip(cuts, cuts[1:]):
            s.append_bytes(memoryview(raw)[lo:hi])
            # The library has whole rows; the partial one waits.
            assert s.stats.bytes_in == hi // FRAME_BYTES * FRAME_BYTES
        s.append_bytes(b"")
    np.testing.assert_array_equal(read(p), f)


def test_append_bytes_takes_typed_buffers_of_the_dtype(tmp_path, rng):
    f = frames(rng, 3)
    p = tmp_path / "t.zarr"
    with stream(p) as s:
        with pytest.raises(TypeError, match="dtype mismatch"):
            s.append_bytes(f.astype(np.int16))
        with pytest.raises(TypeError, match="dtype mismatch"):
            s.append_bytes(memoryview(f.astype(">u2")))
        with pytest.raises(TypeError, match="not a buffer"):
            s.append_bytes("text")
        s.append_bytes(f[0].reshape(-1)[:100])     # any shape: its bytes
        s.append_bytes(f[0].reshape(-1)[100:])
        s.append_bytes(f[1:].reshape(128, 64))
    np.testing.assert_array_equal(read(p), f)


def test_an_array_or_frame_skip_inside_a_row_is_refused(tmp_path, rng):
    f = frames(rng, 3)
    p = tmp_path / "i.zarr"
    with stream(p, fill_value=9) as s:
        s.append_bytes(f[0].tobytes()[:1000])
        with pytest.raises(ValueError, match="1000 bytes into row 0"):
            s.append(f[1])
        with pytest.raises(ValueError, match="1000 bytes into row 0"):
            s.skip(1)
        s.append_bytes(f[0].tobytes()[1000:1002])
        # skip(nbytes=) may end inside a row, and complete it.
        s.skip(nbytes=FRAME_BYTES)
        s.skip(nbytes=FRAME_BYTES - 1002)
        s.append(f[2])
    want = np.full((3,) + INNER, 9, np.uint16)
    want[0].reshape(-1)[:501] = f[0].reshape(-1)[:501]
    want[2] = f[2]
    np.testing.assert_array_equal(read(p), want)


# ------------------------------------------------------------ close

def test_close_inside_a_row_raises_after_writing_the_whole_rows(tmp_path,
                                                                rng):
    f = frames(rng, 2)
    p = tmp_path / "c.zarr"
    s = stream(p)
    s.append(f[0])
    s.append_bytes(f[1].tobytes()[:100])
    with pytest.raises(shardpipe.IncompleteError,
                       match="100 bytes into a row of 8192 bytes.*1 whole"
                       r".*pad_partial=True") as e:
        s.close()
    assert isinstance(e.value, ValueError) and e.value.code is None
    assert s.closed
    s.close()                                   # harmless, no new error
    np.testing.assert_array_equal(read(p), f[:1])
    shardpipe.open(p).check()


def test_pad_partial(tmp_path, rng):
    f = frames(rng, 2)
    p = tmp_path / "pp.zarr"
    with stream(p, pad_partial=True, fill_value=7) as s:
        s.append(f[0])
        s.append_bytes(f[1].tobytes()[:100])
    want = np.full((2,) + INNER, 7, np.uint16)
    want[0] = f[0]
    want[1].reshape(-1)[:50] = f[1].reshape(-1)[:50]
    np.testing.assert_array_equal(read(p), want)


def test_with_statement(tmp_path, rng):
    """Leaving the block closes: IncompleteError comes out of the with
    statement; an exception leaving the block passes instead."""
    f = frames(rng, 1)
    p = tmp_path / "w.zarr"
    with pytest.raises(shardpipe.IncompleteError):
        with stream(p) as s:
            s.append(f[0])
            s.append_bytes(b"\1\2\3")
    assert s.closed
    np.testing.assert_array_equal(read(p), f)

    class Mine(Exception):
        pass

    q = tmp_path / "x.zarr"
    with pytest.raises(Mine):
        with stream(q, shape=(4,) + INNER) as s:
            s.append(f[0])
            s.append_bytes(b"\1\2\3")
            raise Mine()
    assert s.closed
    got = read(q)
    assert got.shape == (4,) + INNER
    np.testing.assert_array_equal(got[0], f[0])
    assert (got[1:] == 0).all()


def test_bounded_short_needs_allow_short(tmp_path, rng):
    f = frames(rng, 2)
    p = tmp_path / "b.zarr"
    s = stream(p, shape=(4,) + INNER, fill_value=3)
    s.append(f)
    with pytest.raises(shardpipe.IncompleteError,
                       match=r"after 16384 of the 32768 bytes of shape "
                       r"\(4, 64, 64\).*rows 2 and after.*allow_short"):
        s.close()
    assert s.closed
    want = np.full((4,) + INNER, 3, np.uint16)
    want[:2] = f
    np.testing.assert_array_equal(read(p), want)

    q = tmp_path / "ok.zarr"
    with stream(q, shape=(4,) + INNER, fill_value=3, allow_short=True) as s:
        s.append(f)
    np.testing.assert_array_equal(read(q), want)
    # Skipped rows count as given.
    r = tmp_path / "sk.zarr"
    with stream(r, shape=(4,) + INNER, fill_value=3) as s:
        s.append(f)
        s.skip(2)
    np.testing.assert_array_equal(read(r), want)


def test_bounded_partial_row_both_rules(tmp_path, rng):
    f = frames(rng, 2)
    # pad_partial fills the row; the rest is short without allow_short.
    p = tmp_path / "pa.zarr"
    with pytest.raises(shardpipe.IncompleteError) as e:
        with stream(p, shape=(4,) + INNER, pad_partial=True) as s:
            s.append(f[0])
            s.append_bytes(f[1].tobytes()[:10])
    assert "allow_short" in str(e.value) and "pad_partial" not in str(e.value)
    assert "rows 2 and after" in str(e.value)
    want = np.zeros((4,) + INNER, np.uint16)
    want[0] = f[0]
    want[1].reshape(-1)[:5] = f[1].reshape(-1)[:5]
    np.testing.assert_array_equal(read(p), want)
    # Neither: both named, the partial row left out.
    q = tmp_path / "nn.zarr"
    with pytest.raises(shardpipe.IncompleteError) as e:
        with stream(q, shape=(4,) + INNER) as s:
            s.append(f[0])
            s.append_bytes(f[1].tobytes()[:10])
    assert "pad_partial" in str(e.value) and "allow_short" in str(e.value)
    want[1] = 0
    np.testing.assert_array_equal(read(q), want)
    # Both: no error.
    r = tmp_path / "bb.zarr"
    with stream(r, shape=(4,) + INNER, pad_partial=True,
                allow_short=True) as s:
        s.append(f[0])
    np.testing.assert_array_equal(read(r)[0], f[0])


def test_flags_are_bools(tmp_path):
    for k in ("pad_partial", "allow_short"):
        with pytest.raises(TypeError, match="%s = 'yes': not a bool" % k):
            stream(tmp_path / "f.zarr", **{k: "yes"})
    assert not (tmp_path / "f.zarr").exists()


def test_group_streams_take_the_flags(tmp_path, rng):
    f = frames(rng, 1)
    with shardpipe.Group(tmp_path / "g.zarr", create=True) as g:
        s = g.stream("a", shape=(2,) + INNER, chunks=(1, 32, 32),
                     shards=(2, 64, 64), dtype="uint16", backend="cpu")
        s.append(f)
        with pytest.raises(shardpipe.IncompleteError, match="allow_short"):
            s.close()
        with g.stream("b", shape=(2,) + INNER, chunks=(1, 32, 32),
                      shards=(2, 64, 64), dtype="uint16", backend="cpu",
                      allow_short=True) as s:
            s.append(f)
    for name in ("a", "b"):
        got = read(tmp_path / "g.zarr" / name)
        np.testing.assert_array_equal(got[0], f[0])
        assert (got[1] == 0).all()


# ------------------------------------------------------------ bounded end

def test_beyond_a_bounded_end(tmp_path, rng):
    """An array that does not fit is refused whole with BeyondEndError
    (never InvalidDescriptionError), nothing appended; raw bytes and skips
    take what fits; the stream stays open throughout."""
    f = frames(rng, 6)
    p = tmp_path / "e.zarr"
    with stream(p, shape=(5,) + INNER, fill_value=4) as s:
        s.append(f[:2])
        with pytest.raises(shardpipe.BeyondEndError,
                           match=r"4 rows do not fit.*2 written, 3 left.*"
                           r"nothing appended \(a\[:3\] fits\)") as e:
            s.append(f[2:6])
        assert e.value.code == 17
        assert not isinstance(e.value, shardpipe.InvalidDescriptionError)
        assert s.stats.bytes_in == 2 * FRAME_BYTES and not s.closed
        s.append(f[2])
        s.append(f[3:3])                                  # empty: fits
        s.append_bytes(f[3].tobytes()[:10])
        # The partial row counts against the room.
        with pytest.raises(shardpipe.BeyondEndError,
                           match="skip reaches past its size 5; the last 10 "
                           "bytes were not skipped") as e:
            s.skip(nbytes=2 * FRAME_BYTES)
        assert e.value.code == 17
        assert s.stats.bytes_in == 5 * FRAME_BYTES
        for late in (lambda: s.append(f[5]), lambda: s.skip(1),
                     lambda: s.append_bytes(b"\0\0"),
                     lambda: s.append(f[4:6])):
            with pytest.raises(shardpipe.BeyondEndError) as e:
                late()
            assert e.value.code == 17
        s.append(f[:0])
    want = np.full((5,) + INNER, 4, np.uint16)
    want[:3] = f[:3]
    want[3].reshape(-1)[:5] = f[3].reshape(-1)[:5]
    np.testing.assert_array_equal(read(p), want)


def test_bytes_beyond_a_bounded_end_take_what_fits(tmp_path, rng):
    f = frames(rng, 2)
    p = tmp_path / "eb.zarr"
    with stream(p, shape=(2,) + INNER) as s:
        s.append_bytes(f[0].tobytes()[:10])
        with pytest.raises(shardpipe.BeyondEndError,
                           match="append reaches past its size 2; the last "
                           "10 bytes were not written") as e:
            s.append_bytes(f.tobytes()[10:] + bytes(range(1, 11)))
        assert e.value.code == 17 and not s.closed
        assert s.stats.bytes_in == 2 * FRAME_BYTES
    np.testing.assert_array_equal(read(p), f)


def test_a_failed_append_leaves_the_stream_usable(tmp_path, rng):
    """A mix of every refusal, then good frames: the store holds exactly
    the accepted frames, in order."""
    f = frames(rng, 4)
    bad = [np.zeros((64, 63), np.uint16), np.ones((32, 128), np.uint16),
           np.zeros(()), np.uint16(1), f[0].astype(np.int16), f[0].tobytes(),
           [f[0], f[1]], memoryview(np.zeros((64, 128), np.uint16)[:, ::2]),
           f[0] > 0, f[0].T[:, :32]]
    p = tmp_path / "mix.zarr"
    with stream(p) as s:
        for i, b in enumerate(bad):
            with pytest.raises((ValueError, TypeError)):
                s.append(b)
            s.append(f[i % 4])
    want = np.stack([f[i % 4] for i in range(len(bad))])
    np.testing.assert_array_equal(read(p), want)
