/*
 * mpi.c - libshardpipe-mpi: one time step from many ranks (design §31).
 *
 * Built on the region writers of design §30 and nothing else of the
 * library's internals: a rank owns whole shards of dims 1.., each written
 * by one region stream for the whole run, and the ranks' subdomains are
 * moved to the owners by one MPI_Alltoallv per step.
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

/* One owned shard of dims 1..: its box, stream and step buffer. */
typedef struct owned {
	uint64_t k; /* row-major shard number over dims 1.. */
	uint64_t lo[MAXD], hi[MAXD];
	shardpipe_stream *s;
	unsigned char *buf; /* one step of the box */
	size_t bytes;
} owned;

struct shardpipe_mpi_array {
	MPI_Comm comm;
	int me, nranks;
	const char *path;
	shardpipe_desc desc;
	int nd;             /* dims of one step: desc.rank - 1 */
	uint64_t size[MAXD], shard[MAXD], nsh[MAXD]; /* dims 1.. */
	uint64_t nshards;
	size_t esize;
	owned *own;
	size_t nown;
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

/* The box of shard number k over dims 1.. */
static void shard_box(const shardpipe_mpi_array *a, uint64_t k, uint64_t *lo,
		      uint64_t *hi)
{
	for (int d = a->nd - 1; d >= 0; d--) {
		uint64_t j = k % a->nsh[d];
		k /= a->nsh[d];
		lo[d] = j * a->shard[d];
		hi[d] = lo[d] + a->shard[d] < a->size[d] ? lo[d] + a->shard[d]
							 : a->size[d];
	}
}

static void free_array(shardpipe_mpi_array *a)
{
	for (size_t i = 0; i < a->nown; i++)
		free(a->own[i].buf);
	free(a->own);
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
	a->nshards = 1;
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
		if (a->nshards > UINT64_MAX / a->nsh[d])
			return SHARDPIPE_ERR_OVERFLOW;
		a->nshards *= a->nsh[d];
	}
	return SHARDPIPE_OK;
}

/* This rank's shards (round-robin, design §31.1): boxes, buffers, streams. */
static int open_owned(shardpipe_mpi_array *a)
{
	uint64_t n = a->nshards > (uint64_t)a->me
			     ? (a->nshards - (uint64_t)a->me - 1) /
					       (uint64_t)a->nranks + 1
			     : 0;
	a->own = calloc(n ? n : 1, sizeof *a->own);
	if (!a->own) {
		say(a->msg, "rank %d: out of memory for %llu shards", a->me,
		    (unsigned long long)n);
		return SHARDPIPE_ERR_NOMEM;
	}
	for (uint64_t k = (uint64_t)a->me; k < a->nshards; k += (uint64_t)a->nranks) {
		owned *o = &a->own[a->nown++];
		uint64_t lo[MAXD], hi[MAXD];
		o->k = k;
		shard_box(a, k, o->lo, o->hi);
		o->bytes = (size_t)box_volume(a->nd, o->lo, o->hi) * a->esize;
		o->buf = malloc(o->bytes);
		if (!o->buf) {
			say(a->msg, "rank %d: out of memory for a step of shard "
				    "%llu (%zu bytes)",
			    a->me, (unsigned long long)k, o->bytes);
			return SHARDPIPE_ERR_NOMEM;
		}
		lo[0] = 0;
		hi[0] = a->desc.dims[0].size; /* 0: unbounded, "to the end" */
		memcpy(lo + 1, o->lo, sizeof(uint64_t) * (size_t)a->nd);
		memcpy(hi + 1, o->hi, sizeof(uint64_t) * (size_t)a->nd);
		int rc = shardpipe_stream_open_region(&o->s, a->path, &a->desc,
						      lo, hi);
		if (rc) {
			o->s = NULL;
			say(a->msg, "rank %d: shard %llu: %s", a->me,
			    (unsigned long long)k, shardpipe_last_error_message());
			return rc;
		}
	}
	return SHARDPIPE_OK;
}

static int close_owned(shardpipe_mpi_array *a, uint64_t *rows)
{
	int first = SHARDPIPE_OK;
	*rows = UINT64_MAX;
	for (size_t i = 0; i < a->nown; i++) {
		owned *o = &a->own[i];
		if (!o->s)
			continue;
		int rc = shardpipe_stream_close(o->s);
		if (rc && !first) {
			first = rc;
			say(a->msg, "rank %d: closing shard %llu: %s", a->me,
			    (unsigned long long)o->k,
			    shardpipe_last_error_message());
		}
		o->s = NULL;
	}
	/* A closed stream has written every row appended to it. */
	if (!first)
		*rows = a->steps;
	return first;
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
	/* Only rank 0 touches the directory; the others wait for it. */
	if (!rc && a->me == 0) {
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
			for (size_t i = 0; i < a->nown; i++)
				if (a->own[i].s)
					shardpipe_stream_close(a->own[i].s);
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
				int o = 0;
				for (int d = 0; d < a->nd && o < 200; d++)
					o += snprintf(where + o, sizeof where - (size_t)o,
						      "%sdim %d %llu..%llu", d ? ", " : "",
						      d + 1, (unsigned long long)ilo[d],
						      (unsigned long long)ihi[d]);
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

/* Call fn for each shard meeting box lo..hi, in ascending shard number. */
static int each_shard(const shardpipe_mpi_array *a, const uint64_t *lo,
		      const uint64_t *hi,
		      int (*fn)(const shardpipe_mpi_array *, uint64_t, void *),
		      void *arg)
{
	uint64_t jlo[MAXD], jhi[MAXD], j[MAXD];
	if (box_volume(a->nd, lo, hi) == 0)
		return 0;
	for (int d = 0; d < a->nd; d++) {
		jlo[d] = lo[d] / a->shard[d];
		jhi[d] = (hi[d] + a->shard[d] - 1) / a->shard[d];
		j[d] = jlo[d];
	}
	for (;;) {
		uint64_t k = 0;
		for (int d = 0; d < a->nd; d++)
			k = k * a->nsh[d] + j[d];
		int rc = fn(a, k, arg);
		if (rc)
			return rc;
		int d = a->nd - 1;
		for (; d >= 0; d--) {
			if (++j[d] < jhi[d])
				break;
			j[d] = jlo[d];
		}
		if (d < 0)
			return 0;
	}
}

typedef struct pack_ctx {
	const uint64_t *lo, *hi; /* this rank's box */
	const unsigned char *data;
	unsigned char *sbuf;
	uint64_t *at;            /* per destination: bytes so far */
} pack_ctx;

static int count_one(const shardpipe_mpi_array *a, uint64_t k, void *arg)
{
	pack_ctx *p = arg;
	uint64_t slo[MAXD], shi[MAXD], ilo[MAXD], ihi[MAXD];
	if (k % (uint64_t)a->nranks == (uint64_t)a->me)
		return 0; /* copied straight to its buffer by pack_one */
	shard_box(a, k, slo, shi);
	intersect(a->nd, p->lo, p->hi, slo, shi, ilo, ihi);
	p->at[k % (uint64_t)a->nranks] +=
		box_volume(a->nd, ilo, ihi) * a->esize;
	return 0;
}

static int pack_one(const shardpipe_mpi_array *a, uint64_t k, void *arg)
{
	pack_ctx *p = arg;
	uint64_t slo[MAXD], shi[MAXD], ilo[MAXD], ihi[MAXD];
	int dest = (int)(k % (uint64_t)a->nranks);
	shard_box(a, k, slo, shi);
	intersect(a->nd, p->lo, p->hi, slo, shi, ilo, ihi);
	if (dest == a->me) {
		/* This rank's own shard: no trip through the exchange.  own[]
		 * holds shards me, me + P, me + 2P, ... */
		const owned *o = &a->own[(k - (uint64_t)a->me) / (uint64_t)a->nranks];
		copy_box(a->nd, a->esize, o->buf, o->lo, o->hi, p->data, p->lo,
			 p->hi, ilo, ihi);
		return 0;
	}
	copy_box(a->nd, a->esize, p->sbuf + a->sdispl[dest] + p->at[dest],
		 ilo, ihi, p->data, p->lo, p->hi, ilo, ihi);
	p->at[dest] += box_volume(a->nd, ilo, ihi) * a->esize;
	return 0;
}

/* Pack this rank's box by owner, exchange, unpack into the owned shards'
 * step buffers.  Returns a code; the caller agrees on it. */
static int exchange(shardpipe_mpi_array *a, const uint64_t *lo,
		    const uint64_t *hi, const void *data)
{
	size_t w = 2 * (size_t)a->nd + 1, r = (size_t)a->nranks;
	uint64_t *at = calloc(r, sizeof *at);
	unsigned char *sbuf = NULL, *rbuf = NULL;
	uint64_t stot = 0, rtot = 0;
	int rc = SHARDPIPE_OK;
	if (!at)
		return SHARDPIPE_ERR_NOMEM;
	pack_ctx p = { lo, hi, data, NULL, at };
	each_shard(a, lo, hi, count_one, &p);
	for (size_t q = 0; q < r; q++) {
		if (at[q] > INT_MAX || stot > INT_MAX - at[q]) {
			say(a->msg, "rank %d: more than 2 GiB for one rank in "
				    "one step (MPI_Alltoallv counts are int)",
			    a->me);
			rc = SHARDPIPE_ERR_OVERFLOW;
			goto out;
		}
		a->scount[q] = (int)at[q];
		a->sdispl[q] = (int)stot;
		stot += at[q];
	}
	/* What each source sends here: its box against the owned shards. */
	for (size_t q = 0; q < r; q++) {
		const uint64_t *b = a->boxes + q * w;
		uint64_t n = 0, ilo[MAXD], ihi[MAXD];
		for (size_t i = 0; q != (size_t)a->me && i < a->nown; i++)
			if (intersect(a->nd, b, b + a->nd, a->own[i].lo,
				      a->own[i].hi, ilo, ihi))
				n += box_volume(a->nd, ilo, ihi) * a->esize;
		if (n > INT_MAX || rtot > INT_MAX - n) {
			say(a->msg, "rank %d: more than 2 GiB to receive in one "
				    "step (MPI_Alltoallv counts are int)",
			    a->me);
			rc = SHARDPIPE_ERR_OVERFLOW;
			goto out;
		}
		a->rcount[q] = (int)n;
		a->rdispl[q] = (int)rtot;
		rtot += n;
	}
	if (stot > a->scap) {
		free(a->sbuf);
		a->scap = 0;
		if ((a->sbuf = malloc(stot)))
			a->scap = stot;
	}
	if (rtot > a->rcap) {
		free(a->rbuf);
		a->rcap = 0;
		if ((a->rbuf = malloc(rtot)))
			a->rcap = rtot;
	}
	sbuf = a->sbuf;
	rbuf = a->rbuf;
	if (a->scap < stot || a->rcap < rtot) {
		say(a->msg, "rank %d: out of memory for the exchange", a->me);
		rc = SHARDPIPE_ERR_NOMEM;
		goto out;
	}
	memset(at, 0, r * sizeof *at);
	p.sbuf = sbuf;
	each_shard(a, lo, hi, pack_one, &p);
out:
	/* Everyone must know whether the exchange goes ahead. */
	rc = agree(a->comm, rc, NULL);
	if (!rc &&
	    MPI_Alltoallv(sbuf, a->scount, a->sdispl, MPI_BYTE, rbuf,
			  a->rcount, a->rdispl, MPI_BYTE,
			  a->comm) != MPI_SUCCESS) {
		say(a->msg, "rank %d: MPI_Alltoallv failed", a->me);
		rc = SHARDPIPE_ERR_IO;
	}
	if (!rc)
		/* Each source packed its pieces for this rank in ascending
		 * shard number, as own[] is ordered. */
		for (size_t q = 0; q < r; q++) {
			const uint64_t *b = a->boxes + q * w;
			size_t off = (size_t)a->rdispl[q];
			for (size_t i = 0; q != (size_t)a->me && i < a->nown; i++) {
				owned *o = &a->own[i];
				uint64_t ilo[MAXD], ihi[MAXD];
				if (!intersect(a->nd, b, b + a->nd, o->lo, o->hi,
					       ilo, ihi))
					continue;
				copy_box(a->nd, a->esize, o->buf, o->lo, o->hi,
					 rbuf + off, ilo, ihi, ilo, ihi);
				off += box_volume(a->nd, ilo, ihi) * a->esize;
			}
		}
	free(at);
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
	if (!rc)
		for (size_t i = 0; i < a->nown; i++) {
			owned *o = &a->own[i];
			shardpipe_stats st;
			rc = shardpipe_stream_append(o->s, o->buf, o->bytes);
			if (!rc)
				rc = shardpipe_stream_stats(o->s, &st);
			if (rc) {
				say(a->msg, "rank %d: shard %llu: %s", a->me,
				    (unsigned long long)o->k,
				    shardpipe_stream_message(o->s));
				break;
			}
			if (st.rows_written < rows)
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
