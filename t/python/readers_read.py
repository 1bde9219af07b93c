"""readers_read - stores written by zarr-python 3 and by TensorStore pass
`shardpipe verify`, and `shardpipe cat` returns the values they were given.

Each writer makes sharded arrays (zstd, gzip, blosc and no compression,
the index at the start and at the end, crc32c on the chunks, the index
with and without its crc32c) and unsharded ones (big-endian bytes, "v2"
chunk keys, a nonzero or NaN fill value with chunks and shards never
written), over several dtypes.  blosc comes with each shuffle mode and
several compressors and block sizes (read through c-blosc; issue 11).
For each store:
  1  shardpipe verify STORE exits 0
  2  shardpipe cat STORE prints the array's little-endian bytes
  3  shardpipe verify STORE --against RAW exits 0
A store using a codec shardpipe lacks (transpose) must be refused by
verify and by cat, naming the codec, with an exit status of its own (4),
neither success nor "corrupt".  One line per writer counts the stores
shardpipe read right.

SHARDPIPE_TEST_SEED fixes the values; SHARDPIPE_KEEP_TMP keeps the stores.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, import_readers,  # noqa: E402
                   require_shardpipe, run, scratch_dir, test_seed, versions)

np, ts, zarr = import_readers()
from zarr import codecs as zc  # noqa: E402
from spdata import compare, le_dtype, make_input, raw_bytes  # noqa: E402

# verify's and cat's exit status for a corrupt or unreadable store; a store
# that needs a codec shardpipe does not have must say so differently.
EXIT_CORRUPT = 1


class Case:
    """One array a foreign writer makes.  region: the part written (None:
    all of it); the rest keeps the fill value.  refuse: the codec name
    shardpipe must refuse it with."""

    def __init__(self, label, dtype, shape, chunk, shard=None, codec="zstd",
                 level=1, index="end", fill=0, region=None, refuse=None,
                 **extra):
        self.label = label
        self.dtype = dtype
        self.shape = tuple(shape)
        self.chunk = tuple(chunk)
        self.shard = tuple(shard) if shard else None   # elements per shard
        self.codec = codec                              # none, zstd, gzip
        self.level = level
        self.index = index
        self.fill = fill
        self.region = region
        self.refuse = refuse
        self.extra = extra


def expected(case, data):
    """The array as stored: data inside the region, fill elsewhere."""
    if case.region is None:
        return data
    want = np.full(case.shape, case.fill, dtype=data.dtype)
    want[case.region] = data[case.region]
    return want


# -- zarr-python ---------------------------------------------------------

def zarr_compressors(case):
    out = []
    if case.codec == "zstd":
        out.append(zc.ZstdCodec(level=case.level,
                                checksum=case.extra.get("checksum", False)))
    elif case.codec == "gzip":
        out.append(zc.GzipCodec(level=case.level))
    elif case.codec == "blosc":
        # typesize comes from the dtype.
        out.append(zc.BloscCodec(cname=case.extra.get("cname", "zstd"),
                                 clevel=case.level,
                                 shuffle=case.extra.get("shuffle",
                                                        "shuffle"),
                                 blocksize=case.extra.get("blocksize", 0)))
    if case.extra.get("crc32c"):
        out.append(zc.Crc32cCodec())
    return out or None


def zarr_write(case, data, path):
    kw = {}
    if case.shard:
        kw["shards"] = {"shape": case.shard, "index_location": case.index}
    if "endian" in case.extra:
        kw["serializer"] = zc.BytesCodec(endian=case.extra["endian"])
    if "transpose" in case.extra:
        kw["filters"] = [zc.TransposeCodec(order=case.extra["transpose"])]
    else:
        kw["filters"] = None
    if "key_separator" in case.extra:
        kw["chunk_key_encoding"] = {"name": "v2",
                                    "separator": case.extra["key_separator"]}
    a = zarr.create_array(
        store=path, shape=case.shape, dtype=le_dtype(case.dtype),
        chunks=case.chunk, compressors=zarr_compressors(case),
        fill_value=case.fill, dimension_names=case.extra.get("names"),
        zarr_format=3, **kw)
    if case.region is None:
        a[...] = data
    else:
        a[case.region] = data[case.region]


ZARR_CASES = [
    Case("sharded uint16 zstd:1 index end", "uint16", (37, 53), (8, 16),
         (16, 48), names=("y", "x")),
    Case("sharded float32 zstd:3 with checksum, index start", "float32",
         (20, 30, 17), (4, 8, 8), (8, 16, 16), level=3, index="start",
         checksum=True),
    Case("sharded int8 gzip:1 index end", "int8", (100,), (7,), (21,),
         codec="gzip"),
    Case("sharded float64 gzip:6 index start", "float64", (13, 11), (4, 4),
         (8, 8), codec="gzip", level=6, index="start"),
    Case("sharded bool uncompressed", "bool", (50, 40), (8, 8), (16, 40),
         codec="none"),
    Case("sharded int64 rank 4 uncompressed, index start", "int64",
         (9, 8, 7, 6), (2, 3, 4, 5), (4, 3, 8, 5), codec="none",
         index="start"),
    Case("sharded uint8 zstd with crc32c per chunk", "uint8", (64, 64),
         (16, 16), (32, 64), crc32c=True),
    Case("sharded int16 fill -7, shards and chunks left unwritten", "int16",
         (40, 50), (5, 5), (20, 25), fill=-7,
         region=(slice(3, 17), slice(0, 22))),
    Case("sharded uint32 big-endian", "uint32", (30, 20), (4, 8), (8, 16),
         endian="big"),
    Case("unsharded uint32 zstd", "uint32", (45, 30), (8, 16)),
    Case("unsharded float16 gzip:6", "float16", (33,), (10,), codec="gzip",
         level=6),
    Case("unsharded int32 uncompressed", "int32", (6, 7, 8), (4, 4, 4),
         codec="none"),
    Case("unsharded uint64 big-endian zstd", "uint64", (21, 5), (4, 5),
         endian="big"),
    Case("unsharded float32 fill NaN, chunks left unwritten", "float32",
         (30, 30), (7, 7), fill=float("nan"),
         region=(slice(0, 10), slice(5, 25))),
    Case("unsharded uint8 v2 chunk keys", "uint8", (20, 20), (6, 6),
         key_separator="."),
    Case("sharded uint16 blosc zstd:5 shuffle", "uint16", (16, 16), (4, 4),
         (8, 8), codec="blosc", level=5),
    Case("sharded float32 blosc lz4:1 bitshuffle, 1 KiB blocks, crc32c per "
         "chunk, index start", "float32", (40, 50), (16, 32), (32, 64),
         codec="blosc", cname="lz4", shuffle="bitshuffle", blocksize=1024,
         crc32c=True, index="start"),
    Case("sharded uint8 blosc zlib:9 noshuffle, fill 3, chunks unwritten",
         "uint8", (64, 48), (16, 16), (32, 48), codec="blosc", cname="zlib",
         level=9, shuffle="noshuffle", fill=3,
         region=(slice(0, 20), slice(5, 40))),
    Case("unsharded int64 blosc blosclz:3 shuffle", "int64", (30, 20),
         (8, 8), codec="blosc", cname="blosclz", level=3),
    Case("unsharded int32 transpose", "int32", (8, 6), (4, 3),
         transpose=(1, 0), refuse="transpose"),
]


# -- TensorStore ----------------------------------------------------------

def ts_chain(case):
    bytes_codec = {"name": "bytes",
                   "configuration": {"endian": case.extra.get("endian",
                                                              "little")}}
    if le_dtype(case.dtype).itemsize == 1:
        bytes_codec = {"name": "bytes"}
    chain = [bytes_codec]
    if case.codec == "zstd":
        chain.append({"name": "zstd", "configuration": {"level": case.level}})
    elif case.codec == "gzip":
        chain.append({"name": "gzip", "configuration": {"level": case.level}})
    elif case.codec == "blosc":
        chain.append({"name": "blosc",
                      "configuration": {
                          "cname": case.extra.get("cname", "lz4"),
                          "clevel": case.level,
                          "shuffle": case.extra.get("shuffle", "shuffle"),
                          "typesize": le_dtype(case.dtype).itemsize,
                          "blocksize": case.extra.get("blocksize", 0)}})
    if case.extra.get("crc32c"):
        chain.append({"name": "crc32c"})
    if "transpose" in case.extra:
        chain.insert(0, {"name": "transpose", "configuration": {
            "order": list(case.extra["transpose"])}})
    return chain


def ts_write(case, data, path):
    if case.shard:
        index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
        if case.extra.get("index_crc32c", True):
            index_codecs.append({"name": "crc32c"})
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(case.chunk), "codecs": ts_chain(case),
            "index_codecs": index_codecs, "index_location": case.index}}]
        grid = case.shard
    else:
        codecs = ts_chain(case)
        grid = case.chunk
    fill = case.fill
    if isinstance(fill, float) and fill != fill:
        fill = "NaN"
    elif case.dtype == "bool":
        fill = bool(fill)
    meta = {"shape": list(case.shape), "data_type": case.dtype,
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": list(grid)}},
            "codecs": codecs, "fill_value": fill}
    if "names" in case.extra:
        meta["dimension_names"] = list(case.extra["names"])
    t = ts.open({"driver": "zarr3",
                 "kvstore": {"driver": "file", "path": path},
                 "metadata": meta}, create=True).result()
    if case.region is None:
        t.write(data).result()
    else:
        t[case.region].write(data[case.region]).result()


TS_CASES = [
    Case("sharded uint16 zstd:1 index end", "uint16", (37, 53), (8, 16),
         (16, 48), names=("y", "x")),
    Case("sharded float32 gzip:6 index start", "float32", (20, 30, 17),
         (4, 8, 8), (8, 16, 16), codec="gzip", level=6, index="start"),
    Case("sharded int64 rank 4 uncompressed", "int64", (9, 8, 7, 6),
         (2, 3, 4, 5), (4, 3, 8, 5), codec="none"),
    Case("sharded uint8 zstd:3 crc32c per chunk, index start", "uint8",
         (64, 64), (16, 16), (32, 64), level=3, index="start", crc32c=True),
    Case("sharded float16 uncompressed, index start", "float16", (50,),
         (4,), (20,), codec="none", index="start"),
    Case("sharded int32 fill 5, shards and chunks left unwritten", "int32",
         (40, 50), (5, 5), (20, 25), fill=5,
         region=(slice(22, 31), slice(10, 50))),
    Case("sharded uint16 index without crc32c", "uint16", (24, 24), (4, 4),
         (12, 12), codec="gzip", index_crc32c=False),
    Case("sharded float64 big-endian gzip:1", "float64", (17, 9), (4, 3),
         (8, 9), codec="gzip", endian="big"),
    Case("unsharded float64 zstd", "float64", (25, 26), (8, 8)),
    Case("unsharded int16 gzip:1", "int16", (1000,), (128,), codec="gzip"),
    Case("unsharded bool uncompressed", "bool", (11, 12, 13), (4, 5, 6),
         codec="none"),
    Case("unsharded uint32 big-endian", "uint32", (30, 20), (7, 8),
         endian="big"),
    Case("sharded uint16 blosc lz4:5 shuffle", "uint16", (16, 16), (4, 4),
         (8, 8), codec="blosc", level=5),
    Case("sharded float64 blosc zstd:1 bitshuffle, index start", "float64",
         (33, 40), (8, 16), (16, 32), codec="blosc", cname="zstd",
         shuffle="bitshuffle", index="start"),
    Case("sharded int16 blosc zstd:1 shuffle, 4 KiB blocks, big chunks",
         "int16", (100, 300), (64, 256), (64, 512), codec="blosc",
         cname="zstd", blocksize=4096),
    Case("unsharded uint32 blosc lz4hc:9 noshuffle with crc32c", "uint32",
         (25, 26), (8, 8), codec="blosc", cname="lz4hc", level=9,
         shuffle="noshuffle", crc32c=True),
    Case("unsharded uint16 transpose", "uint16", (6, 8), (3, 4),
         transpose=(1, 0), refuse="transpose"),
]


def main():
    sp = require_shardpipe()
    tap = Tap()
    seed = test_seed()
    Tap.diag(versions())
    workdir = scratch_dir("readers-read")
    writers = [("zarr-python", zarr_write, ZARR_CASES),
               ("tensorstore", ts_write, TS_CASES)]
    tap.plan(sum(3 * len(cases) + 1 for _, _, cases in writers))

    number = 0
    for writer, write, cases in writers:
        good = 0
        for case in cases:
            number += 1
            rng = np.random.default_rng([seed, number])
            data = make_input(case.dtype, case.shape, "random", rng)
            want = expected(case, data)
            store = os.path.join(workdir, "r%02d.zarr" % number)
            raw = os.path.join(workdir, "r%02d.raw" % number)
            what = "%s store %d: %s" % (writer, number, case.label)
            state = {}

            def do_write(case=case, data=data, store=store, raw=raw,
                         write=write):
                write(case, data, store)
                with open(raw, "wb") as f:
                    f.write(raw_bytes(want))
                state["ok"] = True

            if case.refuse:
                good += run_refused(tap, sp, what, case, do_write, store)
                continue

            def do_verify(store=store):
                do_write()
                r = run([sp, "verify", store])
                expect(r.returncode == 0, r.describe())

            def do_cat(store=store, want=want):
                expect(state.get("ok"), "the store was not written")
                r = run([sp, "cat", store])
                expect(r.returncode == 0, r.describe())
                got = np.frombuffer(r.stdout, dtype=le_dtype(case.dtype))
                if got.size == want.size:
                    got = got.reshape(want.shape)
                why = compare(got, want, "cat")
                expect(why is None, why)

            def do_against(store=store, raw=raw):
                expect(state.get("ok"), "the store was not written")
                r = run([sp, "verify", store, "--against", raw])
                expect(r.returncode == 0, r.describe())

            n = sum([tap.check("verify accepts " + what, do_verify),
                     tap.check("cat returns the values of " + what, do_cat),
                     tap.check("verify --against the values of " + what,
                               do_against)])
            good += n == 3
        tap.ok(good == len(cases), "shardpipe read %d of %d stores written "
               "by %s right" % (good, len(cases), writer))
    return tap.finish()


def run_refused(tap, sp, what, case, do_write, store):
    """A codec shardpipe lacks: verify and cat fail, naming it, with a
    status other than "corrupt".  Returns whether the first two hold."""
    codes = {}

    def refused(cmd):
        def check():
            if cmd == "verify":
                do_write()
            r = run([sp, cmd, store])
            codes[cmd] = r.returncode
            expect(r.returncode not in (0, 3), r.describe())
            expect(('"%s"' % case.refuse).encode() in r.stderr or
                   case.refuse.encode() in r.stderr,
                   "the message does not name %s: %s" % (case.refuse,
                                                         r.describe()))
        return check

    n = tap.check("verify refuses %s, naming %s" % (what, case.refuse),
                  refused("verify"))
    n += tap.check("cat refuses %s, naming %s" % (what, case.refuse),
                   refused("cat"))

    def distinct():
        expect(codes and all(c == 4 for c in codes.values()),
               "exit statuses %s: an unsupported codec must not read as a "
               "corrupt store (1), a usage error (2) or a mismatch (3)" %
               codes)

    tap.check("verify and cat exit with a status of their own (4) for "
              "an unsupported codec (%s)" % what, distinct)
    return n == 2


if __name__ == "__main__":
    sys.exit(main())
