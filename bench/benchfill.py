"""benchfill - bench's micro fill for the Python benchmarks: the distinct
frames `shardpipe bench frames` appends (uint16, each (c, y, x) =
(2, 2048, 2304)), written by shardpipe itself with codec none and read
back with `shardpipe cat`, so that every benchmark compresses the same
bytes as `bench`."""

import os
import shutil
import subprocess
import sys

import numpy as np


def micro_rows(sp, work, workload, rows, row_shape):
    """The first `rows` distinct rows of bench's micro fill for workload
    (frames, stack, cube), as (rows,) + row_shape uint16; sp is the
    shardpipe program, work a directory for its store."""
    store = os.path.join(work, "fill.zarr")
    subprocess.run([sp, "bench", workload, "--rows", str(rows), "--codec",
                    "none", "--backend", "cpu", "--output", store,
                    "--overwrite", "--json"], check=True,
                   stdout=subprocess.DEVNULL)
    raw = subprocess.run([sp, "cat", store], check=True,
                         stdout=subprocess.PIPE).stdout
    shutil.rmtree(store)
    return np.frombuffer(raw, np.uint16).reshape((-1,) + tuple(row_shape))


def micro_frames(sp, work):
    """The distinct frames of bench's micro fill, as (n, 2, 2048, 2304)."""
    return micro_rows(sp, work, "frames", 4, (2, 2048, 2304))


def shardpipe_program(script):
    """The shardpipe program: $SHARDPIPE, else build/shardpipe beside
    bench/; exits naming the script when there is none."""
    here = os.path.dirname(os.path.abspath(__file__))
    sp = os.environ.get("SHARDPIPE") or os.path.join(here, "..", "build",
                                                     "shardpipe")
    if not os.access(sp, os.X_OK):
        sys.exit("%s: no shardpipe program at %s (set SHARDPIPE)"
                 % (script, sp))
    return sp
