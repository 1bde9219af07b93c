#!/usr/bin/env python3
"""camera_user.py - what a camera user sees, beside bench's bound: the
``frames`` and ``stack`` workloads (micro fill, uint16, zstd level 1, the
cpu backend on 2 threads) written by ``shardpipe write`` from a file and
by ``shardpipe.Stream.append`` from NumPy arrays, as fractions of the
compress-only bound ``shardpipe bench W --fill micro --bound`` measures
in the same round, and beside bench itself writing the same kind of store
(``--output``), which tells the store's cost from the tool's.  Rounds alternate bench, the CLI and Python, and the
best of each counts.  Then ``shardpipe demo`` (the README's quick start),
beside the bound of its own geometry (128 frames of 2048x2048, chunks
4x256x256, 8x4x4 chunks a shard) on bench's micro fill.

The input is bench's own micro fill (its distinct rows, made by ``shardpipe
bench W --codec none --output`` and read back with ``shardpipe cat``),
repeated to the workload's size: in a file for the CLI (written once, read
from the page cache), appended row by row for Python.  Stores go to --dir
(default /dev/shm, tmpfs) and are removed after each run.

    SHARDPIPE=build/shardpipe SHARDPIPE_PLUGIN_PATH=build/.libs \\
        .venv-readers/bin/python bench/camera_user.py [--rounds N]

The shardpipe package must be importable (pip install ./python, or
PYTHONPATH at a --target install).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import shardpipe
from benchfill import micro_rows, shardpipe_program

# name: (shape, chunk, chunks per shard, dimension names, distinct rows)
WORKLOADS = {
    "frames": ((200, 2, 2048, 2304), (1, 1, 512, 576), (1, 1, 4, 4),
               ("t", "c", "y", "x"), 4),
    "stack": ((1024, 2048, 2048), (64, 64, 64), (1, 16, 16),
              ("z", "y", "x"), 64),
}


def csv(t):
    return ",".join(map(str, t))


def run_bench(sp, *what, output=None):
    """bench's end-to-end GB/s and its bound's (to its counting sink, or
    with output to a store there, as write and Stream.append do)."""
    cmd = [sp, "bench", *what, "--fill", "micro", "--bound", "--backend",
           "cpu", "--threads", "2", "--json"]
    if output is not None:
        cmd += ["--output", output, "--overwrite"]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    j = json.loads(out)
    if output is not None:
        shutil.rmtree(output)
    return j["gbps"], j["bound"]["gbps"]


DEMO = ("--shape", "128,2048,2048", "--chunk", "4,256,256", "--shard",
        "8,4,4")


def run_demo(sp, path):
    """The demo's own figure: the GB/s it prints."""
    out = subprocess.run([sp, "demo", "--backend", "cpu", "--threads", "2",
                          "--overwrite", path], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    for word, nxt in zip(out.split(), out.split()[1:]):
        if nxt.startswith("GB/s"):
            return float(word)
    sys.exit("camera_user: no GB/s in the demo's output: %r" % out)


def run_cli(sp, name, path, src):
    shape, chunk, per, names, _ = WORKLOADS[name]
    shard = tuple(c * k for c, k in zip(chunk, per))
    t0 = time.perf_counter()
    subprocess.run([sp, "write", "--shape", csv(shape), "--chunk",
                    csv(chunk), "--shard-shape", csv(shard), "--dtype",
                    "uint16", "--codec", "zstd:1", "--backend", "cpu",
                    "--threads", "2", "--names", ",".join(names),
                    "--input", src, "--quiet", path], check=True)
    return time.perf_counter() - t0


def run_python(name, path, rows):
    shape, chunk, per, names, _ = WORKLOADS[name]
    shard = tuple(c * k for c, k in zip(chunk, per))
    t0 = time.perf_counter()
    with shardpipe.Stream(path, shape, chunk, shard, "uint16",
                          codec="zstd:1", backend="cpu", threads=2,
                          dimension_names=names) as s:
        for i in range(shape[0]):
            s.append(rows[i % len(rows)])
    return time.perf_counter() - t0


def best_of(rounds, one_round):
    """one_round() `rounds` times, each giving {figure: GB/s}, printed;
    the best of each figure, printed as fractions of the best bound."""
    best = {}
    for r in range(rounds):
        got = one_round()
        print("  round %d: " % (r + 1) +
              ", ".join("%s %.3f GB/s" % kv for kv in got.items()))
        for k, v in got.items():
            best[k] = max(best.get(k, 0), v)
    print("  best of %d, as fractions of the best bound (%.3f GB/s):"
          % (rounds, best["bound"]))
    for k, v in best.items():
        if k != "bound":
            print("    %-26s %.3f GB/s  %.3f" % (k, v, v / best["bound"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds per workload (default 3)")
    ap.add_argument("--dir", default="/dev/shm",
                    help="where the stores go (default /dev/shm, tmpfs)")
    ap.add_argument("--input-dir", default=tempfile.gettempdir(),
                    help="where the CLI's input file goes (default TMPDIR)")
    ap.add_argument("--no-demo", dest="demo", action="store_false",
                    help="leave out shardpipe demo")
    ap.add_argument("workloads", nargs="*", default=list(WORKLOADS),
                    help="frames, stack (default both)")
    args = ap.parse_args()
    sp = shardpipe_program("camera_user")
    for name in args.workloads:
        if name not in WORKLOADS:
            sys.exit("camera_user: no workload %r (frames, stack)" % name)
    if args.rounds < 1:
        sys.exit("camera_user: --rounds %d: at least 1" % args.rounds)
    for d in (args.dir, args.input_dir):
        if not os.path.isdir(d):
            sys.exit("camera_user: %s is not a directory" % d)
    work = tempfile.mkdtemp(prefix="sp-camera-", dir=args.dir)
    src_dir = tempfile.mkdtemp(prefix="sp-camera-in-", dir=args.input_dir)
    try:
        for name in args.workloads:
            shape = WORKLOADS[name][0]
            rows = micro_rows(sp, work, name, WORKLOADS[name][4],
                              shape[1:])
            nbytes = shape[0] * rows[0].nbytes
            src = os.path.join(src_dir, name + ".raw")
            with open(src, "wb") as f:
                for i in range(shape[0]):
                    f.write(rows[i % len(rows)].tobytes())
            print("%s: %s uint16 (%.2f GB), micro fill, zstd:1, cpu, 2 "
                  "threads, stores in %s" % (name, "x".join(map(str, shape)),
                                            nbytes / 1e9, args.dir))

            def one_round():
                gbps, bound = run_bench(sp, name)
                path = os.path.join(work, "out.zarr")
                stored, bound2 = run_bench(sp, name, output=path)
                t_cli = run_cli(sp, name, path, src)
                shutil.rmtree(path)
                t_py = run_python(name, path, rows)
                shutil.rmtree(path)
                return {"bench (counting sink)": gbps,
                        "bound": max(bound, bound2),
                        "bench --output (a store)": stored,
                        "shardpipe write --input": nbytes / t_cli / 1e9,
                        "Stream.append": nbytes / t_py / 1e9}

            best_of(args.rounds, one_round)
            os.remove(src)
        if args.demo:
            print("demo: 128 frames of 2048x2048 uint16, stores in %s"
                  % args.dir)

            def demo_round():
                gbps, bound = run_bench(sp, *DEMO)
                path = os.path.join(work, "demo.zarr")
                got = {"bench (counting sink)": gbps, "bound": bound,
                       "shardpipe demo": run_demo(sp, path)}
                shutil.rmtree(path)
                return got

            best_of(args.rounds, demo_round)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(src_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
