"""mpi_check.py STORE SEED T Z Y X - zarr-python reads the MPI writer's
store (t/mpi.sh) equal to the pattern t/mpi-write.c fills it with,
computed here independently with NumPy.  Exit status 0 when equal."""
import sys

import numpy as np
import zarr

path = sys.argv[1]
seed, t, z, y, x = (int(v) for v in sys.argv[2:7])
a = zarr.open_array(path, mode="r")
if a.shape != (t, z, y, x) or a.dtype != np.float32:
    sys.exit(f"{path}: shape {a.shape} dtype {a.dtype}, want {(t, z, y, x)} float32")
tt, zz, yy, xx = np.ogrid[0:t, 0:z, 0:y, 0:x]
want = ((seed + tt * 7919 + zz * 104729 + yy * 31 + xx) % 65521).astype(np.float32) * np.float32(0.25)
got = a[...]
if not np.array_equal(got, want):
    bad = np.argwhere(got != want)
    sys.exit(f"{path}: {len(bad)} elements differ, the first at {tuple(bad[0])}: "
             f"{got[tuple(bad[0])]} != {want[tuple(bad[0])]}")
