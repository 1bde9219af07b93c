/*
 * heat3d.c - a 3-D heat equation, explicit Jacobi steps on a float32 grid
 * decomposed over the ranks in (y, x), each step written to one sharded
 * Zarr array (t, z, y, x) by shardpipe_mpi_write_step (design §31).
 *
 *   mpiexec -n 4 examples/heat3d OUT.zarr [STEPS [NZ NY NX]]
 *
 * Each rank holds its block plus one halo cell on each side in y and x
 * (z is not decomposed), swaps halos with its four neighbours before a
 * step, and passes its block without the halo to the writer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shardpipe_mpi.h>

#define AT(z, y, x) (((size_t)(z) * (ly + 2) + (y)) * (lx + 2) + (x))

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int me, n, dims[2] = { 0, 0 }, periods[2] = { 0, 0 }, coords[2];
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc < 2) {
		fprintf(stderr, "usage: heat3d OUT.zarr [STEPS [NZ NY NX]]\n");
		MPI_Finalize();
		return 2;
	}
	int steps = argc > 2 ? atoi(argv[2]) : 20;
	uint64_t nz = argc > 5 ? strtoull(argv[3], 0, 10) : 32;
	uint64_t ny = argc > 5 ? strtoull(argv[4], 0, 10) : 96;
	uint64_t nx = argc > 5 ? strtoull(argv[5], 0, 10) : 80;

	/* A 2-D grid of ranks over (y, x); blocks as even as they come. */
	MPI_Comm grid;
	MPI_Dims_create(n, 2, dims);
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
	MPI_Comm_rank(grid, &me);
	MPI_Cart_coords(grid, me, 2, coords);
	uint64_t y0 = ny * (uint64_t)coords[0] / (uint64_t)dims[0];
	uint64_t y1 = ny * (uint64_t)(coords[0] + 1) / (uint64_t)dims[0];
	uint64_t x0 = nx * (uint64_t)coords[1] / (uint64_t)dims[1];
	uint64_t x1 = nx * (uint64_t)(coords[1] + 1) / (uint64_t)dims[1];
	int ly = (int)(y1 - y0), lx = (int)(x1 - x0);
	int up, down, left, right;
	MPI_Cart_shift(grid, 0, 1, &up, &down);
	MPI_Cart_shift(grid, 1, 1, &left, &right);

	size_t cells = (size_t)nz * (size_t)(ly + 2) * (size_t)(lx + 2);
	float *u = calloc(cells, sizeof *u), *v = calloc(cells, sizeof *v);
	float *out = malloc((size_t)nz * (size_t)ly * (size_t)lx * sizeof *out);
	/* A hot cube in the middle of a cold box. */
	for (uint64_t z = 0; z < nz; z++)
		for (int y = 1; y <= ly; y++)
			for (int x = 1; x <= lx; x++) {
				uint64_t gy = y0 + (uint64_t)y - 1, gx = x0 + (uint64_t)x - 1;
				int hot = z > nz / 3 && z < 2 * nz / 3 && gy > ny / 3 &&
					  gy < 2 * ny / 3 && gx > nx / 3 && gx < 2 * nx / 3;
				u[AT(z, y, x)] = hot ? 100.0f : 0.0f;
			}

	/* Halo planes: an x-row (all z) and a y-column (all z), strided. */
	MPI_Datatype xrow, ycol;
	MPI_Type_vector((int)nz, lx, (ly + 2) * (lx + 2), MPI_FLOAT, &xrow);
	MPI_Type_vector((int)nz * (ly + 2), 1, lx + 2, MPI_FLOAT, &ycol);
	MPI_Type_commit(&xrow);
	MPI_Type_commit(&ycol);

	shardpipe_desc d;
	shardpipe_desc_init(&d);
	static const char *names[4] = { "t", "z", "y", "x" };
	uint64_t size[4] = { 0, nz, ny, nx }, chunk[4] = { 1, 16, 32, 32 };
	d.rank = 4;
	for (int i = 0; i < 4; i++) {
		d.dims[i].name = names[i];
		d.dims[i].size = size[i];
		d.dims[i].chunk = chunk[i];
		d.dims[i].chunks_per_shard = i == 0 ? 8 : 2;
	}
	d.dtype = SHARDPIPE_DTYPE_FLOAT32;
	d.threads = 1; /* one rank per core */
	shardpipe_mpi_array *a;
	int rc = shardpipe_mpi_open(&a, grid, argv[1], &d);
	if (rc) {
		if (me == 0)
			fprintf(stderr, "heat3d: %s\n", shardpipe_mpi_message(NULL));
		MPI_Finalize();
		return 1;
	}
	uint64_t lo[3] = { 0, y0, x0 }, hi[3] = { nz, y1, x1 };
	for (int t = 0; t < steps && !rc; t++) {
		MPI_Sendrecv(&u[AT(0, 1, 1)], 1, xrow, up, 0, &u[AT(0, ly + 1, 1)], 1,
			     xrow, down, 0, grid, MPI_STATUS_IGNORE);
		MPI_Sendrecv(&u[AT(0, ly, 1)], 1, xrow, down, 1, &u[AT(0, 0, 1)], 1,
			     xrow, up, 1, grid, MPI_STATUS_IGNORE);
		MPI_Sendrecv(&u[AT(0, 0, 1)], 1, ycol, left, 2, &u[AT(0, 0, lx + 1)], 1,
			     ycol, right, 2, grid, MPI_STATUS_IGNORE);
		MPI_Sendrecv(&u[AT(0, 0, lx)], 1, ycol, right, 3, &u[AT(0, 0, 0)], 1,
			     ycol, left, 3, grid, MPI_STATUS_IGNORE);
		/* The box's faces stay at 0 (halos past the edge are never
		 * received, and calloc made them 0). */
		size_t i = 0;
		for (uint64_t z = 0; z < nz; z++)
			for (int y = 1; y <= ly; y++)
				for (int x = 1; x <= lx; x++) {
					float c = u[AT(z, y, x)];
					float zm = z > 0 ? u[AT(z - 1, y, x)] : 0;
					float zp = z + 1 < nz ? u[AT(z + 1, y, x)] : 0;
					v[AT(z, y, x)] = c + 0.1f * (zm + zp + u[AT(z, y - 1, x)] +
								     u[AT(z, y + 1, x)] + u[AT(z, y, x - 1)] +
								     u[AT(z, y, x + 1)] - 6 * c);
					out[i++] = v[AT(z, y, x)];
				}
		float *w = u;
		u = v, v = w;
		rc = shardpipe_mpi_write_step(a, lo, hi, out);
		if (rc && me == 0)
			fprintf(stderr, "heat3d: step %d: %s\n", t, shardpipe_mpi_message(a));
	}
	int crc = shardpipe_mpi_close(a);
	if (crc && !rc && me == 0)
		fprintf(stderr, "heat3d: %s\n", shardpipe_mpi_message(NULL));
	if (me == 0 && !rc && !crc)
		printf("heat3d: %d steps of %llux%llux%llu on %dx%d ranks in %s\n", steps,
		       (unsigned long long)nz, (unsigned long long)ny,
		       (unsigned long long)nx, dims[0], dims[1], argv[1]);
	MPI_Type_free(&xrow);
	MPI_Type_free(&ycol);
	free(u), free(v), free(out);
	MPI_Comm_free(&grid);
	MPI_Finalize();
	return rc || crc;
}
