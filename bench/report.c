/*
 * report.c - what `shardpipe bench` prints: a table whose terms are
 * explained under it, or one JSON object with the same figures (the
 * form bench/README.md's tables and scripts read).
 */
#include <stdio.h>

#include "bench.h"

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

static void latency_text(const struct bench_latency *l)
{
	printf("  latency    append p50 %.3f ms, p99 %.3f ms, max %.3f ms "
	       "over %llu appends of %llu bytes\n",
	       1e3 * l->p50, 1e3 * l->p99, 1e3 * l->max,
	       (unsigned long long)l->n, (unsigned long long)l->span);
	printf("  blocked    %llu appends waited for the pipeline, %.3f s "
	       "in all\n",
	       (unsigned long long)l->blocked, l->seconds_blocked);
}

static void latency_json(const struct bench_latency *l)
{
	printf(", \"append_latency\": {\"appends\": %llu, \"span\": %llu, "
	       "\"p50_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, "
	       "\"blocked\": %llu, \"seconds_blocked\": %.4f}",
	       (unsigned long long)l->n, (unsigned long long)l->span,
	       1e3 * l->p50, 1e3 * l->p99, 1e3 * l->max,
	       (unsigned long long)l->blocked, l->seconds_blocked);
}

/*
 * CPU time per byte of the bound over the run's: the share of the run's
 * CPU that did the compression the bound does.  Other processes on a
 * shared machine move wall times, much less CPU times, so this tells how
 * much the pipeline adds when the fraction of the bound is noisy.
 */
static double cpu_fraction(const struct bench_result *r)
{
	double run, bound;

	if (!r->have_bound || r->bytes_in == 0 || r->bound.bytes == 0 ||
	    r->cpu_seconds <= 0)
		return 0;
	run = r->cpu_seconds / (double)r->bytes_in;
	bound = r->bound.cpu_seconds / (double)r->bound.bytes;
	return bound / run;
}

/* The least time compressing every level takes: level 0's bound for the
 * run's bytes plus each coarser level's (bench_run measured them). */
static double all_bound_seconds(const struct bench_result *r)
{
	if (r->bound.bytes == 0)
		return 0;
	return r->bound.seconds * (double)r->bytes_in /
		       (double)r->bound.bytes +
	       r->levels_bound_seconds;
}

/* cpu_fraction over every level: the bounds' CPU time over the run's. */
static double all_cpu_fraction(const struct bench_result *r)
{
	double bound;

	if (r->bound.bytes == 0 || r->cpu_seconds <= 0)
		return 0;
	bound = r->bound.cpu_seconds * (double)r->bytes_in /
			(double)r->bound.bytes +
		r->levels_bound_cpu_seconds;
	return bound / r->cpu_seconds;
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

void bench_report_text(const struct bench_result *r)
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
	if (r->resume_at > 0)
		printf("  reopen     %.3f s: a store of %llu rows continued "
		       "(its partial shard row read back), then the rows "
		       "after it\n", r->reopen_seconds,
		       (unsigned long long)r->resume_at);
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
	if (r->have_bound && r->levels_bytes > 0)
		printf("  all levels %.3f GB (level 0 and %.3f GB coarser): "
		       "bound %.3f s, %.3f GB/s;\n"
		       "             fraction %.3f, cpu frac %.3f\n",
		       (double)(r->bytes_in + r->levels_bytes) / 1e9,
		       (double)r->levels_bytes / 1e9, all_bound_seconds(r),
		       gb(r->bytes_in + r->levels_bytes, all_bound_seconds(r)),
		       r->seconds > 0 ? all_bound_seconds(r) / r->seconds : 0,
		       all_cpu_fraction(r));
	if (r->levels > 0)
		printf("  pyramid    %d levels; without it %.3f s, %.3f GB/s "
		       "(planned pools %.1f MB):\n"
		       "             %.3f of its throughput, %.2fx its CPU time, "
		       "%.2fx its pools\n",
		       r->levels, r->plain_seconds,
		       gb(r->bytes_in, r->plain_seconds),
		       (double)r->plain_pool_bytes / 1e6,
		       r->seconds > 0 ? r->plain_seconds / r->seconds : 0,
		       r->plain_cpu_seconds > 0 ?
			       r->cpu_seconds / r->plain_cpu_seconds : 0,
		       r->plain_pool_bytes ? (double)st->pool_bytes /
						     (double)r->plain_pool_bytes
					   : 0);
	latency_text(&r->lat);
	printf("terms (GB = 1e9 bytes, MB = 1e6; every rate is input bytes "
	       "over that line's seconds):\n"
	       "  stage      copying appended bytes into the pipeline's "
	       "batches (or, staging\n"
	       "             laid out as chunks, dealing them to their "
	       "chunks' places)\n"
	       "  scatter    gathering each chunk's elements out of the rows\n"
	       "  compress   the codec on every chunk\n"
	       "  aggregate  packing compressed chunks shard by shard and "
	       "fetching them\n"
	       "  write      shard indexes, serialization and the store (or "
	       "the counting sink)\n"
	       "  input rows the distinct rows bench generates once and "
	       "appends over and over\n");
	if (r->levels > 0)
		printf("  pyramid    the same input written without the "
		       "pyramid after each run, to the same\n"
		       "             kind of store; the figures above are the "
		       "pyramid's, all levels\n");
	if (r->have_bound)
		printf("  bound      the same chunks compressed with the same "
		       "codec, level and threads, nothing else\n"
		       "  fraction   end-to-end GB/s over the bound's GB/s\n");
	if (r->have_bound && r->levels_bytes > 0)
		printf("  all levels the bound of every level: level 0's, and "
		       "each coarser level\n"
		       "             read back from a store the first run "
		       "wrote (an untimed one\n"
		       "             when the runs go to the sink), its "
		       "chunks compressed the same way;\n"
		       "             fraction: that bound's seconds over the "
		       "run's\n");
}

void bench_report_json(const struct bench_result *r)
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
	if (r->resume_at > 0)
		printf(", \"resume_at\": %llu, \"reopen_seconds\": %.6f",
		       (unsigned long long)r->resume_at, r->reopen_seconds);
	if (r->have_bound && r->levels_bytes > 0)
		printf(", \"bound_all_levels\": {\"bytes\": %llu, "
		       "\"levels_bytes\": %llu, \"seconds\": %.4f, "
		       "\"gbps\": %.4f, \"fraction\": %.4f, "
		       "\"cpu_fraction\": %.4f}",
		       (unsigned long long)(r->bytes_in + r->levels_bytes),
		       (unsigned long long)r->levels_bytes, all_bound_seconds(r),
		       gb(r->bytes_in + r->levels_bytes, all_bound_seconds(r)),
		       r->seconds > 0 ? all_bound_seconds(r) / r->seconds : 0,
		       all_cpu_fraction(r));
	if (r->levels > 0)
		printf(", \"pyramid\": {\"levels\": %d, \"plain_seconds\": "
		       "%.4f, \"plain_gbps\": %.4f, \"plain_cpu_seconds\": "
		       "%.4f, \"plain_pool_bytes\": %llu, "
		       "\"throughput_ratio\": %.4f}",
		       r->levels, r->plain_seconds,
		       gb(r->bytes_in, r->plain_seconds), r->plain_cpu_seconds,
		       (unsigned long long)r->plain_pool_bytes,
		       r->seconds > 0 ? r->plain_seconds / r->seconds : 0);
	latency_json(&r->lat);
	printf("}\n");
}

/* One row of bench/README.md's tables of every workload and fill. */
void bench_report_row_head(void)
{
	printf("| workload (rows) | fill | codec | end-to-end GB/s | bound GB/s "
	       "| fraction of bound | CPU-time fraction | ratio "
	       "| scatter / memcpy | peak MiB (at half) | planned pools MiB "
	       "| peak / pools |\n"
	       "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

void bench_report_row(const struct bench_result *r)
{
	const shardpipe_stats *st = &r->st;
	double bg = r->have_bound ? gb(r->bound.bytes, r->bound.seconds) : 0;
	double scatter = st->seconds_scatter > 0 && r->memcpy_gbps > 0 ?
				 gb(r->bytes_in, st->seconds_scatter) /
					 r->memcpy_gbps : 0;

	char ratio[32] = "no shard";

	/* Chunks all fill value are not stored (zeros): nothing to divide
	 * by. */
	if (r->bytes_out != 0)
		snprintf(ratio, sizeof(ratio), "%.2f",
			 (double)r->bytes_in / (double)r->bytes_out);
	printf("| %s (%llu%s) | %s | %s | %.3f | %.3f | %.2f | %.2f | %s "
	       "| %.2f | %.0f (%.0f) | %.0f | %.2f |\n",
	       r->workload, (unsigned long long)r->rows,
	       r->desc.dims[0].size == 0 ? " unb." : "", r->fill,
	       r->codec_text, gb(r->bytes_in, r->seconds), bg,
	       bg > 0 ? gb(r->bytes_in, r->seconds) / bg : 0, cpu_fraction(r),
	       ratio, scatter, (double)r->rss_peak / 1048576.0,
	       (double)r->rss_mid / 1048576.0,
	       (double)st->pool_bytes / 1048576.0,
	       st->pool_bytes ? (double)r->rss_peak / (double)st->pool_bytes
			      : 0);
	fflush(stdout);
}
