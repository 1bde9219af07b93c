/*
 * trace.c - SHARDPIPE_TRACE (doc/design.md §23): a file that is neither
 * absent nor a trace is refused and left as it was, as is a path that
 * cannot be created, and no store is created then; a trace of an earlier
 * process is replaced; streams of one process add to one file.  The file
 * parses as JSON (the library's strict RFC 8259 parser, which knows nothing
 * of traces), every batch has every span its backend should give, every
 * shard epoch its write and zarr.json, on cpu, reference and (with a
 * device) opencl; each store reads back.  On opencl, batch k+1's upload
 * starts before batch k's fetch ends for at least 90% of batches: the
 * overlap of doc/design.md §14.4, on the device's own clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json.h"
#include "plan.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

/* 2-d uint16, unbounded: an epoch of 1024 chunks is a batch of its own
 * (the plan caps a batch at 1024 chunks), so ROWS rows give ROWS batches;
 * 2 rows a shard epoch. */
#define ROWS 24
#define D1 256
#define D2 512
#define CPS0 2

#define HEAD "{\"otherData\":{\"writer\":\"shardpipe trace\"},\"traceEvents\":["

static void describe(shardpipe_desc *d, const char *backend)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = SHARDPIPE_CODEC_ZSTD;
	d->level = 1;
	d->backend = backend;
	d->write_empty_chunks = 1;
	d->dims[0].size = 0;
	d->dims[0].chunk = 1;
	d->dims[0].chunks_per_shard = CPS0;
	d->dims[1].size = D1;
	d->dims[1].chunk = 8;
	d->dims[1].chunks_per_shard = 32;
	d->dims[2].size = D2;
	d->dims[2].chunk = 16;
	d->dims[2].chunks_per_shard = 32;
}

/* Batches a stream of `rows` rows runs, from the plan's batch size. */
static uint64_t batches_of(const shardpipe_desc *d, uint64_t rows)
{
	struct plan p;
	struct sp_err err;
	uint64_t epochs = rows / d->dims[0].chunk, k;

	if (plan_init(&p, d, &err) != SHARDPIPE_OK)
		bail("plan: %s", err.msg);
	k = p.K;
	plan_free(&p);
	return (epochs + k - 1) / k;
}

/* ------------------------------------------------------------ reading */

struct span {
	const char *name;
	int tid;
	uint64_t n;         /* batch or shard epoch */
	int of_batch;       /* n is a batch (else a shard epoch) */
	double t0, t1;      /* microseconds */
};

struct trace {
	struct json_doc *doc;
	struct span *spans;
	size_t nspans;
	int valid;          /* parsed, with the header's writer */
	int bad_span;       /* an "X" event missing a field, or dur < 0 */
};

static const struct json_value *member(const struct json_value *v,
				       const char *key)
{
	return v != NULL ? json_get(v, key) : NULL;
}

static int number(const struct json_value *v, double *out)
{
	if (v == NULL || v->type != JSON_NUMBER)
		return 0;
	*out = v->num;
	return 1;
}

static void read_trace(const char *path, struct trace *t)
{
	struct json_error jerr;
	const struct json_value *root, *ev, *e;
	size_t n = 0, i = 0;
	char *text = test_slurp(path, &n);

	memset(t, 0, sizeof(*t));
	if (text == NULL) {
		diag("%s: cannot read", path);
		return;
	}
	t->doc = json_parse(text, n, NULL, &jerr);
	free(text);
	if (t->doc == NULL) {
		diag("%s:%d:%d: %s", path, jerr.line, jerr.col, jerr.msg);
		return;
	}
	root = json_root(t->doc);
	ev = member(root, "traceEvents");
	t->valid = ev != NULL && ev->type == JSON_ARRAY &&
		   json_is_str(member(member(root, "otherData"), "writer"),
			       "shardpipe trace");
	if (!t->valid)
		return;
	t->spans = test_xmalloc(ev->len * sizeof(*t->spans));
	for (e = ev->child; e != NULL; e = e->next, i++) {
		const struct json_value *args = member(e, "args");
		const struct json_value *b = member(args, "batch");
		const struct json_value *se = member(args, "shard epoch");
		struct span *s = &t->spans[t->nspans];
		double tid, ts, dur, pid;

		if (!json_is_str(member(e, "ph"), "X"))
			continue;
		if (member(e, "name") == NULL ||
		    member(e, "name")->type != JSON_STRING ||
		    !number(member(e, "tid"), &tid) ||
		    !number(member(e, "pid"), &pid) ||
		    !number(member(e, "ts"), &ts) ||
		    !number(member(e, "dur"), &dur) || dur < 0) {
			t->bad_span = 1;
			continue;
		}
		s->name = member(e, "name")->str;
		s->tid = (int)pid * 100 + (int)tid;
		s->of_batch = b != NULL;
		s->n = b != NULL ? b->u : se != NULL ? se->u : UINT64_MAX;
		s->t0 = ts;
		s->t1 = ts + dur;
		t->nspans++;
	}
}

/* The pid of the stream whose process name starts with prefix, or -1. */
static int stream_pid(const struct trace *t, const char *prefix)
{
	const struct json_value *e;

	for (e = member(json_root(t->doc), "traceEvents")->child; e != NULL;
	     e = e->next) {
		const struct json_value *name = member(member(e, "args"),
						       "name");
		double pid;

		if (json_is_str(member(e, "name"), "process_name") &&
		    name != NULL && name->type == JSON_STRING &&
		    strncmp(name->str, prefix, strlen(prefix)) == 0 &&
		    number(member(e, "pid"), &pid))
			return (int)pid;
	}
	return -1;
}

static int in_stream(const struct span *s, int pid)
{
	return s->tid / 100 == pid;
}

/* The first of `n` units (batches or shard epochs) of stream pid without a
 * span named `name`, or n when each has one. */
static uint64_t first_missing(const struct trace *t, int pid,
			      const char *name, int of_batch, uint64_t n)
{
	uint8_t *seen = calloc(n ? n : 1, 1);
	uint64_t u;

	for (size_t i = 0; i < t->nspans; i++) {
		const struct span *s = &t->spans[i];

		if (in_stream(s, pid) && s->of_batch == of_batch &&
		    s->n < n && strcmp(s->name, name) == 0)
			seen[s->n] = 1;
	}
	for (u = 0; u < n && seen[u]; u++)
		;
	free(seen);
	return u;
}

/* Start of batch k's upload and end of its fetch, in microseconds. */
static void batch_times(const struct trace *t, int pid, uint64_t k,
			double *upload, double *fetched)
{
	*upload = -1;
	*fetched = -1;
	for (size_t i = 0; i < t->nspans; i++) {
		const struct span *s = &t->spans[i];

		if (!in_stream(s, pid) || !s->of_batch || s->n != k)
			continue;
		if (strcmp(s->name, "upload") == 0)
			*upload = s->t0;
		if ((strcmp(s->name, "fetch") == 0 ||
		     strcmp(s->name, "download chunks") == 0) &&
		    s->t1 > *fetched)
			*fetched = s->t1;
	}
}

static void free_trace(struct trace *t)
{
	json_free(t->doc);
	free(t->spans);
}

/* ----------------------------------------------------------- the runs */

static const char *const kernel_spans[] = {
	"submit", "scatter", "compress", "aggregate", "fetch", "shard index",
	"upload", "sp_scatter", "sp_codec_zstd", "sp_agg_permute",
	"sp_agg_scan", "sp_agg_gather", "download offsets", "download chunks",
};
static const char *const cpu_spans[] = { "run batch" };

/* Write ROWS rows on `backend` with the trace on, in spans of random
 * sizes below half a batch (so every batch is staged, none handed over
 * whole); 1 if the store reads back. */
static int write_traced(const char *tmp, const char *backend,
			const uint8_t *data, size_t n, uint64_t seed)
{
	shardpipe_desc d;
	shardpipe_stream *s;
	char dir[600];
	uint64_t rng = seed;
	size_t at = 0;
	int rc;

	describe(&d, backend);
	snprintf(dir, sizeof(dir), "%s/%s.zarr", tmp, backend);
	rc = shardpipe_stream_open(&s, dir, &d);
	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", backend, shardpipe_last_error_message());
		return 0;
	}
	while (at < n && rc == SHARDPIPE_OK) {
		size_t span = 1 + test_rand(&rng) % (D1 * D2);

		if (span > n - at)
			span = n - at;
		rc = shardpipe_stream_append(s, data + at, span);
		at += span;
	}
	if (rc != SHARDPIPE_OK)
		diag("append %s: %s", backend, shardpipe_stream_message(s));
	if (shardpipe_stream_close(s) != SHARDPIPE_OK) {
		diag("close %s: %s", backend, shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc == SHARDPIPE_OK && test_reads_back(dir, ROWS, data, n);
}

static void check_stream(const struct trace *t, const char *backend)
{
	shardpipe_desc d;
	char prefix[64];
	int pid, kernel = strcmp(backend, "cpu") != 0;
	uint64_t batches, epochs = ROWS / CPS0, u;
	const char *const *names = kernel ? kernel_spans : cpu_spans;
	size_t nnames = kernel ? sizeof(kernel_spans) / sizeof(*names)
			       : sizeof(cpu_spans) / sizeof(*names);

	describe(&d, backend);
	batches = batches_of(&d, ROWS);
	snprintf(prefix, sizeof(prefix), "shardpipe %s -> ", backend);
	pid = stream_pid(t, prefix);
	if (!ok(pid > 0, "%s: the stream is named in the trace", backend)) {
		skip(3, "no stream");
		return;
	}
	for (size_t i = 0; i < nnames; i++) {
		u = first_missing(t, pid, names[i], 1, batches);
		if (u < batches)
			break;
	}
	ok(u == batches, "%s: each of %llu batches has every one of %zu "
	   "spans", backend, (unsigned long long)batches, nnames);
	if (u < batches)
		for (size_t i = 0; i < nnames; i++)
			if (first_missing(t, pid, names[i], 1, batches) <
			    batches)
				diag("batch %llu has no %s",
				     (unsigned long long)first_missing(
					     t, pid, names[i], 1, batches),
				     names[i]);
	ok(first_missing(t, pid, "shard write", 0, epochs) == epochs &&
		   first_missing(t, pid, "zarr.json", 0, epochs) == epochs,
	   "%s: each of %llu shard epochs has its shard write and zarr.json",
	   backend, (unsigned long long)epochs);
	ok(first_missing(t, pid, "stage", 1, batches) == batches,
	   "%s: the caller's staging of every batch is traced", backend);
}

/* On a kernel backend with a device: how often batch k+1's upload
 * starts before batch k is fetched. */
static void check_overlap(const struct trace *t, const char *backend)
{
	shardpipe_desc d;
	char prefix[64];
	uint64_t batches, pairs = 0, overlapped = 0;
	int pid;

	describe(&d, backend);
	batches = batches_of(&d, ROWS);
	snprintf(prefix, sizeof(prefix), "shardpipe %s -> ", backend);
	pid = stream_pid(t, prefix);
	for (uint64_t k = 0; pid > 0 && k + 1 < batches; k++) {
		double up, done, up_next, done_next;

		batch_times(t, pid, k, &up, &done);
		batch_times(t, pid, k + 1, &up_next, &done_next);
		pairs++;
		overlapped += up_next >= 0 && done >= 0 && up_next < done;
	}
	diag("%s: batch k+1's upload started before batch k's fetch ended "
	     "for %llu of %llu batches", backend,
	     (unsigned long long)overlapped, (unsigned long long)pairs);
	ok(pairs > 0 && overlapped * 10 >= pairs * 9,
	   "%s: batches overlap (%llu of %llu, at least 90%%)", backend,
	   (unsigned long long)overlapped, (unsigned long long)pairs);
}

/* Opening a stream on tmp/NAME.zarr with the trace at path fails with
 * code, naming the path, and creates no store. */
static void refused(const char *tmp, const char *path, int code,
		    const char *what)
{
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	char dir[600];
	struct stat st;
	int rc;

	describe(&d, "cpu");
	snprintf(dir, sizeof(dir), "%s/refused.zarr", tmp);
	setenv("SHARDPIPE_TRACE", path, 1);
	rc = shardpipe_stream_open(&s, dir, &d);
	if (!is_int(rc, code, "%s: refused with %s", what,
		    shardpipe_strerror(code)) && s != NULL)
		shardpipe_stream_close(s);
	ok(strstr(shardpipe_last_error_message(), path) != NULL,
	   "%s: the message names the file", what);
	ok(stat(dir, &st) != 0 && errno == ENOENT,
	   "%s: no store is created", what);
	unsetenv("SHARDPIPE_TRACE");
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	char *tmp = test_tmpdir("trace");
	char path[600], other[600], why[256];
	const char *mine = "user data, not a trace\n";
	size_t n = (size_t)ROWS * D1 * D2 * 2, got;
	uint8_t *data = test_xmalloc(n);
	struct trace t;
	char *text;
	/* A built opencl may be skipped only without a device. */
	int ocl = test_backend_usable("opencl", why, sizeof(why));

	plan_lazy();
	diag("seed %llu (SHARDPIPE_TEST_SEED)", (unsigned long long)seed);
	test_fill(data, n, 3, &rng);

	/* Refusals, before any trace of this process exists. */
	snprintf(other, sizeof(other), "%s/notes.txt", tmp);
	{
		FILE *f = fopen(other, "w");

		if (f == NULL || fputs(mine, f) < 0 || fclose(f) != 0)
			bail("cannot write %s", other);
	}
	refused(tmp, other, SHARDPIPE_ERR_EXISTS,
		"an existing file that is not a trace");
	text = test_slurp(other, &got);
	ok(text != NULL && got == strlen(mine) && memcmp(text, mine, got) == 0,
	   "the file that is not a trace is left as it was");
	free(text);
	snprintf(other, sizeof(other), "%s/no/such/dir/t.json", tmp);
	refused(tmp, other, SHARDPIPE_ERR_IO, "a trace in a missing directory");
	refused(tmp, tmp, SHARDPIPE_ERR_IO, "a trace path that is a directory");

	/* A trace left by an earlier process is replaced, not added to. */
	snprintf(path, sizeof(path), "%s/trace.json", tmp);
	{
		FILE *f = fopen(path, "w");

		if (f == NULL ||
		    fputs(HEAD "\n{\"name\":\"old\",\"ph\":\"X\",\"pid\":9,"
			       "\"tid\":1,\"ts\":0,\"dur\":1}\n]}\n", f) < 0 ||
		    fclose(f) != 0)
			bail("cannot write %s", path);
	}
	setenv("SHARDPIPE_TRACE", path, 1);
	ok(write_traced(tmp, "cpu", data, n, seed), "cpu: the store reads back");
	ok(write_traced(tmp, "reference", data, n, seed),
	   "reference: the store reads back");
	if (ocl)
		ok(write_traced(tmp, "opencl", data, n, seed),
		   "opencl: the store reads back");
	unsetenv("SHARDPIPE_TRACE");

	read_trace(path, &t);
	if (!ok(t.valid, "the trace parses as JSON with its writer named"))
		bail("no trace to check");
	ok(!t.bad_span, "every span has a name, pid, tid, ts and dur >= 0");
	{
		size_t old = 0;

		for (size_t i = 0; i < t.nspans; i++)
			old += strcmp(t.spans[i].name, "old") == 0;
		ok(old == 0, "the earlier process's trace was replaced");
	}
	check_stream(&t, "cpu");
	check_stream(&t, "reference");
	if (ocl) {
		check_stream(&t, "opencl");
		check_overlap(&t, "opencl");
	} else {
		skip(5, "opencl: %s", why);
	}
	free_trace(&t);
	free(data);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
