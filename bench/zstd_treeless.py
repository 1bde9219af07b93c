#!/usr/bin/env python3
"""zstd_treeless.py - what treeless literals could save in the kernel zstd
encoder's frames (issue 22).

A zstd block may code its literals with the Huffman table of the frame's
last Huffman-coded block (Treeless_Literals_Block, RFC 8878 3.1.1.3.1.1)
and so leave out its tree description.  The kernel never does: every
128 KiB block is encoded by a work-group of its own and cannot know what
the blocks before it chose (doc/design.md §13.1, §13.5).  This script
bounds the loss.  It writes every kind of bench/zstd_corpus.py with the
kernel encoder (backend reference) and walks every frame of every shard:
per compressed block with Huffman-coded literals, the bytes of its tree
description, those of each frame's first such block left out (it must
carry one), and how many of them repeat the frame's last description
byte for byte (which the frame stitcher could turn into treeless blocks
without re-encoding a byte).

Usage: bench/zstd_treeless.py [--shardpipe build/shardpipe] [--levels 1,5]
       [--seed N]
"""
import argparse
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zstd_corpus as zc  # noqa: E402


def frame(b, o):
    """Walk the frame at b[o:]: (its end, description bytes after the
    first, those equal to the last one, Huffman-coded blocks)."""
    fhd = b[o + 4]
    single = fhd >> 5 & 1
    o += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    o += (1 if single else 0, 2, 4, 8)[fhd >> 6]
    later = same = huf = 0
    last = None
    while True:
        h = b[o] | b[o + 1] << 8 | b[o + 2] << 16
        o += 3
        kind, size = h >> 1 & 3, h >> 3
        if kind == 2 and b[o] & 3 == 2:
            sf = b[o] >> 2 & 3
            p = o + (3 if sf < 2 else 4 if sf == 2 else 5)
            hb = b[p]
            # An FSE-compressed description of hb bytes, or hb - 127
            # weights of 4 bits each.
            desc = bytes(b[p:p + 1 + (hb if hb < 128 else (hb - 126) // 2)])
            if last is not None:
                later += len(desc)
                same += len(desc) if desc == last else 0
            last = desc
            huf += 1
        o += 1 if kind == 1 else size
        if h & 1:
            break
    return o + (4 if fhd & 4 else 0), later, same, huf


def store(path, per_shard):
    """Sum frame() over every chunk of every shard of the store."""
    total = [0, 0, 0, 0]
    for root, _, files in os.walk(os.path.join(path, "c")):
        for f in files:
            b = open(os.path.join(root, f), "rb").read()
            total[0] += len(b)
            # The index at the end: (offset, bytes) per chunk, then CRC32C.
            idx = b[len(b) - 16 * per_shard - 4:len(b) - 4]
            for i in range(per_shard):
                off, n = struct.unpack_from("<QQ", idx, 16 * i)
                if off == 2 ** 64 - 1:
                    continue
                end, later, same, huf = frame(b, off)
                if end != off + n:
                    sys.exit("%s: chunk %d: the frame walk ends at %d, "
                             "not %d" % (f, i, end, off + n))
                total[1] += later
                total[2] += same
                total[3] += huf
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardpipe", default="build/shardpipe")
    ap.add_argument("--levels", default="1,5")
    ap.add_argument("--seed", type=int, default=22)
    a = ap.parse_args()
    print("# seed %d" % a.seed)
    per_shard = 1
    for s, c in zip(zc.SHARD, zc.CHUNK):
        per_shard *= s // c
    print("| kind | level | store bytes | Huffman blocks | descriptions "
          "after a frame's first | share of the store | equal to the "
          "last |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="zstd-treeless-") as tmp:
        for kind in zc.KINDS:
            arr, raw = zc.make_kind(kind, a.seed, a.shardpipe, tmp)
            if arr is None:
                continue
            out = os.path.join(tmp, "out.zarr")
            for lv in [int(x) for x in a.levels.split(",")]:
                zc.write(a.shardpipe, raw, zc.DTYPES[arr.dtype.str],
                         "reference", lv, out)
                t, later, same, huf = store(out, per_shard)
                print("| %s | %d | %d | %d | %d | %.3f%% | %d |" %
                      (kind, lv, t, huf, later, 100.0 * later / t, same))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
