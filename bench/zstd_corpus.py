#!/usr/bin/env python3
"""zstd_corpus.py - the kernel zstd encoder's ratio against libzstd's on
data it was not tuned on (issue 22).

For every kind of the corpus and every level asked for, the array is
written twice with `shardpipe write`: once by the kernel encoder (backend
`reference`, whose stores the tests prove byte-identical to opencl's and
cuda's) and once by libzstd (backend `cpu`), both with the same geometry;
the table gives the bytes each store holds and the kernel's ratio as a
fraction of libzstd's at the same level (kernel ratio / libzstd ratio =
libzstd bytes / kernel bytes).  With --pocl, the kinds are written once more
per level on `opencl` under SHARDPIPE_TRACE, and the compress stage's
throughput is the kind's bytes over the device time of the zstd kernels
(sp_zstd_units, sp_codec_zstd) in the trace, next to the cpu backend's
(its "run batch" spans: the gather and compression its threads share):
PoCL runs a work-group on one CPU core, so this is a proxy until a GPU
runs it.

Kinds (each generated from --seed, printed; bench/README.md quotes a run):
  images   scikit-image's bundled sample photographs (optional: installed
           by scripts/setup-python-readers), grey, cropped to 256x256,
           lightly smoothed and scaled to 16 bits, stacked
  noise12  a 12-bit camera's dark frames: offset, Poisson shot noise of a
           faint smooth signal, Gaussian read noise
  labels   uint32 segmentation: sparse ellipsoids with ids up to 2^20
  fields   float32 simulation: a few smooth modes plus weak turbulence
  ct       uint16 CT-like volume: nested ellipsoids of tissue densities
           over air, offset by 1024 as Hounsfield units are, with noise
  micro    shardpipe bench's own micro fill (written by bench --output,
           read back with shardpipe cat)

Usage: bench/zstd_corpus.py [--shardpipe build/shardpipe] [--levels 1,3,5,9]
       [--kinds K,...] [--pocl] [--seed N] [--markdown]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

# Every kind is a (z, y, x) volume of about 4 MiB: small enough for the
# reference executor and PoCL at level 9 on a shared machine, and every
# chunk two or more 128 KiB blocks, so blocks are as the encoder sees
# them in production.
SHAPE = (32, 256, 256)
CHUNK = (8, 128, 128)
SHARD = (16, 256, 256)


def smooth(a, passes):
    """A separable box blur, repeated: smooth fields without scipy."""
    a = a.astype(np.float64)
    for _ in range(passes):
        for ax in range(a.ndim):
            a = (np.roll(a, 1, ax) + a + np.roll(a, -1, ax)) / 3.0
    return a


def kind_images(rng):
    try:
        import skimage.data as skd
        from skimage.color import rgb2gray
    except ImportError:
        return None, "scikit-image is not installed (scripts/setup-python-readers installs it, optional)"
    names = ["camera", "moon", "coins", "astronaut", "coffee", "chelsea",
             "brick", "grass", "gravel", "rocket", "page", "text",
             "horse", "hubble_deep_field", "immunohistochemistry", "retina"]
    tiles = []
    for n in names:
        try:
            img = getattr(skd, n)()
        except Exception:
            continue
        img = np.asarray(img)
        if img.ndim == 3:
            img = rgb2gray(img[..., :3]) * 255.0
        img = img.astype(np.float64)
        if img.max() <= 1.0:
            img = img * 255.0
        h, w = img.shape
        for y in range(0, h - 255, 256):
            for x in range(0, w - 255, 256):
                tiles.append(img[y:y + 256, x:x + 256])
    if not tiles:
        return None, "no scikit-image sample image could be loaded"
    order = rng.permutation(len(tiles))
    vol = np.stack([tiles[order[i % len(tiles)]] for i in range(SHAPE[0])])
    # 8-bit photographs made 16-bit: a light blur gives the low byte real
    # content, as a 16-bit sensor's smooth scene has.
    vol = (np.roll(vol, 1, 1) + 2 * vol + np.roll(vol, -1, 1)) / 4
    vol = (np.roll(vol, 1, 2) + 2 * vol + np.roll(vol, -1, 2)) / 4
    return np.clip(vol * 256.0, 0, 65535).astype("<u2"), None


def kind_noise12(rng):
    signal = smooth(rng.random(SHAPE) * 60.0, 4)
    v = 100 + rng.poisson(signal) + rng.normal(0, 2.0, SHAPE)
    return np.clip(np.rint(v), 0, 4095).astype("<u2"), None


def kind_labels(rng):
    vol = np.zeros(SHAPE, dtype="<u4")
    z, y, x = np.ogrid[:SHAPE[0], :SHAPE[1], :SHAPE[2]]
    for _ in range(300):
        c = [rng.integers(0, s) for s in SHAPE]
        r = [rng.uniform(2, 6), rng.uniform(4, 20), rng.uniform(4, 20)]
        lab = int(rng.integers(1, 1 << 20))
        sl = tuple(slice(max(0, int(ci - ri)), int(ci + ri) + 1)
                   for ci, ri in zip(c, r))
        zz, yy, xx = z[sl[0], :, :], y[:, sl[1], :], x[:, :, sl[2]]
        m = (((zz - c[0]) / r[0]) ** 2 + ((yy - c[1]) / r[1]) ** 2 +
             ((xx - c[2]) / r[2]) ** 2) <= 1.0
        vol[sl][m] = lab
    return vol, None


def kind_fields(rng):
    z, y, x = np.meshgrid(*[np.linspace(0, 1, s) for s in SHAPE],
                          indexing="ij")
    f = np.zeros(SHAPE)
    for _ in range(6):
        k = rng.uniform(1, 8, 3)
        ph = rng.uniform(0, 2 * np.pi, 3)
        f += rng.uniform(0.2, 1.0) * (np.sin(2 * np.pi * k[0] * z + ph[0]) *
                                      np.cos(2 * np.pi * k[1] * y + ph[1]) *
                                      np.sin(2 * np.pi * k[2] * x + ph[2]))
    f += 0.01 * smooth(rng.normal(0, 1, SHAPE), 2)
    return (300.0 + 20.0 * f).astype("<f4"), None


def kind_ct(rng):
    z, y, x = np.meshgrid(*[np.linspace(-1, 1, s) for s in SHAPE],
                          indexing="ij")
    hu = np.full(SHAPE, -1000.0)                      # air
    body = (x / 0.9) ** 2 + (y / 0.7) ** 2 <= 1.0
    hu[body] = -100.0                                 # fat
    hu[(x / 0.8) ** 2 + (y / 0.6) ** 2 <= 1.0] = 40.0  # soft tissue
    for sx in (-0.4, 0.4):                            # lungs
        hu[((x - sx) / 0.3) ** 2 + (y / 0.4) ** 2 + (z / 1.5) ** 2 <= 1] = -850
    ring = (x / 0.12) ** 2 + ((y + 0.45) / 0.12) ** 2
    hu[(ring <= 1.0) & (ring >= 0.5)] = 1200.0        # vertebra's shell
    hu += rng.normal(0, 12.0, SHAPE)
    return np.clip(np.rint(hu + 1024), 0, 4095).astype("<u2"), None


def kind_micro(rng, sp, tmp):
    store = os.path.join(tmp, "micro-src.zarr")
    shape = ",".join(map(str, SHAPE))
    subprocess.run([sp, "bench", "--shape", shape,
                    "--chunk", ",".join(map(str, CHUNK)),
                    "--shard", ",".join(str(s // c)
                                        for s, c in zip(SHARD, CHUNK)),
                    "--fill", "micro", "--codec", "zstd:1",
                    "--output", store, "--overwrite"],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    raw = subprocess.run([sp, "cat", store], check=True,
                         stdout=subprocess.PIPE).stdout
    return np.frombuffer(raw, dtype="<u2").reshape(SHAPE), None


KINDS = {"images": kind_images, "noise12": kind_noise12,
         "labels": kind_labels, "fields": kind_fields, "ct": kind_ct,
         "micro": None}
DTYPES = {"<u2": "uint16", "<u4": "uint32", "<f4": "float32"}


def store_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            if f != "zarr.json":
                total += os.path.getsize(os.path.join(root, f))
    return total


def write(sp, raw, dtype, backend, level, out, trace=None):
    env = dict(os.environ)
    if trace:
        env["SHARDPIPE_TRACE"] = trace
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([sp, "write", "--input", raw,
                    "--shape", ",".join(map(str, SHAPE)),
                    "--chunk", ",".join(map(str, CHUNK)),
                    "--shard-shape", ",".join(map(str, SHARD)),
                    "--dtype", dtype, "--codec", "zstd:%d" % level,
                    "--backend", backend, out],
                   check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return store_bytes(out)


def compress_seconds(trace, names):
    """Seconds of the trace's complete events named in names."""
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    return sum(e.get("dur", 0) for e in events
               if e.get("ph") == "X" and e.get("name") in names) / 1e6


def make_kind(kind, seed, sp, tmp):
    """The kind's array for this seed (its own generator, so a kind's data
    does not depend on which others run) and the raw file it is written
    to in tmp; (None, None), the reason printed, when it cannot be made."""
    rng = np.random.default_rng([seed, list(KINDS).index(kind)])
    if kind == "micro":
        arr, why = kind_micro(rng, sp, tmp)
    else:
        arr, why = KINDS[kind](rng)
    if arr is None:
        print("# %s skipped: %s" % (kind, why))
        return None, None
    raw = os.path.join(tmp, kind + ".raw")
    arr.tofile(raw)
    return arr, raw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardpipe", default="build/shardpipe")
    ap.add_argument("--levels", default="1,3,5,9")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--pocl", action="store_true",
                    help="also time the compress stage on opencl and cpu")
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("SHARDPIPE_TEST_SEED",
                                               "0") or 0) or None)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4),
                                                            "little")
    print("# seed %d (SHARDPIPE_TEST_SEED or --seed replays it)" % seed)
    levels = [int(x) for x in a.levels.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="zstd-corpus-") as tmp:
        for kind in a.kinds.split(","):
            arr, raw = make_kind(kind, seed, a.shardpipe, tmp)
            if arr is None:
                continue
            dtype = DTYPES[arr.dtype.str]
            out = os.path.join(tmp, "out.zarr")
            for lv in levels:
                kb = write(a.shardpipe, raw, dtype, "reference", lv, out)
                cb = write(a.shardpipe, raw, dtype, "cpu", lv, out)
                row = [kind, dtype, lv, arr.nbytes, kb, cb,
                       arr.nbytes / kb, arr.nbytes / cb, cb / kb]
                if a.pocl:
                    tr = os.path.join(tmp, "trace.json")
                    write(a.shardpipe, raw, dtype, "opencl", lv, out, tr)
                    ks = compress_seconds(tr, ("sp_zstd_units",
                                               "sp_codec_zstd"))
                    os.unlink(tr)
                    write(a.shardpipe, raw, dtype, "cpu", lv, out, tr)
                    cs = compress_seconds(tr, ("compress", "run batch"))
                    os.unlink(tr)
                    row += [arr.nbytes / ks / 1e6, arr.nbytes / cs / 1e6]
                rows.append(row)
                print_row(row, a.markdown, len(rows) == 1)
                sys.stdout.flush()


def print_row(r, md, first):
    head = ["kind", "dtype", "level", "bytes", "kernel", "libzstd",
            "kernel ratio", "libzstd ratio", "kernel/libzstd"]
    cells = [r[0], r[1], str(r[2]), str(r[3]), str(r[4]), str(r[5]),
             "%.3f" % r[6], "%.3f" % r[7], "%.3f" % r[8]]
    if len(r) > 9:
        head += ["PoCL MB/s", "cpu MB/s", "PoCL/cpu"]
        cells += ["%.1f" % r[9], "%.1f" % r[10], "%.3f" % (r[9] / r[10])]
    if md:
        if first:
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
        print("| " + " | ".join(cells) + " |")
    else:
        if first:
            print("\t".join(head))
        print("\t".join(cells))


if __name__ == "__main__":
    main()
