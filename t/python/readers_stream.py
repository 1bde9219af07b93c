"""readers_stream - what the command line cannot do, through the C API
(libshardpipe loaded with ctypes): the store seen by zarr-python 3 and
TensorStore while a stream is still open, after shardpipe_stream_flush(),
and after appending past a bounded dim 0.

  flush   an unbounded stream is fed in odd-sized spans and flushed half
          way: both readers open the store at once and read every row
          zarr.json advertises equal to the input, and the store holds
          only final names (zarr.json and c/... keys); after close, the
          whole input.
  bounded a bounded stream is given more rows than it holds: the append
          says SHARDPIPE_ERR_BEYOND_END and both readers see exactly the
          rows that fit.

The library is $top_builddir/.libs/libshardpipe.so (SHARDPIPE_LIBRARY
overrides); without it the test is skipped.
"""

import ctypes
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, import_readers, scratch_dir,  # noqa: E402
                   test_seed, versions)

np, ts, zarr = import_readers()
from spdata import compare, make_input, raw_bytes  # noqa: E402

MAX_RANK = 16
ERR_BEYOND_END = 17
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "float16", "float32", "float64"]
CODECS = {"none": 0, "zstd": 1, "gzip": 2, "blosc": 3}


class Dim(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("size", ctypes.c_uint64),
                ("chunk", ctypes.c_uint64),
                ("chunks_per_shard", ctypes.c_uint64)]


class Desc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("rank", ctypes.c_int),
                ("dims", Dim * MAX_RANK), ("dtype", ctypes.c_int),
                ("codec", ctypes.c_int), ("level", ctypes.c_int),
                ("index_location", ctypes.c_int),
                ("backend", ctypes.c_char_p), ("threads", ctypes.c_int),
                ("overwrite", ctypes.c_int),
                # The fields this test sets or reads, in the header's
                # order; the library may have more after them.  The
                # mirror is initialised by shardpipe_desc_init_sized()
                # with its own size, as a binding built before those
                # fields would be (doc/design.md §16.3), so it never has
                # to keep up with the header.
                ("blosc_cname", ctypes.c_int), ("blosc_shuffle", ctypes.c_int),
                ("blosc_blocksize", ctypes.c_uint32),
                ("zstd_checksum", ctypes.c_int),
                ("fill_value", ctypes.c_ubyte * 8),
                ("write_empty_chunks", ctypes.c_int),
                ("durable", ctypes.c_int), ("max_memory", ctypes.c_uint64),
                ("attributes", ctypes.c_void_p),
                ("nattributes", ctypes.c_size_t)]


class Stats(ctypes.Structure):
    # A binding laying the struct out itself: it passes its own size to
    # shardpipe_stream_stats_sized(), which fills no more than that.
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (n, ctypes.c_uint64) for n in (
        "bytes_in", "bytes_out", "shards_written", "chunks_written",
        "rows_written")] + [(n, ctypes.c_double) for n in (
            "seconds_stage", "seconds_scatter", "seconds_compress",
            "seconds_aggregate", "seconds_write")] + [
        ("pool_bytes", ctypes.c_uint64),
        ("appends_blocked", ctypes.c_uint64),
        ("seconds_blocked", ctypes.c_double)]


def find_library():
    path = os.environ.get("SHARDPIPE_LIBRARY")
    if not path:
        path = os.path.join(os.environ.get("top_builddir", "."), ".libs",
                            "libshardpipe.so")
    return path if os.path.exists(path) else None


class Lib:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp = ctypes.c_void_p
        lib.shardpipe_desc_init_sized.argtypes = [ctypes.c_void_p,
                                                  ctypes.c_size_t]
        lib.shardpipe_stream_open.argtypes = [ctypes.POINTER(vp),
                                              ctypes.c_char_p,
                                              ctypes.POINTER(Desc)]
        lib.shardpipe_stream_append.argtypes = [vp, ctypes.c_char_p,
                                                ctypes.c_size_t]
        lib.shardpipe_stream_flush.argtypes = [vp]
        lib.shardpipe_stream_close.argtypes = [vp]
        lib.shardpipe_stream_stats_sized.argtypes = [
            vp, ctypes.POINTER(Stats), ctypes.c_size_t]
        lib.shardpipe_stream_message.argtypes = [vp]
        lib.shardpipe_stream_message.restype = ctypes.c_char_p
        lib.shardpipe_last_error_message.restype = ctypes.c_char_p
        lib.shardpipe_strerror.restype = ctypes.c_char_p
        self.lib = lib

    def desc(self, dtype, dims, codec="zstd", level=1, index="end"):
        """A description; dims: (name or None, size, chunk, per shard)."""
        d = Desc()
        self.lib.shardpipe_desc_init_sized(ctypes.byref(d),
                                           ctypes.sizeof(d))
        d.rank = len(dims)
        for i, (name, size, chunk, per) in enumerate(dims):
            d.dims[i].name = name.encode() if name else None
            d.dims[i].size = size
            d.dims[i].chunk = chunk
            d.dims[i].chunks_per_shard = per
        d.dtype = DTYPES.index(dtype)
        d.codec = CODECS[codec]
        d.level = level
        d.index_location = 1 if index == "start" else 0
        d.backend = b"cpu"
        return d

    def error(self, rc, stream=None):
        msg = (self.lib.shardpipe_stream_message(stream) if stream
               else self.lib.shardpipe_last_error_message())
        return "%s (%d): %s" % (self.lib.shardpipe_strerror(rc).decode(), rc,
                                (msg or b"").decode("utf-8", "replace"))


def read_all(path):
    """The array as zarr-python and TensorStore see it."""
    a = zarr.open_array(path, mode="r")
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file",
                                                 "path": path}},
                read=True, context=ts.Context()).result()
    return {"zarr-python": a[...], "tensorstore": t.read().result()}


KEY = re.compile(r"^c(/[0-9]+)+$")


def stray_files(store):
    """Files that are neither zarr.json nor a default chunk key."""
    out = []
    for root, _, files in os.walk(store):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), store)
            if rel != "zarr.json" and not KEY.match(rel.replace(os.sep, "/")):
                out.append(rel)
    return out


def main():
    path = find_library()
    if path is None:
        Tap.skip_all("libshardpipe.so not built (static-only build?)")
    tap = Tap()
    seed = test_seed()
    Tap.diag(versions())
    lib = Lib(path)
    workdir = scratch_dir("readers-stream")
    tap.plan(14)
    rng = np.random.default_rng([seed, 1])

    # The mirror is a binding's own, maybe older, layout: initialised with
    # its size, it gets the defaults in its fields, its struct_size, and
    # nothing written past it (canary bytes after it).
    class Probe(ctypes.Structure):
        _fields_ = [("d", Desc), ("canary", ctypes.c_ubyte * 64)]

    probe = Probe()
    ctypes.memset(ctypes.byref(probe), 0xA5, ctypes.sizeof(probe))
    lib.lib.shardpipe_desc_init_sized(ctypes.byref(probe.d),
                                      ctypes.sizeof(Desc))
    layout_ok = tap.ok(
        probe.d.struct_size == ctypes.sizeof(Desc) and
        probe.d.codec == CODECS["zstd"] and probe.d.level == 1 and
        probe.d.threads == 0 and probe.d.max_memory == 0 and
        all(b == 0xA5 for b in probe.canary),
        "shardpipe_desc_init_sized fills this binding's %d-byte mirror "
        "with the defaults and nothing past it" % ctypes.sizeof(Desc),
        "struct_size %d, codec %d, level %d, canary %s" % (
            probe.d.struct_size, probe.d.codec, probe.d.level,
            bytes(probe.canary[:8]).hex()))
    if not layout_ok:
        Tap.diag("the remaining checks would misuse the API: stopping")
        return 1

    # -- flush: 23 rows of 37 x 29 uint16, shard epoch of 6 rows ---------
    rows, half = 23, 14
    data = make_input("uint16", (rows, 37, 29), "random", rng)
    raw = raw_bytes(data)
    row_bytes = len(raw) // rows
    store = os.path.join(workdir, "flush.zarr")
    d = lib.desc("uint16", [("t", 0, 3, 2), ("y", 37, 8, 2), ("x", 29, 8, 2)],
                 codec="zstd", level=1)
    stream = ctypes.c_void_p()
    rc = lib.lib.shardpipe_stream_open(ctypes.byref(stream), store.encode(),
                                       ctypes.byref(d))
    opened = tap.ok(rc == 0, "open an unbounded stream", lib.error(rc))
    state = {}

    def append(start, stop, span=1001):
        for at in range(start, stop, span):
            piece = raw[at:min(at + span, stop)]
            rc = lib.lib.shardpipe_stream_append(stream, piece, len(piece))
            expect(rc == 0, "append at byte %d: %s" %
                   (at, lib.error(rc, stream)))

    def do_flush():
        expect(opened, "not opened")
        append(0, half * row_bytes)
        rc = lib.lib.shardpipe_stream_flush(stream)
        expect(rc == 0, lib.error(rc, stream))
        st = Stats()
        lib.lib.shardpipe_stream_stats_sized(stream, ctypes.byref(st),
                                             ctypes.sizeof(st))
        with open(os.path.join(store, "zarr.json")) as f:
            shown = json.load(f)["shape"][0]
        state["shown"] = shown
        expect(0 < shown <= half and shown == st.rows_written,
               "zarr.json shows %d rows; %d appended, rows_written %d" %
               (shown, half, st.rows_written))

    tap.check("%d rows in 1001-byte spans, flush: zarr.json shows the rows "
              "written" % half, do_flush)
    Tap.diag("after flush zarr.json shows %s of %d rows" %
             (state.get("shown"), half))

    def mid_read(name):
        def check():
            expect("shown" in state, "no flushed store")
            got = read_all(store)[name]
            why = compare(got, data[:state["shown"]], "flushed rows")
            expect(why is None, why)
        return check

    tap.check("zarr-python reads the flushed rows while the stream is open",
              mid_read("zarr-python"))
    tap.check("tensorstore reads the flushed rows while the stream is open",
              mid_read("tensorstore"))
    tap.check("the open stream's store holds only zarr.json and chunk keys",
              lambda: expect(not stray_files(store),
                             "stray files %s" % stray_files(store)))

    def do_close():
        expect(opened, "not opened")
        append(half * row_bytes, len(raw), 4093)
        rc = lib.lib.shardpipe_stream_close(stream)
        expect(rc == 0, lib.error(rc))

    tap.check("append the other %d rows and close" % (rows - half), do_close)
    final = {}

    def end_read(name):
        def check():
            if not final:
                final.update(read_all(store))
            why = compare(final[name], data, "closed store")
            expect(why is None, why)
        return check

    tap.check("zarr-python reads all %d rows after close" % rows,
              end_read("zarr-python"))
    tap.check("tensorstore reads all %d rows after close" % rows,
              end_read("tensorstore"))
    tap.check("the closed store holds only zarr.json and chunk keys",
              lambda: expect(not stray_files(store),
                             "stray files %s" % stray_files(store)))

    # -- bounded: 10 rows of 50 float32 given 13, index at the start -----
    data = make_input("float32", (13, 50), "incompressible", rng)
    raw = raw_bytes(data)
    store = os.path.join(workdir, "bounded.zarr")
    d = lib.desc("float32", [(None, 10, 4, 2), ("x", 50, 16, 2)],
                 codec="gzip", level=6, index="start")
    stream = ctypes.c_void_p()
    rc = lib.lib.shardpipe_stream_open(ctypes.byref(stream), store.encode(),
                                       ctypes.byref(d))
    opened = tap.ok(rc == 0, "open a stream bounded at 10 rows",
                    lib.error(rc))

    def do_beyond():
        expect(opened, "not opened")
        rc = lib.lib.shardpipe_stream_append(stream, raw, len(raw))
        expect(rc == ERR_BEYOND_END, "append of 13 rows returned %s" %
               lib.error(rc, stream))
        lib.lib.shardpipe_stream_close(stream)

    tap.check("appending 13 rows says beyond the end", do_beyond)
    bounded = {}

    def bounded_read(name):
        def check():
            if not bounded:
                bounded.update(read_all(store))
            why = compare(bounded[name], data[:10], "bounded store")
            expect(why is None, why)
        return check

    tap.check("zarr-python reads the 10 rows that fit",
              bounded_read("zarr-python"))
    tap.check("tensorstore reads the 10 rows that fit",
              bounded_read("tensorstore"))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
