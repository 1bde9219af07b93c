"""spdata - test inputs and bitwise comparison with numpy.

Inputs of four kinds, all reproducible from (seed, configuration number):
  random          values a sensor or simulation might give (small integers,
                  normal floats), with the dtype's extremes, infinities,
                  NaN and -0.0 planted
  incompressible  uniformly random bytes: for the float types that means
                  NaNs with arbitrary payloads (signalling ones too),
                  infinities, subnormals
  constant        one nonzero value everywhere (for floats, -0.0 or a
                  signalling NaN with a payload: neither is the fill value
                  0.0 bitwise)
  sparse          the fill value with a few random elements, so that many
                  chunks hold only the fill value
"""

import numpy as np

# A signalling NaN with a payload, as raw bits, per float size.
SNAN_BITS = {2: 0x7C55, 4: 0x7F812345, 8: 0x7FF0000000012345}
UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def le_dtype(name):
    """The little-endian numpy dtype of a Zarr data type name."""
    return np.dtype(name).newbyteorder("<")


def from_bits(bits, dtype):
    return np.asarray(bits, dtype=UINT_OF_SIZE[dtype.itemsize]).view(dtype)


def as_bits(a):
    """The array's elements as unsigned integers of the same size, so that
    equality is bitwise (NaN payloads, -0.0)."""
    a = np.ascontiguousarray(a)
    return a.view(UINT_OF_SIZE[a.dtype.itemsize])


def _random_bytes(rng, n, dtype):
    return np.frombuffer(rng.bytes(n * dtype.itemsize), dtype=dtype).copy()


def make_input(dtype_name, shape, kind, rng, variant=0):
    """An array of the given Zarr dtype, shape and kind (see above)."""
    dt = le_dtype(dtype_name)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        if kind == "constant":
            flat = np.ones(n, dtype=bool)
        elif kind == "sparse":
            flat = rng.random(n) < 0.005
        else:
            flat = rng.integers(0, 2, n).astype(bool)
        return flat.reshape(shape)

    if kind == "incompressible":
        flat = _random_bytes(rng, n, dt)
        if dt.kind == "f" and n >= 2:
            flat[0] = from_bits(SNAN_BITS[dt.itemsize], dt)
            flat[-1] = from_bits(SNAN_BITS[dt.itemsize] | 1 << (8 * dt.itemsize - 1), dt)
    elif kind == "constant":
        if dt.kind == "f":
            value = (from_bits(SNAN_BITS[dt.itemsize], dt) if variant % 2
                     else dt.type(-0.0))
        else:
            info = np.iinfo(dt)
            value = info.max if variant % 2 else (info.min or info.max)
        flat = np.full(n, value, dtype=dt)
    elif kind == "sparse":
        flat = np.zeros(n, dtype=dt)
        where = rng.random(n) < 0.005
        flat[where] = _random_bytes(rng, int(where.sum()), dt)
    elif kind == "random":
        if dt.kind == "f":
            flat = (rng.standard_normal(n) * 1000).astype(dt)
            specials = [np.inf, -np.inf, np.nan, -0.0,
                        np.finfo(dt).max, np.finfo(dt).tiny / 4]
        else:
            info = np.iinfo(dt)
            lo, hi = max(info.min, -1000), min(info.max, 2000)
            flat = rng.integers(lo, hi, n, endpoint=True).astype(dt)
            specials = [info.min, info.max]
        for v in specials:
            flat[rng.integers(0, n)] = dt.type(v)
    else:
        raise ValueError("unknown kind " + kind)
    return flat.reshape(shape)


def raw_bytes(a):
    """Row-major little-endian bytes, what `shardpipe write` reads."""
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()


def compare(got, want, what="array"):
    """None when got equals want bitwise (dtype and shape included),
    otherwise a description of the first difference."""
    got = np.asarray(got)
    if got.dtype.newbyteorder("=") != want.dtype.newbyteorder("="):
        return "%s: dtype %s, wanted %s" % (what, got.dtype, want.dtype)
    if got.shape != want.shape:
        return "%s: shape %s, wanted %s" % (what, got.shape, want.shape)
    g = as_bits(got.astype(got.dtype.newbyteorder("="), copy=False))
    w = as_bits(want.astype(want.dtype.newbyteorder("="), copy=False))
    if np.array_equal(g, w):
        return None
    diff = np.argwhere(g != w)
    at = tuple(int(i) for i in diff[0])
    width = 2 * g.dtype.itemsize
    return ("%s: %d of %d elements differ; first at %s: got 0x%0*x (%r), "
            "wanted 0x%0*x (%r)" % (what, len(diff), g.size, at, width,
                                     int(g[at]), got[at], width, int(w[at]),
                                     want[at]))
