"""readers_pyramid - pyramids written by `shardpipe write --downsample`,
read by the independent readers and checked against a NumPy model.

For every method on every dtype, over geometries with odd and even
extents, many levels and one, dim 0 halving or not, an unbounded dim 0
whose last block is partial, and a different method along dim 0:

  - every level read by zarr-python equals the model: the level below
    it, edges replicated, cut into blocks and reduced by NumPy code
    written here from the rules of shardpipe(3), not from the library;
  - the group's OME-NGFF metadata validates against the 0.5 JSON schema
    (strict_image.schema, as shipped in the ngff-zarr package) and loads
    in ome-zarr-models, its scales and translations are the model's, and
    ome-zarr opens every level with the same values.

Inputs are random (seeded; SHARDPIPE_TEST_SEED replays), floats salted
with NaNs of any payload, infinities, both zeros, subnormals and the
largest finite values, integers with repeats for the median's ties.
"""

import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, require_shardpipe, run,  # noqa: E402
                   scratch_dir, test_seed, versions)

import numpy as np  # noqa: E402
import zarr  # noqa: E402

METHODS = ["mean", "min", "max", "median", "decimate", "second_max",
           "second_min"]
# The rank each ranked method takes in a block of n, sorted stably.
RANKED = {"median": lambda n: max(n // 2 - 1, 0),
          "second_max": lambda n: max(n - 2, 0),
          "second_min": lambda n: min(1, n - 1)}
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "float16", "float32", "float64"]
QNAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}

# (what, names, shape, chunk, downsample, --levels or None, rows[,
# --stop])
GEOS = [
    ("t,y,x, y and x halve, odd, three levels", "t,y,x", (0, 13, 11),
     (2, 4, 4), "y,x", None, 5),
    ("z,y,x bounded, every dim halves, even", "z,y,x", (8, 12, 10),
     (4, 4, 4), "z,y,x", "2", 8),
    ("t,c,y,x, t y x halve, partial last block", "t,c,y,x",
     (0, 2, 9, 10), (3, 1, 4, 4), "t,y,x", "3", 11),
    ("y,x, y alone halves, four levels", "y,x", (17, 6), (4, 4), "y",
     None, 17),
]
# Anisotropic: a dim stops at its own level while the others go on.
STOP_GEOS = [
    ("z,y,x, z halves once (--stop z=2), y and x four times", "z,y,x",
     (7, 33, 30), (4, 4, 4), "z,y,x", None, 7, "z=2"),
    ("t,y,x unbounded, t halves twice (--stop t=3) of four levels", "t,y,x",
     (0, 13, 9), (2, 4, 4), "t,y,x", "4", 11, "t=3"),
]


def uint_of(dt):
    return np.dtype("u%d" % np.dtype(dt).itemsize)


def special_bits(rng, size, n):
    """Float bit patterns: NaNs with payloads, infinities, zeros,
    subnormals, the largest finite, each with either sign."""
    fb = {2: 10, 4: 23, 8: 52}[size]
    eb = {2: 5, 4: 8, 8: 11}[size]
    inf = ((1 << eb) - 1) << fb
    frac = (1 << fb) - 1
    out = []
    for _ in range(n):
        s = (1 << (fb + eb)) if rng.integers(2) else 0
        k = int(rng.integers(6))
        r = int(rng.integers(1 << 62))
        out.append([s | inf | ((r & frac) | 1), s | inf, s, s | 1,
                    s | (inf - (1 << fb)) | frac, s | (r & frac)][k])
    return out


def make_input(dt, shape, rng):
    """Random elements of dt, with repeats and, for floats, specials."""
    n = int(np.prod(shape))
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    u = uint_of(dt)
    bits = rng.integers(0, 1 << 63, size=n, dtype=np.uint64) * 2 + \
        rng.integers(0, 2, size=n, dtype=np.uint64)
    bits = bits.astype(u)
    if dt == np.float16:
        bits &= np.uint16(0xBFFF)      # finite halves, mostly
    pool = bits[:4].copy()
    pick = rng.integers(0, 5, size=n) == 0
    bits[pick] = pool[rng.integers(0, 4, size=int(pick.sum()))]
    if dt.kind == "f":
        where = np.flatnonzero(rng.integers(0, 10, size=n) == 1)
        bits[where] = np.array(special_bits(rng, dt.itemsize, len(where)),
                               dtype=np.uint64).astype(u)
    return bits.view(dt).reshape(shape)


def float_key(bits, size):
    """Unsigned keys ordering floats by value, -0 below +0, NaNs last."""
    u = bits.astype(np.uint64)
    sign = np.uint64(1 << (8 * size - 1))
    mask = np.uint64((1 << (8 * size)) - 1)
    key = np.where(u & sign, ~u & mask, u | sign)
    x = bits.view({2: np.float16, 4: np.float32, 8: np.float64}[size])
    return np.where(np.isnan(x), np.uint64((1 << 64) - 1), key)


def avg2(a, b):
    """(a + b) / 2 rounded once in a's format: exactly, for binary16 and
    binary32 through a double (their sum is exact there, or rounds where
    it cannot change the result), binary64 halving its sum unless it
    overflowed."""
    with np.errstate(all="ignore"):
        if a.dtype != np.float64:
            return ((a.astype(np.float64) + b.astype(np.float64)) /
                    2).astype(a.dtype)
        s = a + b
        over = np.isinf(s) & np.isfinite(a) & np.isfinite(b)
        return np.where(over, a / 2 + b / 2, s / 2)


def reduce_last(v, method):
    """Reduce the last axis (a block in block order) by method."""
    dt = v.dtype
    n = v.shape[-1]
    if method == "decimate":
        return v[..., 0]
    if dt.kind == "f":
        u = uint_of(dt)
        bits = v.view(u)
        nan = np.isnan(v)
        if method not in RANKED:
            first = np.take_along_axis(
                bits, np.argmax(nan, axis=-1)[..., None], axis=-1)[..., 0]
            has = nan.any(axis=-1)
        if method == "mean":
            x = v
            while x.shape[-1] > 1:
                x = avg2(x[..., 0::2], x[..., 1::2])
            out = x[..., 0].view(u).copy()
            out[np.isnan(x[..., 0])] = QNAN[dt.itemsize]
        else:
            key = float_key(bits, dt.itemsize)
            if method in RANKED:
                i = np.argsort(key, axis=-1, kind="stable")[..., RANKED[method](n)]
            else:
                i = (np.argmin if method == "min" else np.argmax)(key,
                                                                  axis=-1)
            out = np.take_along_axis(bits, i[..., None], axis=-1)[..., 0]
        if method not in RANKED:
            out = np.where(has, first, out)
        return out.astype(u).view(dt)
    w = v.astype(np.int64 if dt.kind == "i" else np.uint64)
    if method == "mean":
        s = w.astype(object).sum(axis=-1)

        def rhe(x):
            q, r = divmod(int(x), n)
            return q + (2 * r > n or (2 * r == n and q % 2 == 1))
        return np.vectorize(rhe, otypes=[object])(s).astype(dt)
    if method in RANKED:
        i = np.argsort(w, axis=-1, kind="stable")[..., RANKED[method](n)]
        return np.take_along_axis(v, i[..., None], axis=-1)[..., 0]
    return (np.min if method == "min" else np.max)(v, axis=-1)


def model_level(a, halving, method, append):
    """The next level of a: each halving dim padded to even by repeating
    its last element, cut into 2^k blocks in row-major order of the
    halving dims (dim 0 slowest) and reduced."""
    for d in halving:
        if a.shape[d] % 2:
            a = np.concatenate([a, np.take(a, [-1], axis=d)], axis=d)
    shape, pairs = [], []
    for d, n in enumerate(a.shape):
        if d in halving:
            shape += [n // 2, 2]
            pairs.append(len(shape) - 1)
        else:
            shape.append(n)
    b = np.moveaxis(a.reshape(shape), pairs,
                    list(range(len(shape) - len(pairs), len(shape))))
    v = b.reshape(b.shape[:len(shape) - len(pairs)] + (2 ** len(pairs),))
    if append != method and 0 in halving:
        h = v.shape[-1] // 2
        rows = np.stack([reduce_last(v[..., :h], method),
                         reduce_last(v[..., h:], method)], axis=-1)
        return reduce_last(rows, append)
    return reduce_last(v, method)


def same_bits(got, want):
    if got.shape != want.shape:
        return "shape %s, the model's %s" % (got.shape, want.shape)
    g = got.view(uint_of(got.dtype)) if got.dtype != np.bool_ else got
    w = want.view(uint_of(want.dtype)) if want.dtype != np.bool_ else want
    bad = np.argwhere(g != w)
    if len(bad):
        i = tuple(bad[0])
        return "%d elements differ, first at %s: %r, the model %r" % (
            len(bad), i, got[i], want[i])
    return None


SCHEMA = None


def schema_validator():
    """The OME-NGFF 0.5 strict image schema and the schemas it refers to,
    from the ngff-zarr package's copy of the spec."""
    global SCHEMA
    if SCHEMA is None:
        import jsonschema
        import ngff_zarr
        import referencing
        from referencing.jsonschema import DRAFT202012
        base = os.path.join(os.path.dirname(ngff_zarr.__file__), "spec",
                            "0.5", "schemas")
        reg = referencing.Registry()
        for f in os.listdir(base):
            with open(os.path.join(base, f)) as fh:
                s = json.load(fh)
            reg = reg.with_resource(s["$id"], DRAFT202012.create_resource(s))
        with open(os.path.join(base, "strict_image.schema")) as fh:
            strict = json.load(fh)
        SCHEMA = jsonschema.Draft202012Validator(strict, registry=reg)
    return SCHEMA


class Case:
    def __init__(self, n, geo, dtype, method, append, codec):
        self.n = n
        (self.geo, self.names, self.shape, self.chunk, self.ds,
         self.levels, self.rows) = geo[:7]
        self.stop = {}
        for item in (geo[7].split(",") if len(geo) > 7 else ()):
            k, v = item.split("=")
            self.stop[self.names.split(",").index(k)] = int(v)
        self.stop_arg = geo[7] if len(geo) > 7 else None
        self.dtype = dtype
        self.method = method
        self.append = append
        self.codec = codec

    def what(self):
        m = self.method + (" then " + self.append if self.append else "")
        return "%s %s (%s), %s" % (self.dtype, m, self.codec, self.geo)


def write(sp, root, case, data):
    raw = os.path.join(root, "in-%d.raw" % case.n)
    store = os.path.join(root, "s-%d.zarr" % case.n)
    data.tofile(raw)
    argv = [sp, "write", "--quiet", "--shape",
            ",".join(str(x) for x in case.shape), "--chunk",
            ",".join(str(x) for x in case.chunk), "--names", case.names,
            "--dtype", case.dtype, "--codec", case.codec, "--input", raw,
            "--downsample", case.ds, "--method", case.method,
            "--units", "x=micrometer,y=micrometer", "--scale", "x=0.5",
            store]
    if case.levels:
        argv += ["--levels", case.levels]
    if case.append:
        argv += ["--append-method", case.append]
    if case.stop_arg:
        argv += ["--stop", case.stop_arg]
    r = run(argv)
    expect(r.returncode == 0, r.describe())
    return store


def check_case(tap, sp, root, case, rng):
    shape = tuple(case.rows if i == 0 and s == 0 else s
                  for i, s in enumerate(case.shape))
    data = make_input(np.dtype(case.dtype), shape, rng)
    store = {}

    def levels_equal():
        store["path"] = write(sp, root, case, data)
        g = zarr.open_group(store["path"], mode="r")
        ms = g.attrs["ome"]["multiscales"][0]
        arrays = [np.asarray(g[d["path"]][...]) for d in ms["datasets"]]
        store["arrays"], store["ms"] = arrays, ms
        expect(len(arrays) > 1 or case.levels == "1",
               "%d levels" % len(arrays))
        why = same_bits(arrays[0], data)
        if why:
            return "level 0: " + why
        flagged = [case.names.split(",").index(x)
                   for x in case.ds.split(",")]
        for L in range(1, len(arrays)):
            below = arrays[L - 1]
            # Level L halves a dim of level L-1 still larger than 1
            # whose stop, the levels it halves through, is past L.
            halving = [d for d in flagged if below.shape[d] > 1 and
                       L < case.stop.get(d, 33)]
            want = model_level(below, halving, case.method,
                               case.append or case.method)
            why = same_bits(arrays[L], want)
            if why:
                return "level %d: %s" % (L, why)
        return None

    if not tap.check("every level is the NumPy model: " + case.what(),
                     levels_equal):
        tap.skip("metadata: " + case.what(), "no store to read")
        tap.skip("ome-zarr: " + case.what(), "no store to read")
        return

    def metadata():
        ms = store["ms"]
        attrs = zarr.open_group(store["path"], mode="r").attrs.asdict()
        errs = [e.message for e in schema_validator().iter_errors(attrs)]
        expect(not errs, "schema: %s" % errs[:3])
        from ome_zarr_models.v05.image import Image
        Image.from_zarr(zarr.open_group(store["path"], mode="r"))
        names = case.names.split(",")
        base = [0.5 if n == "x" else 1.0 for n in names]
        shapes = [a.shape for a in store["arrays"]]
        for L, d in enumerate(ms["datasets"]):
            ct = d["coordinateTransformations"]
            for k in range(len(names)):
                # The dim halved h times: once per level that shrank it.
                h = sum(shapes[i + 1][k] != shapes[i][k] for i in range(L))
                m = case.append if k == 0 and case.append else case.method
                want_s = base[k] * 2 ** h
                want_t = 0 if m == "decimate" else base[k] * (2 ** h - 1) / 2
                expect(ct[0]["scale"][k] == want_s and
                       ct[1]["translation"][k] == want_t,
                       "level %d dim %s: scale %r translation %r, want "
                       "%r %r" % (L, names[k], ct[0]["scale"][k],
                                  ct[1]["translation"][k], want_s, want_t))
        return None

    tap.check("OME-NGFF 0.5 schema, ome-zarr-models and the model's "
              "transformations: " + case.what(), metadata)

    def ome_zarr_reads():
        from ome_zarr.io import parse_url
        from ome_zarr.reader import Reader
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nodes = list(Reader(parse_url(store["path"]))())
        expect(nodes, "ome-zarr finds no image")
        levels = nodes[0].data
        expect(len(levels) == len(store["arrays"]),
               "ome-zarr sees %d levels, not %d" % (len(levels),
                                                     len(store["arrays"])))
        for L, lev in enumerate(levels):
            why = same_bits(np.asarray(lev.compute()), store["arrays"][L])
            if why:
                return "level %d: %s" % (L, why)
        return None

    tap.check("ome-zarr opens every level: " + case.what(), ome_zarr_reads)


def main():
    sp = require_shardpipe()
    seed = test_seed()
    rng = np.random.default_rng(seed)
    tap = Tap()
    Tap.diag(versions(("numpy", "zarr", "ome-zarr", "ome-zarr-models",
                       "jsonschema", "ngff-zarr")))
    root = scratch_dir("pyramid")
    cases = []
    for t, dt in enumerate(DTYPES):
        for m, meth in enumerate(METHODS):
            n = len(cases)
            cases.append(Case(n, GEOS[n % len(GEOS)], dt, meth, None,
                              "zstd:1" if n % 3 == 0 else "none"))
    cases.append(Case(len(cases), GEOS[2], "uint16", "mean", "max", "none"))
    cases.append(Case(len(cases), GEOS[1], "float32", "median", "mean",
                      "gzip:1"))
    cases.append(Case(len(cases), GEOS[2], "int8", "min", "decimate",
                      "none"))
    for geo, dt, meth, app in ((STOP_GEOS[0], "uint16", "mean", None),
                               (STOP_GEOS[0], "float32", "second_max",
                                None),
                               (STOP_GEOS[1], "int8", "second_min", None),
                               (STOP_GEOS[1], "float16", "mean", "max")):
        cases.append(Case(len(cases), geo, dt, meth, app, "none"))
    one = ("y,x, one level", "y,x", (12, 17), (16, 32), "y,x", "1", 12)
    cases.append(Case(len(cases), one, "uint8", "mean", None, "none"))
    tap.plan(3 * len(cases))
    for case in cases:
        check_case(tap, sp, root, case, rng)
    sys.exit(tap.finish())


main()
