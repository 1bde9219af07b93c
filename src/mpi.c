/*
 * mpi.c - libshardpipe-mpi: one time step from many ranks (design §31).
 *
 * Built on the region writers of design §30 and nothing else of the
 * library's internals: a rank owns one box of whole shards of dims 1..,
 * written by one region stream for the whole run, and the ranks'
 * subdomains are moved to the owners by one MPI_Alltoallv per step.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardpipe_mpi.h"

#define MAXD SHARDPIPE_MAX_RANK

struct shardpipe_mpi_array {
	MPI_Comm comm;
	int me, nranks;
	const char *path;
	shardpipe_desc desc;
	int nd;             /* dims of one step: desc.rank - 1 */
	uint64_t size[MAXD], shard[MAXD], nsh[MAXD]; /* dims 1.. */
	size_t esize;
	/* The grid of owners' boxes (design §31.1): part[d] blocks of shards
	 * along dim d + 1, owners = their product, rank r < owners owning
	 * block r (row-major); this rank's box, its stream and a step of it. */
	uint64_t part[MAXD];
	int owners;
	uint64_t olo[MAXD], ohi[MAXD];
	shardpipe_stream *s;
	unsigned char *buf;
	size_t bytes;
	uint64_t steps, published;
	int failed;         /* agreed: every rank has the same value */
	int pending;        /* rank 0: a publish that failed, for the next step */
	uint64_t *boxes;    /* every rank's lo, hi and status of this step */
	int *scount, *sdispl, *rcount, *rdispl;
	/* The exchange's buffers, kept from step to step: fresh ones cost a
	 * page fault per 4 KiB each step, more than the copies themselves. */
	unsigned char *sbuf, *rbuf;
	size_t scap, rcap;
	double t_exchange, t_append;
	char msg[512];
};

static _Thread_local char open_msg[512];

static void say(char *msg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(char *msg, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, 512, fmt, ap);
	va_end(ap);
}

/* The error the ranks agree on: the largest code any rank has (codes are
 * positive), and with it the least of the others' row counts. */
static int agree(MPI_Comm comm, int rc, uint64_t *rows)
{
	uint64_t v[2] = { (uint64_t)rc, rows ? ~*rows : 0 };
	if (MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MAX, comm) !=
	    MPI_SUCCESS)
		return SHARDPIPE_ERR_IO;
	if (rows)
		*rows = ~v[1];
	return (int)v[0];
}

static uint64_t box_volume(int nd, const uint64_t *lo, const uint64_t *hi)
{
	uint64_t v = 1;
	for (int d = 0; d < nd; d++)
		v *= hi[d] > lo[d] ? hi[d] - lo[d] : 0;
	return v;
}

/* ilo..ihi = a ∩ b; nonzero when it is not empty. */
static int intersect(int nd, const uint64_t *alo, const uint64_t *ahi,
		     const uint64_t *blo, const uint64_t *bhi, uint64_t *ilo,
		     uint64_t *ihi)
{
	for (int d = 0; d < nd; d++) {
		ilo[d] = alo[d] > blo[d] ? alo[d] : blo[d];
		ihi[d] = ahi[d] < bhi[d] ? ahi[d] : bhi[d];
		if (ilo[d] >= ihi[d])
			return 0;
	}
	return 1;
}

/* Copy the cells of box i (inside both) from the row-major buffer of box
 * s into the row-major buffer of box t: one memcpy per innermost row. */
static void copy_box(int nd, size_t esize, unsigned char *t,
		     const uint64_t *tlo, const uint64_t *thi,
		     const unsigned char *s, const uint64_t *slo,
		     const uint64_t *shi, const uint64_t *ilo,
		     const uint64_t *ihi)
{
	uint64_t at[MAXD];
	size_t row = (size_t)(ihi[nd - 1] - ilo[nd - 1]) * esize;
	memcpy(at, ilo, sizeof(uint64_t) * (size_t)nd);
	for (;;) {
		size_t so = 0, to = 0;
		for (int d = 0; d < nd; d++) {
			so = so * (shi[d] - slo[d]) + (at[d] - slo[d]);
			to = to * (thi[d] - tlo[d]) + (at[d] - tlo[d]);
		}
		memcpy(t + to * esize, s + so * esize, row);
		int d = nd - 2;
		for (; d >= 0; d--) {
			if (++at[d] < ihi[d])
				break;
			at[d] = ilo[d];
		}
		if (d < 0)
			return;
	}
}

/* " (dim 1 0..64, dim 2 ...)": a box over dims 1.. for a message. */
static void format_box(char *out, size_t n, int nd, const uint64_t *lo,
		       const uint64_t *hi)
{
	size_t o = 0;
	out[0] = 0;
	for (int d = 0; d < nd && o + 1 < n; d++)
		o += (size_t)snprintf(out + o, n - o, "%sdim %d %llu..%llu",
				      d ? ", " : "", d + 1,
				      (unsigned long long)lo[d],
				      (unsigned long long)hi[d]);
}

/* The owners' grid (design §31.1): along each dim in turn, the number of
 * blocks of shards that lets the most ranks own a box, counting what the
 * dims after it can still split; a tie goes to the outer dim, whose
 * blocks are the longer runs of a rank's step in memory. */
static void partition(shardpipe_mpi_array *a)
{
	uint64_t left = (uint64_t)a->nranks, after[MAXD + 1];
	after[a->nd] = 1;
	for (int d = a->nd - 1; d >= 0; d--)
		after[d] = after[d + 1] > UINT64_MAX / a->nsh[d]
				   ? UINT64_MAX
				   : after[d + 1] * a->nsh[d];
	a->owners = 1;
	for (int d = 0; d < a->nd; d++) {
		uint64_t best = 1, most = 0;
		for (uint64_t p = 1; p <= a->nsh[d] && p <= left; p++) {
			uint64_t rest = left / p < after[d + 1] ? left / p
								: after[d + 1];
			if (p * rest >= most) {
				most = p * rest;
				best = p;
			}
		}
		a->part[d] = best;
		left /= best;
		a->owners *= (int)best;
	}
}

/* The box rank r owns over dims 1..: block r of the grid, row-major, its
 * ends on shard boundaries or the array's edge.  0 when r owns none. */
static int owner_box(const shardpipe_mpi_array *a, int r, uint64_t *lo,
		     uint64_t *hi)
{
	if (r >= a->owners)
		return 0;
	uint64_t k = (uint64_t)r;
	for (int d = a->nd - 1; d >= 0; d--) {
		uint64_t c = k % a->part[d];
		k /= a->part[d];
		lo[d] = c * a->nsh[d] / a->part[d] * a->shard[d];
		hi[d] = (c + 1) * a->nsh[d] / a->part[d] * a->shard[d];
		if (hi[d] > a->size[d])
			hi[d] = a->size[d];
	}
	return 1;
}

static void free_array(shardpipe_mpi_array *a)
{
	free(a->buf);
	free(a->boxes);
	free(a->scount);
	free(a->sdispl);
	free(a->rcount);
	free(a->rdispl);
	free(a->sbuf);
	free(a->rbuf);
	free(a);
}

/* Geometry of dims 1.., or a message and a code. */
static int plan(shardpipe_mpi_array *a, const shardpipe_desc *desc)
{
	if (desc->rank < 2 || desc->rank > MAXD) {
		say(a->msg, "shardpipe_mpi_open: rank %d: the MPI writer needs "
			    "dim 0 (time) and at least one dim to decompose",
		    desc->rank);
		return SHARDPIPE_ERR_RANK;
	}
	a->nd = desc->rank - 1;
	a->esize = shardpipe_dtype_size(desc->dtype);
	if (a->esize == 0) {
		say(a->msg, "shardpipe_mpi_open: unknown dtype %d", (int)desc->dtype);
		return SHARDPIPE_ERR_DTYPE;
	}
	for (int d = 0; d < a->nd; d++) {
		const shardpipe_dim *dim = &desc->dims[d + 1];
		a->size[d] = dim->size;
		a->shard[d] = dim->chunk * dim->chunks_per_shard;
		if (dim->size == 0 || a->shard[d] == 0 ||
		    a->shard[d] / dim->chunk != dim->chunks_per_shard) {
			say(a->msg, "shardpipe_mpi_open: dim %d: size %llu, "
				    "chunk %llu x %llu per shard: not an array "
				    "the MPI writer can split",
			    d + 1, (unsigned long long)dim->size,
			    (unsigned long long)dim->chunk,
			    (unsigned long long)dim->chunks_per_shard);
			return SHARDPIPE_ERR_DIM_SIZE;
		}
		a->nsh[d] = (dim->size + a->shard[d] - 1) / a->shard[d];
	}
	partition(a);
	return SHARDPIPE_OK;
}

/* This rank's box (design §31.1): its step buffer and its region stream. */
static int open_owned(shardpipe_mpi_array *a)
{
	uint64_t lo[MAXD], hi[MAXD];
	char box[256];
	if (!owner_box(a, a->me, a->olo, a->ohi))
		return SHARDPIPE_OK; /* more ranks than blocks: it only sends */
	format_box(box, sizeof box, a->nd, a->olo, a->ohi);
	a->bytes = (size_t)box_volume(a->nd, a->olo, a->ohi) * a->esize;
	a->buf = malloc(a->bytes);
	if (!a->buf) {
		say(a->msg, "rank %d: out of memory for a step of its box (%s, "
			    "%zu bytes)", a->me, box, a->bytes);
		return SHARDPIPE_ERR_NOMEM;
	}
	lo[0] = 0;
	hi[0] = a->desc.dims[0].size; /* 0: unbounded, "to the end" */
	memcpy(lo + 1, a->olo, sizeof(uint64_t) * (size_t)a->nd);
	memcpy(hi + 1, a->ohi, sizeof(uint64_t) * (size_t)a->nd);
	int rc = shardpipe_stream_open_region(&a->s, a->path, &a->desc, lo, hi);
	if (rc) {
		a->s = NULL;
		say(a->msg, "rank %d: box %s: %s", a->me, box,
		    shardpipe_last_error_message());
	}
	return rc;
}

static int close_owned(shardpipe_mpi_array *a, uint64_t *rows)
{
	int rc = SHARDPIPE_OK;
	*rows = UINT64_MAX;
	if (a->s) {
		rc = shardpipe_stream_close(a->s);
		if (rc) {
			char box[256];
			format_box(box, sizeof box, a->nd, a->olo, a->ohi);
			say(a->msg, "rank %d: closing its box (%s): %s", a->me,
			    box, shardpipe_last_error_message());
		}
		a->s = NULL;
	}
	/* A closed stream has written every row appended to it. */
	if (!rc)
		*rows = a->steps;
	return rc;
}

int shardpipe_mpi_open(shardpipe_mpi_array **out, MPI_Comm comm,
		       const char *path, const shardpipe_desc *desc)
{
	int rc = SHARDPIPE_OK, made = 0;
	shardpipe_mpi_array *a = calloc(1, sizeof *a);
	open_msg[0] = 0;
	if (out)
		*out = NULL;
	if (!a) {
		rc = SHARDPIPE_ERR_NOMEM;
	} else if (!out || !path || !desc) {
		say(a->msg, "shardpipe_mpi_open: a NULL %s",
		    !out ? "out" : !path ? "path" : "desc");
		rc = SHARDPIPE_ERR_INVALID_ARGUMENT;
	} else {
		a->comm = comm;
		MPI_Comm_rank(comm, &a->me);
		MPI_Comm_size(comm, &a->nranks);
		a->path = path;
		a->desc = *desc;
		rc = plan(a, desc);
	}
	if (!rc) {
		size_t r = (size_t)a->nranks;
		a->boxes = malloc(sizeof(uint64_t) * r * (2 * (size_t)a->nd + 1));
		a->scount = malloc(sizeof(int) * r);
		a->sdispl = malloc(sizeof(int) * r);
		a->rcount = malloc(sizeof(int) * r);
		a->rdispl = malloc(sizeof(int) * r);
		if (!a->boxes || !a->scount || !a->sdispl || !a->rcount ||
		    !a->rdispl)
			rc = SHARDPIPE_ERR_NOMEM;
	}
	/* Only rank 0 touches the directory; the others wait for it.  An
	 * S3 prefix needs none (design §30.4). */
	if (!rc && a->me == 0 && strncmp(path, "s3://", 5) != 0) {
		if (mkdir(path, 0777) == 0) {
			made = 1;
		} else if (errno != EEXIST) {
			say(a->msg, "rank 0: cannot create %s: %s", path,
			    strerror(errno));
			rc = errno == EACCES ? SHARDPIPE_ERR_ACCESS
					     : SHARDPIPE_ERR_PATH;
		}
	}
	/* A rank that failed above still joins every collective, so that no
	 * rank waits for it forever. */
	if (agree(comm, rc, NULL) == 0 && !rc)
		rc = open_owned(a);
	int all = agree(comm, rc, NULL);
	if (all) {
		if (a) {
			if (a->s)
				shardpipe_stream_close(a->s);
			/* An empty directory this call made goes again; a
			 * failed region open writes nothing (design §30). */
			if (made)
				rmdir(path);
			if (!rc)
				say(a->msg, "rank %d: another rank failed to open "
					    "(%s)", a->me, shardpipe_strerror(all));
			memcpy(open_msg, a->msg, sizeof open_msg);
			free_array(a);
		} else {
			say(open_msg, "shardpipe_mpi_open: out of memory");
		}
		return all;
	}
	*out = a;
	return SHARDPIPE_OK;
}

/* The verdict on the step's boxes, the same on every rank: they are read
 * from the gathered copy only. */
static int check_tiling(shardpipe_mpi_array *a)
{
	size_t w = 2 * (size_t)a->nd + 1;
	uint64_t total = 1, sum = 0;
	for (int d = 0; d < a->nd; d++)
		total *= a->size[d];
	for (int r = 0; r < a->nranks; r++) {
		const uint64_t *b = a->boxes + (size_t)r * w;
		if (b[2 * a->nd]) {
			say(a->msg, "rank %d passed no box or no data", r);
			return SHARDPIPE_ERR_INVALID_ARGUMENT;
		}
		for (int d = 0; d < a->nd; d++)
			if (b[d] > b[a->nd + d] || b[a->nd + d] > a->size[d]) {
				say(a->msg, "rank %d: dim %d: box %llu..%llu is "
					    "not inside 0..%llu",
				    r, d + 1, (unsigned long long)b[d],
				    (unsigned long long)b[a->nd + d],
				    (unsigned long long)a->size[d]);
				return SHARDPIPE_ERR_INVALID_ARGUMENT;
			}
		sum += box_volume(a->nd, b, b + a->nd);
	}
	for (int r = 0; r < a->nranks; r++)
		for (int q = r + 1; q < a->nranks; q++) {
			uint64_t ilo[MAXD], ihi[MAXD];
			const uint64_t *b = a->boxes + (size_t)r * w;
			const uint64_t *c = a->boxes + (size_t)q * w;
			if (intersect(a->nd, b, b + a->nd, c, c + a->nd, ilo, ihi)) {
				char where[256];
				format_box(where, sizeof where, a->nd, ilo, ihi);
				say(a->msg, "the boxes of ranks %d and %d overlap "
					    "(%s)", r, q, where);
				return SHARDPIPE_ERR_INVALID_ARGUMENT;
			}
		}
	/* Inside the step and disjoint: they tile it when their volumes add
	 * up to its own. */
	if (sum != total) {
		say(a->msg, "the ranks' boxes leave %llu of the step's %llu "
			    "elements out",
		    (unsigned long long)(total - sum), (unsigned long long)total);
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	return SHARDPIPE_OK;
}

/* Pack this rank's box by owner, exchange, unpack into this rank's step
 * buffer: one piece per pair of ranks whose boxes meet, each box row-major.
 * Returns a code; the caller agrees on it. */
static int exchange(shardpipe_mpi_array *a, const uint64_t *lo,
		    const uint64_t *hi, const void *data)
{
	size_t w = 2 * (size_t)a->nd + 1, r = (size_t)a->nranks;
	uint64_t stot = 0, rtot = 0, olo[MAXD], ohi[MAXD], ilo[MAXD], ihi[MAXD];
	int rc = SHARDPIPE_OK;
	for (size_t q = 0; q < r && !rc; q++) {
		/* What this rank sends owner q (its box against q's) and
		 * what it receives from source q (q's box against its own). */
		const uint64_t *b = a->boxes + q * w;
		uint64_t sn = 0, rn = 0;
		if (q != (size_t)a->me && owner_box(a, (int)q, olo, ohi) &&
		    intersect(a->nd, lo, hi, olo, ohi, ilo, ihi))
			sn = box_volume(a->nd, ilo, ihi) * a->esize;
		if (q != (size_t)a->me && a->s &&
		    intersect(a->nd, b, b + a->nd, a->olo, a->ohi, ilo, ihi))
			rn = box_volume(a->nd, ilo, ihi) * a->esize;
		if (sn > INT_MAX || stot > INT_MAX - sn || rn > INT_MAX ||
		    rtot > INT_MAX - rn) {
			say(a->msg, "rank %d: more than 2 GiB to %s one rank in "
				    "one step (MPI_Alltoallv counts are int)",
			    a->me, sn > INT_MAX || stot > INT_MAX - sn
					   ? "send to" : "receive from");
			rc = SHARDPIPE_ERR_OVERFLOW;
			break;
		}
		a->scount[q] = (int)sn;
		a->sdispl[q] = (int)stot;
		a->rcount[q] = (int)rn;
		a->rdispl[q] = (int)rtot;
		stot += sn;
		rtot += rn;
	}
	if (!rc && stot > a->scap) {
		free(a->sbuf);
		a->scap = 0;
		if ((a->sbuf = malloc(stot)))
			a->scap = stot;
	}
	if (!rc && rtot > a->rcap) {
		free(a->rbuf);
		a->rcap = 0;
		if ((a->rbuf = malloc(rtot)))
			a->rcap = rtot;
	}
	if (!rc && (a->scap < stot || a->rcap < rtot)) {
		say(a->msg, "rank %d: out of memory for the exchange", a->me);
		rc = SHARDPIPE_ERR_NOMEM;
	}
	for (size_t q = 0; q < r && !rc; q++) {
		if (!owner_box(a, (int)q, olo, ohi) ||
		    !intersect(a->nd, lo, hi, olo, ohi, ilo, ihi))
			continue;
		if (q == (size_t)a->me) /* its own piece skips the exchange */
			copy_box(a->nd, a->esize, a->buf, a->olo, a->ohi, data,
				 lo, hi, ilo, ihi);
		else
			copy_box(a->nd, a->esize, a->sbuf + a->sdispl[q], ilo,
				 ihi, data, lo, hi, ilo, ihi);
	}
	/* Everyone must know whether the exchange goes ahead. */
	rc = agree(a->comm, rc, NULL);
	if (!rc &&
	    MPI_Alltoallv(a->sbuf, a->scount, a->sdispl, MPI_BYTE, a->rbuf,
			  a->rcount, a->rdispl, MPI_BYTE,
			  a->comm) != MPI_SUCCESS) {
		say(a->msg, "rank %d: MPI_Alltoallv failed", a->me);
		rc = SHARDPIPE_ERR_IO;
	}
	for (size_t q = 0; q < r && !rc; q++) {
		const uint64_t *b = a->boxes + q * w;
		if (q != (size_t)a->me && a->s &&
		    intersect(a->nd, b, b + a->nd, a->olo, a->ohi, ilo, ihi))
			copy_box(a->nd, a->esize, a->buf, a->olo, a->ohi,
				 a->rbuf + a->rdispl[q], ilo, ihi, ilo, ihi);
	}
	return rc;
}

static int publish(shardpipe_mpi_array *a, uint64_t rows)
{
	if (a->me != 0 || rows <= a->published)
		return SHARDPIPE_OK;
	int rc = shardpipe_array_publish(a->path, &a->desc, rows);
	if (rc)
		say(a->msg, "rank 0: publishing %llu rows: %s",
		    (unsigned long long)rows, shardpipe_last_error_message());
	else
		a->published = rows;
	return rc;
}

int shardpipe_mpi_write_step(shardpipe_mpi_array *a, const uint64_t *lo,
			     const uint64_t *hi, const void *data)
{
	if (!a)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (a->failed) {
		say(a->msg, "an earlier step failed: the array takes no more");
		return SHARDPIPE_ERR_CLOSED;
	}
	size_t w = 2 * (size_t)a->nd + 1;
	uint64_t *mine = a->boxes + (size_t)a->me * w;
	double t0 = MPI_Wtime();
	/* Every rank's box, and a status word: a NULL argument here, or a
	 * publish that failed on rank 0 after the last step. */
	if (lo && hi) {
		memcpy(mine, lo, sizeof(uint64_t) * (size_t)a->nd);
		memcpy(mine + a->nd, hi, sizeof(uint64_t) * (size_t)a->nd);
		mine[2 * a->nd] = 0;
		if (!data && box_volume(a->nd, lo, hi))
			mine[2 * a->nd] = 1;
	} else {
		memset(mine, 0, sizeof(uint64_t) * w);
		mine[2 * a->nd] = 1;
	}
	if (a->pending)
		mine[2 * a->nd] = 2;
	if (MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a->boxes, (int)w,
			  MPI_UINT64_T, a->comm) != MPI_SUCCESS) {
		a->failed = 1;
		say(a->msg, "rank %d: MPI_Allgather failed", a->me);
		return SHARDPIPE_ERR_IO;
	}
	if (a->boxes[2 * a->nd] == 2) {
		a->failed = 1;
		if (a->me)
			say(a->msg, "rank 0 failed to publish zarr.json after "
				    "step %llu", (unsigned long long)a->steps);
		return SHARDPIPE_ERR_IO;
	}
	/* A refused step changes nothing: the array goes on. */
	int rc = check_tiling(a);
	if (rc)
		return rc;
	if (a->desc.dims[0].size && a->steps >= a->desc.dims[0].size) {
		say(a->msg, "step %llu is beyond dim 0's %llu rows",
		    (unsigned long long)a->steps,
		    (unsigned long long)a->desc.dims[0].size);
		return SHARDPIPE_ERR_BEYOND_END;
	}
	rc = exchange(a, mine, mine + a->nd, data);
	double t1 = MPI_Wtime();
	a->t_exchange += t1 - t0;
	uint64_t rows = UINT64_MAX;
	if (!rc && a->s) {
		shardpipe_stats st;
		rc = shardpipe_stream_append(a->s, a->buf, a->bytes);
		if (!rc)
			rc = shardpipe_stream_stats(a->s, &st);
		if (rc)
			say(a->msg, "rank %d: its box: %s", a->me,
			    shardpipe_stream_message(a->s));
		else
			rows = st.rows_written;
	}
	a->t_append += MPI_Wtime() - t1;
	int all = agree(a->comm, rc, &rows);
	if (all) {
		a->failed = 1;
		if (!rc)
			say(a->msg, "rank %d: another rank failed in step %llu "
				    "(%s)",
			    a->me, (unsigned long long)a->steps,
			    shardpipe_strerror(all));
		return all;
	}
	a->steps++;
	/* Rows whose shards every owner has written; a publish failure is
	 * told to the others by the next collective. */
	if (rows != UINT64_MAX && publish(a, rows))
		a->pending = 1;
	return SHARDPIPE_OK;
}

int shardpipe_mpi_close(shardpipe_mpi_array *a)
{
	if (!a)
		return SHARDPIPE_OK;
	uint64_t rows;
	int rc = close_owned(a, &rows);
	if (a->pending)
		rc = SHARDPIPE_ERR_IO;
	if (a->failed && !rc) {
		say(a->msg, "an earlier step failed: nothing more published");
		rc = SHARDPIPE_ERR_CLOSED;
	}
	int all = agree(a->comm, rc, &rows);
	if (!all && rows != UINT64_MAX) {
		/* Bounded: the whole dim 0 once every step is in. */
		if (a->desc.dims[0].size && rows >= a->desc.dims[0].size)
			rows = a->desc.dims[0].size;
		rc = publish(a, rows);
		uint64_t v = (uint64_t)rc;
		MPI_Bcast(&v, 1, MPI_UINT64_T, 0, a->comm);
		all = (int)v;
	}
	if (all)
		memcpy(open_msg, a->msg, sizeof open_msg);
	free_array(a);
	return all;
}

const char *shardpipe_mpi_message(const shardpipe_mpi_array *a)
{
	return a ? a->msg : open_msg;
}

void shardpipe_mpi_times(const shardpipe_mpi_array *a, double *seconds_exchange,
			 double *seconds_append)
{
	if (seconds_exchange)
		*seconds_exchange = a ? a->t_exchange : 0;
	if (seconds_append)
		*seconds_append = a ? a->t_append : 0;
}
