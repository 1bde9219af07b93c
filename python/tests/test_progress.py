"""Stream(progress=True): progress on stderr while appending, through tqdm
when it can be imported (a stand-in module here, and the real one when
installed), else a carriage-return status line redrawn at most four times
a second; ended at close; and the store written byte for byte the one
written without it."""

import os
import sys
import time
import types

import numpy as np
import pytest

import shardpipe

INNER = (24, 20)
CHUNKS = (3, 8, 8)
SHARDS = (6, 16, 16)
N = 20


def files(root):
    """Every file under root, by its path relative to root: its bytes."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def write(path, frames, bound=True, **kw):
    shape = (len(frames) if bound else 0,) + INNER
    with shardpipe.Stream(path, shape, CHUNKS, SHARDS, "uint16",
                          backend="cpu", threads=2, **kw) as s:
        for f in frames:
            s.append(f)
    return s


@pytest.fixture
def frames(rng):
    return rng.integers(0, 1000, (N,) + INNER).astype(np.uint16)


@pytest.fixture
def no_tqdm(monkeypatch):
    """An environment where `import tqdm` fails."""
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


class FakeBar:
    """tqdm's interface as the stream uses it, recorded, writing a line to
    stderr per call as the real bar would."""

    made = []

    def __init__(self, **kw):
        self.kw, self.n, self.closed = kw, kw.get("initial", 0), 0
        FakeBar.made.append(self)
        sys.stderr.write("\rfake bar %s\n" % self.n)

    def update(self, k):
        assert k > 0
        self.n += k
        sys.stderr.write("\rfake bar %d" % self.n)

    def close(self):
        self.closed += 1
        sys.stderr.write("\n")


@pytest.fixture
def fake_tqdm(monkeypatch):
    FakeBar.made = []
    mod = types.ModuleType("tqdm")
    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeBar
    mod.auto = auto
    monkeypatch.setitem(sys.modules, "tqdm", mod)
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    return FakeBar


@pytest.mark.parametrize("bound", [True, False])
def test_status_line_without_tqdm(tmp_path, frames, capsys, no_tqdm, bound):
    plain = tmp_path / "plain.zarr"
    write(plain, frames, bound)
    assert capsys.readouterr().err == ""
    p = tmp_path / "progress.zarr"
    write(p, frames, bound, progress=True)
    err = capsys.readouterr().err
    assert err.startswith("\r%s: " % p) and err.endswith("\n")
    assert err.count("\n") == 1            # one line, redrawn in place
    last = err.split("\r")[-1]
    assert last.startswith("%s: %s rows" % (p, "%d/%d" % (N, N) if bound
                                             else N)), last
    if bound:
        assert "(100%)" in last
    assert files(p) == files(plain)


def test_status_line_is_redrawn_a_few_times_a_second(tmp_path, rng,
                                                     capsys, no_tqdm):
    frames = rng.integers(0, 1000, (300,) + INNER).astype(np.uint16)
    t0 = time.monotonic()
    write(tmp_path / "many.zarr", frames, progress=True)
    seconds = time.monotonic() - t0
    draws = capsys.readouterr().err.count("\r")
    # The first line, one per quarter second at most, the last.
    assert 2 <= draws <= 2 + seconds / 0.25 + 1, (draws, seconds)


@pytest.mark.parametrize("bound", [True, False])
def test_tqdm_bar(tmp_path, frames, capsys, fake_tqdm, bound):
    plain = tmp_path / "plain.zarr"
    write(plain, frames, bound)
    assert fake_tqdm.made == [] and capsys.readouterr().err == ""
    p = tmp_path / "bar.zarr"
    write(p, frames, bound, progress=True)
    (bar,) = fake_tqdm.made
    assert bar.kw["total"] == (N if bound else None)
    assert bar.kw["initial"] == 0 and bar.kw["unit"] == "row"
    assert bar.kw["desc"] == str(p)
    assert bar.n == N and bar.closed == 1
    assert "fake bar %d" % N in capsys.readouterr().err
    assert files(p) == files(plain)


def test_tqdm_bar_of_a_continued_store(tmp_path, frames, fake_tqdm):
    """Mode "a": the bar starts at the store's rows, up to the bound."""
    p = tmp_path / "a.zarr"
    with shardpipe.Stream(p, (0,) + INNER, CHUNKS, SHARDS, "uint16",
                          backend="cpu", threads=2) as s:
        s.append(frames[:8])
    with shardpipe.Stream(p, (N,) + INNER, mode="a", backend="cpu",
                          threads=2, progress=True) as s:
        s.append(frames[8:])
    (bar,) = fake_tqdm.made
    assert bar.kw["total"] == N and bar.kw["initial"] == 8
    assert bar.n == N and bar.closed == 1


def test_bytes_skips_and_a_padded_row_are_counted(tmp_path, frames,
                                                  fake_tqdm):
    p = tmp_path / "b.zarr"
    with shardpipe.Stream(p, (0,) + INNER, CHUNKS, SHARDS, "uint16",
                          backend="cpu", threads=2, pad_partial=True,
                          progress=True) as s:
        raw = frames[:5].tobytes()
        s.append_bytes(raw[:1000])
        s.append_bytes(raw[1000:])
        s.skip(3)
        s.append_bytes(frames[8].tobytes()[:100])
    (bar,) = fake_tqdm.made
    assert bar.n == 9 and bar.closed == 1      # the padded row counts
    assert shardpipe.open(p).shape == (9,) + INNER


def test_real_tqdm(tmp_path, frames, capsys):
    pytest.importorskip("tqdm")
    plain = tmp_path / "plain.zarr"
    write(plain, frames)
    capsys.readouterr()
    p = tmp_path / "tqdm.zarr"
    write(p, frames, progress=True)
    err = capsys.readouterr().err
    assert "%d/%d" % (N, N) in err and "row" in err
    assert files(p) == files(plain)


def test_progress_must_be_a_bool(tmp_path):
    with pytest.raises(TypeError, match="progress"):
        shardpipe.Stream(tmp_path / "x.zarr", (0, 4), (1, 4), (1, 4),
                         "uint8", progress="yes")
    assert not os.path.exists(tmp_path / "x.zarr")
