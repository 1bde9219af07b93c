/*
 * run.c - one `shardpipe bench` measurement: the pattern appended in
 * spans, the runs and their bounds alternated, the fastest of each kept,
 * and the memory and append latency of the runs sampled as they go.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* Latencies recorded per run at most; p50/p99/max are of these. */
#define LAT_MAX (1u << 24)

static int fail(struct bench_result *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct bench_result *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	return rc;
}

/* Resident memory of this process, current and peak, from /proc. */
static void rss_read(uint64_t *rss, uint64_t *hwm)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];

	*rss = *hwm = 0;
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long kb;

		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			*rss = kb * 1024;
		else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			*hwm = kb * 1024;
	}
	fclose(f);
}

/* Restart the peak (Linux 4.0+: "5" resets VmHWM to the current RSS).
 * Returns 0 when the kernel did. */
static int rss_reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	int rc;

	if (f == NULL)
		return -1;
	rc = fputs("5", f) < 0;
	rc |= fclose(f) != 0;
	return rc ? -1 : 0;
}

static uint64_t tree_bytes;

static int add_size(const char *p, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)p;
	(void)ftw;
	if (flag == FTW_F)
		tree_bytes += (uint64_t)sb->st_size;
	return 0;
}

uint64_t bench_store_bytes(const char *path)
{
	tree_bytes = 0;
	if (nftw(path, add_size, 16, FTW_PHYS) != 0)
		return 0;
	return tree_bytes;
}

/* The sink of a run without --output: counts the shards it is given,
 * every level's, taking the chunks as they lie (object), so that nothing
 * is copied for it, and the levels by their zarr.json ("2/zarr.json"). */
struct counter {
	uint64_t shards, bytes;
	int levels;
};

static int count_object(void *user, const char *key,
			const shardpipe_part *parts, size_t nparts)
{
	struct counter *c = user;
	char *end;
	long level = strtol(key, &end, 10);

	if (end != key && strcmp(end, "/zarr.json") == 0 &&
	    level >= c->levels)
		c->levels = (int)level + 1;
	if (strncmp(key, "c/", 2) != 0 && strstr(key, "/c/") == NULL)
		return 0;
	c->shards++;
	for (size_t i = 0; i < nparts; i++)
		c->bytes += parts[i].bytes;
	return 0;
}

/* Every append's wall time in a run, up to cap of them. */
struct lat_log {
	double *t;
	uint64_t n, cap;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The nearest-rank percentile q of the n sorted times. */
static double rank_at(const double *t, uint64_t n, double q)
{
	uint64_t k = (uint64_t)(q * (double)n + 0.999999);

	return n == 0 ? 0 : t[(k ? k : 1) - 1];
}

static void latency_summarise(struct bench_latency *l, struct lat_log *log,
			      const shardpipe_stats *st)
{
	qsort(log->t, (size_t)log->n, sizeof(*log->t), cmp_double);
	l->n = log->n;
	l->p50 = rank_at(log->t, log->n, 0.50);
	l->p99 = rank_at(log->t, log->n, 0.99);
	l->max = log->n ? log->t[log->n - 1] : 0;
	l->blocked = st->appends_blocked;
	l->seconds_blocked = st->seconds_blocked;
}

/* Append `total` bytes of the repeated pattern in spans of `span` bytes;
 * sample the peak memory once two shard epochs are in and once half the
 * input is (hwm[0], hwm[1]): a peak that still grows after the first
 * shard epochs shows as a difference between them and the final one. */
static int append_all(shardpipe_stream *s, const struct bench_pattern *pat,
		      uint64_t total, uint64_t span, uint64_t early_bytes,
		      uint64_t hwm[2], struct lat_log *lat)
{
	const uint64_t period = pat->frames * pat->row_bytes;
	const uint64_t held = pat->rows * pat->row_bytes;
	uint64_t pos = 0;
	int rc = SHARDPIPE_OK, sampled = 0, mid = 0;

	while (pos < total && rc == SHARDPIPE_OK) {
		uint64_t at = pos % period, n = span;

		if (n > total - pos)
			n = total - pos;
		if (n > held - at)
			n = held - at;
		double t0;

		t0 = bench_now();
		rc = shardpipe_stream_append(s, pat->data + at, (size_t)n);
		if (lat->n < lat->cap)
			lat->t[lat->n++] = bench_now() - t0;
		pos += n;
		if (!sampled && pos >= early_bytes) {
			uint64_t rss;

			rss_read(&rss, &hwm[0]);
			sampled = 1;
		}
		if (!mid && pos >= total / 2) {
			uint64_t rss;

			rss_read(&rss, &hwm[1]);
			mid = 1;
		}
	}
	return rc;
}

/* What one run measured, before the fastest is chosen. */
struct run {
	double seconds, cpu_seconds;
	shardpipe_stats st;
	struct counter cnt;
};

/* A resumed run's store (resume_at): its first rows, written and closed
 * unbounded before the clock starts (a closed bounded array is full). */
static int write_before(struct bench_result *r, const struct bench_setup *su,
			const shardpipe_desc *desc,
			const struct bench_pattern *pat, struct lat_log *lat)
{
	shardpipe_desc d = *desc;
	shardpipe_stream *s;
	uint64_t scratch[2], n = lat->n;
	int rc, crc;

	d.dims[0].size = 0;
	d.overwrite = 1;
	rc = shardpipe_stream_open(&s, su->output, &d);
	if (rc != SHARDPIPE_OK)
		return fail(r, rc, "%s: %s", shardpipe_strerror(rc),
			    shardpipe_last_error_message());
	rc = append_all(s, pat, su->resume_at * pat->row_bytes, su->span,
			UINT64_MAX, scratch, lat);
	lat->n = n;
	crc = shardpipe_stream_close(s);
	if (rc == SHARDPIPE_OK)
		rc = crc;
	if (rc != SHARDPIPE_OK)
		return fail(r, rc, "the first %llu rows: %s: %s",
			    (unsigned long long)su->resume_at,
			    shardpipe_strerror(rc),
			    shardpipe_last_error_message());
	return SHARDPIPE_OK;
}

/*
 * Open the stream, append everything, flush and close, timing the whole.
 * The first run samples the memory peaks into hwm (the others into a
 * scratch pair, so that the first run's stay).
 */
static int run_once(struct bench_result *r, const struct bench_setup *su,
		    const shardpipe_desc *desc, const struct bench_pattern *pat,
		    int k, struct lat_log *lat, uint64_t hwm[2],
		    struct run *run)
{
	shardpipe_sink sink;
	shardpipe_desc cont;
	shardpipe_stream *s;
	uint64_t scratch[2];
	uint64_t early = 2 * r->desc.dims[0].chunk *
			 r->desc.dims[0].chunks_per_shard * pat->row_bytes;
	double t0, c0;
	int rc, crc;

	shardpipe_sink_init(&sink);
	sink.user = &run->cnt;
	sink.object = count_object;
	if (k > 0)
		r->desc.overwrite = 1;
	if (su->resume_at > 0) {
		rc = write_before(r, su, desc, pat, lat);
		if (rc != SHARDPIPE_OK)
			return rc;
		/* The store write_before made is continued, not replaced. */
		cont = *desc;
		cont.overwrite = 0;
	}
	t0 = bench_now();
	c0 = bench_cpu_seconds();
	rc = su->resume_at > 0 ? shardpipe_stream_reopen(&s, su->output, &cont)
	     : su->output != NULL ? shardpipe_stream_open(&s, su->output, desc)
				  : shardpipe_stream_open_sink(&s, &sink, desc);
	if (rc != SHARDPIPE_OK)
		return fail(r, rc, "%s: %s", shardpipe_strerror(rc),
			    shardpipe_last_error_message());
	if (su->resume_at > 0) {
		double t = bench_now() - t0;

		if (k == 0 || t < r->reopen_seconds)
			r->reopen_seconds = t;
	}
	r->backend = shardpipe_stream_backend(s);
	lat->n = 0;
	rc = append_all(s, pat, r->bytes_in, su->span, early,
			k == 0 ? hwm : scratch, lat);
	/* Stats cover every complete shard epoch once flushed; close adds
	 * only the partial last one and the final zarr.json. */
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_flush(s);
	shardpipe_stream_stats(s, &run->st);
	if (rc != SHARDPIPE_OK)
		fail(r, rc, "%s: %s", shardpipe_strerror(rc),
		     shardpipe_stream_message(s));
	crc = shardpipe_stream_close(s);
	run->seconds = bench_now() - t0;
	run->cpu_seconds = bench_cpu_seconds() - c0;
	if (rc == SHARDPIPE_OK && crc != SHARDPIPE_OK)
		rc = fail(r, crc, "%s: %s", shardpipe_strerror(crc),
			  shardpipe_last_error_message());
	return rc;
}

/* Keep the fastest run's times, statistics and latencies; the first run's
 * memory (before any bound's sample adds its own); the last run's output
 * size. */
static void run_record(struct bench_result *r, int k, struct run *run,
		       struct lat_log *lat, const uint64_t hwm_early[2])
{
	if (k == 0 || run->seconds < r->seconds) {
		r->seconds = run->seconds;
		r->cpu_seconds = run->cpu_seconds;
		r->st = run->st;
		latency_summarise(&r->lat, lat, &run->st);
	}
	if (k == 0) {
		uint64_t rss, hwm;

		rss_read(&rss, &hwm);
		r->rss_peak = hwm > r->rss_base ? hwm - r->rss_base : 0;
		r->rss_early = hwm_early[0] > r->rss_base ?
				       hwm_early[0] - r->rss_base : 0;
		r->rss_mid = hwm_early[1] > r->rss_base ?
				     hwm_early[1] - r->rss_base : 0;
	}
	if (r->output != NULL) {
		/* A store without files (s3://): what the stream counted. */
		r->bytes_out = bench_store_bytes(r->output);
		if (r->bytes_out == 0)
			r->bytes_out = run->st.bytes_out;
		r->shards = run->st.shards_written;
	} else {
		r->bytes_out = run->cnt.bytes;
		r->shards = run->cnt.shards;
	}
}

static int bound_once(struct bench_result *r, const struct bench_setup *su,
		      const struct bench_pattern *pat)
{
	struct bench_bound bb;
	int rc;

	if (!su->quiet)
		fprintf(stderr, "measuring the compress-only bound...\n");
	rc = bench_bound_run(pat, &r->desc, r->rows, r->threads, r->bytes_in,
			     512u << 20, &bb, r->message, sizeof(r->message));
	if (rc != SHARDPIPE_OK)
		return rc;
	if (!r->have_bound || bb.seconds < r->bound.seconds)
		r->bound = bb;
	r->have_bound = 1;
	return SHARDPIPE_OK;
}

static int remove_entry(const char *p, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/*
 * The same input without the pyramid, after the pyramid's run: its time
 * only (the report's other figures are the pyramid's).  With --output it
 * goes to a temporary directory beside DIR, on DIR's file system, removed
 * after, so that DIR keeps the pyramid asked for.
 */
static int plain_once(struct bench_result *r, const struct bench_setup *su,
		      const struct bench_pattern *pat, struct lat_log *lat)
{
	shardpipe_desc d = r->desc;
	struct bench_setup ps = *su;
	struct run run = { 0 };
	uint64_t scratch[2];
	char dir[4096];
	int rc;

	d.downsample = 0;
	d.ngff = 0;
	d.max_levels = 0;
	d.append_method = -1;
	d.overwrite = 1;
	if (su->output != NULL) {
		char parent[4096];

		snprintf(parent, sizeof(parent), "%s", su->output);
		snprintf(dir, sizeof(dir), "%s/.shardpipe-bench-XXXXXX",
			 dirname(parent));
		if (mkdtemp(dir) == NULL)
			return fail(r, SHARDPIPE_ERR_IO, "%s: %s", dir,
				    strerror(errno));
		strcat(dir, "/plain.zarr");
		ps.output = dir;
		d.overwrite = 0;
	}
	rc = run_once(r, &ps, &d, pat, 1, lat, scratch, &run);
	if (su->output != NULL) {
		*strrchr(dir, '/') = '\0';
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (rc != SHARDPIPE_OK)
		return rc;
	if (r->plain_seconds == 0 || run.seconds < r->plain_seconds) {
		r->plain_seconds = run.seconds;
		r->plain_cpu_seconds = run.cpu_seconds;
	}
	r->plain_pool_bytes = run.st.pool_bytes;
	return SHARDPIPE_OK;
}

static int pyramid_of(const shardpipe_desc *d)
{
	return d->downsample != 0 || d->ngff != 0;
}

/* The number of levels the store at path holds (0: one array). */
static int levels_of(const char *path)
{
	shardpipe_reader *rd;
	shardpipe_array_info info;

	if (shardpipe_reader_open(&rd, path) != SHARDPIPE_OK)
		return 0;
	shardpipe_reader_info(rd, &info);
	shardpipe_reader_close(rd);
	return info.levels;
}

/*
 * The compress-only bound of a pyramid's coarser levels: each level the
 * first run wrote, read back from its store (its first rows, which repeat
 * as the input's pattern does), and the bound run over its chunks with the
 * array's codec on the same threads; its rate, applied to all of the
 * level's bytes, gives the level's least time.
 */
static int levels_bound(struct bench_result *r, const struct bench_setup *su)
{
	for (int l = 1; l < r->levels; l++) {
		char path[4200];
		shardpipe_reader *rd;
		shardpipe_array_info in;
		struct bench_pattern lp = { 0 };
		struct bench_bound bb;
		shardpipe_desc d = r->desc;
		uint64_t start[SHARDPIPE_MAX_RANK] = { 0 };
		uint64_t count[SHARDPIPE_MAX_RANK], bytes;
		int rc;

		snprintf(path, sizeof(path), "%s/%d", su->output, l);
		if (shardpipe_reader_open(&rd, path) != SHARDPIPE_OK)
			return fail(r, SHARDPIPE_ERR_IO, "level %d: %s", l,
				    shardpipe_last_error_message());
		shardpipe_reader_info(rd, &in);
		lp.fill = su->fill;
		lp.rank = in.rank;
		lp.dtype = in.dtype;
		lp.esize = shardpipe_dtype_size(in.dtype);
		lp.row_bytes = lp.esize;
		for (int k = 1; k < in.rank; k++) {
			lp.size[k] = in.shape[k];
			lp.row_bytes *= (size_t)in.shape[k];
			count[k] = in.shape[k];
		}
		/* Enough rows for the input's period through every chunk. */
		lp.frames = in.shape[0] < 4 * in.chunk[0] * su->frames
				    ? in.shape[0]
				    : 4 * in.chunk[0] * su->frames;
		while (lp.frames > in.chunk[0] &&
		       lp.frames * lp.row_bytes > ((uint64_t)256 << 20))
			lp.frames /= 2;
		lp.rows = lp.frames;
		count[0] = lp.frames;
		lp.data = malloc(lp.frames * lp.row_bytes);
		rc = lp.data == NULL ? SHARDPIPE_ERR_NOMEM
				     : shardpipe_reader_read(rd, start, count,
							     lp.data,
							     lp.frames *
								     lp.row_bytes);
		shardpipe_reader_close(rd);
		for (int k = 0; k < in.rank; k++) {
			d.dims[k].size = in.shape[k];
			d.dims[k].chunk = in.chunk[k];
		}
		bytes = in.shape[0] * lp.row_bytes;
		if (rc == SHARDPIPE_OK)
			rc = bench_bound_run(&lp, &d, in.shape[0], r->threads,
					     bytes, 512u << 20, &bb, r->message,
					     sizeof(r->message));
		else
			fail(r, rc, "level %d: reading it back: %s", l,
			     shardpipe_last_error_message());
		free(lp.data);
		if (rc != SHARDPIPE_OK)
			return rc;
		r->levels_bytes += bytes;
		r->levels_bound_seconds +=
			bb.seconds * (double)bytes / (double)bb.bytes;
		r->levels_bound_cpu_seconds +=
			bb.cpu_seconds * (double)bytes / (double)bb.bytes;
	}
	return SHARDPIPE_OK;
}

/* The runs and their bounds, with the pattern generated. */
static int measure(struct bench_result *r, const struct bench_setup *su,
		   const struct bench_pattern *pat)
{
	struct lat_log lat = { 0 };
	uint64_t hwm, hwm_early[2] = { 0, 0 };
	int rc = SHARDPIPE_OK;

	lat.cap = (r->bytes_in + su->span - 1) / su->span;
	if (lat.cap > LAT_MAX)
		lat.cap = LAT_MAX;
	lat.t = malloc((size_t)(lat.cap ? lat.cap : 1) * sizeof(*lat.t));
	if (lat.t == NULL)
		return fail(r, SHARDPIPE_ERR_NOMEM,
			    "out of memory for append latencies");

	/* Memory is measured from here: the pattern is resident and counted
	 * in the baseline, not in the stream's peak. */
	rss_reset_peak();
	rss_read(&r->rss_base, &hwm);
	/* Runs and bounds alternate, and the fastest of each counts: on a
	 * shared machine that pairs figures taken under similar load. */
	for (int k = 0; k < su->repeat && rc == SHARDPIPE_OK; k++) {
		struct run run = { 0 };

		if (k > 0)
			r->desc.overwrite = 1;
		rc = run_once(r, su, &r->desc, pat, k, &lat, hwm_early, &run);
		if (rc != SHARDPIPE_OK)
			break;
		run_record(r, k, &run, &lat, hwm_early);
		if (k == 0 && pyramid_of(&r->desc))
			r->levels = su->output != NULL ? levels_of(su->output)
						       : run.cnt.levels;
		if (k == 0 && su->bound && r->levels > 1 &&
		    su->output != NULL)
			rc = levels_bound(r, su);
		if (pyramid_of(&r->desc))
			rc = plain_once(r, su, pat, &lat);
		if (su->bound && rc == SHARDPIPE_OK)
			rc = bound_once(r, su, pat);
	}
	free(lat.t);
	if (rc != SHARDPIPE_OK)
		return rc;
	/* What scatter is held against: memcpy of 256 MiB of the pattern
	 * (more than a last-level cache holds, as staging is) on the same
	 * threads, in this process, now. */
	r->memcpy_gbps = bench_memcpy_gbps(pat->data, r->pattern_bytes,
					   (uint64_t)256 << 20, r->threads);
	return SHARDPIPE_OK;
}

/*
 * A pyramid's levels' bound without --output: the levels are read back
 * from a store, so a first run, untimed, writes one in a temporary
 * directory, removed after; the timed runs then go to the sink.
 */
static int levels_probe(struct bench_result *r, struct bench_setup *su,
			const struct bench_pattern *pat)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096];
	double t;
	struct lat_log lat = { &t, 0, 1 };
	struct run run = { 0 };
	uint64_t scratch[2];
	int rc;

	snprintf(dir, sizeof(dir), "%s/shardpipe-bench-XXXXXX",
		 tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return fail(r, SHARDPIPE_ERR_IO, "%s: %s", dir, strerror(errno));
	strcat(dir, "/image.zarr");
	if (!su->quiet)
		fprintf(stderr, "writing the levels once to %s for their "
			"bound...\n", dir);
	su->output = dir;
	rc = run_once(r, su, &r->desc, pat, 1, &lat, scratch, &run);
	if (rc == SHARDPIPE_OK) {
		r->levels = levels_of(dir);
		rc = levels_bound(r, su);
	}
	su->output = NULL;
	r->desc.overwrite = 0;
	*strrchr(dir, '/') = '\0';
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}

int bench_run(const struct bench_setup *setup, struct bench_result *r)
{
	struct bench_setup su = *setup;
	struct bench_pattern pat;
	const char *fill_name = bench_fill_name(su.fill);
	int rc;

	memset(r, 0, sizeof(*r));
	r->workload = su.workload;
	r->fill = fill_name;
	r->codec_text = su.codec_text;
	r->output = su.output;
	r->desc = su.desc;
	r->rows = su.rows - su.resume_at;
	r->repeat = su.repeat;
	r->threads = su.desc.threads > 0 ? su.desc.threads
					 : (int)sysconf(_SC_NPROCESSORS_ONLN);
	/* Micro is the realistic fill: never let a chunk see a frame twice
	 * (a stack's 64-row chunks would otherwise compress as repeats). */
	if (su.frames == 0) {
		su.frames = bench_fill_frames(su.fill);
		if (su.fill == FILL_MICRO && su.frames < su.desc.dims[0].chunk)
			su.frames = su.desc.dims[0].chunk;
	}
	if (!su.quiet)
		fprintf(stderr, "generating %llu distinct rows of fill %s...\n",
			(unsigned long long)su.frames, fill_name);
	/* The pattern is made before any stream checks the shape. */
	rc = bench_pattern_make(&pat, su.fill, &su.desc, su.frames);
	if (rc == SHARDPIPE_ERR_INVALID_ARGUMENT)
		return fail(r, rc, "%llu rows (--frames) of the shape's dims "
			    "after the first do not fit in this machine's "
			    "memory sizes", (unsigned long long)su.frames);
	if (rc != SHARDPIPE_OK)
		return fail(r, rc, "out of memory for the %s pattern",
			    fill_name);
	r->pattern_bytes = su.frames * pat.row_bytes;
	/* A resumed run appends the rows after resume_at. */
	r->resume_at = su.resume_at;
	r->bytes_in = (su.rows - su.resume_at) * pat.row_bytes;
	if (su.span == 0)
		su.span = pat.row_bytes;
	if (su.span > r->bytes_in)
		su.span = r->bytes_in;
	/* A span longer than a row may start anywhere in the period: hold
	 * the rows it may reach past it, so that every append is one call. */
	if (su.span > pat.row_bytes &&
	    bench_pattern_hold(&pat, su.frames + (su.span + pat.row_bytes - 1) /
							 pat.row_bytes) != 0) {
		bench_pattern_free(&pat);
		return fail(r, SHARDPIPE_ERR_NOMEM,
			    "out of memory for spans of %llu bytes of the "
			    "pattern", (unsigned long long)su.span);
	}
	r->lat.span = su.span;
	rc = pyramid_of(&su.desc) && su.output == NULL && su.bound ?
		     levels_probe(r, &su, &pat) : SHARDPIPE_OK;
	if (rc == SHARDPIPE_OK)
		rc = measure(r, &su, &pat);
	bench_pattern_free(&pat);
	return rc;
}
