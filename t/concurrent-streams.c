/*
 * concurrent-streams.c - streams are independent: several streams written
 * at once from different threads, to different stores, write the same
 * bytes (every shard and zarr.json) as the same streams written one at a
 * time, and every store holds its input; and the backends probed from
 * several threads at once, as streams opening with backend auto do.
 *
 * Each stream has its own random geometry, dtype, codec, index location,
 * span sizes and flushes.  This is also the program the ThreadSanitizer
 * build runs (scripts/run-sanitizers).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define STREAMS 4
#define ROUNDS 2

struct job {
	shardpipe_desc desc;
	struct fc_geom g;
	uint8_t *input;
	size_t bytes, row_bytes;
	uint64_t rows;
	uint64_t plan_seed;   /* span sizes and flushes */
	char path[1100];
	int rc;
};

static const uint8_t *job_row(void *user, uint64_t r)
{
	const struct job *j = user;

	return r < j->rows ? j->input + r * j->row_bytes : NULL;
}

static void job_init(struct job *j, uint64_t *rng)
{
	static const shardpipe_dtype types[] = {
		SHARDPIPE_DTYPE_UINT8, SHARDPIPE_DTYPE_INT16,
		SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_UINT64
	};
	shardpipe_desc *d = &j->desc;

	shardpipe_desc_init(d);
	d->rank = 2 + (int)(test_rand(rng) % 2);
	d->dtype = types[test_rand(rng) % 4];
	d->codec = (shardpipe_codec)(test_rand(rng) % 3);
	d->level = 1 + (int)(test_rand(rng) % 3);
	d->index_location = (shardpipe_index_location)(test_rand(rng) % 2);
	d->backend = "cpu";
	d->threads = 2;
	for (int k = 0; k < d->rank; k++) {
		d->dims[k].size = k == 0 ? 0 : 5 + test_rand(rng) % 60;
		d->dims[k].chunk = 1 + test_rand(rng) % 16;
		d->dims[k].chunks_per_shard = 1 + test_rand(rng) % 3;
	}
	fc_geom_from_desc(&j->g, d);
	j->row_bytes = (size_t)fc_row_bytes(&j->g);
	j->rows = 20 + test_rand(rng) % 80;
	j->bytes = (size_t)j->rows * j->row_bytes;
	j->input = malloc(j->bytes);
	if (j->input == NULL)
		bail("out of memory");
	test_fill(j->input, j->bytes, (int)(test_rand(rng) % 4), rng);
	j->plan_seed = test_rand(rng);
}

static void *job_run(void *arg)
{
	struct job *j = arg;
	uint64_t rng = j->plan_seed;
	shardpipe_stream *s;
	size_t at = 0;
	int rc = shardpipe_stream_open(&s, j->path, &j->desc);

	while (rc == SHARDPIPE_OK && at < j->bytes) {
		size_t n = 1 + (size_t)(test_rand(&rng) % (3 * j->row_bytes));

		if (n > j->bytes - at)
			n = j->bytes - at;
		rc = shardpipe_stream_append(s, j->input + at, n);
		at += n;
		if (rc == SHARDPIPE_OK && test_rand(&rng) % 4 == 0)
			rc = shardpipe_stream_flush(s);
	}
	if (s != NULL) {
		int c = shardpipe_stream_close(s);

		if (rc == SHARDPIPE_OK)
			rc = c;
	}
	j->rc = rc;
	return NULL;
}

/* Every backend probed, over and over: what each stream with backend
 * auto does at open, here from several threads at once. */
static void *probe_all(void *arg)
{
	int *bad = arg;

	for (int k = 0; k < 20; k++)
		for (int i = 0; i < shardpipe_backend_count(); i++) {
			shardpipe_backend_info info;

			if (shardpipe_backend_probe(i, &info) != SHARDPIPE_OK ||
			    info.name == NULL)
				__atomic_add_fetch(bad, 1, __ATOMIC_RELAXED);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t rng;
	char *tmp;

	(void)argc;
	fc_passive_omp(argv);
	alarm(fc_timeout(300));
	rng = test_seed();
	tmp = test_tmpdir("concurrent");
	plan(2 * ROUNDS + 1);
	{
		pthread_t th[STREAMS];
		int bad = 0;

		for (int i = 0; i < STREAMS; i++)
			if (pthread_create(&th[i], NULL, probe_all, &bad) != 0)
				bail("pthread_create failed");
		for (int i = 0; i < STREAMS; i++)
			pthread_join(th[i], NULL);
		/* Two streams opening with backend auto at once crashed in
		 * PoCL before probes took turns. */
		ok(bad == 0, "every backend probed from %d threads at once, "
		   "20 times each", STREAMS);
	}
	for (int round = 0; round < ROUNDS; round++) {
		struct job seq[STREAMS], par[STREAMS];
		pthread_t th[STREAMS];
		int bad = 0, same = 0, files = 0;

		for (int i = 0; i < STREAMS; i++) {
			job_init(&seq[i], &rng);
			par[i] = seq[i];
			snprintf(seq[i].path, sizeof(seq[i].path),
				 "%s/r%d-seq%d.zarr", tmp, round, i);
			snprintf(par[i].path, sizeof(par[i].path),
				 "%s/r%d-par%d.zarr", tmp, round, i);
			job_run(&seq[i]);
		}
		for (int i = 0; i < STREAMS; i++)
			if (pthread_create(&th[i], NULL, job_run, &par[i]) != 0)
				bail("pthread_create failed");
		for (int i = 0; i < STREAMS; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < STREAMS; i++) {
			struct fc_report rep;
			int n;

			if (seq[i].rc != SHARDPIPE_OK || par[i].rc != SHARDPIPE_OK ||
			    fc_check_store(par[i].path, &par[i].g, job_row,
					   &par[i], 0, &rep) != 0 ||
			    rep.shape0 != par[i].rows) {
				bad++;
				diag("stream %d: rc %d / %d: %s", i, seq[i].rc,
				     par[i].rc, rep.why);
			}
			same += test_same_tree(seq[i].path, par[i].path, &n);
			files += n / 2;
			free(seq[i].input);
		}
		ok(bad == 0, "round %d: %d streams written at once from %d "
		   "threads all hold their input", round, STREAMS, STREAMS);
		ok(same == STREAMS, "round %d: their %d files equal, byte for "
		   "byte, those written one stream at a time", round, files);
	}
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
