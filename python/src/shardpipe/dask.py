"""Dask: writing a dask.array into one sharded Zarr v3 array, each block
in a task by a region writer, the client publishing zarr.json at the end
(design §30).  Needs dask (``pip install shardpipe[dask]``); works with
the threaded scheduler and dask.distributed."""
from __future__ import annotations

import os as _os
import time as _time
from typing import Any as _Any, Sequence as _Sequence

import shardpipe as _sp

__all__ = ["to_store"]


def _boundaries(chunks: _Sequence[int]) -> list[int]:
    out, at = [], 0
    for c in chunks:
        at += c
        out.append(at)
    return out


def _aligned(chunks: _Sequence[int], shard: int, size: int) -> bool:
    return all(b % shard == 0 or b == size for b in _boundaries(chunks))


def _shard_chunks(chunks: _Sequence[int], shard: int, size: int
                  ) -> tuple[int, ...]:
    """Blocks of whole shards, about as large as the given ones."""
    mean = size / max(1, len(chunks))
    k = max(1, round(mean / shard)) * shard
    out = [k] * (size // k)
    if size % k or not out:
        out.append(size % k if size % k else size)
    return tuple(out)


def _default_threads() -> int:
    """The worker's threads_per_worker under dask.distributed, else 1."""
    try:
        from distributed import get_worker
        w = get_worker()
    except (ImportError, ValueError):
        return 1
    n = getattr(getattr(w, "state", None), "nthreads", None) or \
        getattr(w, "nthreads", None)
    return int(n) if n else 1


def _write_block(block: _Any, path: str, kw: dict[str, _Any],
                 lo: tuple[int, ...], threads: int | None) -> dict[str, _Any]:
    t0 = _time.perf_counter()
    kw = dict(kw, threads=threads if threads else _default_threads())
    st = _sp.write_region(path, kw, lo, block)
    return {"lo": lo, "bytes_in": st.bytes_in, "bytes_stored": st.bytes_out,
            "seconds": _time.perf_counter() - t0}


def to_store(x: _Any, path: _Any, chunks: _Sequence[int],
             shards: _Sequence[int], codec: str = "zstd:1",
             threads: int | None = None, rechunk: bool = True,
             **kw: _Any) -> dict[str, _Any]:
    """Write the dask array ``x`` as a sharded Zarr v3 array at the
    directory ``path`` (made here, on the client; it must be empty or
    hold this array) or at an ``"s3://bucket/prefix"`` URL (the client
    makes nothing there: the tasks' region writers write the shards,
    each only where no object has its key, design §30.4; the prefix must
    hold nothing or this array), ``chunks`` and ``shards`` as
    ``shardpipe.Stream`` takes them, the dtype ``x``'s.  Each block of ``x`` is written in a
    task by a region writer (``shardpipe.write_region``) with ``threads``
    threads (default: the dask.distributed worker's threads_per_worker
    when the task runs on one, else 1); the client publishes zarr.json
    once every task succeeded.  Blocks must be unions of whole shards:
    ``rechunk=True`` rechunks the dims where they are not (to blocks of
    whole shards about as large), ``rechunk=False`` raises ValueError
    naming the dim and its block boundaries.  ``kw``: more of
    ``Stream``'s arguments (backend, fill_value, dimension_names,
    attributes, ...).  Returns a dict: bytes_in, bytes_stored, tasks (a
    list of per-task dicts: lo, bytes_in, bytes_stored, seconds) and
    seconds (the whole).  Another array (a NumPy array, anything with
    shape and dtype that dask.array.asarray takes) is taken as one dask
    array in blocks of whole shards."""
    import dask
    import dask.array as da

    t0 = _time.perf_counter()
    if not isinstance(x, da.Array):
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise TypeError("to_store: x = %s: not an array (a "
                            "dask.array.Array, or an array with shape and "
                            "dtype)" % (type(x).__name__,))
        x = da.asarray(x, chunks=tuple(int(n) for n in shards)
                       if len(shards) == len(x.shape) else "auto")
    shape = tuple(int(n) for n in x.shape)
    shards = tuple(int(n) for n in shards)
    if len(shards) != len(shape):
        raise ValueError("shards has %d entries, the array %d dimensions"
                         % (len(shards), len(shape)))
    if any(n == 0 for n in shape):
        raise ValueError("to_store: the array of shape %s is empty"
                         % (shape,))
    new = []
    for d, c in enumerate(x.chunks):
        if _aligned(c, shards[d], shape[d]):
            new.append(c)
        elif not rechunk:
            raise ValueError(
                "to_store: dim %d's blocks end at %s, not at multiples of "
                "its shard %d (or the edge %d); rechunk=True rechunks them"
                % (d, _boundaries(c), shards[d], shape[d]))
        else:
            new.append(_shard_chunks(c, shards[d], shape[d]))
    if tuple(new) != tuple(x.chunks):
        x = x.rechunk(tuple(new))
    path = _os.fspath(path)
    # S3 has no directory to make: a prefix exists once an object does.
    url = _sp._is_url(path)
    if not url and _os.path.lexists(path) and not _os.path.isdir(path):
        raise _sp.StorageError(
            "to_store: %s: not a directory; nothing was touched"
            % (_os.fsdecode(path),), _sp._ERR_PATH)
    made = not url and not _os.path.lexists(path)
    if not url:
        _os.makedirs(path, exist_ok=True)
    array = dict(kw, shape=shape, chunks=tuple(chunks), shards=shards,
                 dtype=x.dtype, codec=codec)
    starts = [[0] + _boundaries(c)[:-1] for c in x.chunks]
    blocks = x.to_delayed()
    tasks = []
    for idx in _ndindex(blocks.shape):
        lo = tuple(starts[d][i] for d, i in enumerate(idx))
        tasks.append(dask.delayed(_write_block, pure=False)(
            blocks[idx], path, array, lo, threads))
    try:
        results = list(dask.compute(*tasks))
        _sp.publish(path, **array)
    except BaseException:
        # A description every task refused wrote nothing: the directory
        # made here goes too (rmdir takes only an empty one).
        if made:
            try:
                _os.rmdir(path)
            except OSError:
                pass
        raise
    return {"bytes_in": sum(r["bytes_in"] for r in results),
            "bytes_stored": sum(r["bytes_stored"] for r in results),
            "tasks": results, "seconds": _time.perf_counter() - t0}


def _ndindex(shape: tuple[int, ...]):
    import itertools
    return itertools.product(*(range(n) for n in shape))
