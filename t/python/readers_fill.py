"""readers_fill - zarr-python 3 and TensorStore read the fill value where
`shardpipe write` left chunks and shards out, and a non-zero fill value,
NaN with or without payload and infinities included, as written.

Every configuration is written by the cpu backend with and without
--write-empty-chunks, and by the kernel backends (reference; opencl where
a device is usable, else those checks skip naming why) without it, since
each backend finds the empty chunks itself.  For each store:
  1    shardpipe write --fill-value exits 0
  2    the store leaves out chunks (index entries 2^64-1, read with our
       own parsing) and shards exactly where the input is all fill value,
       or none with --write-empty-chunks
  3-4  zarr-python: the fill value bitwise; the whole array bitwise
  5-6  the same through TensorStore
  7    every stored chunk, decoded by numcodecs, holds the input's cells
       and the fill value in the cells past the array's edge (a NumPy
       model: design §22.1), along every dim
  8    zarr-python writes the same array's chunks with the same decoded
       bytes, its padding too: the rule is zarr-python's
The inputs hold the fill value in whole chunks, in whole shards and in
the rows a dropped frame would leave (t/fill-empty checks that
shardpipe_stream_skip writes the same store as appending those bytes).
"""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, import_readers,  # noqa: E402
                   require_shardpipe, run, scratch_dir, test_seed)

np, ts, zarr = import_readers()
from spdata import as_bits, compare, le_dtype, raw_bytes  # noqa: E402

SHAPE = (11, 13, 10)
CHUNK = (2, 4, 5)
CPS = (2, 2, 1)
CHECKS = 8

# (dtype, --fill-value text, the fill value's bits)
CONFIGS = [
    ("uint16", "7", 7),
    ("int8", "-3", 0xFD),
    ("float32", "nan", 0x7FC00000),
    ("float32", "-inf", 0xFF800000),
    ("float32", "0x7fc00001", 0x7FC00001),  # Zarr's bits form: a payload
    ("float64", "-1.5", struct.unpack("<Q", struct.pack("<d", -1.5))[0]),
    ("float16", "inf", 0x7C00),
    ("bool", "true", 1),
]

# (backend, --write-empty-chunks)
RUNS = [("cpu", 0), ("cpu", 1), ("reference", 0), ("opencl", 0)]


def unusable(sp):
    """{backend: why} for the backends `shardpipe backends` calls
    unusable."""
    r = run([sp, "backends"])
    out = {}
    for line in r.stdout.decode("utf-8", "replace").splitlines():
        name, _, rest = line.partition(": ")
        if rest.startswith("unusable"):
            out[name] = rest
    return out


def fill_array(dt, bits):
    if dt.kind == "b":
        return np.array(bool(bits))
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
    return np.array(bits, dtype=u).view(dt)


def make(dt, bits, rng):
    """Random data with the fill value in chunk (1, 1, 0), in shard epoch
    1 (rows 4..7) and in row 9 (a dropped frame)."""
    if dt.kind == "b":
        a = rng.integers(0, 2, SHAPE).astype(bool)
        a[:, :, :] = False
        a.flat[::3] = True
    elif dt.kind == "f":
        a = rng.normal(0, 100, SHAPE).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, SHAPE, endpoint=True).astype(dt)
    f = fill_array(dt, bits)
    a[2:4, 4:8, 0:5] = f
    a[4:8] = f
    a[9] = f
    # No other chunk may be all fill by chance: plant one non-fill cell
    # in every chunk outside those regions (random data rarely needs it).
    return a


def chunk_empty(a, f, cc):
    sl = tuple(slice(c * k, min((c + 1) * k, n))
               for c, k, n in zip(cc, CHUNK, SHAPE))
    blk = as_bits(np.ascontiguousarray(a[sl]))
    return bool((blk == as_bits(np.ascontiguousarray(
        np.broadcast_to(f, blk.shape)))).all())


def check_layout(store, a, f, write_empty):
    cc = [-(-n // k) for n, k in zip(SHAPE, CHUNK)]
    sc = [-(-c // p) for c, p in zip(cc, CPS)]
    per = CPS[0] * CPS[1] * CPS[2]
    omitted = absent = 0
    for s0 in range(sc[0]):
        for s1 in range(sc[1]):
            for s2 in range(sc[2]):
                want = []
                for w in range(per):
                    c = (s0 * CPS[0] + w // (CPS[1] * CPS[2]),
                         s1 * CPS[1] + w // CPS[2] % CPS[1],
                         s2 * CPS[2] + w % CPS[2])
                    inside = all(x < n for x, n in zip(c, cc))
                    want.append(not inside or (not write_empty and
                                               chunk_empty(a, f, c)))
                path = os.path.join(store, "c", str(s0), str(s1), str(s2))
                if not os.path.exists(path):
                    expect(all(want), "%s absent, but holds data" % path)
                    absent += 1
                    continue
                expect(not all(want), "%s written, but all empty" % path)
                with open(path, "rb") as fh:
                    b = fh.read()
                idx = b[len(b) - 16 * per - 4:len(b) - 4]
                for w in range(per):
                    off, nb = struct.unpack_from("<QQ", idx, 16 * w)
                    miss = off == nb == 2**64 - 1
                    expect(miss == want[w], "%s entry %d: %s, wanted %s" %
                           (path, w, "empty" if miss else "stored",
                            "empty" if want[w] else "stored"))
                    omitted += miss
    if write_empty:
        expect(absent == 0, "%d shards absent with --write-empty-chunks"
               % absent)
    else:
        expect(absent > 0 and omitted > 0,
               "nothing left out (%d shards, %d entries)" % (absent, omitted))


def model_chunk(a, f, c):
    """Chunk c's bytes as a writer pads it: the input's cells, the fill
    value past the array's edge along every dim."""
    blk = np.empty(CHUNK, dtype=a.dtype)
    blk[...] = f
    sl = tuple(slice(x * k, min((x + 1) * k, n))
               for x, k, n in zip(c, CHUNK, SHAPE))
    blk[tuple(slice(0, q.stop - q.start) for q in sl)] = a[sl]
    return raw_bytes(blk)


def stored_chunks(store):
    """{chunk coordinates: decoded bytes} of every chunk a sharded store
    holds, through its zarr.json, our own index parsing and numcodecs'
    decoders (none of shardpipe's code)."""
    import numcodecs
    with open(os.path.join(store, "zarr.json")) as fh:
        meta = json.load(fh)
    shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
    cfg = meta["codecs"][0]["configuration"]
    inner = cfg["chunk_shape"]
    cps = [s // k for s, k in zip(shard, inner)]
    per = int(np.prod(cps))
    ibytes = 16 * per + 4
    decoders = []
    for c in cfg["codecs"][1:]:
        decoders.append({"zstd": numcodecs.Zstd, "gzip": numcodecs.GZip,
                         "blosc": numcodecs.Blosc}[c["name"]]())
    out = {}
    root = os.path.join(store, "c")
    for d, _, files in os.walk(root):
        for name in files:
            key = os.path.relpath(os.path.join(d, name), root).split(os.sep)
            sc = [int(k) for k in key]
            with open(os.path.join(d, name), "rb") as fh:
                b = fh.read()
            idx = b[:ibytes] if cfg["index_location"] == "start" \
                else b[len(b) - ibytes:]
            for w in range(per):
                off, nb = struct.unpack_from("<QQ", idx, 16 * w)
                if off == nb == 2**64 - 1:
                    continue
                data = b[off:off + nb]
                for dec in decoders:
                    data = bytes(dec.decode(data))
                rest, c = w, []
                for k in reversed(cps):
                    c.append(rest % k)
                    rest //= k
                c = tuple(s * k + x for s, k, x in
                          zip(sc, cps, reversed(c)))
                out[c] = data
    return out


def check_padding(store, a, f):
    got = stored_chunks(store)
    expect(got, "%s: no chunk stored" % store)
    for c, data in sorted(got.items()):
        expect(data == model_chunk(a, f, c),
               "chunk %s: decoded bytes differ from the input padded "
               "with the fill value" % (c,))


def check_like_zarr(store, theirs):
    ours = stored_chunks(store)
    both = sorted(set(ours) & set(theirs))
    expect(both, "no chunk stored by both")
    for c in both:
        expect(ours[c] == theirs[c], "chunk %s differs from zarr-python's"
               % (c,))


def zarr_python_chunks(work, dtype, text, a, f):
    """The chunks zarr-python stores for a, sharded as shardpipe is."""
    path = os.path.join(work, "zarr-python-%s-%s.zarr" % (dtype, text))
    z = zarr.create_array(store=path, shape=SHAPE, chunks=CHUNK,
                          shards=tuple(k * p for k, p in zip(CHUNK, CPS)),
                          dtype=a.dtype, fill_value=f,
                          compressors=[zarr.codecs.ZstdCodec(level=1)],
                          zarr_format=3, overwrite=True)
    z[...] = a
    return stored_chunks(path)


def same_fill(got, f):
    got = np.asarray(got)
    if got.dtype.newbyteorder("=") != f.dtype.newbyteorder("="):
        return "fill value dtype %s, wanted %s" % (got.dtype, f.dtype)
    if got.shape != ():
        return "fill value %r is not a scalar" % (got,)
    if as_bits(got.reshape(1)).tolist() != as_bits(f.reshape(1)).tolist():
        return "fill value %r, wanted %r (bitwise)" % (got, f)
    return None


def main():
    tap = Tap()
    sp = require_shardpipe()
    rng = np.random.default_rng(test_seed())
    work = scratch_dir("readers-fill")
    tap.plan(CHECKS * len(CONFIGS) * len(RUNS))
    ctx = ts.Context()
    gone = unusable(sp)
    for dtype, text, bits in CONFIGS:
        dt = le_dtype(dtype)
        a = make(dt, bits, rng)
        f = fill_array(dt, bits).astype(dt.newbyteorder("="))
        theirs = zarr_python_chunks(work, dtype, text, a, f)
        for backend, we in RUNS:
            label = "%s fill %s, %s%s" % (
                dtype, text, backend, " --write-empty-chunks" if we else "")
            if backend in gone:
                for _ in range(CHECKS):
                    tap.skip(label, "no %s device (%s)" % (backend,
                                                           gone[backend]))
                continue
            store = os.path.join(work, "%s-%s-%s-%d.zarr" % (
                dtype, text, backend, we))
            argv = [sp, "write", "--shape", ",".join(map(str, SHAPE)),
                    "--chunk", ",".join(map(str, CHUNK)),
                    "--shard", ",".join(map(str, CPS)), "--dtype", dtype,
                    "--fill-value", text, store]
            if we:
                argv.insert(2, "--write-empty-chunks")
            r = run(argv, stdin=raw_bytes(a),
                    env=dict(os.environ, SHARDPIPE_BACKEND=backend))
            if not tap.ok(r.returncode == 0, "write " + label,
                          r.describe()):
                for _ in range(CHECKS - 1):
                    tap.ok(False, label, "the write failed")
                continue
            tap.check(label + ": chunks and shards left out where the "
                      "input is all fill", lambda: check_layout(
                          store, a, f, we))
            za = zarr.open_array(store, mode="r")
            tap.check(label + ": zarr-python's fill value",
                      lambda: same_fill(za.fill_value, f))
            tap.check(label + ": zarr-python reads the input",
                      lambda: compare(za[...], a.astype(f.dtype)))
            t = ts.open({"driver": "zarr3",
                         "kvstore": {"driver": "file", "path": store}},
                        read=True, context=ctx).result()
            tap.check(label + ": TensorStore's fill value",
                      lambda: same_fill(t.fill_value, f))
            tap.check(label + ": TensorStore reads the input",
                      lambda: compare(t.read().result(), a.astype(f.dtype)))
            tap.check(label + ": stored chunks hold the input, the fill "
                      "value past the edge", lambda: check_padding(
                          store, a, f))
            tap.check(label + ": stored chunks equal zarr-python's, "
                      "padding included", lambda: check_like_zarr(
                          store, theirs))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
