/*
 * crash-kill.c - a writer killed with SIGKILL at a random point never
 * leaves a store that lies.
 *
 * KILLS times (30, or SHARDPIPE_CRASH_KILLS), with a different seed each:
 * fork a writer that streams an unbounded array (random codec, index
 * location, span sizes, flushes), wait until it has started, SIGKILL it
 * after a random delay within the time a whole run takes, then check the
 * store twice:
 *  - independently (t/fault-check.c): zarr.json, when present, parses and
 *    advertises only rows whose shards are all present; every shard
 *    present is complete, CRC-valid and holds exactly the bytes the writer
 *    was given; nothing but hidden temporaries is left over;
 *  - with `shardpipe verify` ($SHARDPIPE), which must accept it.
 * The count of kills survived is printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

/* A multiple of the rows of a shard epoch, so that close never pads. */
#define MAX_ROWS 640

struct writer {
	uint64_t seed;
	shardpipe_desc desc;
	struct fc_geom g;
	size_t row_bytes;
	uint8_t *row;
};

static void writer_init(struct writer *w, uint64_t seed)
{
	shardpipe_desc *d = &w->desc;
	uint64_t rng = seed;

	w->seed = seed;
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = (shardpipe_codec)(test_rand(&rng) % 3);
	d->level = 1;
	d->index_location = (shardpipe_index_location)(test_rand(&rng) % 2);
	d->backend = "cpu";
	d->threads = 2;
	d->dims[0] = (shardpipe_dim){ "t", 0, 4, 2 };
	d->dims[1] = (shardpipe_dim){ "y", 64, 16, 2 };
	d->dims[2] = (shardpipe_dim){ "x", 40, 16, 3 };
	fc_geom_from_desc(&w->g, d);
	w->row_bytes = (size_t)fc_row_bytes(&w->g);
	w->row = malloc(w->row_bytes);
	if (w->row == NULL)
		bail("out of memory");
}

/* Row r of writer w's array: a pure function of (seed, r). */
static const uint8_t *writer_row(void *user, uint64_t r)
{
	struct writer *w = user;
	uint64_t st = w->seed * 0x9e3779b97f4a7c15ull + r;

	if (r >= MAX_ROWS)
		return NULL;
	test_fill(w->row, w->row_bytes, (int)(r % 4), &st);
	return w->row;
}

/* The child: stream MAX_ROWS rows, tell the parent once it has opened. */
static void writer_main(struct writer *w, const char *root, int ready_fd)
{
	uint64_t rng = w->seed ^ 0xc0ffeeull;
	size_t total = MAX_ROWS * w->row_bytes, at = 0, buf_at = 0;
	uint8_t *all = malloc(total);
	shardpipe_stream *s;

	alarm(120);
	if (all == NULL)
		_exit(2);
	for (uint64_t r = 0; r < MAX_ROWS; r++)
		memcpy(all + r * w->row_bytes, writer_row(w, r), w->row_bytes);
	if (shardpipe_stream_open(&s, root, &w->desc) != SHARDPIPE_OK)
		_exit(3);
	if (write(ready_fd, "r", 1) != 1)
		_exit(4);
	close(ready_fd);
	while (at < total) {
		size_t n = 1 + (size_t)(test_rand(&rng) % (6 * w->row_bytes));

		if (n > total - at)
			n = total - at;
		if (shardpipe_stream_append(s, all + at, n) != SHARDPIPE_OK)
			_exit(5);
		at += n;
		if (at - buf_at > 16 * w->row_bytes &&
		    test_rand(&rng) % 2 == 0) {
			if (shardpipe_stream_flush(s) != SHARDPIPE_OK)
				_exit(6);
			buf_at = at;
		}
	}
	_exit(shardpipe_stream_close(s) == SHARDPIPE_OK ? 0 : 7);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Start a writer; kill it after delay seconds (< 0: let it finish).
 * Returns the seconds it ran, or -1. */
static double run_writer(struct writer *w, const char *root, double delay,
			 int *killed)
{
	int fds[2], st;
	char c;
	pid_t pid;
	double t0;

	if (pipe(fds) != 0)
		bail("pipe: %s", strerror(errno));
	/* The parent never runs a stream, so libgomp has no thread pool
	 * yet and a plain fork is safe. */
	pid = fork();
	if (pid < 0)
		bail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		writer_main(w, root, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1) {
		close(fds[0]);
		waitpid(pid, &st, 0);
		return -1;
	}
	close(fds[0]);
	t0 = now();
	*killed = 0;
	if (delay >= 0) {
		struct timespec ts = { (time_t)delay,
				       (long)((delay - (double)(time_t)delay) *
					      1e9) };

		nanosleep(&ts, NULL);
		*killed = kill(pid, SIGKILL) == 0;
	}
	waitpid(pid, &st, 0);
	if (*killed && WIFEXITED(st))
		*killed = 0; /* it had finished already */
	if (delay < 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		return -1;
	return now() - t0;
}

int main(int argc, char **argv)
{
	uint64_t seed, rng;
	const char *sp = getenv("SHARDPIPE");
	const char *k = getenv("SHARDPIPE_CRASH_KILLS");
	int kills = k != NULL && *k != '\0' ? atoi(k)
					     : (int)test_sized("kills", 30, 10);
	char *tmp = test_tmpdir("crash");
	char root[1024], errp[1100];
	struct writer w;
	double full;
	int survived = 0, verified = 0, real_kills = 0, hidden = 0;
	int with_meta = 0, no_verify = sp == NULL || access(sp, X_OK) != 0;
	uint64_t shards = 0;

	(void)argc;
	fc_passive_omp(argv);
	alarm(fc_timeout(600));
	seed = test_seed();
	rng = seed;
	plan(4);

	/* How long a whole run takes: kills land within it. */
	snprintf(root, sizeof(root), "%s/full.zarr", tmp);
	writer_init(&w, seed);
	int dummy;
	full = run_writer(&w, root, -1, &dummy);
	struct fc_report rep;
	ok(full > 0 && fc_check_store(root, &w.g, writer_row, &w, 0, &rep) == 0 &&
		   rep.shape0 == MAX_ROWS,
	   "an uninterrupted writer takes %.3f s; its store is complete (%s)",
	   full, rep.why);
	free(w.row);
	if (full <= 0)
		full = 0.5;

	for (int i = 0; i < kills; i++) {
		uint64_t s = seed + 1 + (uint64_t)i;
		double delay = full * (double)(test_rand(&rng) % 1000) / 1000.0;
		int killed, good;
		char why[600] = "";

		snprintf(root, sizeof(root), "%s/k%d.zarr", tmp, i);
		writer_init(&w, s);
		/* A writer that finished before the kill (the machine was
		 * faster this time) is tried again with half the delay. */
		for (int attempt = 0; attempt < 4; attempt++, delay /= 2) {
			test_rmtree(root);
			if (run_writer(&w, root, delay, &killed) < 0) {
				killed = -1;
				break;
			}
			if (killed)
				break;
		}
		if (killed < 0) {
			diag("kill %d: the writer did not start", i);
			free(w.row);
			continue;
		}
		real_kills += killed;
		good = fc_check_store(root, &w.g, writer_row, &w, 1, &rep) == 0;
		if (!good)
			snprintf(why, sizeof(why), "independent check: %s",
				 rep.why);
		hidden += rep.hidden;
		shards += (uint64_t)rep.shards;
		with_meta += rep.has_meta;
		if (good && rep.has_meta && !no_verify) {
			char *cmd[] = { (char *)sp, "verify", root, NULL };
			int rc;

			snprintf(errp, sizeof(errp), "%s/verify.err", tmp);
			rc = fc_run(cmd, errp, fc_timeout(60));
			if (rc == 0) {
				verified++;
			} else {
				size_t n;
				char *e = test_slurp(errp, &n);

				good = 0;
				snprintf(why, sizeof(why),
					 "shardpipe verify exit %d: %s", rc,
					 e ? e : "");
				free(e);
			}
		}
		if (good) {
			survived++;
			test_rmtree(root);
		} else {
			diag("kill %d (seed %llu, after %.3f s, %s, index %s): "
			     "%s; store kept at %s", i, (unsigned long long)s,
			     delay,
			     shardpipe_codec_name(w.desc.codec),
			     w.desc.index_location ? "start" : "end", why, root);
		}
		free(w.row);
	}
	ok(survived == kills, "%d of %d writers killed at random points "
	   "leave a consistent store (%llu shards checked, %d temporaries "
	   "left, all hidden)", survived, kills, (unsigned long long)shards,
	   hidden);
	ok(real_kills >= kills / 2, "%d of them were killed mid-stream "
	   "(the others had finished in spite of three retries with half "
	   "the delay)", real_kills);
	if (no_verify)
		skip(1, "SHARDPIPE does not name the built program");
	else
		ok(verified == with_meta, "shardpipe verify accepts all %d "
		   "stores that have a zarr.json", with_meta);
	diag("kills survived: %d/%d", survived, kills);
	if (survived == kills)
		test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
