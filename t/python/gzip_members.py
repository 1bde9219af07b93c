"""gzip_members - Python's gzip module decodes every chunk of two stores of
the same array, and each chunk of the first decodes to the bytes of the
same chunk of the second.

usage: gzip_members.py STORE_A STORE_B

Used by t/gzip-stores.sh with a store the gzip kernel wrote (reference or
opencl) and one the cpu backend wrote with libdeflate: the two encoders
differ, so their members differ, but what Python's gzip (zlib underneath)
makes of them must not.  Shards are parsed from the format
(sharding_indexed v1.0: (offset, nbytes) uint64 little-endian pairs per
chunk slot, then the index's CRC32C, at the start or the end of the
shard).  Needs only the standard library.  Prints one line; exit status 0
when every chunk agrees, 1 otherwise.
"""

import gzip
import json
import os
import struct
import sys


def sharding(store):
    with open(os.path.join(store, "zarr.json")) as f:
        meta = json.load(f)
    for codec in meta["codecs"]:
        if codec["name"] == "sharding_indexed":
            cfg = codec["configuration"]
            shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
            inner = cfg["chunk_shape"]
            slots = 1
            for s, c in zip(shard, inner):
                slots *= s // c
            inner_codecs = [c["name"] for c in cfg["codecs"]]
            return slots, cfg.get("index_location", "end"), inner_codecs
    raise SystemExit("%s: no sharding_indexed codec" % store)


def shard_files(store):
    root = os.path.join(store, "c")
    out = []
    for d, _, files in os.walk(root):
        for name in files:
            path = os.path.join(d, name)
            out.append(os.path.relpath(path, store))
    return sorted(out)


def chunks(path, slots, where):
    with open(path, "rb") as f:
        data = f.read()
    size = 16 * slots + 4
    index = data[:size] if where == "start" else data[len(data) - size:]
    for i in range(slots):
        off, n = struct.unpack_from("<QQ", index, 16 * i)
        if off == 2**64 - 1 and n == 2**64 - 1:
            yield i, None
        else:
            yield i, data[off:off + n]


def main():
    a, b = sys.argv[1], sys.argv[2]
    slots, where_a, codecs = sharding(a)
    slots_b, where_b, _ = sharding(b)
    if "gzip" not in codecs:
        print("%s: inner codecs %s have no gzip" % (a, codecs))
        return 1
    if slots != slots_b:
        print("the stores' shards hold %d and %d chunks" % (slots, slots_b))
        return 1
    files = shard_files(a)
    if files != shard_files(b):
        print("the stores hold different shard keys")
        return 1
    count = 0
    for name in files:
        pb = dict(chunks(os.path.join(b, name), slots, where_b))
        for i, member in chunks(os.path.join(a, name), slots, where_a):
            other = pb[i]
            if (member is None) != (other is None):
                print("%s slot %d: written in one store only" % (name, i))
                return 1
            if member is None:
                continue
            try:
                got = gzip.decompress(member)
                want = gzip.decompress(other)
            except (OSError, EOFError) as e:
                print("%s slot %d: gzip: %s" % (name, i, e))
                return 1
            if got != want:
                print("%s slot %d: decodes to other bytes" % (name, i))
                return 1
            count += 1
    print("%d chunks in %d shards decode equal" % (count, len(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
