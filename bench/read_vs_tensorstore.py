#!/usr/bin/env python3
"""read_vs_tensorstore.py - shardpipe's reader beside TensorStore's and
zarr-python's, on one store, with the decode-only bound of the same run.

Writes issue 40's store once with ``shardpipe bench`` (64 frames of
2048x2304 uint16, bench's micro fill, chunks 1x512x576, shards
8x2048x2304, zstd level 1 unless --codec says otherwise) on tmpfs, then
for each read pattern times, alternating, ``shardpipe.open(path,
threads=T)[sel]``, TensorStore (its data-copy and file-I/O concurrency
set to T) and zarr-python, best of --rounds each.  The bound: the
codec's library alone (libzstd, c-blosc with one internal thread, or
libdeflate for gzip; through ctypes, which releases the GIL) decoding
the chunks the selection touches on T Python threads, their bytes
already in memory, into one chunk-sized buffer a thread; and the same
into a new array of all of them (the memory a reader's output is), its
allocation included; and "placed": each into a thread's buffer, then
its selected part into its place in a new array of the selection's
shape, the least a reader must do when a chunk is not whole rows of its
output.
Prints a table of GB/s of selected output, the fraction of the bound and
the ratio to TensorStore, and what shardpipe's reader fetched (bytes
and requests, from Reader.stats()) beside the bytes of the chunks the
selection touches plus their shards' indexes.

    SHARDPIPE=build/shardpipe SHARDPIPE_PLUGIN_PATH=build/.libs \\
        .venv-readers/bin/python bench/read_vs_tensorstore.py [--rounds N]
"""

import argparse
import concurrent.futures
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# NumPy's BLAS threads spin after work and would take cores from the
# readers timed here; none of them uses BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import shardpipe  # noqa: E402

SHAPE = (64, 2048, 2304)
CHUNK = (1, 512, 576)
PER_SHARD = (8, 4, 4)
PATTERNS = [
    ("whole array", np.s_[...]),
    ("200x200 tile of every frame", np.s_[:, 1000:1200, 1000:1200]),
    ("one frame", np.s_[17]),
    ("strided (::8, ::2, ::2)", np.s_[::8, ::2, ::2]),
    ("one element", np.s_[33, 1500, 700]),
]


def selection(key):
    """(start, count, step) per dim of a basic key, as shardpipe reads."""
    start, count, step, _ = shardpipe._region(key, SHAPE, np)
    return start, count, step


def touched(start, count, step):
    """Chunk grid coordinates per dim that the selection meets."""
    out = []
    for d in range(3):
        idx = range(start[d], start[d] + count[d] * step[d], step[d])
        out.append(sorted({i // CHUNK[d] for i in idx}))
    return out


class Bound:
    """The chunks a selection touches, decoded by libzstd alone."""

    def __init__(self, path, codec):
        meta = json.load(open(os.path.join(path, "zarr.json")))
        shard = meta["codecs"][0]["configuration"]
        self.at_end = shard.get("index_location", "end") == "end"
        self.codec = codec.split(":")[0]
        self.path = path
        self.n_inner = int(np.prod(PER_SHARD))
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        if self.codec == "zstd":
            lib = ctypes.CDLL(ctypes.util.find_library("zstd"))
            lib.ZSTD_decompress.restype = sz
            lib.ZSTD_decompress.argtypes = [vp, sz, vp, sz]
            lib.ZSTD_isError.argtypes = [sz]
            self.decode = lambda dst, size, c: (
                not lib.ZSTD_isError(r := lib.ZSTD_decompress(
                    dst, size, c, len(c))) and r == size)
        elif self.codec == "blosc":
            # c-blosc 1.x, one internal thread: the Python threads are
            # the parallelism, as the readers' are.
            lib = ctypes.CDLL(ctypes.util.find_library("blosc"))
            lib.blosc_decompress_ctx.argtypes = [vp, vp, sz, ctypes.c_int]
            self.decode = lambda dst, size, c: (
                lib.blosc_decompress_ctx(c, dst, size, 1) == size)
        elif self.codec == "gzip":
            # libdeflate, the fastest inflate the field packages; one
            # decompressor a Python thread.
            lib = ctypes.CDLL(ctypes.util.find_library("deflate"))
            lib.libdeflate_alloc_decompressor.restype = vp
            lib.libdeflate_gzip_decompress.argtypes = [vp, vp, sz, vp, sz,
                                                       vp]
            local = threading.local()

            def inflate(dst, size, c):
                if not hasattr(local, "d"):
                    local.d = lib.libdeflate_alloc_decompressor()
                return lib.libdeflate_gzip_decompress(
                    local.d, c, len(c), dst, size, None) == 0
            self.decode = inflate
        else:
            def copy(dst, size, c):
                ctypes.memmove(dst, c, len(c))
                return len(c) == size
            self.decode = copy

    def chunks(self, tch):
        """The encoded bytes of every touched chunk, the chunks' grid
        coordinates in the same order, and the bytes of the shard indexes
        read for them."""
        shards = {}
        for g0 in tch[0]:
            for g1 in tch[1]:
                for g2 in tch[2]:
                    s = (g0 // PER_SHARD[0], g1 // PER_SHARD[1],
                         g2 // PER_SHARD[2])
                    lin = ((g0 % PER_SHARD[0]) * PER_SHARD[1] +
                           g1 % PER_SHARD[1]) * PER_SHARD[2] + \
                        g2 % PER_SHARD[2]
                    shards.setdefault(s, []).append((lin, (g0, g1, g2)))
        out, grid, index_bytes = [], [], 0
        for s, lins in shards.items():
            with open(os.path.join(self.path, "c", *map(str, s)), "rb") as f:
                data = f.read()
            n = 16 * self.n_inner + 4
            idx = np.frombuffer(data[-n:-4] if self.at_end else data[:n - 4],
                                "<u8").reshape(-1, 2)
            index_bytes += n
            for lin, g in lins:
                off, nb = int(idx[lin, 0]), int(idx[lin, 1])
                if off != 2 ** 64 - 1:
                    out.append(data[off:off + nb])
                    grid.append(g)
        return out, grid, index_bytes

    def seconds(self, encoded, threads, fresh=False, place=None):
        """Decoding every chunk into one buffer a thread; with fresh,
        each into its own place in one new array of all of them, as a
        reader's output is: memory no one has touched yet; with place
        (the selection and the chunks' grid coordinates), into a
        thread's buffer and then the selected part of it into its place
        in a new array of the selection's shape: what a reader must do
        at the least when the chunks it touches are not whole rows of
        its output."""
        size = int(np.prod(CHUNK)) * 2
        bufs = [ctypes.create_string_buffer(size) for _ in range(threads)]
        if place is not None:
            sel, grid = place
            boxes = [placement(sel, g) for g in grid]
            views = [np.frombuffer(b, np.uint16).reshape(CHUNK)
                     for b in bufs]
        t0 = time.perf_counter()
        if fresh:
            out = np.empty(len(encoded) * size, np.uint8)
            base = out.ctypes.data
        if place is not None:
            out = np.empty(sel[1], np.uint16)

        def part(k):
            dst = bufs[k]
            for i in range(k, len(encoded), threads):
                c = encoded[i]
                if fresh:
                    dst = base + i * size
                if not self.decode(dst, size, c):
                    raise RuntimeError("a chunk did not decode")
                if place is not None:
                    o, c = boxes[i]
                    out[o] = views[k][c]

        with concurrent.futures.ThreadPoolExecutor(threads) as ex:
            t = time.perf_counter()
            list(ex.map(part, range(threads)))
            return time.perf_counter() - (t0 if fresh or place else t)


def placement(sel, g):
    """Where chunk g's selected elements go in the output, and which
    they are in the chunk: a tuple of slices for each."""
    start, count, step = sel
    o, c = [], []
    for d in range(3):
        lo, hi = g[d] * CHUNK[d], (g[d] + 1) * CHUNK[d]
        # The selection's first and last index k inside [lo, hi).
        k0 = max(0, -(-(lo - start[d]) // step[d]))
        k1 = min(count[d], -(-(hi - start[d]) // step[d]))
        o.append(slice(k0, k1))
        first = start[d] + k0 * step[d] - lo
        c.append(slice(first, first + (k1 - k0 - 1) * step[d] + 1,
                       step[d]))
    return tuple(o), tuple(c)


def peak_memory(which, path, threads):
    """Run in a process of its own: the peak resident memory a
    whole-array read adds, beyond what the process held after opening
    the array, and the output's bytes."""
    code = r"""
import sys
def hwm():
    # The high-water mark of this process's own memory (ru_maxrss would
    # carry the parent's over the fork).
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
which, path, T = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "shardpipe":
    import shardpipe
    r = shardpipe.open(path, threads=T)
    read = lambda: r[...]
else:
    import tensorstore as ts
    t = ts.open({"driver": "zarr3",
                 "kvstore": {"driver": "file", "path": path},
                 "context": {"data_copy_concurrency": {"limit": T},
                             "file_io_concurrency": {"limit": T}}},
                read=True).result()
    read = lambda: t.read().result()
base = hwm()
a = read()
print(hwm() - base, a.nbytes)
"""
    out = subprocess.run([sys.executable, "-c", code, which, path,
                          str(threads)], check=True, capture_output=True,
                         text=True).stdout.split()
    return int(out[0]), int(out[1])


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--codec", default="zstd:1",
                    help="zstd:LEVEL, blosc:CNAME:LEVEL:SHUFFLE, "
                    "gzip:LEVEL or none")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm")
                    else None)
    a = ap.parse_args()
    import tensorstore as ts
    import zarr

    sp = os.environ.get("SHARDPIPE", "shardpipe")
    work = tempfile.mkdtemp(prefix="sp-read-", dir=a.dir)
    path = os.path.join(work, "r.zarr")
    try:
        subprocess.run([sp, "bench", "--shape", ",".join(map(str, SHAPE)),
                        "--chunk", ",".join(map(str, CHUNK)), "--shard",
                        ",".join(map(str, PER_SHARD)), "--names", "t,y,x",
                        "--codec", a.codec, "--backend", "cpu", "--output",
                        path, "--overwrite", "--json"], check=True,
                       stdout=subprocess.DEVNULL)
        T = a.threads
        tsa = ts.open({"driver": "zarr3",
                       "kvstore": {"driver": "file", "path": path},
                       "context": {"data_copy_concurrency": {"limit": T},
                                   "file_io_concurrency": {"limit": T}}},
                      read=True).result()
        zarr.config.set({"threading.max_workers": T})
        za = zarr.open_array(path, mode="r")
        bound = Bound(path, a.codec)
        rows = []
        for name, key in PATTERNS:
            sel = selection(key)
            tch = touched(*sel)
            enc, grid, index_bytes = bound.chunks(tch)
            want = np.asarray(za[key])
            nbytes = want.nbytes
            best = {}
            fetched = None
            # Opened once, as TensorStore's and zarr-python's arrays are:
            # a reader keeps its buffers from read to read.
            r = shardpipe.open(path, threads=T)
            for _ in range(a.rounds):
                before = r.stats()
                got = None

                def run_sp():
                    nonlocal got
                    got = r[key]
                t = timed(run_sp)
                after = r.stats()
                fetched = (after["bytes_read"] - before["bytes_read"],
                           after["requests"] - before["requests"])
                assert np.array_equal(got, want), name
                best["shardpipe"] = min(best.get("shardpipe", 1e9), t)
                t = timed(lambda: tsa[key].read().result())
                best["tensorstore"] = min(best.get("tensorstore", 1e9), t)
                t = timed(lambda: za[key])
                best["zarr"] = min(best.get("zarr", 1e9), t)
                t = bound.seconds(enc, T)
                best["bound"] = min(best.get("bound", 1e9), t)
                t = bound.seconds(enc, T, fresh=True)
                best["fresh"] = min(best.get("fresh", 1e9), t)
                t = bound.seconds(enc, T, place=(sel, grid))
                best["placed"] = min(best.get("placed", 1e9), t)
            rows.append((name, nbytes, len(enc), sum(map(len, enc)) +
                         index_bytes, fetched, best))
            print(name, {k: round(v, 4) for k, v in best.items()},
                  flush=True)
            if key is Ellipsis:
                whole = (nbytes, best)
                tools = {}
                for tool, args in (("cat", ["cat", path, "-o", os.devnull]),
                                   ("verify", ["verify", path])):
                    for _ in range(a.rounds):
                        # One thread a core, as the tool reads.
                        t = timed(lambda: subprocess.run(
                            [sp] + args, check=True,
                            stdout=subprocess.DEVNULL))
                        tools[tool] = min(tools.get(tool, 1e9), t)
        print()
        print("%d threads each, codec %s, best of %d rounds; GB/s of the "
              "selection's bytes" % (T, a.codec, a.rounds))
        print()
        print("| read | shardpipe GB/s | TensorStore | zarr-python | "
              "shardpipe / TensorStore | shardpipe / bound | "
              "shardpipe / bound into fresh memory | shardpipe / bound "
              "placed | TensorStore / bound | TensorStore / bound placed "
              "| chunks | "
              "bytes read (touched chunks + indexes) | requests |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- "
              "| --- | --- | --- | --- |")
        for name, nbytes, nch, need, fetched, b in rows:
            gbs = {k: nbytes / v / 1e9 for k, v in b.items()}
            print("| %s | %.3f | %.3f | %.3f | %.2fx | %.2f | %.2f | %.2f "
                  "| %.2f | %.2f | %d | %d (%d) | %d |" % (
                      name, gbs["shardpipe"], gbs["tensorstore"],
                      gbs["zarr"], b["tensorstore"] / b["shardpipe"],
                      b["bound"] / b["shardpipe"],
                      b["fresh"] / b["shardpipe"],
                      b["placed"] / b["shardpipe"],
                      b["bound"] / b["tensorstore"],
                      b["placed"] / b["tensorstore"], nch, fetched[0],
                      need, fetched[1]))
        print()
        nbytes, b = whole
        chunk = int(np.prod(CHUNK)) * 2
        n_shards = int(np.prod([-(-s // (p * c)) for s, p, c in
                                zip(SHAPE, PER_SHARD, CHUNK)]))
        allowed = T * chunk + n_shards * (16 * int(np.prod(PER_SHARD)) + 4)
        for which in ("shardpipe", "tensorstore"):
            added, n = peak_memory(which, path, T)
            print("%s whole-array read: peak memory %.1f MB above the "
                  "output's %.1f MB (threads x one chunk + the shards' "
                  "indexes: %.1f MB)" % (which, (added - n) / 1e6, n / 1e6,
                                         allowed / 1e6))
        for tool, t in tools.items():
            print("shardpipe %s of the whole array (the process, start to "
                  "end): %.3f GB/s, %.2f of the bound, %.2f of the bound "
                  "into fresh memory" % (tool, nbytes / t / 1e9,
                                         b["bound"] / t, b["fresh"] / t))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
