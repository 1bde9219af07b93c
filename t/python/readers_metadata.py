"""readers_metadata - the zarr.json of every store `shardpipe write` makes,
field by field, against the Zarr v3 core spec and the sharding_indexed
codec spec (v1.0).  Standard library only.

First the checker is shown to reject broken documents (one check each),
then every configuration of matrix.py is written (its values do not matter
here: zeros) and its zarr.json must pass and describe that configuration.
"""

import copy
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, expect, only_configs, require_shardpipe,  # noqa: E402
                   run, scratch_dir)
import matrix  # noqa: E402

TOP_KEYS = {"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
            "chunk_key_encoding", "fill_value", "codecs"}
OPTIONAL_KEYS = {"attributes", "dimension_names", "storage_transformers"}
INT_RANGE = {
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1),
    "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
    "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
}
FLOAT_HEX_DIGITS = {"float16": 4, "float32": 8, "float64": 16}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def int_list(v, n=None, least=0):
    return (isinstance(v, list) and all(is_int(x) and x >= least for x in v)
            and (n is None or len(v) == n))


def fill_problem(dtype, v):
    """Why v is not a valid fill_value of dtype (core spec, "fill_value"),
    or None."""
    if dtype == "bool":
        return None if isinstance(v, bool) else "bool needs true or false"
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        if not is_int(v):
            return "%s needs a JSON integer" % dtype
        return None if lo <= v <= hi else "beyond %s's range" % dtype
    if isinstance(v, str):
        if v in ("NaN", "Infinity", "-Infinity"):
            return None
        digits = FLOAT_HEX_DIGITS[dtype]
        if (v.startswith("0x") and len(v) == 2 + digits and
                all(c in "0123456789abcdefABCDEF" for c in v[2:])):
            return None
        return "%r is not NaN, Infinity, -Infinity or 0x + %d hex digits" % (
            v, digits)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "%s needs a number or a special string" % dtype
    return None


def codec_problems(c, where):
    """The common form of a codec entry: name, optional configuration."""
    if not isinstance(c, dict) or not isinstance(c.get("name"), str):
        return ["%s: %r is not an object with a name" % (where, c)]
    extra = set(c) - {"name", "configuration"}
    out = []
    if extra:
        out.append("%s: unknown keys %s" % (where, sorted(extra)))
    if "configuration" in c and not isinstance(c["configuration"], dict):
        out.append("%s: configuration is not an object" % where)
    return out


def bytes_problems(c, dtype, where):
    conf = c.get("configuration", {})
    endian = conf.get("endian")
    out = []
    if set(conf) - {"endian"}:
        out.append("%s: unknown keys %s" % (where, sorted(set(conf) -
                                                          {"endian"})))
    if endian is None:
        if dtype is not None and matrix.DTYPE_SIZE[dtype] > 1:
            out.append("%s: no endian for a %d-byte type" %
                       (where, matrix.DTYPE_SIZE[dtype]))
    elif endian not in ("little", "big"):
        out.append("%s: endian %r" % (where, endian))
    return out


def blosc_problems(conf, dtype, w):
    """The blosc codec spec (v1.0): cname, clevel 0..9, shuffle as a
    string; typesize (required unless noshuffle) and blocksize integers.
    shardpipe writes all five, typesize the dtype's size."""
    out = []
    keys = {"cname", "clevel", "shuffle", "typesize", "blocksize"}
    if set(conf) != keys:
        return ["%s: configuration keys %s, wanted %s" %
                (w, sorted(conf), sorted(keys))]
    if conf["cname"] not in ("lz4", "lz4hc", "blosclz", "zstd", "snappy",
                             "zlib"):
        out.append("%s: cname %r" % (w, conf["cname"]))
    if not is_int(conf["clevel"]) or not 0 <= conf["clevel"] <= 9:
        out.append("%s: clevel %r, wanted 0..9" % (w, conf["clevel"]))
    if conf["shuffle"] not in ("noshuffle", "shuffle", "bitshuffle"):
        out.append("%s: shuffle %r, wanted noshuffle, shuffle or "
                   "bitshuffle" % (w, conf["shuffle"]))
    if not is_int(conf["typesize"]) or conf["typesize"] < 1:
        out.append("%s: typesize %r" % (w, conf["typesize"]))
    elif dtype in matrix.DTYPE_SIZE and \
            conf["typesize"] != matrix.DTYPE_SIZE[dtype]:
        out.append("%s: typesize %r for %s" % (w, conf["typesize"], dtype))
    if not is_int(conf["blocksize"]) or conf["blocksize"] < 0:
        out.append("%s: blocksize %r" % (w, conf["blocksize"]))
    return out


def inner_chain_problems(chain, dtype, where):
    out = []
    if not isinstance(chain, list) or not chain:
        return ["%s: not a non-empty list" % where]
    for i, c in enumerate(chain):
        out += codec_problems(c, "%s[%d]" % (where, i))
    if out:
        return out
    if chain[0]["name"] != "bytes":
        out.append("%s: starts with %r, not bytes" % (where, chain[0]["name"]))
    else:
        out += bytes_problems(chain[0], dtype, where + "[0]")
    for i, c in enumerate(chain[1:], 1):
        w = "%s[%d] %s" % (where, i, c["name"])
        conf = c.get("configuration", {})
        if c["name"] == "zstd":
            if set(conf) != {"level", "checksum"}:
                out.append("%s: configuration keys %s, wanted level and "
                           "checksum" % (w, sorted(conf)))
            elif not is_int(conf["level"]) or not isinstance(
                    conf["checksum"], bool):
                out.append("%s: level %r, checksum %r" %
                           (w, conf["level"], conf["checksum"]))
        elif c["name"] == "gzip":
            if set(conf) != {"level"} or not is_int(conf["level"]) or \
                    not 0 <= conf["level"] <= 9:
                out.append("%s: configuration %r, wanted a level 0..9" %
                           (w, conf))
        elif c["name"] == "blosc":
            out += blosc_problems(conf, dtype, w)
        elif c["name"] == "crc32c":
            if conf:
                out.append("%s: configuration %r" % (w, conf))
        else:
            out.append("%s: not a bytes-to-bytes codec shardpipe writes" % w)
    return out


def metadata_problems(m):
    """Every way document m breaks the v3 core spec or the sharding_indexed
    spec, as a list of sentences (empty: valid)."""
    if not isinstance(m, dict):
        return ["not a JSON object"]
    out = []
    missing = TOP_KEYS - set(m)
    if missing:
        return ["missing keys %s" % sorted(missing)]
    for k in set(m) - TOP_KEYS - OPTIONAL_KEYS:
        # Extensions must be objects that say whether they must be
        # understood; shardpipe writes none.
        out.append("unknown key %r" % k)
    if not is_int(m["zarr_format"]) or m["zarr_format"] != 3:
        out.append("zarr_format %r" % m["zarr_format"])
    if m["node_type"] != "array":
        out.append("node_type %r" % m["node_type"])
    shape = m["shape"]
    if not int_list(shape) or not shape:
        return out + ["shape %r" % (shape,)]
    rank = len(shape)
    dtype = m["data_type"]
    if dtype not in matrix.DTYPE_SIZE:
        return out + ["data_type %r" % (dtype,)]

    grid = m["chunk_grid"]
    if not isinstance(grid, dict) or grid.get("name") != "regular" or \
            set(grid) != {"name", "configuration"} or \
            not isinstance(grid["configuration"], dict) or \
            set(grid["configuration"]) != {"chunk_shape"} or \
            not int_list(grid["configuration"]["chunk_shape"], rank, 1):
        return out + ["chunk_grid %r" % (grid,)]
    shard_shape = grid["configuration"]["chunk_shape"]

    cke = m["chunk_key_encoding"]
    if not isinstance(cke, dict) or cke.get("name") not in ("default", "v2"):
        out.append("chunk_key_encoding %r" % (cke,))
    else:
        conf = cke.get("configuration", {})
        if set(cke) - {"name", "configuration"} or set(conf) - {"separator"} \
                or conf.get("separator", "/") not in ("/", "."):
            out.append("chunk_key_encoding %r" % (cke,))

    why = fill_problem(dtype, m["fill_value"])
    if why:
        out.append("fill_value %r: %s" % (m["fill_value"], why))

    codecs = m["codecs"]
    if not isinstance(codecs, list) or len(codecs) != 1:
        return out + ["codecs is not a list of the one sharding codec"]
    out += codec_problems(codecs[0], "codecs[0]")
    if out:
        return out
    if codecs[0]["name"] != "sharding_indexed":
        return out + ["codecs[0] is %r" % codecs[0]["name"]]
    sc = codecs[0].get("configuration")
    if not isinstance(sc, dict):
        return out + ["sharding_indexed has no configuration"]
    allowed = {"chunk_shape", "codecs", "index_codecs", "index_location"}
    if set(sc) - allowed:
        out.append("sharding_indexed: unknown keys %s" %
                   sorted(set(sc) - allowed))
    for k in ("chunk_shape", "codecs", "index_codecs"):
        if k not in sc:
            out.append("sharding_indexed: no %s (required)" % k)
    if out:
        return out
    inner = sc["chunk_shape"]
    if not int_list(inner, rank, 1):
        out.append("sharding_indexed chunk_shape %r" % (inner,))
    elif any(s % c for s, c in zip(shard_shape, inner)):
        out.append("inner chunk_shape %r does not divide the shard shape %r"
                   % (inner, shard_shape))
    out += inner_chain_problems(sc["codecs"], dtype, "sharding codecs")
    ic = sc["index_codecs"]
    if not isinstance(ic, list) or not ic:
        out.append("index_codecs %r" % (ic,))
    else:
        for i, c in enumerate(ic):
            out += codec_problems(c, "index_codecs[%d]" % i)
        if not out:
            if ic[0]["name"] != "bytes":
                out.append("index_codecs start with %r" % ic[0]["name"])
            else:
                out += bytes_problems(ic[0], "uint64", "index_codecs[0]")
            if [c["name"] for c in ic[1:]] not in ([], ["crc32c"]):
                out.append("index_codecs %r: only crc32c may follow bytes "
                           "(no variable-size codec)" % [c["name"] for c in ic])
            elif len(ic) == 2 and ic[1].get("configuration"):
                out.append("index_codecs crc32c has a configuration")
    if sc.get("index_location", "end") not in ("start", "end"):
        out.append("index_location %r" % (sc["index_location"],))

    if "attributes" in m and not isinstance(m["attributes"], dict):
        out.append("attributes is not an object")
    if "storage_transformers" in m and m["storage_transformers"] != []:
        out.append("storage_transformers %r" % (m["storage_transformers"],))
    if "dimension_names" in m:
        names = m["dimension_names"]
        if not isinstance(names, list) or len(names) != rank or \
                not all(n is None or isinstance(n, str) for n in names):
            out.append("dimension_names %r for rank %d" % (names, rank))
    return out


def describes(m, cfg):
    """Problems with m as the description of configuration cfg."""
    out = []
    sc = m["codecs"][0]["configuration"]

    def want(what, got, wanted):
        if got != wanted:
            out.append("%s %r, wanted %r" % (what, got, wanted))

    want("shape", m["shape"], list(cfg.shape))
    want("data_type", m["data_type"], cfg.dtype)
    want("shard shape", m["chunk_grid"]["configuration"]["chunk_shape"],
         list(cfg.shard_shape))
    want("chunk_key_encoding", m["chunk_key_encoding"],
         {"name": "default", "configuration": {"separator": "/"}})
    fill = m["fill_value"]
    if cfg.dtype == "bool":
        want("fill_value", fill, False)
    elif not (fill == 0 and math.copysign(1, fill) > 0 and
              (cfg.dtype.startswith("float") or is_int(fill))):
        out.append("fill_value %r, wanted 0" % (fill,))
    want("inner chunk shape", sc["chunk_shape"], list(cfg.chunk))
    want("index_location", sc.get("index_location", "end"), cfg.index)
    chain = [c["name"] for c in sc["codecs"]]
    codec, _, level = cfg.codec.partition(":")
    want("inner codecs", chain, ["bytes"] + ([] if codec == "none"
                                             else [codec]))
    if codec == "blosc" and len(sc["codecs"]) == 2:
        # blosc:CNAME:LEVEL:SHUFFLE[:BLOCKSIZE]
        part = cfg.codec.split(":")
        want("blosc configuration", sc["codecs"][1]["configuration"],
             {"cname": part[1], "clevel": int(part[2]), "shuffle": part[3],
              "typesize": matrix.DTYPE_SIZE[cfg.dtype],
              "blocksize": int(part[4]) if len(part) > 4 else 0})
    elif codec != "none" and len(sc["codecs"]) == 2:
        level, _, flag = level.partition(":")
        want("%s level" % codec, sc["codecs"][1]["configuration"]["level"],
             int(level))
        if codec == "zstd":
            want("zstd checksum",
                 sc["codecs"][1]["configuration"]["checksum"],
                 flag == "checksum")
    if matrix.DTYPE_SIZE[cfg.dtype] > 1:
        want("endian", sc["codecs"][0].get("configuration"),
             {"endian": "little"})
    want("index codecs", [c["name"] for c in sc["index_codecs"]],
         ["bytes", "crc32c"])
    names = list(cfg.names) if cfg.names else [None] * cfg.rank
    want("dimension_names", m.get("dimension_names", [None] * cfg.rank),
         names)
    return out


def broken_documents(good):
    """(what, document) pairs the checker must reject, made from a valid
    document."""
    def mutate(fn):
        m = copy.deepcopy(good)
        fn(m)
        return m

    def sc(m):
        return m["codecs"][0]["configuration"]

    return [
        ("no zarr_format", mutate(lambda m: m.pop("zarr_format"))),
        ("zarr_format 2", mutate(lambda m: m.update(zarr_format=2))),
        ("shape as a string", mutate(lambda m: m.update(shape="13,21,34"))),
        ("unknown data_type", mutate(lambda m: m.update(data_type="u2"))),
        ("fill_value false for uint16",
         mutate(lambda m: m.update(fill_value=False))),
        ("fill_value 0.5 for uint16", mutate(lambda m: m.update(
            fill_value=0.5))),
        ("fill_value 0 for bool", mutate(lambda m: m.update(
            data_type="bool", fill_value=0))),
        ("fill_value 'nan' for float32", mutate(lambda m: m.update(
            data_type="float32", fill_value="nan"))),
        ("inner chunk not dividing the shard", mutate(
            lambda m: sc(m).update(chunk_shape=[3, 8, 16]))),
        ("inner chunk of the wrong rank", mutate(
            lambda m: sc(m).update(chunk_shape=[4, 8]))),
        ("no index_codecs", mutate(lambda m: sc(m).pop("index_codecs"))),
        ("index_location middle", mutate(
            lambda m: sc(m).update(index_location="middle"))),
        ("zstd in index_codecs", mutate(lambda m: sc(m)["index_codecs"].insert(
            1, {"name": "zstd", "configuration": {"level": 1,
                                                   "checksum": False}}))),
        ("bytes without endian for uint16", mutate(
            lambda m: sc(m)["codecs"][0].pop("configuration"))),
        ("zstd without checksum", mutate(
            lambda m: sc(m)["codecs"][1]["configuration"].pop("checksum"))),
        ("dimension_names too short", mutate(
            lambda m: m.update(dimension_names=["t", "y"]))),
        ("dimension_names with a number", mutate(
            lambda m: m.update(dimension_names=["t", 1, "x"]))),
        ("unknown top-level key", mutate(lambda m: m.update(extra=1))),
        ("two codecs in the array's chain", mutate(
            lambda m: m["codecs"].append({"name": "crc32c"}))),
        ("blosc with shuffle as a number (a pre-v1.0 draft)", mutate(
            lambda m: sc(m)["codecs"].__setitem__(1, dict(
                BLOSC_GOOD, configuration=dict(
                    BLOSC_GOOD["configuration"], shuffle=1))))),
        ("blosc without typesize", mutate(
            lambda m: sc(m)["codecs"].__setitem__(1, dict(
                BLOSC_GOOD, configuration={
                    k: v for k, v in BLOSC_GOOD["configuration"].items()
                    if k != "typesize"})))),
        ("blosc typesize 4 for uint16", mutate(
            lambda m: sc(m)["codecs"].__setitem__(1, dict(
                BLOSC_GOOD, configuration=dict(
                    BLOSC_GOOD["configuration"], typesize=4))))),
        ("blosc clevel 10", mutate(
            lambda m: sc(m)["codecs"].__setitem__(1, dict(
                BLOSC_GOOD, configuration=dict(
                    BLOSC_GOOD["configuration"], clevel=10))))),
    ]


BLOSC_GOOD = {"name": "blosc", "configuration": {
    "cname": "zstd", "clevel": 1, "shuffle": "shuffle", "typesize": 2,
    "blocksize": 0}}


def main():
    sp = require_shardpipe()
    tap = Tap()
    workdir = scratch_dir("readers-metadata")
    configs = only_configs(matrix.build())

    # A hand-made valid document, the base of the broken ones.
    good = {
        "zarr_format": 3, "node_type": "array", "shape": [13, 21, 34],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular",
                       "configuration": {"chunk_shape": [8, 16, 32]}},
        "chunk_key_encoding": {"name": "default",
                               "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [4, 8, 16],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 1,
                                                          "checksum": False}}],
            "index_codecs": [{"name": "bytes",
                              "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"}}],
        "attributes": {}, "dimension_names": ["t", "y", "x"]}
    broken = broken_documents(good)
    tap.plan(1 + len(broken) + 2 * len(configs))

    tap.check("the checker accepts a valid document",
              lambda: expect(not metadata_problems(good),
                             "; ".join(metadata_problems(good))))
    for what, doc in broken:
        tap.check("the checker rejects " + what,
                  lambda doc=doc: expect(metadata_problems(doc) != [],
                                         "accepted"))

    for cfg in configs:
        store = os.path.join(workdir, "m%03d.zarr" % cfg.number)
        doc = {}

        def do_write(cfg=cfg, store=store, doc=doc):
            # The kernels encode blosc with zstd only: where "auto"
            # would pick a GPU, the other compressors are written on cpu.
            env = dict(os.environ)
            if (cfg.codec.startswith("blosc")
                    and not cfg.codec.startswith("blosc:zstd")):
                env["SHARDPIPE_BACKEND"] = "cpu"
            r = run([sp, "write"] + cfg.write_args() + [store],
                    stdin=bytes(cfg.nbytes), env=env)
            expect(r.returncode == 0, r.describe())
            with open(os.path.join(store, "zarr.json"), "rb") as f:
                text = f.read()
            doc["m"] = json.loads(text.decode("utf-8"))
            problems = metadata_problems(doc["m"])
            expect(not problems, "; ".join(problems))

        def do_describe(cfg=cfg, doc=doc):
            expect("m" in doc, "no valid zarr.json")
            problems = describes(doc["m"], cfg)
            expect(not problems, "; ".join(problems))

        label = cfg.label()
        tap.check("zarr.json of %s is valid v3 and sharding_indexed" %
                  label, do_write)
        tap.check("zarr.json of config %d describes its configuration" %
                  cfg.number, do_describe)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
