"""s3_runs - the GET requests a whole-array read of a sharded store
should take when neighbouring chunks are coalesced into reads of at most
CAP bytes (doc/design.md §24.4): one per shard (its index, with the
object's size), plus one per run of chunks lying end to end in a shard,
a run ending where the next chunk would take it past CAP bytes.

    s3_runs.py STORE_DIR CAP

STORE_DIR is a directory copy of the store; its shard indexes are read
here with the Zarr sharding spec's layout, independently of shardpipe's
reader.  Prints the count, then the number of shards of the grid that
the store lacks (a read of the whole array asks for each of them once,
and is told it is missing: a check lists the store instead).
"""

import json
import os
import struct
import sys


def main():
    root, cap = sys.argv[1], int(sys.argv[2])
    meta = json.load(open(os.path.join(root, "zarr.json")))
    shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
    (sh,) = [c for c in meta["codecs"] if c["name"] == "sharding_indexed"]
    cfg = sh["configuration"]
    n = 1
    for s, c in zip(shard, cfg["chunk_shape"]):
        n *= -(-s // c)
    names = [c["name"] for c in cfg["index_codecs"]]
    size = 16 * n + (4 if "crc32c" in names else 0)
    at_start = cfg.get("index_location", "end") == "start"
    requests = present = 0
    for top, _, files in os.walk(os.path.join(root, "c")):
        for f in files:
            data = open(os.path.join(top, f), "rb").read()
            idx = data[:size] if at_start else data[len(data) - size:]
            ext = sorted(e for e in struct.iter_unpack("<QQ", idx[:16 * n])
                         if e != (2**64 - 1, 2**64 - 1))
            requests += 1
            present += 1
            first = end = None
            for off, nb in ext:
                if first is not None and off == end and off + nb - first <= cap:
                    end = off + nb
                    continue
                requests += 1
                first, end = off, off + nb
    grid = 1
    for a, s in zip(meta["shape"], shard):
        grid *= -(-a // s)
    print(requests, grid - present)


main()
