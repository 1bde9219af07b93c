/*
 * bench.c - shardpipe bench: stream a named workload (or any geometry)
 * filled with a repeated pattern through the library, and report
 * end-to-end and per-stage throughput, compression ratio, peak memory
 * against the planned pools, and, with --bound, the pipeline's throughput
 * as a fraction of compressing the same chunks and nothing else.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

struct workload {
	const char *name, *shape, *chunk, *shard, *names;
};

/* The workloads; all uint16 unless --dtype says otherwise. */
static const struct workload workloads[] = {
	{ "cube", "40,256,256,256,3", "4,32,64,64,1", "2,2,2,2,3", "t,z,y,x,c" },
	{ "frames", "200,2,2048,2304", "1,1,512,576", "1,1,4,4", "t,c,y,x" },
	{ "stack", "1024,2048,2048", "64,64,64", "1,16,16", "z,y,x" },
};

static void bench_usage(FILE *f)
{
	fprintf(f,
		"usage: shardpipe bench [cube|frames|stack] [--fill F] "
		"[--codec C] [--dtype T]\n"
		"         [--shape S --chunk C --shard N] [--names A,B,..] "
		"[--index-location L]\n"
		"         [--rows N] [--unbounded] [--span BYTES] [--frames N] "
		"[--threads N] [--backend B]\n"
		"         [--output DIR [--overwrite]] [--bound] [--repeat N] "
		"[--json]\n\n"
		"Streams a workload through the library and reports "
		"throughput per stage.\n"
		"  cube      t,z,y,x,c = 40,256,256,256,3, chunk 4,32,64,64,1, "
		"shard 2,2,2,2,3\n"
		"  frames    t,c,y,x = 200,2,2048,2304, chunk 1,1,512,576, "
		"shard 1,1,4,4 (default)\n"
		"  stack     z,y,x = 1024,2048,2048, chunk 64,64,64, "
		"shard 1,16,16\n"
		"  --fill F        micro (default: blobs and shot noise), "
		"noise12 (uniform 12-bit),\n"
		"                  xor (XOR of the coordinates), zeros\n"
		"  --codec C       any codec write takes: none, zstd[:LEVEL], "
		"gzip[:LEVEL],\n"
		"                  blosc:CNAME:LEVEL:SHUFFLE (e.g. "
		"blosc:zstd:1:shuffle); default zstd:1\n"
		"  --dtype T       element type (default uint16)\n"
		"  --shape, --chunk, --shard, --names, --index-location\n"
		"                  any other geometry, as for write\n"
		"  --fill-value, --write-empty-chunks, --durable\n"
		"                  as for write (--durable needs --output)\n"
		"  --rows N        append N rows of dim 0 (default: the "
		"workload's size)\n"
		"  --unbounded     declare dim 0 unbounded (size 0)\n"
		"  --span BYTES    bytes per append (default one dim-0 row)\n"
		"  --frames N      distinct rows in the pattern (default: "
		"micro 4, or one chunk's\n"
		"                  depth along dim 0 if more; noise12 and xor "
		"16)\n"
		"  --output DIR    write a real store, a directory or "
		"s3://BUCKET/PREFIX (default:\n"
		"                  a sink that counts and discards)\n"
		"  --overwrite     replace a store already at DIR\n"
		"  --bound         also compress the same chunks with the "
		"same codec, level and\n"
		"                  threads and nothing else, and report the "
		"fraction of that\n"
		"  --repeat N      run N times, each run followed by its bound, "
		"and report the\n"
		"                  fastest of each (1..100, default 1)\n"
		"  --json          one JSON object on stdout instead of the "
		"table\n");
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

struct counter {
	uint64_t shards, bytes;
};

static int count_shard(void *user, const uint64_t *coords, int rank,
		       const void *data, size_t data_bytes, const void *index,
		       size_t index_bytes)
{
	struct counter *c = user;

	(void)coords;
	(void)rank;
	(void)data;
	(void)index;
	c->shards++;
	c->bytes += data_bytes + index_bytes;
	return 0;
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

static double gb(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes / 1e9 / s : 0;
}

static void json_list(const char *key, const shardpipe_desc *d, int which)
{
	printf("\"%s\": [", key);
	for (int k = 0; k < d->rank; k++) {
		const shardpipe_dim *dim = &d->dims[k];
		uint64_t v = which == 0 ? dim->size :
			     which == 1 ? dim->chunk : dim->chunks_per_shard;

		printf("%s%llu", k ? ", " : "", (unsigned long long)v);
	}
	printf("], ");
}

/*
 * Per-append latency of one run: every append's wall time (up to
 * LAT_MAX of them), and from the library the appends that waited for the
 * pipeline.  p50/p99/max are of the recorded ones.
 */
#define LAT_MAX (1u << 24)
struct latency {
	double *t;
	uint64_t n, cap, span;
	double p50, p99, max;
	uint64_t blocked;
	double seconds_blocked;
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

static void latency_summarise(struct latency *l, const shardpipe_stats *st)
{
	qsort(l->t, (size_t)l->n, sizeof(*l->t), cmp_double);
	l->p50 = rank_at(l->t, l->n, 0.50);
	l->p99 = rank_at(l->t, l->n, 0.99);
	l->max = l->n ? l->t[l->n - 1] : 0;
	l->blocked = st->appends_blocked;
	l->seconds_blocked = st->seconds_blocked;
}

static void latency_text(const struct latency *l)
{
	printf("  latency    append p50 %.3f ms, p99 %.3f ms, max %.3f ms "
	       "over %llu appends of %llu bytes\n",
	       1e3 * l->p50, 1e3 * l->p99, 1e3 * l->max,
	       (unsigned long long)l->n, (unsigned long long)l->span);
	printf("  blocked    %llu appends waited for the pipeline, %.3f s "
	       "in all\n",
	       (unsigned long long)l->blocked, l->seconds_blocked);
}

static void latency_json(const struct latency *l)
{
	printf(", \"append_latency\": {\"appends\": %llu, \"span\": %llu, "
	       "\"p50_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, "
	       "\"blocked\": %llu, \"seconds_blocked\": %.4f}",
	       (unsigned long long)l->n, (unsigned long long)l->span,
	       1e3 * l->p50, 1e3 * l->p99, 1e3 * l->max,
	       (unsigned long long)l->blocked, l->seconds_blocked);
}

struct result {
	const char *workload, *fill, *codec_text, *backend, *output;
	shardpipe_desc desc;
	int threads;
	uint64_t rows, bytes_in, bytes_out, shards;
	double seconds, cpu_seconds;
	double memcpy_gbps;       /* same threads, same process */
	shardpipe_stats st;
	uint64_t rss_base, rss_peak, rss_early, rss_mid, pattern_bytes;
	int have_bound, repeat;
	struct bench_bound bound;
	struct latency lat;
};

/*
 * CPU time per byte of the bound over the run's: the share of the run's
 * CPU that did the compression the bound does.  Other processes on a
 * shared machine move wall times, much less CPU times, so this tells how
 * much the pipeline adds when the fraction of the bound is noisy.
 */
static double cpu_fraction(const struct result *r)
{
	double run, bound;

	if (!r->have_bound || r->bytes_in == 0 || r->bound.bytes == 0 ||
	    r->cpu_seconds <= 0)
		return 0;
	run = r->cpu_seconds / (double)r->bytes_in;
	bound = r->bound.cpu_seconds / (double)r->bound.bytes;
	return bound / run;
}

/* The pipeline's stages as shardpipe_stats times them, in pipeline order;
 * the text and JSON reports list them alike. */
#define N_STAGES 5
static const char *const stage_names[N_STAGES] = {
	"stage", "scatter", "compress", "aggregate", "write"
};

static void stage_seconds(const shardpipe_stats *st, double secs[N_STAGES])
{
	secs[0] = st->seconds_stage;
	secs[1] = st->seconds_scatter;
	secs[2] = st->seconds_compress;
	secs[3] = st->seconds_aggregate;
	secs[4] = st->seconds_write;
}

static void report_text(const struct result *r)
{
	const shardpipe_stats *st = &r->st;
	double secs[N_STAGES];

	stage_seconds(st, secs);
	printf("workload %s, fill %s, %s, codec %s, backend %s, %d threads%s\n",
	       r->workload, r->fill, shardpipe_dtype_name(r->desc.dtype),
	       r->codec_text, r->backend, r->threads,
	       r->repeat > 1 ? ", fastest of the runs" : "");
	printf("  input      %.3f GB (%llu rows) in %.3f s: %.3f GB/s end to "
	       "end\n",
	       (double)r->bytes_in / 1e9, (unsigned long long)r->rows,
	       r->seconds, gb(r->bytes_in, r->seconds));
	for (int k = 0; k < N_STAGES; k++) {
		/* A stage this backend does not run (aggregate in the cpu
		 * backend's fused pass) reports only timer noise. */
		if (secs[k] < 1e-3 && secs[k] < 1e-3 * r->seconds)
			continue;
		printf("  %-10s %8.3f s  %8.3f GB/s", stage_names[k], secs[k],
		       gb(r->bytes_in, secs[k]));
		if (k == 1 && r->memcpy_gbps > 0 && secs[k] > 0)
			printf("  (%.2f of memcpy: %.2f GB/s on %d threads)",
			       gb(r->bytes_in, secs[k]) / r->memcpy_gbps,
			       r->memcpy_gbps, r->threads);
		printf("\n");
	}
	printf("  cpu        %.3f s of CPU time, %.3f s per GB\n",
	       r->cpu_seconds,
	       r->bytes_in ? r->cpu_seconds / ((double)r->bytes_in / 1e9) : 0);
	printf("  output     %.3f GB in %llu shards%s%s, ratio %.3f\n",
	       (double)r->bytes_out / 1e9, (unsigned long long)r->shards,
	       r->output ? " to " : " (discarded)",
	       r->output ? r->output : "",
	       r->bytes_out ? (double)r->bytes_in / (double)r->bytes_out : 0);
	printf("  memory     peak %.1f MB above the input rows (%.1f MB after "
	       "two shard epochs, %.1f MB at half the input),\n"
	       "             planned pools %.1f MB: %.2fx\n",
	       (double)r->rss_peak / 1e6, (double)r->rss_early / 1e6,
	       (double)r->rss_mid / 1e6, (double)st->pool_bytes / 1e6,
	       st->pool_bytes ? (double)r->rss_peak / (double)st->pool_bytes : 0);
	if (r->have_bound) {
		double bg = gb(r->bound.bytes, r->bound.seconds);

		printf("  bound      compress only: %.3f GB/s (%.3f GB in "
		       "%.3f s, ratio %.3f)\n",
		       bg, (double)r->bound.bytes / 1e9, r->bound.seconds,
		       r->bound.sample_packed ?
			       (double)r->bound.sample_bytes /
				       (double)r->bound.sample_packed : 0);
		printf("  fraction   %.3f of the bound\n",
		       bg > 0 ? gb(r->bytes_in, r->seconds) / bg : 0);
		printf("  cpu frac   %.3f: the bound's CPU time per byte over "
		       "the run's (%.3f s per GB)\n",
		       cpu_fraction(r),
		       r->bound.bytes ? r->bound.cpu_seconds /
						((double)r->bound.bytes / 1e9)
				      : 0);
	}
	latency_text(&r->lat);
	printf("terms (GB = 1e9 bytes, MB = 1e6; every rate is input bytes "
	       "over that line's seconds):\n"
	       "  stage      copying appended bytes into the pipeline's "
	       "batches\n"
	       "  scatter    gathering each chunk's elements out of the rows\n"
	       "  compress   the codec on every chunk\n"
	       "  aggregate  packing compressed chunks shard by shard and "
	       "fetching them\n"
	       "  write      shard indexes, serialization and the store (or "
	       "the counting sink)\n"
	       "  input rows the distinct rows bench generates once and "
	       "appends over and over\n");
	if (r->have_bound)
		printf("  bound      the same chunks compressed with the same "
		       "codec, level and threads, nothing else\n"
		       "  fraction   end-to-end GB/s over the bound's GB/s\n");
}

static void report_json(const struct result *r)
{
	const shardpipe_stats *st = &r->st;
	double secs[N_STAGES];

	stage_seconds(st, secs);
	printf("{\"workload\": \"%s\", \"fill\": \"%s\", \"dtype\": \"%s\", ",
	       r->workload, r->fill, shardpipe_dtype_name(r->desc.dtype));
	json_list("shape", &r->desc, 0);
	json_list("chunk", &r->desc, 1);
	json_list("chunks_per_shard", &r->desc, 2);
	printf("\"codec\": \"%s\", \"level\": %d, \"backend\": \"%s\", "
	       "\"threads\": %d, \"repeat\": %d, ",
	       shardpipe_codec_name(r->desc.codec), r->desc.level, r->backend,
	       r->threads, r->repeat);
	printf("\"rows\": %llu, \"bytes_in\": %llu, \"bytes_out\": %llu, "
	       "\"shards\": %llu, \"ratio\": %.4f, \"seconds\": %.4f, "
	       "\"gbps\": %.4f, ",
	       (unsigned long long)r->rows, (unsigned long long)r->bytes_in,
	       (unsigned long long)r->bytes_out, (unsigned long long)r->shards,
	       r->bytes_out ? (double)r->bytes_in / (double)r->bytes_out : 0,
	       r->seconds, gb(r->bytes_in, r->seconds));
	printf("\"stages\": {");
	for (int k = 0; k < N_STAGES; k++)
		printf("%s\"%s\": {\"seconds\": %.4f, \"gbps\": %.4f}",
		       k ? ", " : "", stage_names[k], secs[k],
		       gb(r->bytes_in, secs[k]));
	printf("}, \"memcpy_gbps\": %.4f, \"scatter_over_memcpy\": %.4f, "
	       "\"cpu_seconds\": %.4f",
	       r->memcpy_gbps,
	       r->memcpy_gbps > 0 && st->seconds_scatter > 0 ?
		       gb(r->bytes_in, st->seconds_scatter) / r->memcpy_gbps : 0,
	       r->cpu_seconds);
	printf(", \"pool_bytes\": %llu, \"rss_peak_bytes\": %llu, "
	       "\"rss_peak_early_bytes\": %llu, \"rss_peak_mid_bytes\": %llu, "
	       "\"rss_baseline_bytes\": %llu, "
	       "\"pattern_bytes\": %llu, \"rss_over_pools\": %.4f",
	       (unsigned long long)st->pool_bytes,
	       (unsigned long long)r->rss_peak, (unsigned long long)r->rss_early,
	       (unsigned long long)r->rss_mid,
	       (unsigned long long)r->rss_base,
	       (unsigned long long)r->pattern_bytes,
	       st->pool_bytes ? (double)r->rss_peak / (double)st->pool_bytes : 0);
	if (r->output != NULL)
		printf(", \"output\": \"%s\"", r->output);
	if (r->have_bound) {
		double bg = gb(r->bound.bytes, r->bound.seconds);

		printf(", \"bound\": {\"gbps\": %.4f, \"seconds\": %.4f, "
		       "\"bytes\": %llu, \"sample_bytes\": %llu, "
		       "\"ratio\": %.4f, \"threads\": %d, \"fraction\": %.4f, "
		       "\"cpu_seconds\": %.4f, \"cpu_fraction\": %.4f}",
		       bg, r->bound.seconds, (unsigned long long)r->bound.bytes,
		       (unsigned long long)r->bound.sample_bytes,
		       r->bound.sample_packed ?
			       (double)r->bound.sample_bytes /
				       (double)r->bound.sample_packed : 0,
		       r->bound.threads,
		       bg > 0 ? gb(r->bytes_in, r->seconds) / bg : 0,
		       r->bound.cpu_seconds, cpu_fraction(r));
	}
	latency_json(&r->lat);
	printf("}\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *out)
{
	char *end;

	*out = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0') {
		cli_error("bench: %s: \"%s\" is not a number", opt, s);
		return -1;
	}
	return 0;
}

/* Append `total` bytes of the repeated pattern in spans of `span` bytes;
 * sample the peak memory once two shard epochs are in and once half the
 * input is (hwm[0], hwm[1]): a peak that still grows after the first
 * shard epochs shows as a difference between them and the final one. */
static int append_all(shardpipe_stream *s, const struct bench_pattern *pat,
		      uint64_t total, uint64_t span, uint64_t early_bytes,
		      uint64_t hwm[2], struct latency *lat)
{
	const uint64_t period = pat->frames * pat->row_bytes;
	uint64_t pos = 0;
	int rc = SHARDPIPE_OK, sampled = 0, mid = 0;

	while (pos < total && rc == SHARDPIPE_OK) {
		uint64_t at = pos % period, n = span;

		if (n > total - pos)
			n = total - pos;
		if (n > period - at)
			n = period - at;
		double t0;

		t0 = cli_now();
		rc = shardpipe_stream_append(s, pat->data + at, (size_t)n);
		if (lat->n < lat->cap)
			lat->t[lat->n++] = cli_now() - t0;
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

int cli_bench(int argc, char **argv)
{
	struct cli_desc_opts o = { 0 };
	const struct workload *w = &workloads[1];
	const char *fill_name = "micro", *output = NULL;
	uint64_t rows = 0, span = 0, frames = 0;
	int unbounded = 0, json = 0, bound = 0, repeat = 1, fill, rc, crc;
	struct bench_pattern pat;
	struct result r;
	shardpipe_stream *s;
	struct counter cnt = { 0 };
	shardpipe_sink sink = { &cnt, count_shard, NULL };
	uint64_t rss, hwm, hwm_early[2] = { 0, 0 }, hwm_later[2];
	struct latency lat = { 0 };
	double t0;

	memset(&r, 0, sizeof(r));
	for (int i = 1; i < argc; i++) {
		int k = cli_desc_option(&o, argc, argv, &i);
		const char *a = argv[i];
		int has = i + 1 < argc;

		if (k < 0)
			return CLI_EXIT_USAGE;
		if (k > 0)
			continue;
		if (strcmp(a, "--help") == 0) {
			bench_usage(stdout);
			return CLI_EXIT_OK;
		} else if (strcmp(a, "--fill") == 0 && has) {
			fill_name = argv[++i];
		} else if (strcmp(a, "--rows") == 0 && has) {
			if (parse_u64(a, argv[++i], &rows) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(a, "--span") == 0 && has) {
			if (parse_u64(a, argv[++i], &span) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(a, "--frames") == 0 && has) {
			if (parse_u64(a, argv[++i], &frames) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(a, "--repeat") == 0 && has) {
			uint64_t v;

			if (parse_u64(a, argv[++i], &v) != 0 || v < 1 ||
			    v > 100) {
				cli_error("bench: --repeat: 1 to 100");
				return CLI_EXIT_USAGE;
			}
			repeat = (int)v;
		} else if (strcmp(a, "--output") == 0 && has) {
			output = argv[++i];
		} else if (strcmp(a, "--unbounded") == 0) {
			unbounded = 1;
		} else if (strcmp(a, "--bound") == 0) {
			bound = 1;
		} else if (strcmp(a, "--json") == 0) {
			json = 1;
		} else if (a[0] != '-') {
			size_t n = sizeof(workloads) / sizeof(workloads[0]);

			w = NULL;
			for (size_t j = 0; j < n; j++)
				if (strcmp(a, workloads[j].name) == 0)
					w = &workloads[j];
			if (w == NULL) {
				cli_error("bench: unknown workload \"%s\" (cube, "
					  "frames, stack)", a);
				return CLI_EXIT_USAGE;
			}
		} else {
			cli_error("bench: unknown option %s", a);
			bench_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	fill = bench_fill_from_name(fill_name);
	if (fill < 0) {
		cli_error("bench: --fill: \"%s\" is not micro, noise12, xor or "
			  "zeros", fill_name);
		return CLI_EXIT_USAGE;
	}
	/* A workload supplies whatever geometry the options leave out. */
	r.workload = o.shape != NULL ? "custom" : w->name;
	if (o.shape == NULL) {
		o.shape = w->shape;
		if (o.names == NULL)
			o.names = w->names;
	}
	if (o.chunk == NULL)
		o.chunk = w->chunk;
	if (o.shard == NULL && o.shard_shape == NULL &&
	    o.chunks_per_shard == NULL && strcmp(r.workload, "custom") != 0)
		o.shard = w->shard;
	if (o.dtype == NULL)
		o.dtype = "uint16";
	if (cli_desc_build(&o, &r.desc) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	if (r.desc.rank < 2) {
		cli_error("bench: arrays of rank 1 are not benchmarked");
		return CLI_EXIT_USAGE;
	}
	if (rows == 0)
		rows = r.desc.dims[0].size;
	if (rows == 0) {
		cli_error("bench: an unbounded --shape needs --rows");
		return CLI_EXIT_USAGE;
	}
	r.desc.dims[0].size = unbounded ? 0 : rows;
	r.rows = rows;
	r.fill = fill_name;
	r.codec_text = o.codec != NULL ? o.codec : "zstd:1";
	r.output = output;
	r.threads = r.desc.threads > 0 ? r.desc.threads
				       : (int)sysconf(_SC_NPROCESSORS_ONLN);
	/* Micro is the realistic fill: never let a chunk see a frame twice
	 * (a stack's 64-row chunks would otherwise compress as repeats). */
	if (frames == 0) {
		frames = bench_fill_frames((enum bench_fill)fill);
		if (fill == FILL_MICRO && frames < r.desc.dims[0].chunk)
			frames = r.desc.dims[0].chunk;
	}

	if (!json)
		fprintf(stderr, "generating %llu distinct rows of fill %s...\n",
			(unsigned long long)frames, fill_name);
	if (bench_pattern_make(&pat, (enum bench_fill)fill, &r.desc, frames) !=
	    0) {
		cli_error("bench: out of memory for the %s pattern", fill_name);
		return CLI_EXIT_FAIL;
	}
	r.pattern_bytes = frames * pat.row_bytes;
	r.bytes_in = rows * pat.row_bytes;
	if (span == 0)
		span = pat.row_bytes;
	lat.span = span;
	lat.cap = (r.bytes_in + span - 1) / span;
	if (lat.cap > LAT_MAX)
		lat.cap = LAT_MAX;
	lat.t = malloc((size_t)(lat.cap ? lat.cap : 1) * sizeof(*lat.t));
	if (lat.t == NULL) {
		cli_error("bench: out of memory for append latencies");
		bench_pattern_free(&pat);
		return CLI_EXIT_FAIL;
	}

	/* Memory is measured from here: the pattern is resident and counted
	 * in the baseline, not in the stream's peak. */
	rss_reset_peak();
	rss_read(&r.rss_base, &hwm);
	/* Runs and bounds alternate, and the fastest of each counts: on a
	 * shared machine that pairs figures taken under similar load. */
	for (int k = 0; k < repeat; k++) {
		struct counter run_cnt = { 0 };
		shardpipe_stats st;
		double secs, cpu, c0;
		uint64_t early = 2 * r.desc.dims[0].chunk *
				 r.desc.dims[0].chunks_per_shard * pat.row_bytes;

		cnt = run_cnt;
		if (k > 0)
			r.desc.overwrite = 1;
		t0 = cli_now();
		c0 = bench_cpu_seconds();
		rc = output != NULL ? shardpipe_stream_open(&s, output, &r.desc)
				    : shardpipe_stream_open_sink(&s, &sink, &r.desc);
		if (rc != SHARDPIPE_OK) {
			cli_error("bench: %s: %s", shardpipe_strerror(rc),
				  shardpipe_last_error_message());
			bench_pattern_free(&pat);
			free(lat.t);
			return cli_exit_status(rc);
		}
		r.backend = shardpipe_stream_backend(s);
		lat.n = 0;
		rc = append_all(s, &pat, r.bytes_in, span, early,
				k == 0 ? hwm_early : hwm_later, &lat);
		/* Stats cover every complete shard epoch once flushed; close
		 * adds only the partial last one and the final zarr.json. */
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(s);
		shardpipe_stream_stats(s, &st);
		if (rc != SHARDPIPE_OK)
			cli_error("bench: %s: %s", shardpipe_strerror(rc),
				  shardpipe_stream_message(s));
		crc = shardpipe_stream_close(s);
		secs = cli_now() - t0;
		cpu = bench_cpu_seconds() - c0;
		if (rc == SHARDPIPE_OK && crc != SHARDPIPE_OK) {
			cli_error("bench: %s: %s", shardpipe_strerror(crc),
				  shardpipe_last_error_message());
			rc = crc;
		}
		if (rc != SHARDPIPE_OK) {
			bench_pattern_free(&pat);
			free(lat.t);
			return CLI_EXIT_FAIL;
		}
		if (k == 0 || secs < r.seconds) {
			r.seconds = secs;
			r.cpu_seconds = cpu;
			r.st = st;
			latency_summarise(&lat, &st);
			r.lat = lat;
		}
		if (k == 0) {
			/* Memory: the first run's peak, before the bound's
			 * sample adds its own. */
			rss_read(&rss, &hwm);
			r.rss_peak = hwm > r.rss_base ? hwm - r.rss_base : 0;
			r.rss_early = hwm_early[0] > r.rss_base ?
					      hwm_early[0] - r.rss_base : 0;
			r.rss_mid = hwm_early[1] > r.rss_base ?
					    hwm_early[1] - r.rss_base : 0;
		}
		if (output != NULL && strncmp(output, "s3://", 5) == 0) {
			/* No files to add up: what the stream counted. */
			r.bytes_out = st.bytes_out;
			r.shards = st.shards_written;
		} else if (output != NULL) {
			tree_bytes = 0;
			nftw(output, add_size, 16, FTW_PHYS);
			r.bytes_out = tree_bytes;
			r.shards = st.shards_written;
		} else {
			r.bytes_out = cnt.bytes;
			r.shards = cnt.shards;
		}
		if (bound) {
			struct bench_bound bb;

			if (!json)
				fprintf(stderr, "measuring the compress-only "
						"bound...\n");
			if (bench_bound_run(&pat, &r.desc, rows, r.threads,
					    r.bytes_in, 512u << 20, &bb) != 0) {
				bench_pattern_free(&pat);
				free(lat.t);
				return CLI_EXIT_FAIL;
			}
			if (!r.have_bound || bb.seconds < r.bound.seconds)
				r.bound = bb;
			r.have_bound = 1;
		}
	}
	r.repeat = repeat;
	/* What scatter is held against: memcpy of (at most) a batch's worth
	 * of the pattern on the same threads, in this process, now. */
	r.memcpy_gbps = bench_memcpy_gbps(
		pat.data,
		r.pattern_bytes < (256u << 20) ? r.pattern_bytes : 256u << 20,
		r.threads);
	bench_pattern_free(&pat);
	free(lat.t);
	if (json)
		report_json(&r);
	else
		report_text(&r);
	return CLI_EXIT_OK;
}
