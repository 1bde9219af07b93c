/*
 * trace.c - SHARDPIPE_TRACE=FILE (doc/design.md §23).
 *
 * The file is JSON in Chrome's trace event format, which Perfetto and
 * chrome://tracing open: an object whose "traceEvents" array holds one
 * complete event ("ph":"X") per span, with metadata events naming each
 * stream (a "process") and each of its tracks (a "thread").  Spans are
 * formatted as they arrive into the stream's buffer and added to the file
 * when the buffer fills and at close, so memory stays bounded and the file
 * is valid JSON after every addition: events are written over the closing
 * bracket, which is written again after them.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every trace starts with HEAD, so an existing file can be recognised as
 * one before it is replaced. */
#define HEAD "{\"otherData\":{\"writer\":\"shardpipe trace\"},\"traceEvents\":["
#define TAIL "\n]}\n"
#define HEAD_LEN (sizeof(HEAD) - 1)
#define TAIL_LEN (sizeof(TAIL) - 1)

/* Events are added to the file once a stream holds this many bytes. */
#define FLUSH_BYTES (1u << 20)

struct trace {
	char *path;
	unsigned pid;             /* the stream's number in the process */
	double t0;                /* the file's time zero */
	pthread_mutex_t mu;
	char *buf;                /* events not yet in the file, each ",\n{...}" */
	size_t len, cap;
	unsigned named;           /* tracks whose names are written */
	struct sp_err err;        /* the first failure to write */
};

/* The file this process started, which its later streams add to; one
 * lock orders every stream's writes to it. */
static pthread_mutex_t file_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int started;
	dev_t dev;
	ino_t ino;
	double t0;
	unsigned streams;
} ours;

static const char *const track_names[TRACE_NTRACKS] = {
	"caller (append)", "pipeline", "writer", "device: upload queue",
	"device: compute queue", "device: download queue",
};

int trace_wanted(void)
{
	const char *path = getenv("SHARDPIPE_TRACE");

	return path != NULL && *path != '\0';
}

enum trace_track trace_queue(const char *queue)
{
	if (strcmp(queue, "upload") == 0)
		return TRACE_UPLOAD;
	if (strcmp(queue, "download") == 0)
		return TRACE_DOWNLOAD;
	return TRACE_COMPUTE;
}

static int write_all(int fd, const char *p, size_t n, off_t at)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		at += w;
	}
	return 0;
}

/* 1 when fd's first bytes are HEAD. */
static int is_trace(int fd)
{
	char head[HEAD_LEN];

	return pread(fd, head, HEAD_LEN, 0) == (ssize_t)HEAD_LEN &&
	       memcmp(head, HEAD, HEAD_LEN) == 0;
}

/* Under file_mu: open the file for this process's streams, starting it
 * afresh unless this process already did.  Returns the descriptor, or -1
 * with err set. */
static int open_file(const char *path, struct sp_err *err)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0) {
		sp_err_set(err, SHARDPIPE_ERR_IO,
			   "SHARDPIPE_TRACE=%s: cannot create the trace: %s",
			   path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_size > 0 && !is_trace(fd))) {
		close(fd);
		sp_err_set(err, SHARDPIPE_ERR_EXISTS,
			   "SHARDPIPE_TRACE=%s: the file exists and is not a "
			   "shardpipe trace; it is left as it is", path);
		return -1;
	}
	if (ours.started && ours.dev == st.st_dev && ours.ino == st.st_ino)
		return fd;
	if (ftruncate(fd, 0) != 0 ||
	    write_all(fd, HEAD TAIL, HEAD_LEN + TAIL_LEN, 0) != 0) {
		sp_err_set(err, SHARDPIPE_ERR_IO,
			   "SHARDPIPE_TRACE=%s: cannot write the trace: %s",
			   path, strerror(errno));
		close(fd);
		return -1;
	}
	ours.started = 1;
	ours.dev = st.st_dev;
	ours.ino = st.st_ino;
	ours.t0 = sp_now();
	return fd;
}

/* Under t->mu: add the buffered events to the file. */
static void flush_locked(struct trace *t)
{
	struct sp_err err;
	struct stat st;
	char before;
	int fd, rc = -1;

	if (t->len == 0 || t->err.code != SHARDPIPE_OK)
		return;
	sp_err_clear(&err);
	pthread_mutex_lock(&file_mu);
	fd = open_file(t->path, &err);
	errno = 0;
	/* Write over TAIL; the first event of the file needs no comma. */
	if (fd >= 0 && fstat(fd, &st) == 0 &&
	    st.st_size >= (off_t)(HEAD_LEN + TAIL_LEN) &&
	    pread(fd, &before, 1, st.st_size - (off_t)TAIL_LEN - 1) == 1) {
		off_t at = st.st_size - (off_t)TAIL_LEN;
		size_t skip = before == '[';

		rc = write_all(fd, t->buf + skip, t->len - skip, at);
		if (rc == 0)
			rc = write_all(fd, TAIL, TAIL_LEN,
				       at + (off_t)(t->len - skip));
	}
	if (fd >= 0 && rc != 0)
		sp_err_set(&err, SHARDPIPE_ERR_IO,
			   "SHARDPIPE_TRACE=%s: cannot add to the trace: %s",
			   t->path, errno ? strerror(errno) : "it was changed");
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&file_mu);
	if (err.code != SHARDPIPE_OK)
		t->err = err;
	t->len = 0;
}

/* Under t->mu: append one formatted event to the buffer. */
__attribute__((format(printf, 2, 3)))
static void put(struct trace *t, const char *fmt, ...)
{
	va_list ap;
	char *b;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < t->cap - t->len)
			break;
		/* A buffer that cannot grow loses the event, not the
		 * stream: the trace is a measurement, not the data. */
		b = realloc(t->buf, 2 * t->cap + (size_t)n);
		if (b == NULL)
			return;
		t->buf = b;
		t->cap = 2 * t->cap + (size_t)n;
	}
	t->len += (size_t)n;
}

/* Under t->mu: a metadata event naming the stream or one of its tracks. */
static void put_meta(struct trace *t, const char *what, int tid,
		     const char *name, int sort)
{
	put(t, ",\n{\"name\":\"%s_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%d,"
	       "\"args\":{\"name\":\"%s\"}}", what, t->pid, tid, name);
	put(t, ",\n{\"name\":\"%s_sort_index\",\"ph\":\"M\",\"pid\":%u,"
	       "\"tid\":%d,\"args\":{\"sort_index\":%d}}", what, t->pid, tid,
	    sort);
}

/* s as the inside of a JSON string, cut to fit n bytes. */
static void json_text(char *out, size_t n, const char *s)
{
	size_t o = 0;

	for (; *s != '\0' && o + 7 < n; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, n - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(out + o, n - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

int trace_open(struct trace **out, const char *label, struct sp_err *err)
{
	const char *path = getenv("SHARDPIPE_TRACE");
	struct trace *t;
	char name[600];
	int fd;

	*out = NULL;
	if (!trace_wanted())
		return SHARDPIPE_OK;
	t = calloc(1, sizeof(*t));
	SP_RETURN_IF(t == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for the trace");
	t->path = strdup(path);
	t->cap = 64 << 10;
	t->buf = malloc(t->cap);
	if (t->path == NULL || t->buf == NULL) {
		free(t->path);
		free(t->buf);
		free(t);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for the trace");
	}
	pthread_mutex_init(&t->mu, NULL);
	sp_err_clear(&t->err);
	pthread_mutex_lock(&file_mu);
	fd = open_file(path, err);
	if (fd >= 0) {
		close(fd);
		t->t0 = ours.t0;
		t->pid = ++ours.streams;
	}
	pthread_mutex_unlock(&file_mu);
	if (fd < 0) {
		trace_close(t, NULL);
		return err->code;
	}
	json_text(name, sizeof(name), label);
	pthread_mutex_lock(&t->mu);
	put_meta(t, "process", 0, name, (int)t->pid);
	pthread_mutex_unlock(&t->mu);
	*out = t;
	return SHARDPIPE_OK;
}

void trace_span(struct trace *t, enum trace_track track, const char *name,
		const char *unit, uint64_t n, double t0, double t1)
{
	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!(t->named & 1u << track)) {
		t->named |= 1u << track;
		put_meta(t, "thread", (int)track + 1, track_names[track],
			 (int)track);
	}
	put(t, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%d,"
	       "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"%s\":%llu}}", name, t->pid,
	    (int)track + 1, 1e6 * (t0 - t->t0),
	    t1 > t0 ? 1e6 * (t1 - t0) : 0.0, unit, (unsigned long long)n);
	pthread_mutex_unlock(&t->mu);
}

void trace_flush(struct trace *t, enum trace_track track)
{
	double f0;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (t->len >= FLUSH_BYTES) {
		f0 = sp_now();
		flush_locked(t);
		put(t, ",\n{\"name\":\"trace write\",\"ph\":\"X\",\"pid\":%u,"
		       "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}", t->pid,
		    (int)track + 1, 1e6 * (f0 - t->t0),
		    1e6 * (sp_now() - f0));
	}
	pthread_mutex_unlock(&t->mu);
}

int trace_close(struct trace *t, struct sp_err *err)
{
	int rc;

	if (t == NULL)
		return SHARDPIPE_OK;
	pthread_mutex_lock(&t->mu);
	flush_locked(t);
	pthread_mutex_unlock(&t->mu);
	rc = t->err.code;
	if (rc != SHARDPIPE_OK && err != NULL)
		*err = t->err;
	pthread_mutex_destroy(&t->mu);
	free(t->path);
	free(t->buf);
	free(t);
	return rc;
}
