/*
 * group.c - several arrays in one group (shardpipe_group), as
 * doc/design.md §26 has it: streams appended at once from several threads
 * into one group, sharing its worker threads, each read back by the
 * library's reader and equal, file for file, to the same array written
 * alone by its own stream; the group's refusals with their exact codes,
 * and what an overwrite leaves alone.
 *
 * With --keep DIR the group is left at DIR/g.zarr as the test ends (with
 * its child group "sub", the user's directory "mine" and README.txt),
 * beside each array's input (DIR/NAME.bin) and DIR/manifest.json, for
 * t/python/readers_group.py (zarr-python and TensorStore).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define ARRAYS 4

static const char *const names[ARRAYS] = { "cam0", "cam1", "ch.2",
					   "ref-3" };

struct job {
	shardpipe_desc desc;
	shardpipe_stream *s;
	const char *name;
	uint8_t *input;
	size_t bytes, row_bytes;
	uint64_t rows;
	uint64_t seed;          /* span sizes and flushes */
	int rc;
};

static void job_init(struct job *j, int i, uint64_t *rng)
{
	static const shardpipe_dtype types[] = {
		SHARDPIPE_DTYPE_UINT8, SHARDPIPE_DTYPE_UINT16,
		SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_INT64
	};
	shardpipe_desc *d = &j->desc;
	struct fc_geom g;

	shardpipe_desc_init(d);
	j->name = names[i];
	d->rank = 2 + (int)(test_rand(rng) % 2);
	d->dtype = types[test_rand(rng) % 4];
	d->codec = (shardpipe_codec)(test_rand(rng) % 3);
	d->level = 1 + (int)(test_rand(rng) % 3);
	/* The last array runs on a kernel backend, which ignores the
	 * group's threads and must write the same bytes. */
	d->backend = i == ARRAYS - 1 ? "reference" : "cpu";
	d->threads = 2;
	for (int k = 0; k < d->rank; k++) {
		d->dims[k].size = k == 0 ? 0 : 5 + test_rand(rng) % 40;
		d->dims[k].chunk = 1 + test_rand(rng) % 12;
		d->dims[k].chunks_per_shard = 1 + test_rand(rng) % 3;
	}
	fc_geom_from_desc(&g, d);
	j->row_bytes = (size_t)fc_row_bytes(&g);
	j->rows = 20 + test_rand(rng) % 60;
	j->bytes = (size_t)j->rows * j->row_bytes;
	j->input = test_xmalloc(j->bytes);
	test_fill(j->input, j->bytes, (int)(test_rand(rng) % 4), rng);
	j->seed = test_rand(rng);
}

/* Append the job's input in random spans, flushing now and then, and
 * close the stream. */
static void *job_run(void *arg)
{
	struct job *j = arg;
	uint64_t rng = j->seed;
	size_t at = 0;
	int rc = SHARDPIPE_OK, c;

	while (rc == SHARDPIPE_OK && at < j->bytes) {
		size_t n = 1 + (size_t)(test_rand(&rng) % (3 * j->row_bytes));

		if (n > j->bytes - at)
			n = j->bytes - at;
		rc = shardpipe_stream_append(j->s, j->input + at, n);
		at += n;
		if (rc == SHARDPIPE_OK && test_rand(&rng) % 5 == 0)
			rc = shardpipe_stream_flush(j->s);
	}
	if (rc != SHARDPIPE_OK)
		diag("%s: %s", j->name, shardpipe_stream_message(j->s));
	c = shardpipe_stream_close(j->s);
	j->s = NULL;
	j->rc = rc != SHARDPIPE_OK ? rc : c;
	return NULL;
}

static char *join(const char *a, const char *b)
{
	char *p;

	if (asprintf(&p, "%s/%s", a, b) < 0)
		bail("out of memory");
	return p;
}

static void put_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		bail("cannot write %s", path);
}

/* Whether the file at path holds exactly n bytes equal to want. */
static int file_is(const char *path, const void *want, size_t n)
{
	size_t got_n;
	void *got = test_slurp(path, &got_n);
	int same = got != NULL && got_n == n && memcmp(got, want, n) == 0;

	free(got);
	return same;
}

static void keep(const char *dir, const struct job *jobs)
{
	char *p = join(dir, "manifest.json");
	FILE *f = fopen(p, "w");

	if (f == NULL)
		bail("cannot write %s", p);
	fprintf(f, "[");
	for (int i = 0; i < ARRAYS; i++) {
		const shardpipe_desc *d = &jobs[i].desc;
		char *bin, file[64];

		fprintf(f, "%s\n {\"name\": \"%s\", \"dtype\": \"%s\", "
			"\"shape\": [%llu", i ? "," : "", jobs[i].name,
			shardpipe_dtype_name(d->dtype),
			(unsigned long long)jobs[i].rows);
		for (int k = 1; k < d->rank; k++)
			fprintf(f, ", %llu",
				(unsigned long long)d->dims[k].size);
		fprintf(f, "]}");
		snprintf(file, sizeof(file), "%s.bin", jobs[i].name);
		bin = join(dir, file);
		put_file(bin, jobs[i].input, jobs[i].bytes);
		free(bin);
	}
	fprintf(f, "\n]\n");
	if (fclose(f) != 0)
		bail("cannot write %s", p);
	free(p);
}

/* Refusals of names, each with SHARDPIPE_ERR_NAME and nothing made. */
static void name_refusals(shardpipe_group *g, const char *root,
			  const shardpipe_desc *d)
{
	static const char *const bad[] = {
		"", ".", "..", "a/b", "/abs", ".hidden", "__reserved",
		"caf\xc3\xa9", "sp ace", "back\\slash",
	};
	char longname[300];
	int before = test_entries(root), fine = 1;
	shardpipe_stream *s;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		int rc = shardpipe_group_stream(&s, g, bad[k], d);

		if (rc != SHARDPIPE_ERR_NAME || s != NULL) {
			diag("name \"%s\": %d (%s)", bad[k], rc,
			     shardpipe_last_error_message());
			fine = 0;
		}
	}
	memset(longname, 'a', 256);
	longname[256] = '\0';
	fine &= shardpipe_group_stream(&s, g, longname, d) ==
		SHARDPIPE_ERR_NAME;
	fine &= shardpipe_group_stream(&s, g, NULL, d) == SHARDPIPE_ERR_NAME;
	ok(fine && test_entries(root) == before,
	   "12 unsafe array names refused with SHARDPIPE_ERR_NAME, nothing "
	   "made");
	memset(longname, 'b', 255);
	longname[255] = '\0';
	ok(shardpipe_group_stream(&s, g, longname, d) == SHARDPIPE_OK &&
	   shardpipe_stream_close(s) == SHARDPIPE_OK,
	   "a name of 255 bytes is taken");
}

/*
 * The threads are shared: three cpu streams of a group of 3 threads, each
 * having compressed a batch, run 2 threads each (pipeline, writer) and the
 * group's 2 workers, where streams of their own would run 2 workers each.
 * Counted in /proc/self/task before anything else in the process has
 * started a thread.
 */
static void shared_threads(const char *tmp)
{
	enum { N = 3, T = 3 };
	char *root = join(tmp, "threads.zarr");
	shardpipe_stream *s[N];
	shardpipe_group *g;
	shardpipe_desc d;
	static uint8_t rows[64 * 256];
	int rc, before, during;

	before = test_threads_now();

	if (before < 0) {
		skip(1, "no /proc/self/task to count threads in");
		free(root);
		return;
	}
	shardpipe_desc_init(&d);
	d.rank = 2;
	d.backend = "cpu";
	d.dims[0].chunk = 4;
	d.dims[0].chunks_per_shard = 2;
	d.dims[1].size = 256;
	d.dims[1].chunk = 32;
	d.dims[1].chunks_per_shard = 2;
	rc = shardpipe_group_create(&g, root, T);
	for (int i = 0; i < N; i++) {
		char name[8];

		snprintf(name, sizeof(name), "a%d", i);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_group_stream(&s[i], g, name, &d);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_append(s[i], rows, sizeof(rows));
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(s[i]);
		if (rc != SHARDPIPE_OK)
			bail("threads: %s", shardpipe_last_error_message());
	}
	during = test_threads_now();
	is_int(during - before, 2 * N + (T - 1), "%d cpu streams of a group "
	       "of %d threads run %d threads in all, not %d", N, T,
	       2 * N + (T - 1), 2 * N + N * (T - 1));
	for (int i = 0; i < N; i++)
		shardpipe_stream_close(s[i]);
	shardpipe_group_close(g);
	free(root);
}

int main(int argc, char **argv)
{
	struct job jobs[ARRAYS];
	pthread_t th[ARRAYS];
	shardpipe_group *g;
	shardpipe_stream *s;
	shardpipe_reader *r;
	const char *keep_dir = argc == 3 && strcmp(argv[1], "--keep") == 0
				       ? argv[2] : NULL;
	char *tmp, *root, *twins, *p, *q;
	uint64_t rng;
	int rc, bad = 0, same = 0;

	fc_passive_omp(argv);
	alarm(fc_timeout(300));
	rng = test_seed();
	tmp = test_tmpdir("group");
	root = join(keep_dir != NULL ? keep_dir : tmp, "g.zarr");
	twins = join(tmp, "twins");
	if (mkdir(twins, 0777) != 0)
		bail("mkdir %s", twins);
	plan_lazy();
	shared_threads(tmp);

	for (int i = 0; i < ARRAYS; i++)
		job_init(&jobs[i], i, &rng);
	rc = shardpipe_group_create(&g, root, 2);
	if (!is_int(rc, SHARDPIPE_OK, "group created"))
		bail("no group: %s", shardpipe_last_error_message());
	for (int i = 0; i < ARRAYS; i++) {
		rc = shardpipe_group_stream(&jobs[i].s, g, jobs[i].name,
					    &jobs[i].desc);
		if (rc != SHARDPIPE_OK)
			bail("stream %s: %s", jobs[i].name,
			     shardpipe_last_error_message());
	}
	/* The group goes first: its streams keep the shared threads. */
	shardpipe_group_close(g);
	for (int i = 0; i < ARRAYS; i++)
		if (pthread_create(&th[i], NULL, job_run, &jobs[i]) != 0)
			bail("pthread_create failed");
	for (int i = 0; i < ARRAYS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < ARRAYS; i++) {
		char *dir = join(root, jobs[i].name);
		char *twin = join(twins, jobs[i].name);
		shardpipe_desc alone = jobs[i].desc;

		if (jobs[i].rc != SHARDPIPE_OK ||
		    !test_reads_back(dir, jobs[i].rows, jobs[i].input,
				     jobs[i].bytes)) {
			diag("%s: rc %d", jobs[i].name, jobs[i].rc);
			bad++;
		}
		/* Alone, on its backend's own threads. */
		if (test_write_spans(twin, &alone, jobs[i].input,
				     jobs[i].bytes, jobs[i].seed) ==
			    SHARDPIPE_OK)
			same += test_same_tree(dir, twin, NULL);
		free(dir);
		free(twin);
	}
	ok(bad == 0, "%d arrays appended at once from %d threads into one "
	   "group each read back equal to their input", ARRAYS, ARRAYS);
	ok(same == ARRAYS, "each array's files equal those of the same array "
	   "written alone by its own stream (%d of %d)", same, ARRAYS);

	rc = shardpipe_group_open(&g, root, 0);
	if (!is_int(rc, SHARDPIPE_OK, "the group opens"))
		bail("no group: %s", shardpipe_last_error_message());
	{
		int listed = rc == SHARDPIPE_OK &&
			     shardpipe_group_array_count(g) == ARRAYS;

		/* names[] is in byte order already. */
		for (int i = 0; listed && i < ARRAYS; i++)
			listed = strcmp(shardpipe_group_array_name(g, (size_t)i),
					names[i]) == 0;
		ok(listed && shardpipe_group_array_name(g, ARRAYS) == NULL,
		   "it lists its %d arrays, sorted", ARRAYS);
	}
	ok(shardpipe_reader_open(&r, root) != SHARDPIPE_OK && r == NULL,
	   "the reader refuses the group's root, which is no array (%s)",
	   shardpipe_last_error_message());

	name_refusals(g, root, &jobs[0].desc);
	p = join(root, names[0]);
	q = join(twins, names[0]);
	is_int(shardpipe_group_stream(&s, g, names[0], &jobs[0].desc),
	       SHARDPIPE_ERR_EXISTS, "an existing array without overwrite: "
	       "SHARDPIPE_ERR_EXISTS");
	ok(s == NULL && test_same_tree(p, q, NULL), "and it is untouched");

	/* A child that is a group, and a directory of the user's files. */
	{
		char *sub = join(root, "sub"), *mine = join(root, "mine");
		char *subj = join(sub, "zarr.json"), *note = join(mine, "n.txt");
		shardpipe_group *g2;
		shardpipe_desc d = jobs[1].desc;
		size_t n;
		void *before;

		if (shardpipe_group_create(&g2, sub, 1) != SHARDPIPE_OK)
			bail("subgroup: %s", shardpipe_last_error_message());
		shardpipe_group_close(g2);
		before = test_slurp(subj, &n);
		d.overwrite = 1;
		is_int(shardpipe_group_stream(&s, g, "sub", &d),
		       SHARDPIPE_ERR_EXISTS, "overwrite of a child group: "
		       "SHARDPIPE_ERR_EXISTS");
		ok(before != NULL && file_is(subj, before, n),
		   "the child group's zarr.json is untouched");
		free(before);
		if (mkdir(mine, 0777) != 0)
			bail("mkdir %s", mine);
		put_file(note, "mine\n", 5);
		is_int(shardpipe_group_stream(&s, g, "mine", &d),
		       SHARDPIPE_ERR_EXISTS, "overwrite of a directory of "
		       "the user's files: SHARDPIPE_ERR_EXISTS");
		ok(file_is(note, "mine\n", 5) && test_entries(mine) == 1,
		   "the user's file is untouched");
		free(sub);
		free(mine);
		free(subj);
		free(note);
	}

	/* Overwrite one array: the others and the user's file stay. */
	{
		char *note = join(root, "README.txt");
		shardpipe_desc d = jobs[0].desc;
		int others = 0;

		put_file(note, "notes\n", 6);
		d.overwrite = 1;
		jobs[0].seed = test_rand(&rng);
		test_fill(jobs[0].input, jobs[0].bytes, 0, &rng);
		rc = shardpipe_group_stream(&jobs[0].s, g, names[0], &d);
		if (!is_int(rc, SHARDPIPE_OK, "overwrite of array %s opens",
			    names[0]))
			diag("%s", shardpipe_last_error_message());
		if (rc == SHARDPIPE_OK)
			job_run(&jobs[0]);
		ok(rc == SHARDPIPE_OK && jobs[0].rc == SHARDPIPE_OK &&
		   test_reads_back(p, jobs[0].rows, jobs[0].input,
				   jobs[0].bytes),
		   "the overwritten array reads back its new input");
		for (int i = 1; i < ARRAYS; i++) {
			char *a = join(root, names[i]), *b = join(twins, names[i]);

			others += test_same_tree(a, b, NULL);
			free(a);
			free(b);
		}
		ok(others == ARRAYS - 1 && file_is(note, "notes\n", 6),
		   "the other %d arrays and the user's file are untouched",
		   ARRAYS - 1);
		free(note);
	}
	shardpipe_group_close(g);

	/* The group's own refusals. */
	{
		char *missing = join(tmp, "missing"), *gj = join(root,
								 "zarr.json");
		shardpipe_desc d = jobs[1].desc;
		size_t n;
		void *before = test_slurp(gj, &n);

		is_int(shardpipe_group_open(&g, p, 0), SHARDPIPE_ERR_PATH,
		       "open of an array as a group: SHARDPIPE_ERR_PATH");
		ok(g == NULL, "and *out is NULL");
		is_int(shardpipe_group_open(&g, missing, 0), SHARDPIPE_ERR_PATH,
		       "open of a missing group: SHARDPIPE_ERR_PATH");
		is_int(shardpipe_group_create(&g, root, 0), SHARDPIPE_ERR_EXISTS,
		       "create over an existing group: SHARDPIPE_ERR_EXISTS");
		is_int(shardpipe_group_create(&g, p, 0), SHARDPIPE_ERR_EXISTS,
		       "create over an array: SHARDPIPE_ERR_EXISTS");
		is_int(shardpipe_group_create(&g, missing, -1),
		       SHARDPIPE_ERR_INVALID_ARGUMENT, "threads -1 refused");
		is_int(shardpipe_group_create(&g, missing,
					      SHARDPIPE_MAX_THREADS + 1),
		       SHARDPIPE_ERR_INVALID_ARGUMENT,
		       "threads above SHARDPIPE_MAX_THREADS refused");
		ok(access(missing, F_OK) != 0, "and nothing was made");
		is_int(shardpipe_group_create(&g, "s3://bucket/g", 0),
		       SHARDPIPE_ERR_UNSUPPORTED, "a group on S3: "
		       "SHARDPIPE_ERR_UNSUPPORTED");
		is_int(shardpipe_group_create(NULL, root, 0),
		       SHARDPIPE_ERR_INVALID_ARGUMENT, "out NULL refused");
		d.overwrite = 1;
		is_int(shardpipe_stream_open(&s, root, &d), SHARDPIPE_ERR_EXISTS,
		       "a plain stream overwriting the group's root: "
		       "SHARDPIPE_ERR_EXISTS");
		ok(before != NULL && file_is(gj, before, n),
		   "the group's zarr.json is untouched");
		free(before);
		free(missing);
		free(gj);
	}

	/* As the group is now: cam0 overwritten, a child group, a
	 * directory of the user's files and one beside the arrays. */
	if (keep_dir != NULL)
		keep(keep_dir, jobs);
	for (int i = 0; i < ARRAYS; i++)
		free(jobs[i].input);
	free(p);
	free(q);
	free(root);
	free(twins);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
