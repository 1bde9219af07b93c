#!/usr/bin/env python3
"""dask_scaling.py - strong scaling of shardpipe.dask.to_store on a
dask.distributed LocalCluster of 1 and 2 worker processes, each beside the
compression-only bound of the same workers (doc/design.md §30, issue 41).

The array: --frames frames of 2048x2304 uint16 (default 128, 1.2 GB), the
8 distinct frames of bench's micro fill (``shardpipe bench frames --rows 4
--output``, read back with ``shardpipe cat``) repeated, chunks 1x512x576,
shards 8x2048x2304, zstd level 1, one Dask block a shard.  Each worker
process has one thread (threads_per_worker=1, so shardpipe's region writers
run one thread each: to_store's default) and makes the blocks itself from
the fill it loads once, so that no block crosses between processes.

The bound: every worker of the same cluster at once (``client.run``)
compressing its share of the blocks' chunks with libzstd alone
(ZSTD_compressCCtx level 1 through ctypes, one context a worker), each
chunk already contiguous in the worker's memory: what the workers' cores
do with nothing but the codec, with none of the scheduler's work.  Every figure is the best of --rounds runs
after a warm-up; stores go to --dir (tmpfs by default).

    SHARDPIPE=build/shardpipe SHARDPIPE_PLUGIN_PATH=build/.libs \\
        .venv-readers/bin/python bench/dask_scaling.py [--rounds N]

The shardpipe package must be importable (pip install ./python, or
PYTHONPATH at a --target install).
"""

import argparse
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchfill import micro_frames

FRAME = (2048, 2304)
CHUNK = (1, 512, 576)
SHARD = (8, 2048, 2304)

_fill = None
_chunks = None
_zstd = None


def _load(path):
    """The worker's fill (8 frames), loaded once a process."""
    global _fill
    if _fill is None:
        _fill = np.load(path)
    return _fill


def make_block(path, block_info=None):
    # Every block is the fill itself: a shard's 8 frames, no copy.
    return _load(path)


def _codec():
    global _zstd
    if _zstd is None:
        name = ctypes.util.find_library("zstd")
        if not name:
            raise RuntimeError("libzstd not found")
        _zstd = ctypes.CDLL(name)
        _zstd.ZSTD_compress.restype = ctypes.c_size_t
        _zstd.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.c_int]
        _zstd.ZSTD_compressBound.restype = ctypes.c_size_t
        _zstd.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        _zstd.ZSTD_createCCtx.restype = ctypes.c_void_p
        _zstd.ZSTD_compressCCtx.restype = ctypes.c_size_t
        _zstd.ZSTD_compressCCtx.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_size_t, ctypes.c_void_p,
                                            ctypes.c_size_t, ctypes.c_int]
        # One context a process, as each shardpipe thread keeps its own.
        _zstd.cctx = _zstd.ZSTD_createCCtx()
    return _zstd


def warm(path):
    """Load the fill, cut it into contiguous chunks and open libzstd, in
    each worker before anything is timed."""
    global _chunks
    f = _load(path)
    if _chunks is None:
        _chunks = [np.ascontiguousarray(f[t:t + 1, y:y + CHUNK[1],
                                          x:x + CHUNK[2]])
                   for t in range(f.shape[0])
                   for y in range(0, f.shape[1], CHUNK[1])
                   for x in range(0, f.shape[2], CHUNK[2])]
    _codec()
    return len(_chunks)


def compress_block(path, block_info=None):
    """The bound's task: every chunk of one block through libzstd."""
    z = _codec()
    cap = z.ZSTD_compressBound(_chunks[0].nbytes)
    out = ctypes.create_string_buffer(cap)
    n = 0
    for c in _chunks:
        n += z.ZSTD_compressCCtx(z.cctx, out, cap, c.ctypes.data, c.nbytes,
                                 1)
    return np.full((1, 1, 1), n, dtype=np.int64)


def compress_blocks(path, n):
    """The bound's share of one worker: n blocks, one after the other."""
    for _ in range(n):
        compress_block(path)
    return n


def make_fill(sp, work):
    frames = micro_frames(sp, work).reshape((-1,) + FRAME)
    assert frames.shape[0] == SHARD[0], frames.shape
    path = os.path.join(work, "fill.npy")
    np.save(path, frames)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frames", type=int, default=128,
                    help="frames of 2048x2304 (a multiple of 8)")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--dir", default="/dev/shm")
    args = ap.parse_args()
    if args.frames % SHARD[0]:
        sys.exit("dask_scaling: --frames must be a multiple of 8")
    here = os.path.dirname(os.path.abspath(__file__))
    sp = os.environ.get("SHARDPIPE") or os.path.join(here, "..", "build",
                                                     "shardpipe")
    # The tasks' functions by reference to this file as a module, which
    # the workers import (their state stays in their own processes).
    sys.path.insert(0, here)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [here] + [p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    import dask_scaling as tasks
    import dask.array as da
    from distributed import Client, LocalCluster

    import shardpipe
    import shardpipe.dask

    work = tempfile.mkdtemp(prefix="sp-dask-scaling-", dir=args.dir)
    try:
        fill = tasks.make_fill(sp, work)
        shape = (args.frames,) + FRAME
        nbytes = int(np.prod(shape)) * 2
        print("%d frames of %dx%d uint16 (%.2f GB), chunks %s, shards %s, "
              "zstd:1, stores in %s; shardpipe %s"
              % (args.frames, FRAME[0], FRAME[1], nbytes / 1e9,
                 "x".join(map(str, CHUNK)), "x".join(map(str, SHARD)),
                 args.dir, shardpipe.library_version))
        results = {}
        for n in (int(w) for w in args.workers.split(",")):
            with LocalCluster(n_workers=n, threads_per_worker=1,
                              processes=True, dashboard_address=None) as lc, \
                    Client(lc) as client:
                client.run(tasks.warm, fill)
                x = da.map_blocks(tasks.make_block, fill, dtype=np.uint16,
                                  chunks=tuple((SHARD[d],) * (shape[d] //
                                                              SHARD[d])
                                               for d in range(3)))
                blocks = args.frames // SHARD[0]
                best_w = best_b = None
                stored = 0
                for r in range(args.rounds + 1):
                    store = os.path.join(work, "a.zarr")
                    shutil.rmtree(store, ignore_errors=True)
                    t0 = time.perf_counter()
                    st = shardpipe.dask.to_store(x, store, chunks=CHUNK,
                                                 shards=SHARD, codec="zstd:1")
                    tw = time.perf_counter() - t0
                    stored = st["bytes_stored"]
                    # Every worker at once, its share of the blocks (the
                    # scheduler's placement left out of the bound).
                    t0 = time.perf_counter()
                    client.run(tasks.compress_blocks, fill,
                               (blocks + n - 1) // n)
                    tb = time.perf_counter() - t0
                    if r == 0:
                        continue  # warm-up
                    print("  %d worker%s round %d: to_store %.3f s, bound "
                          "%.3f s" % (n, "s" if n > 1 else "", r, tw, tb))
                    best_w = tw if best_w is None else min(best_w, tw)
                    best_b = tb if best_b is None else min(best_b, tb)
                results[n] = (nbytes / best_w / 1e9, nbytes / best_b / 1e9,
                              stored)
        print("workers  to_store GB/s  bound GB/s  fraction of bound  "
              "stored bytes")
        for n, (w, b, stored) in results.items():
            print("%7d  %13.3f  %10.3f  %17.2f  %d" % (n, w, b, w / b,
                                                        stored))
        if 1 in results and 2 in results:
            print("2 workers / 1: to_store %.2fx, bound %.2fx"
                  % (results[2][0] / results[1][0],
                     results[2][1] / results[1][1]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
