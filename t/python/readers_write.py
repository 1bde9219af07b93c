"""readers_write - every store `shardpipe write` makes opens in zarr-python 3
and in TensorStore's zarr3 driver, with the input's values.

For every backend usable here (`shardpipe backends`; cpu first) and each
configuration of matrix.py (run with SHARDPIPE_PYTHON; see
t/readers-write.sh):
  1    shardpipe write exits 0 and leaves a zarr.json
  2-4  zarr-python: shape, dtype, fill value, dimension names, chunk and
       shard shapes; the whole array equals the input bitwise; one inner
       chunk read alone equals the input's cells
  5-7  the same through TensorStore
then one line per reader and backend with the count of configurations it
read right.  The kernel backends write blosc with zstd inside only: their
configurations with another blosc compressor are not in the plan, and one
line per backend checks that it refuses exactly those (the cpu backend must
take every codec).

SHARDPIPE_TEST_SEED fixes the inputs; SHARDPIPE_READERS_BACKENDS="cpu .."
picks the backends; SHARDPIPE_READERS_ONLY=N[,M..] runs
only those configuration numbers; SHARDPIPE_KEEP_TMP keeps the stores.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, import_readers, only_configs,  # noqa: E402
                   require_shardpipe, run, scratch_dir, test_seed,
                   usable_backends, versions)
import matrix  # noqa: E402

np, ts, zarr = import_readers()
from spdata import compare, le_dtype, make_input, raw_bytes  # noqa: E402

CHECKS_PER_CONFIG = 7


def inner_chunk_slices(cfg, rng):
    """The cells of one inner chunk: the last one along every dim for odd
    configurations (cut by the array's edge when the shape does not
    divide), a random one for even ones."""
    sl = []
    for d in range(cfg.rank):
        n = -(-cfg.shape[d] // cfg.chunk[d])
        c = n - 1 if cfg.number % 2 else int(rng.integers(0, n))
        sl.append(slice(c * cfg.chunk[d],
                        min((c + 1) * cfg.chunk[d], cfg.shape[d])))
    return tuple(sl)


def fill_is_zero(value, dtype):
    """The fill value equals 0 of dtype bitwise (0.0, not -0.0)."""
    v = np.asarray(value)
    if v.shape != ():
        return "fill value %r is not a scalar" % (value,)
    if v.dtype != dtype:
        return "fill value %r has dtype %s, wanted %s" % (value, v.dtype,
                                                           dtype)
    if v.astype(dtype).tobytes() != bytes(dtype.itemsize):
        return "fill value %r is not zero bitwise" % (value,)
    return None


class ZarrPython:
    name = "zarr-python"

    def open(self, path, cfg):
        a = zarr.open_array(path, mode="r")
        want = le_dtype(cfg.dtype).newbyteorder("=")
        problems = []
        if a.shape != cfg.shape:
            problems.append("shape %s, wanted %s" % (a.shape, cfg.shape))
        if a.dtype != want:
            problems.append("dtype %s, wanted %s" % (a.dtype, want))
        else:
            why = fill_is_zero(a.fill_value, want)
            if why:
                problems.append(why)
        names = a.metadata.dimension_names
        want_names = cfg.names or (None,) * cfg.rank
        if names != want_names and not (names is None and
                                        cfg.names is None):
            problems.append("dimension names %r, wanted %r" % (names,
                                                              want_names))
        if a.chunks != cfg.chunk:
            problems.append("inner chunk %s, wanted %s" % (a.chunks,
                                                           cfg.chunk))
        if a.shards != cfg.shard_shape:
            problems.append("shard %s, wanted %s" % (a.shards,
                                                     cfg.shard_shape))
        return a, problems

    def read(self, a, sl=()):
        return a[sl] if sl else a[...]


class TensorStore:
    name = "tensorstore"

    def __init__(self):
        self.context = ts.Context()

    def open(self, path, cfg):
        t = ts.open({"driver": "zarr3",
                     "kvstore": {"driver": "file", "path": path}},
                    read=True, context=self.context).result()
        want = le_dtype(cfg.dtype).newbyteorder("=")
        problems = []
        if t.domain.inclusive_min != (0,) * cfg.rank or t.shape != cfg.shape:
            problems.append("domain %s, wanted shape %s" % (t.domain,
                                                            cfg.shape))
        if t.dtype.numpy_dtype != want:
            problems.append("dtype %s, wanted %s" % (t.dtype, want))
        elif t.fill_value is None:
            problems.append("no fill value")
        else:
            why = fill_is_zero(t.fill_value, want)
            if why:
                problems.append(why)
        labels = tuple(n or "" for n in cfg.names or ("",) * cfg.rank)
        if t.domain.labels != labels:
            problems.append("dimension labels %r, wanted %r" %
                            (t.domain.labels, labels))
        layout = t.chunk_layout
        if tuple(layout.read_chunk.shape) != cfg.chunk:
            problems.append("read chunk %s, wanted %s" %
                            (layout.read_chunk.shape, cfg.chunk))
        if tuple(layout.write_chunk.shape) != cfg.shard_shape:
            problems.append("write chunk %s, wanted %s" %
                            (layout.write_chunk.shape, cfg.shard_shape))
        return t, problems

    def read(self, t, sl=()):
        return (t[sl] if sl else t).read().result()


def write_store(sp, cfg, data, workdir, backend):
    store = os.path.join(workdir, "%s-%03d.zarr" % (backend, cfg.number))
    raw = raw_bytes(data)
    argv = [sp, "write"] + cfg.write_args()
    env = dict(os.environ, SHARDPIPE_BACKEND=backend)
    if cfg.stdin:
        r = run(argv + [store], stdin=raw, env=env)
    else:
        path = os.path.join(workdir, "s%03d.raw" % cfg.number)
        with open(path, "wb") as f:
            f.write(raw)
        r = run(argv + ["--input", path, store], env=env)
        os.unlink(path)
    expect(r.returncode == 0, r.describe())
    expect(os.path.isfile(os.path.join(store, "zarr.json")),
           "no zarr.json in %s" % store)
    return store


def by_design_absent(backend, codec):
    """Whether `backend` lacks `codec` by design: the kernel encoder writes
    blosc with zstd inside only (doc/design.md §13.3).  Such pairs are left
    out of the plan, not skipped: they can never run."""
    return (backend != "cpu" and codec.startswith("blosc:") and
            not codec.startswith("blosc:zstd"))


def codec_unavailable(sp, backend, codec, workdir):
    """Why `backend` refuses `codec` as unavailable, or None when it takes
    it.  The cpu backend must take every codec: it is never asked."""
    if backend == "cpu":
        return None
    store = os.path.join(workdir, "probe-%s-%s.zarr" % (backend,
                                                         codec.replace(":", "")))
    r = run([sp, "write", "--shape", "4", "--chunk", "2", "--codec", codec,
             store], stdin=bytes(4),
            env=dict(os.environ, SHARDPIPE_BACKEND=backend))
    if r.returncode == 2 and b"unavailable codec" in r.stderr:
        return r.stderr.decode("utf-8", "replace").strip().splitlines()[-1]
    return None


def backends_to_use(sp):
    """The backends to write with: SHARDPIPE_READERS_BACKENDS (names
    separated by spaces or commas) or every one usable here (sptap's
    usable_backends, which fails the test for a built backend that is
    unusable for any reason but a missing device)."""
    env = os.environ.get("SHARDPIPE_READERS_BACKENDS", "").replace(",", " ")
    if env.strip():
        return env.split()
    # cpu first: it has every codec, and its results read best first.
    return sorted(usable_backends(sp), key=lambda n: n != "cpu") or ["cpu"]


def check_config(tap, sp, cfg, data, rng, workdir, backend, readers):
    """The CHECKS_PER_CONFIG checks of one configuration on one backend.
    Returns {reader name: all its checks passed}."""
    tag = "[%s] " % backend
    try:
        store, why = write_store(sp, cfg, data, workdir, backend), None
    except Exception as e:  # noqa: BLE001 - reported as the write failing
        store, why = None, str(e)
    wrote = tap.ok(store is not None, "%swrite %s" % (tag, cfg.label()), why)
    sl = inner_chunk_slices(cfg, rng)
    sl_text = "[%s]" % ", ".join("%d:%d" % (s.start, s.stop) for s in sl)
    result = {}
    for reader in readers:
        handle = {}

        def do_open(reader=reader, handle=handle):
            expect(wrote, "the store was not written")
            h, problems = reader.open(store, cfg)
            handle["h"] = h
            expect(not problems, "; ".join(problems))

        def do_all(reader=reader, handle=handle):
            expect("h" in handle, "the store did not open")
            why = compare(reader.read(handle["h"]), data)
            expect(why is None, why)

        def do_chunk(reader=reader, handle=handle):
            expect("h" in handle, "the store did not open")
            why = compare(reader.read(handle["h"], sl), data[sl],
                          "inner chunk " + sl_text)
            expect(why is None, why)

        n = sum([
            tap.check("%s%s opens config %d: shape, dtype, fill value, names, "
                      "chunks" % (tag, reader.name, cfg.number), do_open),
            tap.check("%s%s reads config %d equal to the input" %
                      (tag, reader.name, cfg.number), do_all),
            tap.check("%s%s reads inner chunk %s of config %d" %
                      (tag, reader.name, sl_text, cfg.number), do_chunk),
        ])
        result[reader.name] = n == 3
    return result


def main():
    sp = require_shardpipe()
    tap = Tap()
    seed = test_seed()
    configs = only_configs(matrix.build())
    backends = backends_to_use(sp)
    Tap.diag("%s; %d configurations; backends %s" %
             (versions(), len(configs), ", ".join(backends)))
    workdir = scratch_dir("readers-write")
    readers = [ZarrPython(), TensorStore()]
    # What each backend refuses as unavailable must be exactly what it
    # lacks by design: one check per backend; those configurations are
    # not in the plan.
    unavailable = {(b, c): codec_unavailable(sp, b, c, workdir)
                   for b in backends for c in matrix.ALL_CODECS}
    runs = [(b, [c for c in configs if not by_design_absent(b, c.codec)])
            for b in backends]
    tap.plan(sum(len(cs) * CHECKS_PER_CONFIG + len(readers) + 1
                 for _, cs in runs))

    for backend, todo in runs:
        wrong = ["%s %s" % (c, "is refused: %s" % unavailable[backend, c]
                            if unavailable[backend, c] else "is taken")
                 for c in matrix.ALL_CODECS
                 if bool(unavailable[backend, c]) !=
                 by_design_absent(backend, c)]
        tap.ok(not wrong, "[%s] refuses as unavailable exactly the codecs "
               "it lacks by design (the kernels write blosc:zstd only)" %
               backend, "; ".join(wrong))
        good = {r.name: 0 for r in readers}
        for cfg in todo:
            rng = np.random.default_rng([seed, cfg.number])
            data = make_input(cfg.dtype, cfg.shape, cfg.kind, rng,
                              cfg.number)
            result = check_config(tap, sp, cfg, data, rng, workdir, backend,
                                  readers)
            for name, passed in result.items():
                good[name] += passed
        skipped = len(configs) - len(todo)
        for reader in readers:
            tap.ok(good[reader.name] == len(todo),
                   "%s read %d of %d configurations written by the %s "
                   "backend right%s" %
                   (reader.name, good[reader.name], len(todo), backend,
                    " (%d left out: blosc other than zstd)" % skipped
                    if skipped else ""))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
