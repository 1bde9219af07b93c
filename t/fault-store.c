/*
 * fault-store.c - faults in the filesystem store never cost a written
 * shard.
 *
 * Four ways to make the store fail, each checked the same way: the first
 * call that fails returns the code that matches the fault, every later
 * call returns the same code (sticky), close returns it too and frees
 * everything (t/fault-valgrind.sh runs this program under valgrind), every
 * shard renamed into place before the fault is complete, CRC-valid and
 * holds the bytes appended, zarr.json advertises only rows whose shards
 * are all there, and nothing but hidden names (leading '.') is left over.
 *
 *  1. Injected errors: this program interposes open, write, close, rename,
 *     mkdir and fsync (its own definitions win over libc's for the library
 *     linked into it) and fails the n-th store operation with ENOSPC,
 *     EDQUOT, EIO or EACCES, for every n from 1 to the number of operations
 *     a clean run makes.  Short writes and EINTR are injected too: those
 *     the store must absorb, writing the same bytes as a clean run.
 *  2. RLIMIT_FSIZE in a child with SIGXFSZ ignored: write() stops part-way
 *     through a shard with EFBIG.
 *  3. A tmpfs of a few pages mounted in a private mount namespace: a real
 *     ENOSPC (skipped where mounting is not permitted).
 *  4. A store directory made read-only mid-stream, in a child running as
 *     an unprivileged user (root ignores permissions): EACCES.
 *
 * And 5., the order that durability relies on (shardpipe(3),
 * "Durability"), from a log of the same interposed calls plus unlink and
 * rmdir: with durable, no zarr.json is renamed into place before its
 * temporary is fsynced after its last write, before every shard it
 * advertises was fsynced, renamed and its directory fsynced, before every
 * directory on the way was fsynced in its parent after its mkdir, and
 * (over an old store) before every removal of the old one was fsynced in
 * its directory; the last zarr.json's own name is fsynced before close
 * returns.  Without durable, no fsync at all.  The checker is first shown
 * to catch a missing directory fsync in a crafted log.
 *
 * SHARDPIPE_FAULT_QUICK=1 tries every 9th n only (for valgrind).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

/* ------------------------------------------------- the fault injector */

enum { INJ_FAIL, INJ_SHORT, INJ_EINTR };

static struct {
	pthread_mutex_t lock;
	char root[1024];   /* only paths below this count; "" = disarmed */
	size_t root_len;
	long count;        /* store operations seen */
	long writes;       /* of them, writes: the k-th of INJ_SHORT and
			    * INJ_EINTR counts writes only, or a store whose
			    * writes all fall on operations other than
			    * multiples of k (it depends on the workload the
			    * seed draws) would see none injected */
	long nth;          /* the one to fail (0: none) */
	int mode;          /* INJ_* */
	int err;           /* errno to fail with */
	int every;         /* INJ_SHORT / INJ_EINTR: every k-th write */
	long fired;
	unsigned char fds[4096]; /* descriptors opened below root */
} inj = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* 5. What the store did, in order: the calls below dlog.root while
 * dlog.on, under inj.lock. */
enum ev_kind { EV_WRITE, EV_FSYNC, EV_RENAME, EV_MKDIR, EV_REMOVE };

struct ev {
	enum ev_kind kind;
	char *path;     /* the file or directory; a rename's target */
	char *from;     /* a rename's source */
	long shape0;    /* a rename onto a zarr.json: its shape[0] (-1: not
			 * JSON) */
};

static struct {
	int on;
	char root[1024];
	size_t root_len;
	struct ev *ev;
	size_t n, cap;
	char *fd_path[4096];
} dlog;

static int in_dlog(const char *path)
{
	return dlog.on && path != NULL &&
	       strncmp(path, dlog.root, dlog.root_len) == 0;
}

static void dlog_add(enum ev_kind kind, const char *path, const char *from,
		     long shape0)
{
	pthread_mutex_lock(&inj.lock);
	if (dlog.n == dlog.cap) {
		dlog.cap = dlog.cap ? 2 * dlog.cap : 256;
		dlog.ev = realloc(dlog.ev, dlog.cap * sizeof(*dlog.ev));
		if (dlog.ev == NULL)
			abort();
	}
	dlog.ev[dlog.n++] = (struct ev){ kind, strdup(path),
					 from ? strdup(from) : NULL, shape0 };
	pthread_mutex_unlock(&inj.lock);
}

/* The path descriptor fd was opened with, if it is logged. */
static const char *dlog_fd(int fd)
{
	const char *p = NULL;

	pthread_mutex_lock(&inj.lock);
	if (dlog.on && fd >= 0 && fd < (int)(sizeof(dlog.fd_path) /
					     sizeof(*dlog.fd_path)))
		p = dlog.fd_path[fd];
	pthread_mutex_unlock(&inj.lock);
	return p;
}

static void dlog_set_fd(int fd, const char *path)
{
	if (fd < 0 || fd >= (int)(sizeof(dlog.fd_path) /
				  sizeof(*dlog.fd_path)))
		return;
	pthread_mutex_lock(&inj.lock);
	free(dlog.fd_path[fd]);
	dlog.fd_path[fd] = path != NULL && in_dlog(path) ? strdup(path) : NULL;
	pthread_mutex_unlock(&inj.lock);
}

static void dlog_start(const char *root)
{
	pthread_mutex_lock(&inj.lock);
	snprintf(dlog.root, sizeof(dlog.root), "%s", root);
	dlog.root_len = strlen(dlog.root);
	dlog.on = 1;
	pthread_mutex_unlock(&inj.lock);
}

static void dlog_stop(void)
{
	pthread_mutex_lock(&inj.lock);
	dlog.on = 0;
	pthread_mutex_unlock(&inj.lock);
}

static void dlog_clear(void)
{
	for (size_t i = 0; i < dlog.n; i++) {
		free(dlog.ev[i].path);
		free(dlog.ev[i].from);
	}
	free(dlog.ev);
	dlog.ev = NULL;
	dlog.n = dlog.cap = 0;
}

static void arm(const char *root, long nth, int mode, int err, int every)
{
	pthread_mutex_lock(&inj.lock);
	snprintf(inj.root, sizeof(inj.root), "%s", root);
	inj.root_len = strlen(inj.root);
	inj.count = 0;
	inj.writes = 0;
	inj.nth = nth;
	inj.mode = mode;
	inj.err = err;
	inj.every = every;
	inj.fired = 0;
	pthread_mutex_unlock(&inj.lock);
}

static void disarm(void)
{
	pthread_mutex_lock(&inj.lock);
	inj.root[0] = '\0';
	inj.root_len = 0;
	pthread_mutex_unlock(&inj.lock);
}

static int below_root(const char *path)
{
	return inj.root_len > 0 && path != NULL &&
	       strncmp(path, inj.root, inj.root_len) == 0;
}

/* Count one store operation; nonzero when this one must fail. */
static int tick(int counted)
{
	int fire = 0;

	if (!counted)
		return 0;
	pthread_mutex_lock(&inj.lock);
	inj.count++;
	if (inj.mode == INJ_FAIL && inj.nth != 0 && inj.count == inj.nth) {
		fire = 1;
		inj.fired++;
	}
	pthread_mutex_unlock(&inj.lock);
	return fire;
}

static int tracked(int fd)
{
	int t;

	pthread_mutex_lock(&inj.lock);
	t = inj.root_len > 0 && fd >= 0 && fd < (int)sizeof(inj.fds)
		    ? inj.fds[fd] : 0;
	pthread_mutex_unlock(&inj.lock);
	return t;
}

static void track(int fd, int on)
{
	if (fd < 0 || fd >= (int)sizeof(inj.fds))
		return;
	pthread_mutex_lock(&inj.lock);
	inj.fds[fd] = (unsigned char)on;
	pthread_mutex_unlock(&inj.lock);
}

/* The libc function this one stands in for, found once. */
#define REAL(name)                                                            \
	static __typeof__(name) *real_##name;                                 \
	if (real_##name == NULL)                                              \
	real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

static int do_open(const char *path, int flags, mode_t mode, int dirfd,
		   int at)
{
	REAL(open);
	REAL(openat);
	int fd;

	if (below_root(path) && tick(1)) {
		errno = inj.err;
		return -1;
	}
	fd = at ? real_openat(dirfd, path, flags, mode)
		: real_open(path, flags, mode);
	/* A descriptor that only reads (zarr.json read back by a reopen,
	 * doc/design.md §29; a directory to fsync or lock) has no data its
	 * close could lose: that close is no store operation (2), its other
	 * calls are. */
	if (fd >= 0) {
		track(fd, !below_root(path) ? 0
			  : (flags & O_DIRECTORY) ||
				    (flags & O_ACCMODE) == O_RDONLY ? 2 : 1);
		dlog_set_fd(fd, path);
	}
	return fd;
}

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = va_mode(flags, ap);
	va_end(ap);
	return do_open(path, flags, m, AT_FDCWD, 0);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = va_mode(flags, ap);
	va_end(ap);
	return do_open(path, flags, m, AT_FDCWD, 0);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t m;

	va_start(ap, flags);
	m = va_mode(flags, ap);
	va_end(ap);
	return do_open(path, flags, m, dirfd, 1);
}

/* _FORTIFY_SOURCE routes some opens here. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);

int __open_2(const char *path, int flags)
{
	return do_open(path, flags, 0, AT_FDCWD, 0);
}

int __open64_2(const char *path, int flags)
{
	return do_open(path, flags, 0, AT_FDCWD, 0);
}

/* Short writes and EINTR on every k-th write, or a failure on the n-th
 * operation. */
static int write_fault(int fd, size_t *n)
{
	int r = 0;
	const char *logged = dlog_fd(fd);

	if (logged != NULL)
		dlog_add(EV_WRITE, logged, NULL, 0);
	if (!tracked(fd))
		return 0;
	if (tick(1)) {
		errno = inj.err;
		return -1;
	}
	pthread_mutex_lock(&inj.lock);
	inj.writes++;
	if (inj.mode != INJ_FAIL && inj.every > 0 &&
	    inj.writes % inj.every == 0) {
		inj.fired++;
		if (inj.mode == INJ_EINTR) {
			errno = EINTR;
			r = -1;
		} else if (*n > 1) {
			*n /= 2;
		}
	}
	pthread_mutex_unlock(&inj.lock);
	return r;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(write);

	if (write_fault(fd, &n) != 0)
		return -1;
	return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite);

	if (write_fault(fd, &n) != 0)
		return -1;
	return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	REAL(writev);
	size_t total = 0, n;

	for (int i = 0; i < cnt; i++)
		total += iov[i].iov_len;
	n = total;
	if (write_fault(fd, &n) != 0)
		return -1;
	if (n < total && cnt > 0) {
		/* A short writev: only part of the first buffer. */
		size_t first = iov[0].iov_len < n ? iov[0].iov_len : n;

		return write(fd, iov[0].iov_base, first ? first : 1);
	}
	return real_writev(fd, iov, cnt);
}

int close(int fd)
{
	REAL(close);
	int t = tracked(fd) == 1, r;

	track(fd, 0);
	dlog_set_fd(fd, NULL);
	if (tick(t)) {
		/* As NFS does: the descriptor is gone, the error stays. */
		real_close(fd);
		errno = inj.err;
		return -1;
	}
	r = real_close(fd);
	return r;
}

int fsync(int fd)
{
	REAL(fsync);
	const char *logged = dlog_fd(fd);

	if (logged != NULL)
		dlog_add(EV_FSYNC, logged, NULL, 0);
	if (tick(tracked(fd))) {
		errno = inj.err;
		return -1;
	}
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	REAL(fdatasync);
	const char *logged = dlog_fd(fd);

	if (logged != NULL)
		dlog_add(EV_FSYNC, logged, NULL, 0);
	if (tick(tracked(fd))) {
		errno = inj.err;
		return -1;
	}
	return real_fdatasync(fd);
}

/* shape[0] of the JSON file at path, read without the interposers; -1
 * when it is not JSON with a shape. */
static long json_shape0(const char *path)
{
	REAL(open);
	REAL(close);
	char buf[65536];
	uint64_t shape[SHARDPIPE_MAX_RANK];
	int fd = real_open(path, O_RDONLY, 0);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

	if (fd >= 0)
		real_close(fd);
	return n > 0 && fc_json_shape(buf, (size_t)n, shape) > 0
		       ? (long)shape[0] : -1;
}

int rename(const char *a, const char *b)
{
	REAL(rename);
	int r;

	if (tick(below_root(b))) {
		errno = inj.err;
		return -1;
	}
	if (!in_dlog(b))
		return real_rename(a, b);
	{
		const char *leaf = strrchr(b, '/');
		long shape0 = leaf != NULL && strcmp(leaf, "/zarr.json") == 0
				      ? json_shape0(a) : 0;

		r = real_rename(a, b);
		if (r == 0)
			dlog_add(EV_RENAME, b, a, shape0);
	}
	return r;
}

int renameat(int da, const char *a, int db, const char *b)
{
	REAL(renameat);

	if (tick(below_root(b))) {
		errno = inj.err;
		return -1;
	}
	return real_renameat(da, a, db, b);
}

int mkdir(const char *path, mode_t mode)
{
	REAL(mkdir);
	int r;

	if (tick(below_root(path))) {
		errno = inj.err;
		return -1;
	}
	r = real_mkdir(path, mode);
	if (r == 0 && in_dlog(path))
		dlog_add(EV_MKDIR, path, NULL, 0);
	return r;
}

/* Logged only: the fault sweeps do not count removals. */
int unlink(const char *path)
{
	REAL(unlink);
	int r = real_unlink(path);

	if (r == 0 && in_dlog(path))
		dlog_add(EV_REMOVE, path, NULL, 0);
	return r;
}

int rmdir(const char *path)
{
	REAL(rmdir);
	int r = real_rmdir(path);

	if (r == 0 && in_dlog(path))
		dlog_add(EV_REMOVE, path, NULL, 0);
	return r;
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	REAL(mkdirat);

	if (tick(below_root(path))) {
		errno = inj.err;
		return -1;
	}
	return real_mkdirat(dirfd, path, mode);
}

/* ------------------------------------------------------ the workload */

#define ROWS 13

struct workload {
	shardpipe_desc desc;
	struct fc_geom g;
	uint8_t *input;
	size_t bytes, row_bytes;
	int steps;
	size_t span[64]; /* bytes per append */
	int flush_after[64];
};

static const uint8_t *input_row(void *user, uint64_t r)
{
	const struct workload *w = user;

	return r < ROWS ? w->input + r * w->row_bytes : NULL;
}

static void workload_init(struct workload *w, uint64_t *rng, int codec,
			  int loc, int bounded)
{
	shardpipe_desc *d = &w->desc;
	static const uint64_t size[3] = { 0, 40, 48 }, chunk[3] = { 2, 16, 16 };
	size_t at = 0;

	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = (shardpipe_codec)codec;
	d->level = codec == SHARDPIPE_CODEC_GZIP ? 6 : 3;
	d->index_location = (shardpipe_index_location)loc;
	d->backend = "cpu";
	d->threads = 2;
	/* The clean run counts every shard: rows of the sparse pattern can
	 * leave a shard all fill value, which would not be written. */
	d->write_empty_chunks = 1;
	for (int k = 0; k < 3; k++) {
		d->dims[k].size = size[k];
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = 2;
	}
	if (bounded)
		d->dims[0].size = ROWS;
	fc_geom_from_desc(&w->g, d);
	/* Rows of different compressibility give shards of different
	 * sizes, so faults land after some shards and inside others. */
	w->input = fc_rows_input(&w->g, ROWS, rng, &w->row_bytes, &w->bytes);
	w->steps = 0;
	while (at < w->bytes) {
		size_t n = 1 + (size_t)(test_rand(rng) % (3 * w->row_bytes));

		if (n > w->bytes - at)
			n = w->bytes - at;
		w->span[w->steps] = n;
		w->flush_after[w->steps] = test_rand(rng) % 2 == 0;
		at += n;
		w->steps++;
		if (w->steps == 63 && at < w->bytes) {
			w->span[w->steps] = w->bytes - at;
			w->flush_after[w->steps++] = 0;
			break;
		}
	}
}

/* What a faulted run did. */
struct outcome {
	int open_rc;
	int first_rc;      /* first failure (OK if none before close) */
	int first_call;    /* step of the first failure, -1 at close */
	int sticky_ok;     /* every later call returned first_rc */
	int close_rc;
	int msg_names_path;
	char msg[256];
	struct fc_report rep;
	int store_ok;
};

static void run_workload(const struct workload *w, const char *root,
			 struct outcome *o)
{
	shardpipe_stream *s = NULL;
	size_t at = 0;

	memset(o, 0, sizeof(*o));
	o->first_call = -2;
	o->sticky_ok = 1;
	o->open_rc = shardpipe_stream_open(&s, root, &w->desc);
	if (o->open_rc != SHARDPIPE_OK) {
		o->first_rc = o->open_rc;
		o->close_rc = o->open_rc;
		o->sticky_ok = s == NULL;
		snprintf(o->msg, sizeof(o->msg), "%s",
			 shardpipe_last_error_message());
		o->msg_names_path = strstr(o->msg, root) != NULL;
		return;
	}
	for (int i = 0; i < w->steps; i++) {
		int rc = shardpipe_stream_append(s, w->input + at, w->span[i]);

		at += w->span[i];
		if (rc == SHARDPIPE_OK && w->flush_after[i])
			rc = shardpipe_stream_flush(s);
		if (rc != SHARDPIPE_OK && o->first_call == -2) {
			o->first_rc = rc;
			o->first_call = i;
			snprintf(o->msg, sizeof(o->msg), "%s",
				 shardpipe_stream_message(s));
			o->msg_names_path = strstr(o->msg, root) != NULL;
		} else if (o->first_call != -2 && rc != o->first_rc) {
			o->sticky_ok = 0;
		}
	}
	if (o->first_call != -2) {
		/* Sticky: more data, a flush, an empty append. */
		if (shardpipe_stream_append(s, w->input, w->row_bytes) !=
			    o->first_rc ||
		    shardpipe_stream_flush(s) != o->first_rc ||
		    shardpipe_stream_append(s, w->input, 0) != o->first_rc)
			o->sticky_ok = 0;
	}
	o->close_rc = shardpipe_stream_close(s);
	if (o->first_call == -2) {
		o->first_call = -1;
		o->first_rc = o->close_rc;
		snprintf(o->msg, sizeof(o->msg), "%s",
			 shardpipe_last_error_message());
		o->msg_names_path = strstr(o->msg, root) != NULL;
	}
}

static void check_store(const struct workload *w, const char *root,
			struct outcome *o)
{
	o->store_ok = fc_check_store(root, &w->g, input_row, (void *)w, 1,
				     &o->rep) == 0;
}

/* The code each injected errno must come back as: written out here, not
 * taken from store_fs_errno_code, so that a wrong mapping there fails. */
static int code_for(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return SHARDPIPE_ERR_NOSPACE;
	case EACCES:
	case EPERM:
	case EROFS:
		return SHARDPIPE_ERR_ACCESS;
	default:
		return SHARDPIPE_ERR_IO;
	}
}

/* Did a faulted run behave?  Prints why not; returns 1 when it did. */
static int judge(const struct outcome *o, int want, const char *what)
{
	const char *bad = NULL;

	if (o->first_rc != want)
		bad = "wrong error code";
	else if (!o->sticky_ok)
		bad = "the error is not sticky";
	else if (o->close_rc != want)
		bad = "close returned another code";
	else if (!o->msg_names_path)
		bad = "the message names no file of the store";
	else if (!o->store_ok)
		bad = "the store is inconsistent";
	if (bad == NULL)
		return 1;
	diag("%s: %s: first failure %d (%s) at step %d, close %d; "
	     "message \"%s\"; store: %d shards, %d bad, %d missing, %d stray, "
	     "%d hidden%s%s",
	     what, bad, o->first_rc, shardpipe_strerror(o->first_rc),
	     o->first_call, o->close_rc, o->msg, o->rep.shards, o->rep.bad,
	     o->rep.missing, o->rep.stray, o->rep.hidden,
	     o->rep.why[0] ? ": " : "", o->rep.why);
	return 0;
}

static void fresh_dir(const char *path)
{
	test_rmtree(path);
}

static long clean_ops;
static int faults_injected, faults_survived;

/* ---------------------------------------------------------- 1. sweep */

static void sweep(const struct workload *w, const char *tmp, int e,
		  const char *name, int step)
{
	char root[1024];
	struct outcome o;
	int runs = 0, good = 0, fired = 0, shards_kept = 0;

	snprintf(root, sizeof(root), "%s/sweep.zarr", tmp);
	for (long n = 1; n <= clean_ops; n += step) {
		fresh_dir(root);
		arm(root, n, INJ_FAIL, e, 0);
		run_workload(w, root, &o);
		fired += inj.fired > 0;
		disarm();
		check_store(w, root, &o);
		runs++;
		shards_kept += o.rep.shards;
		char what[64];
		snprintf(what, sizeof(what), "%s on operation %ld", name, n);
		good += judge(&o, code_for(e), what);
	}
	faults_injected += runs;
	faults_survived += good;
	ok(good == runs && fired == runs,
	   "%s on each of %d store operations: right code, sticky, "
	   "store consistent (%d shards kept in all)",
	   name, runs, shards_kept);
}

/* Short writes and EINTR: absorbed, same bytes as a clean run. */
static void absorb(const struct workload *w, const char *tmp, int mode,
		   const char *name)
{
	char root[1024], ref[1024];
	struct outcome o;
	int good = 0, runs = 0;

	snprintf(ref, sizeof(ref), "%s/ref.zarr", tmp);
	snprintf(root, sizeof(root), "%s/absorb.zarr", tmp);
	/* Every call failing would never progress: every 2nd..5th. */
	for (int every = 2; every <= 5; every++) {
		fresh_dir(root);
		arm(root, 0, mode, 0, every);
		run_workload(w, root, &o);
		long fired = inj.fired;
		disarm();
		runs++;
		if (o.first_rc == SHARDPIPE_OK && o.close_rc == SHARDPIPE_OK &&
		    fired > 0 && test_same_tree(ref, root, NULL))
			good++;
		else
			diag("%s on every %d-th write (%ld injected): rc %d, "
			     "close %d (%s)", name, every, fired, o.first_rc,
			     o.close_rc, o.msg);
	}
	faults_injected += runs;
	faults_survived += good;
	ok(good == runs, "%s on every 2nd..5th write: absorbed, the store "
	   "equals a clean run's", name);
}

/* ------------------------------------------- 5. durability's order */

/* What a replay of the log knows of one path. */
struct node {
	char *path;
	int dirty;    /* written since its last fsync */
	int content;  /* its bytes are on disk: fsynced after the last write */
	int exists;   /* the name is in place */
	int named;    /* the name, or its removal, is on disk: the directory
		       * was fsynced since */
	int removed;  /* removed (by the store, over an old store) */
};

struct replay {
	struct node *v;
	size_t n, cap;
	char why[512];
	int faults;
};

/* The node of path; a path never seen before stands for one that existed
 * before the run, on disk. */
static struct node *node(struct replay *r, const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i].path, path) == 0)
			return &r->v[i];
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		if (r->v == NULL)
			bail("out of memory");
	}
	r->v[r->n] = (struct node){ strdup(path), 0, 1, 1, 1, 0 };
	return &r->v[r->n++];
}

static const struct node *seen(const struct replay *r, const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i].path, path) == 0)
			return &r->v[i];
	return NULL;
}

static int is_parent(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	return strncmp(dir, path, n) == 0 && path[n] == '/' &&
	       strchr(path + n + 1, '/') == NULL;
}

__attribute__((format(printf, 2, 3)))
static void fault(struct replay *r, const char *fmt, ...)
{
	va_list ap;

	if (r->faults++ == 0) {
		va_start(ap, fmt);
		vsnprintf(r->why, sizeof(r->why), fmt, ap);
		va_end(ap);
	}
}

/* At the rename of a zarr.json advertising shape0 rows: every advertised
 * shard and the directories on its way are on disk, and so is every
 * removal of an old store's objects. */
static void check_advertised(struct replay *r, const char *root,
			     const struct fc_geom *g, long shape0)
{
	uint64_t count[SHARDPIPE_MAX_RANK], c[SHARDPIPE_MAX_RANK] = { 0 };
	uint64_t total = 1;
	const struct node *top = seen(r, root);

	if (top != NULL && !(top->exists && top->named))
		fault(r, "zarr.json renamed while the store's own directory "
		      "%s is not on disk", root);
	count[0] = test_cdiv((uint64_t)shape0, g->chunk[0] * g->cps[0]);
	for (int d = 1; d < g->rank; d++)
		count[d] = test_cdiv(test_cdiv(g->size[d], g->chunk[d]),
				     g->cps[d]);
	for (int d = 0; d < g->rank; d++)
		total *= count[d];
	for (uint64_t k = 0; k < total; k++) {
		char path[1200];
		size_t at = (size_t)snprintf(path, sizeof(path), "%s/c", root);
		const struct node *n;

		for (int d = 0; d < g->rank; d++) {
			n = seen(r, path);
			if (n != NULL && !(n->exists && n->named))
				fault(r, "zarr.json of %ld rows renamed while "
				      "directory %s is not on disk", shape0,
				      path);
			at += (size_t)snprintf(path + at, sizeof(path) - at,
					       "/%llu",
					       (unsigned long long)c[d]);
		}
		n = seen(r, path);
		if (n == NULL || !n->exists)
			fault(r, "zarr.json of %ld rows advertises %s, never "
			      "renamed into place", shape0, path);
		else if (!n->content || !n->named)
			fault(r, "zarr.json of %ld rows renamed before %s was "
			      "%s", shape0, path,
			      !n->content ? "fsynced" : "named on disk (its "
			      "directory fsynced)");
		for (int d = g->rank - 1; d >= 0 && ++c[d] == count[d]; d--)
			c[d] = 0;
	}
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].removed && !r->v[i].named)
			fault(r, "zarr.json of %ld rows renamed before the "
			      "removal of %s was fsynced in its directory",
			      shape0, r->v[i].path);
}

/*
 * Replay the log of one durable run writing `root` (the log's root is its
 * parent directory).  Returns the faults found, the first in r->why;
 * *metas gets the zarr.json renames and *shards the shard renames.
 */
static int replay_log(const struct ev *ev, size_t nev, const char *root,
		      const struct fc_geom *g, struct replay *r, int *metas,
		      int *shards)
{
	char meta[1100], croot[1100];
	const struct node *last;

	snprintf(meta, sizeof(meta), "%s/zarr.json", root);
	snprintf(croot, sizeof(croot), "%s/c/", root);
	*metas = *shards = 0;
	for (size_t i = 0; i < nev; i++) {
		const struct ev *e = &ev[i];
		struct node *n, *f;

		switch (e->kind) {
		case EV_WRITE:
			n = node(r, e->path);
			n->dirty = 1;
			n->content = 0;
			break;
		case EV_FSYNC:
			n = node(r, e->path);
			if (n->dirty) {
				n->dirty = 0;
				n->content = 1;
			}
			for (size_t j = 0; j < r->n; j++)
				if (is_parent(e->path, r->v[j].path))
					r->v[j].named = 1;
			break;
		case EV_RENAME:
			/* Both exist before pointers are kept: node() may
			 * grow the table. */
			node(r, e->path);
			f = node(r, e->from);
			n = node(r, e->path);
			if (strcmp(e->path, meta) == 0) {
				(*metas)++;
				if (!f->content || f->dirty)
					fault(r, "zarr.json renamed before its "
					      "temporary %s was fsynced",
					      e->from);
				if (e->shape0 < 0)
					fault(r, "a zarr.json that is not JSON "
					      "with a shape");
				else
					check_advertised(r, root, g, e->shape0);
			} else if (strncmp(e->path, croot, strlen(croot)) == 0) {
				(*shards)++;
			}
			n->content = f->content && !f->dirty;
			n->dirty = 0;
			n->exists = 1;
			n->named = 0;
			n->removed = 0;
			f->exists = 0;
			break;
		case EV_MKDIR:
			n = node(r, e->path);
			n->exists = n->content = 1;
			n->dirty = n->named = n->removed = 0;
			break;
		case EV_REMOVE:
			n = node(r, e->path);
			n->exists = n->named = 0;
			n->removed = 1;
			break;
		}
	}
	last = seen(r, meta);
	if (last == NULL || !last->named)
		fault(r, "the last zarr.json's name is not fsynced when close "
		      "returns");
	return r->faults;
}

static void replay_free(struct replay *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].path);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* The checker catches what it is for: a crafted log of one shard whose
 * directory is never fsynced after the shard's rename. */
static void order_checker_self_test(void)
{
	static const struct fc_geom g = { 1, { 4 }, { 2 }, { 2 }, 1, 0, 0 };
	const struct ev good[] = {
		{ EV_MKDIR, "/s/r", NULL, 0 },
		{ EV_FSYNC, "/s", NULL, 0 },
		{ EV_MKDIR, "/s/r/c", NULL, 0 },
		{ EV_FSYNC, "/s/r", NULL, 0 },
		{ EV_WRITE, "/s/r/c/.0.tmp", NULL, 0 },
		{ EV_FSYNC, "/s/r/c/.0.tmp", NULL, 0 },
		{ EV_RENAME, "/s/r/c/0", "/s/r/c/.0.tmp", 0 },
		{ EV_FSYNC, "/s/r/c", NULL, 0 },
		{ EV_WRITE, "/s/r/.z.tmp", NULL, 0 },
		{ EV_FSYNC, "/s/r/.z.tmp", NULL, 0 },
		{ EV_RENAME, "/s/r/zarr.json", "/s/r/.z.tmp", 4 },
		{ EV_FSYNC, "/s/r", NULL, 0 },
	};
	struct ev bad[sizeof(good) / sizeof(good[0])];
	struct replay r = { 0 };
	int metas, shards, f_good, f_bad;

	f_good = replay_log(good, 12, "/s/r", &g, &r, &metas, &shards);
	replay_free(&r);
	/* Drop the fsync of c/ after the shard's rename. */
	memcpy(bad, good, 7 * sizeof(*bad));
	memcpy(bad + 7, good + 8, 4 * sizeof(*bad));
	f_bad = replay_log(bad, 11, "/s/r", &g, &r, &metas, &shards);
	ok(f_good == 0 && f_bad > 0 && strstr(r.why, "/s/r/c/0") != NULL,
	   "the order checker passes a durable log and catches a shard "
	   "whose directory was not fsynced (%s)", r.why);
	replay_free(&r);
}

/* One run of the workload under the log; returns its outcome's store
 * check. */
static int logged_run(const struct workload *w, const char *tmp,
		      const char *root, struct outcome *o)
{
	dlog_clear();
	dlog_start(tmp);
	run_workload(w, root, o);
	dlog_stop();
	check_store(w, root, o);
	return o->first_rc == SHARDPIPE_OK && o->store_ok;
}

static void durability_order(const struct workload *w0, const char *tmp)
{
	struct workload w = *w0;
	char root[1024];
	struct outcome o;
	struct replay r = { 0 };
	int metas = 0, shards = 0, runs_ok;
	size_t fsyncs = 0;

	order_checker_self_test();
	snprintf(root, sizeof(root), "%s/durable.zarr", tmp);
	fresh_dir(root);
	w.desc.durable = 1;
	runs_ok = logged_run(&w, tmp, root, &o);
	replay_log(dlog.ev, dlog.n, root, &w.g, &r, &metas, &shards);
	ok(runs_ok && r.faults == 0 && metas > 2 && shards > 0,
	   "durable: each of %d zarr.json renamed only after its temporary, "
	   "the %d shards it advertises and their directories were fsynced%s%s",
	   metas, shards, r.faults ? ": " : "", r.why);
	replay_free(&r);

	/* Over the store just written: the old one's removal is on disk
	 * before the new zarr.json can advertise anything. */
	w.desc.overwrite = 1;
	runs_ok = logged_run(&w, tmp, root, &o);
	replay_log(dlog.ev, dlog.n, root, &w.g, &r, &metas, &shards);
	{
		size_t removals = 0;

		for (size_t i = 0; i < dlog.n; i++)
			removals += dlog.ev[i].kind == EV_REMOVE;
		ok(runs_ok && r.faults == 0 && removals > 0,
		   "durable over an old store: its %zu removals fsynced "
		   "before the first zarr.json, and the same order after%s%s",
		   removals, r.faults ? ": " : "", r.why);
	}
	replay_free(&r);

	w.desc.durable = 0;
	w.desc.overwrite = 0;
	fresh_dir(root);
	runs_ok = logged_run(&w, tmp, root, &o);
	for (size_t i = 0; i < dlog.n; i++)
		fsyncs += dlog.ev[i].kind == EV_FSYNC;
	ok(runs_ok && fsyncs == 0 && dlog.n > 20,
	   "without durable: no fsync in %zu store operations (%zu fsyncs)",
	   dlog.n, fsyncs);
	dlog_clear();
}

/* --------------------------------------------- child-process cases */

/*
 * Run case `kind` (with `arg`) in a fresh process and collect its outcome
 * through a pipe on descriptor 3.  The child is this program run again,
 * not a bare fork: libgomp's thread pool does not survive fork, and a
 * parallel region in a forked child can wait forever for threads that
 * only exist in the parent.
 */
static const char *self_seed;
static const char *self_path; /* argv[0]: under valgrind /proc/self/exe
			       * names valgrind's tool, not this program */

static int in_child(const char *kind, const char *root, unsigned long arg,
		    struct outcome *o)
{
	int fds[2], st;
	pid_t pid;
	ssize_t got;
	char argbuf[32];

	if (pipe(fds) != 0)
		bail("pipe: %s", strerror(errno));
	snprintf(argbuf, sizeof(argbuf), "%lu", arg);
	pid = fork();
	if (pid < 0)
		bail("fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { "fault-store", "--child", (char *)kind,
				 (char *)root, argbuf, (char *)self_seed, NULL };

		close(fds[0]);
		if (dup2(fds[1], 3) < 0)
			_exit(5);
		execv(self_path, argv);
		_exit(6);
	}
	close(fds[1]);
	got = read(fds[0], o, sizeof(*o));
	close(fds[0]);
	waitpid(pid, &st, 0);
	return got == sizeof(*o) && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0
									: -1;
}

/* 2. RLIMIT_FSIZE: write() stops part-way, then EFBIG. */
static void fsize_child(const struct workload *w, const char *root,
			struct outcome *o, unsigned long arg)
{
	struct rlimit rl;

	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = (rlim_t)arg;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		_exit(4);
	run_workload(w, root, o);
	/* Only reads from here on. */
	check_store(w, root, o);
}

/* 3. A tiny tmpfs in a private mount namespace. */
static void tmpfs_child(const struct workload *w, const char *root,
			struct outcome *o, unsigned long arg)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%luk,mode=0777", arg);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("shardpipe-test", root, "tmpfs", 0, opts) != 0) {
		o->open_rc = -errno;
		return;
	}
	char store[1100];
	snprintf(store, sizeof(store), "%s/s.zarr", root);
	run_workload(w, store, o);
	check_store(w, store, o);
}

/* 4. A read-only store directory, as an unprivileged user. */
static void chmod_tree(const char *root, mode_t mode);

static void access_child(const struct workload *w, const char *root,
			 struct outcome *o, unsigned long arg)
{
	shardpipe_stream *s;
	size_t half = (w->bytes / 2 / w->row_bytes) * w->row_bytes;
	int phase = (int)arg;

	if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
		o->open_rc = -1000;
		return;
	}
	if (getuid() == 0) {
		o->open_rc = -1000;
		return;
	}
	memset(o, 0, sizeof(*o));
	o->sticky_ok = 1;
	if (phase == 0) {
		/* The parent directory is read-only: refused at open, and
		 * nothing is created. */
		char store[1100];

		chmod(root, 0555);
		snprintf(store, sizeof(store), "%s/s.zarr", root);
		o->open_rc = shardpipe_stream_open(&s, store, &w->desc);
		o->first_rc = o->close_rc = o->open_rc;
		snprintf(o->msg, sizeof(o->msg), "%s",
			 shardpipe_last_error_message());
		o->msg_names_path = strstr(o->msg, root) != NULL;
		o->store_ok = s == NULL && access(store, F_OK) != 0;
		chmod(root, 0755);
		return;
	}
	o->open_rc = shardpipe_stream_open(&s, root, &w->desc);
	if (o->open_rc != SHARDPIPE_OK) {
		o->first_rc = -2;
		snprintf(o->msg, sizeof(o->msg), "open: %s",
			 shardpipe_last_error_message());
		return;
	}
	o->first_call = -2;
	if (shardpipe_stream_append(s, w->input, half) != SHARDPIPE_OK ||
	    shardpipe_stream_flush(s) != SHARDPIPE_OK) {
		o->first_rc = -1;
		shardpipe_stream_close(s);
		return;
	}
	chmod_tree(root, 0555);
	int rc = shardpipe_stream_append(s, w->input + half, w->bytes - half);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_flush(s);
	o->first_rc = rc;
	snprintf(o->msg, sizeof(o->msg), "%s", shardpipe_stream_message(s));
	o->msg_names_path = strstr(o->msg, root) != NULL;
	if (rc == SHARDPIPE_OK) {
		o->close_rc = shardpipe_stream_close(s);
		o->first_rc = o->close_rc;
		snprintf(o->msg, sizeof(o->msg), "%s",
			 shardpipe_last_error_message());
		o->msg_names_path = strstr(o->msg, root) != NULL;
	} else {
		o->sticky_ok = shardpipe_stream_append(s, w->input, 10) == rc &&
			       shardpipe_stream_flush(s) == rc;
		o->close_rc = shardpipe_stream_close(s);
	}
	chmod_tree(root, 0755);
	check_store(w, root, o);
}

static mode_t tree_mode;

static int chmod_one(const char *p, const struct stat *sb, int flag,
		     struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DP)
		chmod(p, tree_mode);
	return 0;
}

static void chmod_tree(const char *root, mode_t mode)
{
	tree_mode = mode;
	nftw(root, chmod_one, 16, FTW_PHYS);
}

static void fsize_cases(const struct workload *w, const char *tmp,
			uint64_t *rng)
{
	char root[1024];
	struct outcome o;
	int runs = 0, good = 0;
	size_t meta, biggest;
	struct stat st;

	/* The limit lands between zarr.json's size and the biggest shard,
	 * so open succeeds and some shard is cut part-way. */
	snprintf(root, sizeof(root), "%s/ref.zarr/zarr.json", tmp);
	meta = stat(root, &st) == 0 ? (size_t)st.st_size : 4096;
	snprintf(root, sizeof(root), "%s/ref.zarr", tmp);
	biggest = 0;
	for (int s0 = 0; s0 < 4; s0++)
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++) {
				char p[1200];

				snprintf(p, sizeof(p), "%s/c/%d/%d/%d", root, s0,
					 i, j);
				if (stat(p, &st) == 0 &&
				    (size_t)st.st_size > biggest)
					biggest = (size_t)st.st_size;
			}
	if (biggest <= meta + 1) {
		skip(1, "shards are too small to cut (%zu bytes)", biggest);
		return;
	}
	snprintf(root, sizeof(root), "%s/fsize.zarr", tmp);
	for (int k = 0; k < 8; k++) {
		size_t lim = meta + 1 +
			     (size_t)(test_rand(rng) % (biggest - meta - 1));

		fresh_dir(root);
		runs++;
		if (in_child("fsize", root, lim, &o) != 0) {
			diag("RLIMIT_FSIZE %zu: the child failed", lim);
			continue;
		}
		char what[64];
		snprintf(what, sizeof(what), "RLIMIT_FSIZE %zu", lim);
		good += judge(&o, SHARDPIPE_ERR_NOSPACE, what);
	}
	faults_injected += runs;
	faults_survived += good;
	ok(good == runs, "RLIMIT_FSIZE cuts a shard part-way (%d limits up to "
	   "%zu bytes): NOSPACE, sticky, store consistent", runs, biggest);
}

static void tmpfs_cases(const struct workload *w, const char *tmp)
{
	char root[1024];
	struct outcome o;
	int runs = 0, good = 0;

	snprintf(root, sizeof(root), "%s/tmpfs", tmp);
	mkdir(root, 0755);
	for (unsigned long kib = 8; kib <= 64; kib += 8) {
		runs++;
		if (in_child("tmpfs", root, kib, &o) != 0) {
			diag("tmpfs of %lu KiB: the child failed", kib);
			continue;
		}
		if (o.open_rc < 0) {
			skip(1, "cannot mount a tmpfs here: %s",
			     strerror(-o.open_rc));
			rmdir(root);
			return;
		}
		if (o.first_rc == SHARDPIPE_OK && o.close_rc == SHARDPIPE_OK) {
			/* Everything fit: nothing to judge at this size. */
			runs--;
			continue;
		}
		char what[64];
		snprintf(what, sizeof(what), "tmpfs of %lu KiB", kib);
		good += judge(&o, SHARDPIPE_ERR_NOSPACE, what);
	}
	rmdir(root);
	faults_injected += runs;
	faults_survived += good;
	ok(runs > 0 && good == runs, "a full tmpfs (%d sizes that ran out): "
	   "NOSPACE, sticky, store consistent", runs);
}

static void access_cases(const struct workload *w, const char *tmp)
{
	char root[1024];
	struct outcome o;
	int good;

	/* mkdtemp made tmp 0700: let the unprivileged child through. */
	chmod(tmp, 0755);
	snprintf(root, sizeof(root), "%s/acc", tmp);
	mkdir(root, 0755);
	if (getuid() == 0 && chown(root, 65534, 65534) != 0) {
		skip(2, "running as root and cannot hand a directory to "
		     "uid 65534: %s", strerror(errno));
		return;
	}
	if (in_child("access", root, 0, &o) != 0) {
		ok(0, "EACCES at open: the child failed");
	} else if (o.open_rc == -1000) {
		skip(2, "running as root and cannot drop privileges to uid "
		     "65534 (permissions do not apply to root)");
		rmdir(root);
		return;
	} else {
		good = o.open_rc == SHARDPIPE_ERR_ACCESS && o.store_ok &&
		       o.msg_names_path;
		faults_injected++;
		faults_survived += good;
		ok(good, "a read-only parent directory: open refuses with "
		   "ACCESS and creates nothing (rc %d: %s)", o.open_rc, o.msg);
	}
	snprintf(root, sizeof(root), "%s/acc/s.zarr", tmp);
	mkdir(root, 0755);
	if (getuid() == 0 && chown(root, 65534, 65534) != 0)
		bail("chown %s: %s", root, strerror(errno));
	if (in_child("access", root, 1, &o) != 0) {
		ok(0, "EACCES mid-stream: the child failed");
		return;
	}
	good = judge(&o, SHARDPIPE_ERR_ACCESS, "read-only store directories");
	faults_injected++;
	faults_survived += good;
	ok(good, "store directories made read-only mid-stream: ACCESS, "
	   "sticky, the %d shards before stay valid", o.rep.shards);
}

/* The workload of a seed: the parent and its children build the same. */
static void build_workload(struct workload *w, uint64_t seed)
{
	uint64_t rng = seed;
	int codec = (int)(test_rand(&rng) % 3), loc = (int)(test_rand(&rng) % 2);

	/* A bounded dim 0 keeps batches (and so each of the hundreds of
	 * runs) small; unbounded streams meet faults in t/fault-sink and
	 * t/crash-kill. */
	workload_init(w, &rng, codec, loc, 1);
}

static int child_main(char **argv)
{
	struct workload w;
	struct outcome o;
	unsigned long arg = strtoul(argv[4], NULL, 10);

	build_workload(&w, strtoull(argv[5], NULL, 10));
	memset(&o, 0, sizeof(o));
	if (strcmp(argv[2], "fsize") == 0)
		fsize_child(&w, argv[3], &o, arg);
	else if (strcmp(argv[2], "tmpfs") == 0)
		tmpfs_child(&w, argv[3], &o, arg);
	else
		access_child(&w, argv[3], &o, arg);
	free(w.input);
	return write(3, &o, sizeof(o)) == sizeof(o) ? 0 : 3;
}

/* ------------------------------------------------- 6. a resume faulted */

/* Rows [from, ROWS) of the workload's input appended to a reopened store
 * in spans of a row and a half; the first failure's code, close's when
 * none came before. */
static int resume_rest(const struct workload *w, const char *root,
		       uint64_t from, char *msg, size_t n)
{
	shardpipe_stream *s;
	size_t at = (size_t)from * w->row_bytes, span = w->row_bytes * 3 / 2;
	int rc = shardpipe_stream_reopen(&s, root, &w->desc), crc;

	if (rc != SHARDPIPE_OK) {
		snprintf(msg, n, "%s", shardpipe_last_error_message());
		return rc;
	}
	while (rc == SHARDPIPE_OK && at < w->bytes) {
		size_t k = span < w->bytes - at ? span : w->bytes - at;

		rc = shardpipe_stream_append(s, w->input + at, k);
		at += k;
	}
	if (rc != SHARDPIPE_OK)
		snprintf(msg, n, "%s", shardpipe_stream_message(s));
	crc = shardpipe_stream_close(s);
	if (rc == SHARDPIPE_OK && crc != SHARDPIPE_OK)
		snprintf(msg, n, "%s", shardpipe_last_error_message());
	return rc != SHARDPIPE_OK ? rc : crc;
}

static void copy_store(const char *from, const char *to)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -a '%s' '%s'", to, from,
		 to);
	if (system(cmd) != 0)
		bail("cannot copy %s to %s", from, to);
}

/* shardpipe_reader_check() of the store at root. */
static int store_checks(const char *root, char *why, size_t n)
{
	shardpipe_reader *r;
	int rc = shardpipe_reader_open(&r, root);

	if (rc == SHARDPIPE_OK) {
		rc = shardpipe_reader_check(r);
		snprintf(why, n, "%s", shardpipe_reader_message(r));
		shardpipe_reader_close(r);
	} else {
		snprintf(why, n, "%s", shardpipe_last_error_message());
	}
	return rc == SHARDPIPE_OK;
}

/*
 * Continuing a store (doc/design.md §29) under the same faults: 7 rows
 * written and closed (shard row 1 partial), then a reopen that appends the
 * rest with the n-th store operation failing, for every n.  Each faulted
 * resume fails with the fault's code and leaves a consistent store: every
 * shard there valid and holding the input's rows, zarr.json advertising
 * only rows its shards hold (the old store or the new one, never a mix);
 * and a second, clean resume from whatever zarr.json advertises then gives
 * the files of the clean resume, which are the files of one run.
 */
static void resume_sweep(const struct workload *w, const char *tmp,
			 int step)
{
	char base[800], root[800], clean[800], one[800], msg[512];
	struct workload first = *w;
	struct outcome o;
	struct fc_report rep;
	long ops;
	int runs = 0, good = 0, same = 1, files = 0, rc;

	snprintf(base, sizeof(base), "%s/resume-base.zarr", tmp);
	snprintf(root, sizeof(root), "%s/resume.zarr", tmp);
	snprintf(clean, sizeof(clean), "%s/resume-clean.zarr", tmp);
	snprintf(one, sizeof(one), "%s/resume-one.zarr", tmp);
	/* The one run, and the first 7 rows of it closed (unbounded: a
	 * closed bounded array is full). */
	first.desc.dims[0].size = 0;
	first.bytes = 7 * w->row_bytes;
	first.steps = 1;
	first.span[0] = first.bytes;
	first.flush_after[0] = 0;
	fresh_dir(base);
	run_workload(&first, base, &o);
	if (o.first_rc != SHARDPIPE_OK)
		bail("the first 7 rows: %s", o.msg);
	first = *w;
	first.steps = 1;
	first.span[0] = w->bytes;
	first.flush_after[0] = 0;
	fresh_dir(one);
	run_workload(&first, one, &o);
	if (o.first_rc != SHARDPIPE_OK)
		bail("the one run: %s", o.msg);

	copy_store(base, clean);
	arm(clean, 0, INJ_FAIL, 0, 0);
	rc = resume_rest(w, clean, 7, msg, sizeof(msg));
	ops = inj.count;
	disarm();
	same = test_same_tree(one, clean, &files);
	ok(rc == SHARDPIPE_OK && same,
	   "a clean resume after 7 rows: %ld store operations, the one run's "
	   "files (%d)", ops, files);
	for (long n = 1; n <= ops; n += step) {
		uint64_t rows;
		shardpipe_desc d;
		int fine;

		copy_store(base, root);
		arm(root, n, INJ_FAIL, EIO, 0);
		rc = resume_rest(w, root, 7, msg, sizeof(msg));
		disarm();
		/* What a reader sees: every shard valid, the rows advertised
		 * the input's (the old partial shard's padding past them is
		 * no row of the array). */
		shardpipe_desc_init(&d);
		rows = 0;
		fine = rc == SHARDPIPE_ERR_IO && strstr(msg, root) != NULL &&
		       shardpipe_desc_from_store(&d, root, &rows) ==
			       SHARDPIPE_OK &&
		       rows >= 4 && store_checks(root, rep.why,
						 sizeof(rep.why)) &&
		       test_reads_back(root, rows, w->input,
				       (size_t)rows * w->row_bytes);
		/* A bounded array whose last shard epoch was written
		 * advertises all of its rows: nothing is left to resume. */
		if (fine &&
		    ((rows < ROWS &&
		      resume_rest(w, root, rows, msg, sizeof(msg)) !=
			      SHARDPIPE_OK) ||
		     !test_same_tree(clean, root, NULL))) {
			diag("EIO on resume operation %ld: resumed again from "
			     "row %llu: %s", n, (unsigned long long)rows, msg);
			fine = 0;
		} else if (!fine) {
			diag("EIO on resume operation %ld: code %d (%s), "
			     "\"%s\", store: %s", n, rc, shardpipe_strerror(rc),
			     msg, rep.why);
		}
		runs++;
		good += fine;
	}
	faults_injected += runs;
	faults_survived += good;
	ok(runs > 0 && good == runs,
	   "EIO on each of %d operations of a resume: the fault's code, a "
	   "consistent store, and a second resume gives the one run's files",
	   runs);
}

int main(int argc, char **argv)
{
	uint64_t seed, rng;
	char seed_text[32];
	const char *q = getenv("SHARDPIPE_FAULT_QUICK");
	int quick = q != NULL && *q != '\0' && *q != '0';
	/* Every nth store operation faulted (valgrind's run: every 9th, and
	 * half the errors). */
	int stride = quick ? 9 : (int)test_sized("operations stride", 1, 4);
	char *tmp;
	char ref[1024];
	struct workload w;
	struct outcome o;
	static const struct {
		int e;
		const char *name;
	} errs[] = { { ENOSPC, "ENOSPC" },
		     { EDQUOT, "EDQUOT" },
		     { EIO, "EIO" },
		     { EACCES, "EACCES" } };

	if (argc == 6 && strcmp(argv[1], "--child") == 0)
		return child_main(argv);
	self_path = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe";
	fc_passive_omp(argv);
	/* A hang is a failure, not a stuck CI job. */
	alarm(fc_timeout(300));
	seed = test_seed();
	snprintf(seed_text, sizeof(seed_text), "%llu", (unsigned long long)seed);
	self_seed = seed_text;
	rng = seed ^ 0x5eedull;
	tmp = test_tmpdir("fault-store");
	plan_lazy();
	build_workload(&w, seed);
	diag("codec %s, index at %s, %d appends",
	     shardpipe_codec_name(w.desc.codec),
	     w.desc.index_location ? "start" : "end", w.steps);

	/* A clean run: the reference bytes and the count of operations. */
	snprintf(ref, sizeof(ref), "%s/ref.zarr", tmp);
	arm(ref, 0, INJ_FAIL, 0, 0);
	run_workload(&w, ref, &o);
	clean_ops = inj.count;
	disarm();
	check_store(&w, ref, &o);
	ok(o.first_rc == SHARDPIPE_OK && o.store_ok && o.rep.shards == 16 &&
		   o.rep.hidden == 0,
	   "a clean run: %d shards, valid, %ld store operations (%s)",
	   o.rep.shards, clean_ops, o.rep.why);
	if (clean_ops < 20)
		bail("the interposed calls saw only %ld store operations; "
		     "the injector is not reaching the library", clean_ops);

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		if (quick && i % 2)
			continue;
		sweep(&w, tmp, errs[i].e, errs[i].name, stride);
	}
	absorb(&w, tmp, INJ_SHORT, "short writes");
	absorb(&w, tmp, INJ_EINTR, "EINTR");
	fsize_cases(&w, tmp, &rng);
	tmpfs_cases(&w, tmp);
	access_cases(&w, tmp);
	durability_order(&w, tmp);
	resume_sweep(&w, tmp, stride);

	diag("faults injected %d, survived %d", faults_injected,
	     faults_survived);
	free(w.input);
	chmod_tree(tmp, 0755);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
