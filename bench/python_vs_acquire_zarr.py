#!/usr/bin/env python3
"""python_vs_acquire_zarr.py - the Python package beside acquire-zarr, and
beside the CLI's own throughput on the same bytes.

Writes the same frames with ``shardpipe.Stream`` and with acquire-zarr's
``ZarrStream`` (from PyPI, in the readers' venv; skipped with a message when
it is not installed), alternating, on tmpfs: 100 frames of 2x2048x2304
uint16 (bench's ``frames`` workload), chunk 1x1x512x576, 1x1x4x4 chunks per
shard, 2 threads each, zstd level 1 and blosc zstd level 1 byte shuffle.
The frames are bench's micro fill, made once by ``shardpipe bench frames
--output`` and read back with ``shardpipe cat`` (its 4 distinct frames,
appended in turn, as bench does).  ``shardpipe bench`` on the same
workload gives the CLI's figure.  Prints every run, then the best of each
writer and the ratios.

    SHARDPIPE=build/shardpipe SHARDPIPE_PLUGIN_PATH=build/.libs \\
        .venv-readers/bin/python bench/python_vs_acquire_zarr.py [--rounds N]

The shardpipe package must be importable (pip install ./python, or
PYTHONPATH at a --target install).
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

import shardpipe
from benchfill import micro_frames, shardpipe_program

FRAMES = 100
FRAME = (2, 2048, 2304)
CHUNK = (1, 1, 512, 576)
PER_SHARD = (1, 1, 4, 4)
CODECS = ("zstd:1", "blosc:zstd:1:shuffle")


def store_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(path) for f in fs)


def cpu_seconds():
    """CPU time of this process and its finished children: steadier than
    the wall clock on a shared machine."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_shardpipe(frames, path, codec):
    shards = tuple(c * n for c, n in zip(CHUNK, PER_SHARD))
    t0 = time.perf_counter()
    with shardpipe.Stream(path, (0,) + FRAME, CHUNK, shards, "uint16",
                          codec=codec, backend="cpu", threads=2,
                          dimension_names=("t", "c", "y", "x")) as s:
        for i in range(FRAMES):
            s.append(frames[i % len(frames)])
    return time.perf_counter() - t0


def run_acquire(aqz, frames, path, codec):
    names = ("t", "c", "y", "x")
    kinds = (aqz.DimensionType.TIME, aqz.DimensionType.CHANNEL,
             aqz.DimensionType.SPACE, aqz.DimensionType.SPACE)
    sizes = (0,) + FRAME
    dims = [aqz.Dimension(name=n, kind=k, array_size_px=sz, chunk_size_px=c,
                          shard_size_chunks=p)
            for n, k, sz, c, p in zip(names, kinds, sizes, CHUNK, PER_SHARD)]
    if codec == "zstd:1":
        comp = aqz.CompressionSettings(compressor=aqz.Compressor.ZSTD,
                                       codec=aqz.CompressionCodec.ZSTD,
                                       level=1)
    else:
        comp = aqz.CompressionSettings(compressor=aqz.Compressor.BLOSC1,
                                       codec=aqz.CompressionCodec.BLOSC_ZSTD,
                                       level=1, shuffle=1)
    settings = aqz.StreamSettings(
        store_path=path, max_threads=2, overwrite=True,
        arrays=[aqz.ArraySettings(dimensions=dims, data_type=np.uint16,
                                  compression=comp)])
    t0 = time.perf_counter()
    s = aqz.ZarrStream(settings)
    for i in range(FRAMES):
        s.append(frames[i % len(frames)])
    s.close()
    return time.perf_counter() - t0


def run_cli(sp, path, codec):
    out = subprocess.run([sp, "bench", "frames", "--rows", str(FRAMES),
                          "--unbounded", "--codec", codec, "--backend", "cpu", "--threads",
                          "2", "--output", path, "--overwrite", "--json"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds per codec (default 3)")
    ap.add_argument("--dir", default="/dev/shm",
                    help="where the stores go (default /dev/shm, tmpfs)")
    args = ap.parse_args()
    sp = shardpipe_program("python_vs_acquire_zarr")
    try:
        import acquire_zarr as aqz
    except ImportError as e:
        aqz = None
        print("acquire-zarr is not available (%s): scripts/setup-python-"
              "readers installs it where PyPI has a build; measuring "
              "shardpipe alone" % e)
    work = tempfile.mkdtemp(prefix="sp-vs-aqz-", dir=args.dir)
    try:
        frames = micro_frames(sp, work)
        nbytes = FRAMES * frames[0].nbytes
        print("%d frames of %s uint16 (%.2f GB), chunk %s, %s chunks per "
              "shard, 2 threads, stores in %s; shardpipe %s, acquire-zarr "
              "%s" % (FRAMES, "x".join(map(str, FRAME)), nbytes / 1e9,
                      "x".join(map(str, CHUNK)),
                      "x".join(map(str, PER_SHARD)), args.dir,
                      shardpipe.library_version,
                      getattr(aqz, "__version__", "installed") if aqz
                      else "absent"))
        best = {}
        for codec in CODECS:
            for r in range(args.rounds):
                writers = [("python", lambda p: run_shardpipe(frames, p,
                                                              codec))]
                if aqz is not None:
                    writers.append(("acquire-zarr", lambda p: run_acquire(
                        aqz, frames, p, codec)))
                writers.append(("cli", lambda p: run_cli(sp, p, codec)))
                if r % 2:
                    writers.reverse()
                for name, fn in writers:
                    p = os.path.join(work, name + ".zarr")
                    c0 = cpu_seconds()
                    secs = fn(p)
                    cpu = cpu_seconds() - c0
                    ratio = nbytes / store_bytes(p)
                    shutil.rmtree(p)
                    gbps = nbytes / secs / 1e9
                    print("%-21s %-13s round %d: %6.3f s  %5.2f GB/s  "
                          "cpu %6.2f s  ratio %.3f" % (codec, name, r + 1,
                                                      secs, gbps, cpu,
                                                      ratio), flush=True)
                    k = (codec, name)
                    old = best.get(k, (0, 0, float("inf")))
                    best[k] = (max(gbps, old[0]), ratio, min(cpu, old[2]))
        print()
        print("Best wall-clock throughput and least CPU time of each "
              "writer over %d rounds:" % args.rounds)
        print()
        print("| codec | Python GB/s | acquire-zarr GB/s | Python / "
              "acquire-zarr | CLI GB/s | Python / CLI | CPU s: Python, "
              "acquire-zarr, CLI | ratio: Python, acquire-zarr |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for codec in CODECS:
            py, cli = best[(codec, "python")], best[(codec, "cli")]
            aq = best.get((codec, "acquire-zarr"))
            print("| %s | %.2f | %s | %s | %.2f | %.2f | %.1f, %s, %.1f | "
                  "%.3f, %s |" % (
                      codec, py[0], "%.2f" % aq[0] if aq else "-",
                      "%.2fx" % (py[0] / aq[0]) if aq else "-", cli[0],
                      py[0] / cli[0], py[2],
                      "%.1f" % aq[2] if aq else "-", cli[2], py[1],
                      "%.3f" % aq[1] if aq else "-"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
