"""benchfill - bench's micro fill for the Python benchmarks: the distinct
frames `shardpipe bench frames` appends (uint16, each (c, y, x) =
(2, 2048, 2304)), written by shardpipe itself with codec none and read
back with `shardpipe cat`, so that every benchmark compresses the same
bytes as `bench`."""

import os
import shutil
import subprocess

import numpy as np


def micro_frames(sp, work):
    """The distinct frames of bench's micro fill, as (n, 2, 2048, 2304);
    sp is the shardpipe program, work a directory for its store."""
    store = os.path.join(work, "fill.zarr")
    subprocess.run([sp, "bench", "frames", "--rows", "4", "--codec", "none",
                    "--backend", "cpu", "--output", store, "--overwrite",
                    "--json"], check=True, stdout=subprocess.DEVNULL)
    raw = subprocess.run([sp, "cat", store], check=True,
                         stdout=subprocess.PIPE).stdout
    shutil.rmtree(store)
    return np.frombuffer(raw, np.uint16).reshape(-1, 2, 2048, 2304)
