"""heat3d_check.py STORE STEPS NZ NY NX - zarr-python reads what
examples/heat3d wrote equal to the same Jacobi steps computed serially in
NumPy (float32, the same order of operations).  Exit status 0 when equal."""
import sys

import numpy as np
import zarr

path = sys.argv[1]
steps, nz, ny, nx = (int(v) for v in sys.argv[2:6])
got = zarr.open_array(path, mode="r")[...]
if got.shape != (steps, nz, ny, nx):
    sys.exit(f"{path}: shape {got.shape}, want {(steps, nz, ny, nx)}")
z, y, x = np.ogrid[0:nz, 0:ny, 0:nx]
u = np.zeros((nz, ny, nx), np.float32)
u[(z > nz // 3) & (z < 2 * nz // 3) & (y > ny // 3) & (y < 2 * ny // 3)
  & (x > nx // 3) & (x < 2 * nx // 3)] = 100
k = np.float32(0.1)
for t in range(steps):
    p = np.pad(u, 1)
    c = p[1:-1, 1:-1, 1:-1]
    u = c + k * (p[:-2, 1:-1, 1:-1] + p[2:, 1:-1, 1:-1] + p[1:-1, :-2, 1:-1]
                 + p[1:-1, 2:, 1:-1] + p[1:-1, 1:-1, :-2] + p[1:-1, 1:-1, 2:]
                 - 6 * c)
    if not np.array_equal(got[t], u):
        sys.exit(f"{path}: step {t}: {int((got[t] != u).sum())} cells differ")
