"""readers_reopen - `shardpipe write --append` continues stores that
zarr-python 3 and TensorStore wrote (doc/design.md §29), and both read the
continued array back equal to the whole input.

Each store is made by the other writer with sharding_indexed and zstd
(level 3, and zarr-python's default, 0), k rows of a seeded
random input, k inside a shard row or at its edge; shardpipe appends rows
k..N-1 from stdin.  The expectation is the NumPy input itself.  Stores in
layouts shardpipe does not write are refused with exit 4 and left as they
were, byte for byte.
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, import_readers,  # noqa: E402
                   require_shardpipe, run, scratch_dir, test_seed)

np, ts, zarr = import_readers()

N = 22
INNER = (10, 12)
CHUNKS = (2, 4, 5)
SHARDS = (4, 8, 10)
KS = (6, 8, 13)


def tree_digest(root):
    """Every file below root with its SHA-256, to show a refusal left the
    store as it was."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(
                    fh.read()).hexdigest()
    return out


def by_zarr(path, a, level=3):
    from zarr.codecs import ZstdCodec
    z = zarr.create_array(path, shape=a.shape, chunks=CHUNKS, shards=SHARDS,
                          dtype=a.dtype, fill_value=0,
                          compressors=ZstdCodec(level=level), zarr_format=3)
    z[...] = a


def by_tensorstore(path, a):
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": path},
        "metadata": {
            "shape": list(a.shape),
            "data_type": "uint16",
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": list(SHARDS)}},
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(CHUNKS),
                "codecs": [{"name": "bytes",
                            "configuration": {"endian": "little"}},
                           {"name": "zstd",
                            "configuration": {"level": 3,
                                              "checksum": False}}],
                "index_codecs": [{"name": "bytes",
                                  "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}],
                "index_location": "end"}}],
            "fill_value": 0,
        },
        "create": True, "delete_existing": True,
    }
    t = ts.open(spec).result()
    t.write(a).result()


def both_read(path, want):
    z = zarr.open_array(path, mode="r")
    expect(z.shape == want.shape, "zarr-python sees shape %r" % (z.shape,))
    expect(np.array_equal(z[...], want), "zarr-python reads other values")
    t = ts.open({"driver": "zarr3",
                 "kvstore": {"driver": "file", "path": path}},
                read=True).result()
    expect(tuple(t.shape) == want.shape,
           "TensorStore sees shape %r" % (tuple(t.shape),))
    expect(np.array_equal(t.read().result(), want),
           "TensorStore reads other values")


def main():
    tap = Tap()
    sp = require_shardpipe()
    rng = np.random.default_rng(test_seed())
    work = scratch_dir("readers-reopen")
    tap.plan(2 * len(KS) * 2 + 3)
    a = rng.integers(0, 65535, (N,) + INNER, endpoint=True).astype("<u2")
    a[3] = 0  # a row of fill value: some chunks are not stored
    for who, make in (("zarr-python", by_zarr),
                      ("TensorStore", by_tensorstore)):
        for k in KS:
            path = os.path.join(work, "%s-%d.zarr" % (who, k))
            make(path, a[:k])
            r = run([sp, "write", "--append", "--quiet", path],
                    stdin=a[k:].tobytes())
            if not tap.ok(r.returncode == 0,
                          "%s wrote %d rows, shardpipe write --append the "
                          "other %d" % (who, k, N - k), r.describe()):
                tap.skip("read back", "the append failed")
                continue

            def check(path=path):
                both_read(path, a)
                v = run([sp, "verify", path])
                expect(v.returncode == 0, v.describe())
            tap.check("%s's store continued at row %d: zarr-python, "
                      "TensorStore and verify see the %d rows" % (who, k, N),
                      check)

    # zarr-python's default zstd level, 0 (libzstd's default): continued,
    # and its zarr.json still says 0.
    path = os.path.join(work, "level0.zarr")
    by_zarr(path, a[:6], level=0)
    r = run([sp, "write", "--append", "--quiet", path],
            stdin=a[6:].tobytes())

    def level0():
        expect(r.returncode == 0, r.describe())
        both_read(path, a)
        with open(os.path.join(path, "zarr.json")) as fh:
            meta = json.load(fh)
        inner = meta["codecs"][0]["configuration"]["codecs"]
        levels = [c["configuration"]["level"] for c in inner
                  if c["name"] == "zstd"]
        expect(levels == [0], "zarr.json's zstd levels: %r" % (levels,))
    tap.check("zstd level 0 (zarr-python's default): continued, read "
              "whole by both, zarr.json still level 0", level0)

    # Unsharded: chunks shardpipe cannot rewrite as its shards.
    path = os.path.join(work, "unsharded.zarr")
    z = zarr.create_array(path, shape=(6,) + INNER, chunks=CHUNKS,
                          dtype="uint16", fill_value=0, zarr_format=3)
    z[...] = a[:6]
    before = tree_digest(path)
    r = run([sp, "write", "--append", path], stdin=a[6:].tobytes())
    err = r.stderr.decode("utf-8", "replace")
    tap.ok(r.returncode == 4 and "not sharded" in err and
           tree_digest(path) == before,
           "an unsharded array: refused with exit 4, named, the store as "
           "it was", r.describe())

    # A mismatch given on the command line names both values.
    path = os.path.join(work, "zarr-python-6.zarr")
    r = run([sp, "write", "--append", "--dtype", "int16", path],
            stdin=a[:1].astype("<i2").tobytes())
    err = r.stderr.decode("utf-8", "replace")
    tap.ok(r.returncode == 2 and "uint16" in err and "int16" in err,
           "--dtype int16 over a uint16 store: exit 2, both named",
           r.describe())
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
