/*
 * mpi-write.c - the MPI writer's test program and benchmark (design §31),
 * run by t/mpi.sh and bench/mpi_scaling.sh under mpiexec.
 *
 *   mpi-write write PATH SEED T Z Y X PY PX SPLIT BOUNDED
 *       the ranks (PY x PX of them) decompose dims (y, x) of a (t, z, y, x)
 *       float32 array of T steps; SPLIT even | uneven (cuts at 37% of
 *       each share, so no cut falls on a shard edge) | empty (the last
 *       rank's box is empty, rank 0 takes its share); BOUNDED 0: dim 0
 *       unbounded.
 *   mpi-write ref PATH SEED T Z Y X BOUNDED
 *       the same array through one ordinary shardpipe_stream (no MPI call
 *       but MPI_Init/Finalize), the reference t/mpi.sh compares with.
 *   mpi-write refuse PATH overlap|gap|null
 *       two or more ranks: a step whose boxes overlap, leave a gap, or
 *       whose rank 1 passes no data is refused with
 *       SHARDPIPE_ERR_INVALID_ARGUMENT on every rank, and the array then
 *       takes valid steps as before.
 *
 * Chunks of 2 x 16^3; MPI_WRITE_CHUNKS_PER_SHARD="a,b,c,d" sets the chunks
 * per shard (default 2,2,2,2).  The element at (t, z, y, x) is a pattern of its coordinates and SEED
 * that t/python/mpi_check.py computes independently.  Exit status 0 when
 * every expectation held; a failure says what on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe_mpi.h"

static int me, nranks;

static float value(uint64_t seed, uint64_t t, uint64_t z, uint64_t y,
		   uint64_t x)
{
	return (float)((seed + t * 7919 + z * 104729 + y * 31 + x) % 65521) *
	       0.25f;
}

static void describe(shardpipe_desc *d, const uint64_t *shape, int bounded)
{
	static const char *names[4] = { "t", "z", "y", "x" };
	/* Shards of 4 steps by 32 x 32 x 32: y and x have edge shards. */
	static const uint64_t chunk[4] = { 2, 16, 16, 16 };
	uint64_t cps[4] = { 2, 2, 2, 2 };
	/* bench/mpi_scaling.sh asks for bigger shards: "2,4,8,8". */
	const char *env = getenv("MPI_WRITE_CHUNKS_PER_SHARD");
	if (env && sscanf(env, "%llu,%llu,%llu,%llu", (unsigned long long *)&cps[0],
			  (unsigned long long *)&cps[1], (unsigned long long *)&cps[2],
			  (unsigned long long *)&cps[3]) != 4)
		cps[0] = cps[1] = cps[2] = cps[3] = 2;
	shardpipe_desc_init(d);
	d->rank = 4;
	for (int i = 0; i < 4; i++) {
		d->dims[i].name = names[i];
		d->dims[i].size = shape[i];
		d->dims[i].chunk = chunk[i];
		d->dims[i].chunks_per_shard = cps[i];
	}
	if (!bounded)
		d->dims[0].size = 0;
	d->dtype = SHARDPIPE_DTYPE_FLOAT32;
	d->codec = SHARDPIPE_CODEC_ZSTD;
	d->level = 1;
	d->threads = 1;
	d->backend = "cpu";
}

static void fill(float *buf, uint64_t seed, uint64_t t, const uint64_t *lo,
		 const uint64_t *hi)
{
	size_t i = 0;
	for (uint64_t z = lo[0]; z < hi[0]; z++)
		for (uint64_t y = lo[1]; y < hi[1]; y++)
			for (uint64_t x = lo[2]; x < hi[2]; x++)
				buf[i++] = value(seed, t, z, y, x);
}

/* Cut n into p parts; part j's start.  Uneven: each cut moved back by 37%
 * of a part, so the parts differ and no cut lies on a shard edge. */
static uint64_t cut(uint64_t n, int p, int j, int uneven)
{
	if (j == 0 || j == p)
		return j ? n : 0;
	uint64_t even = n * (uint64_t)j / (uint64_t)p;
	return uneven ? even - (n / (uint64_t)p) * 37 / 100 : even;
}

static int fail(const char *what, int rc, const char *msg)
{
	fprintf(stderr, "rank %d: %s: %s (%s)\n", me, what,
		shardpipe_strerror(rc), msg);
	return 1;
}

static int write_mpi(int ac, char **av)
{
	if (ac != 12)
		return fail("usage", 0, "write PATH SEED T Z Y X PY PX SPLIT BOUNDED");
	uint64_t seed = strtoull(av[3], 0, 10), shape[4];
	for (int i = 0; i < 4; i++)
		shape[i] = strtoull(av[4 + i], 0, 10);
	int py = atoi(av[8]), px = atoi(av[9]);
	const char *split = av[10];
	int uneven = !strcmp(split, "uneven"), empty = !strcmp(split, "empty");
	if (py * px != nranks)
		return fail("usage", 0, "PY x PX must be the number of ranks");
	shardpipe_desc d;
	describe(&d, shape, strcmp(av[11], "0") != 0);
	int jy = me / px, jx = me % px;
	uint64_t lo[3] = { 0, cut(shape[2], py, jy, uneven),
			   cut(shape[3], px, jx, uneven) };
	uint64_t hi[3] = { shape[1], cut(shape[2], py, jy + 1, uneven),
			   cut(shape[3], px, jx + 1, uneven) };
	if (empty && nranks > 1) {
		/* Ranks 0 .. n-2 cut y; the last rank's box is empty. */
		lo[1] = cut(shape[2], nranks - 1, me, 1);
		hi[1] = me == nranks - 1 ? lo[1] : cut(shape[2], nranks - 1, me + 1, 1);
		lo[2] = 0, hi[2] = shape[3];
	}
	shardpipe_mpi_array *a;
	int rc = shardpipe_mpi_open(&a, MPI_COMM_WORLD, av[2], &d);
	if (rc)
		return fail("open", rc, shardpipe_mpi_message(NULL));
	size_t n = (size_t)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
	float *buf = malloc((n + 1) * sizeof *buf);
	double t_fill = 0, t0 = MPI_Wtime();
	for (uint64_t t = 0; t < shape[0] && !rc; t++) {
		double f0 = MPI_Wtime();
		fill(buf, seed, t, lo, hi);
		t_fill += MPI_Wtime() - f0;
		rc = shardpipe_mpi_write_step(a, lo, hi, buf);
		if (rc)
			fail("write_step", rc, shardpipe_mpi_message(a));
	}
	free(buf);
	if (rc) {
		shardpipe_mpi_close(a);
		return 1;
	}
	double tx, ta;
	shardpipe_mpi_times(a, &tx, &ta);
	rc = shardpipe_mpi_close(a);
	if (rc)
		return fail("close", rc, shardpipe_mpi_message(NULL));
	double wall = MPI_Wtime() - t0, times[3] = { tx, ta, t_fill }, most[3];
	MPI_Reduce(times, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (me == 0) {
		double bytes = (double)(shape[0] * shape[1] * shape[2] * shape[3] * 4);
		wall -= most[2];
		printf("ranks %d split %s MB %.1f seconds %.3f GB/s %.3f "
		       "exchange_share %.3f append_share %.3f\n",
		       nranks, split, bytes / 1e6, wall, bytes / wall / 1e9,
		       most[0] / wall, most[1] / wall);
	}
	return 0;
}

static int write_ref(int ac, char **av)
{
	if (ac != 9)
		return fail("usage", 0, "ref PATH SEED T Z Y X BOUNDED");
	uint64_t seed = strtoull(av[3], 0, 10), shape[4];
	for (int i = 0; i < 4; i++)
		shape[i] = strtoull(av[4 + i], 0, 10);
	shardpipe_desc d;
	describe(&d, shape, strcmp(av[8], "0") != 0);
	shardpipe_stream *s;
	int rc = shardpipe_stream_open(&s, av[2], &d);
	if (rc)
		return fail("open", rc, shardpipe_last_error_message());
	uint64_t lo[3] = { 0, 0, 0 }, hi[3] = { shape[1], shape[2], shape[3] };
	size_t n = (size_t)(shape[1] * shape[2] * shape[3]);
	float *buf = malloc(n * sizeof *buf);
	for (uint64_t t = 0; t < shape[0] && !rc; t++) {
		fill(buf, seed, t, lo, hi);
		rc = shardpipe_stream_append(s, buf, n * sizeof *buf);
	}
	free(buf);
	if (rc)
		fail("append", rc, shardpipe_stream_message(s));
	int crc = shardpipe_stream_close(s);
	if (crc && !rc)
		return fail("close", crc, shardpipe_last_error_message());
	return rc || crc;
}

/* One refused step, then two valid ones and a close: every rank must see
 * exactly SHARDPIPE_ERR_INVALID_ARGUMENT with a message, then success. */
static int refuse(int ac, char **av)
{
	if (ac != 4 || nranks < 2)
		return fail("usage", 0, "refuse PATH overlap|gap|null, 2+ ranks");
	uint64_t shape[4] = { 2, 4, 64, 40 };
	shardpipe_desc d;
	describe(&d, shape, 0);
	shardpipe_mpi_array *a;
	int rc = shardpipe_mpi_open(&a, MPI_COMM_WORLD, av[2], &d);
	if (rc)
		return fail("open", rc, shardpipe_mpi_message(NULL));
	/* Valid: rank r takes rows cut(64, n, r) of y. */
	uint64_t lo[3] = { 0, cut(64, nranks, me, 1), 0 };
	uint64_t hi[3] = { 4, cut(64, nranks, me + 1, 1), 40 };
	uint64_t blo[3], bhi[3];
	memcpy(blo, lo, sizeof lo);
	memcpy(bhi, hi, sizeof hi);
	const char *how = av[3];
	if (!strcmp(how, "overlap") && me == 1)
		blo[1] -= 1;
	else if (!strcmp(how, "gap") && me == 1)
		blo[1] += 1;
	else if (strcmp(how, "overlap") && strcmp(how, "gap") && strcmp(how, "null"))
		return fail("usage", 0, how);
	float *buf = calloc(4 * 64 * 40, sizeof *buf);
	const float *bad = !strcmp(how, "null") && me == 1 ? NULL : buf;
	int bad_rc = shardpipe_mpi_write_step(a, blo, bhi, bad);
	int ok = bad_rc == SHARDPIPE_ERR_INVALID_ARGUMENT &&
		 shardpipe_mpi_message(a)[0];
	if (!ok)
		fail(how, bad_rc, shardpipe_mpi_message(a));
	else if (me == 0)
		printf("refused: %s\n", shardpipe_mpi_message(a));
	for (int t = 0; t < 2 && ok; t++) {
		rc = shardpipe_mpi_write_step(a, lo, hi, buf);
		if (rc)
			ok = !fail("valid step after the refusal", rc,
				   shardpipe_mpi_message(a));
	}
	free(buf);
	rc = shardpipe_mpi_close(a);
	if (rc)
		ok = !fail("close", rc, shardpipe_mpi_message(NULL));
	return !ok;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int rc = 2;
	if (argc > 2 && !strcmp(argv[1], "write"))
		rc = write_mpi(argc, argv);
	else if (argc > 2 && !strcmp(argv[1], "ref"))
		rc = write_ref(argc, argv);
	else if (argc > 2 && !strcmp(argv[1], "refuse"))
		rc = refuse(argc, argv);
	else
		fprintf(stderr, "usage: mpi-write write|ref|refuse PATH ...\n");
	/* Every rank's verdict, so that mpiexec's status is one answer. */
	int all = rc;
	MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Finalize();
	return all;
}
