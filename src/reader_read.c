/*
 * reader_read.c - reading a selection: the chunks it touches found once,
 * shard by shard, and decoded by a pool of threads straight into the
 * caller's buffer (doc/design.md §19.1).
 *
 * The calling thread opens shards and checks their indexes (the I/O a
 * selection needs before any chunk can be fetched), then it and the
 * pool's threads take the batch's chunks in turn: each fetches its
 * chunk's bytes, decodes them into the output when the chunk is a
 * contiguous part of it, else into its own buffer, and copies the
 * selected elements out.  Nothing the threads share is written but the
 * output, each chunk its own elements.
 */
#define _GNU_SOURCE
#include "config.h"
#include "reader_impl.h"

#include <stdlib.h>
#include <unistd.h>

/* A batch holds at most this many open shards, this many chunks and
 * this many bytes of shard indexes: a whole-array read of any size
 * holds no more at once. */
#define BATCH_SHARDS 256
#define BATCH_TASKS (1u << 16)
#define BATCH_INDEX_BYTES (64u << 20)
#define MAX_READ_THREADS 256

/* ------------------------------------------------------------------ pool */

struct job;
/* Task t of a job; enc: its chunk's bytes, read with its neighbours, or
 * NULL for the task to fetch them. */
typedef int (*task_fn)(struct job *j, uint64_t t, struct reader_scratch *sc,
		       uint8_t *enc, struct sp_err *err);

/* A chunk a job decodes, where it lies in its shard's object. */
struct piece {
	uint64_t off, nb;        /* nb 0: empty, nothing to read */
	uint64_t task, lin;
	uint32_t slot;
};

struct job {
	struct shardpipe_reader *r;
	task_fn run;
	/* With pieces, the job's units are groups of neighbouring chunks,
	 * group g the pieces group[g] .. group[g + 1] - 1, each group read
	 * at once (doc/design.md §24.4); else its units are the tasks. */
	const struct piece *piece;
	const uint64_t *group;
	const struct reader_shard *shard; /* by piece.slot */
	uint64_t ntasks;
	uint64_t next;           /* the next task to take (atomic) */
	int failed;              /* a task failed: take no more (atomic) */
	pthread_mutex_t emu;     /* guards the failure below */
	uint64_t etask;          /* the failed task of lowest number */
	int rc;
	struct sp_err err;
	void *data;
};

struct reader_pool {
	int n;                   /* threads besides the caller's */
	pthread_t *tid;
	struct reader_scratch *sc;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	uint64_t gen;            /* bumped for each job */
	int busy;                /* threads still working on the job */
	int quit;
	struct job *job;
};

struct worker_arg {
	struct reader_pool *p;
	int i;
};

/* Read group g's chunks with one request, then run their tasks. */
static int run_group(struct job *j, uint64_t g, struct reader_scratch *sc,
		     struct sp_err *err)
{
	const struct piece *a = &j->piece[j->group[g]];
	const struct piece *z = &j->piece[j->group[g + 1] - 1];

	if (a == z || a->nb == 0) {
		for (const struct piece *p = a; p <= z; p++)
			SP_FORWARD(j->run(j, p->task, sc, NULL, err));
		return SHARDPIPE_OK;
	}
	SP_FORWARD(reader_fetch_run(j->r, &j->shard[a->slot], a->lin, a->off,
				    z->off + z->nb - a->off, sc, err));
	for (const struct piece *p = a; p <= z; p++)
		SP_FORWARD(j->run(j, p->task, sc, sc->run + (p->off - a->off),
				  err));
	return SHARDPIPE_OK;
}

static void work(struct job *j, struct reader_scratch *sc)
{
	struct sp_err e;

	for (;;) {
		uint64_t t = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		int rc;

		if (t >= j->ntasks || __atomic_load_n(&j->failed,
						      __ATOMIC_RELAXED))
			return;
		sp_err_clear(&e);
		rc = j->piece != NULL ? run_group(j, t, sc, &e)
				      : j->run(j, t, sc, NULL, &e);
		if (rc == SHARDPIPE_OK)
			continue;
		/* The fault of the first chunk in the selection's order
		 * among those decoded is the one reported. */
		pthread_mutex_lock(&j->emu);
		if (j->rc == SHARDPIPE_OK || t < j->etask) {
			j->rc = rc;
			j->etask = t;
			j->err = e;
		}
		pthread_mutex_unlock(&j->emu);
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return;
	}
}

static void *worker(void *arg)
{
	struct worker_arg *a = arg;
	struct reader_pool *p = a->p;
	struct reader_scratch *sc = &p->sc[a->i];
	uint64_t seen = 0;

	free(a);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct job *j;

		while (!p->quit && p->gen == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		j = p->job;
		pthread_mutex_unlock(&p->mu);
		work(j, sc);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void reader_pool_free(struct shardpipe_reader *r)
{
	struct reader_pool *p = r->pool;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n; i++)
		pthread_join(p->tid[i], NULL);
	for (int i = 0; i < p->n; i++)
		reader_scratch_free(&p->sc[i]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->tid);
	free(p->sc);
	free(p);
	r->pool = NULL;
}

/* As many threads as decode (one per core by default), or as many as
 * the source wants requests in flight when that is more: a thread
 * waiting on a request takes no core. */
static int want_threads(const struct shardpipe_reader *r)
{
	long n = r->threads;

	if (n <= 0)
		n = sp_cores();
	if (n < r->src->io_threads)
		n = r->src->io_threads;
	if (n < 1)
		n = 1;
	return n > MAX_READ_THREADS ? MAX_READ_THREADS : (int)n;
}

/* The pool of want_threads() - 1 threads, started at the first job that
 * has work for more than one.  Fewer threads than asked, when the system
 * refuses more, is not a fault: the job runs on those there are. */
static struct reader_pool *pool_get(struct shardpipe_reader *r)
{
	int n = want_threads(r) - 1;
	struct reader_pool *p;

	if (r->pool != NULL && r->pool->n == n)
		return r->pool;
	reader_pool_free(r);
	if (n == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->tid = calloc((size_t)n, sizeof(*p->tid));
	p->sc = calloc((size_t)n, sizeof(*p->sc));
	if (p->tid == NULL || p->sc == NULL) {
		free(p->tid);
		free(p->sc);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (; p->n < n; p->n++) {
		struct worker_arg *a = malloc(sizeof(*a));

		if (a == NULL)
			break;
		a->p = p;
		a->i = p->n;
		if (pthread_create(&p->tid[p->n], NULL, worker, a) != 0) {
			free(a);
			break;
		}
	}
	r->pool = p;
	return p;
}

/* Run every task of j on the calling thread and the pool's. */
static int run_job(struct shardpipe_reader *r, struct job *j)
{
	struct reader_pool *p = j->ntasks > 1 ? pool_get(r) : NULL;

	if (p != NULL && p->n > 0) {
		pthread_mutex_lock(&p->mu);
		p->job = j;
		p->busy = p->n;
		p->gen++;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
	}
	work(j, &r->scratch);
	if (p != NULL && p->n > 0) {
		pthread_mutex_lock(&p->mu);
		while (p->busy > 0)
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
	if (j->rc != SHARDPIPE_OK)
		r->err = j->err;
	return j->rc;
}

static void job_init(struct job *j, struct shardpipe_reader *r, task_fn run,
		     uint64_t ntasks, void *data)
{
	memset(j, 0, sizeof(*j));
	j->r = r;
	j->run = run;
	j->ntasks = ntasks;
	j->data = data;
	j->rc = SHARDPIPE_OK;
	pthread_mutex_init(&j->emu, NULL);
}

static int cmp_piece(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->task > y->task) - (x->task < y->task);
}

/*
 * Sort the n pieces by shard and place, and group those that lie end to
 * end in one shard into reads of at most cap bytes: only the chunks
 * asked for are read, each once.  group[] gets each group's first
 * piece, then n; returns the number of groups.
 */
static uint64_t group_pieces(struct piece *p, uint64_t n, uint64_t cap,
			     uint64_t *group)
{
	uint64_t ng = 0, from = 0;

	qsort(p, n, sizeof(*p), cmp_piece);
	for (uint64_t i = 0; i < n; i++) {
		if (i > 0 && p[i].nb > 0 && p[i - 1].nb > 0 &&
		    p[i].slot == p[i - 1].slot &&
		    p[i].off == p[i - 1].off + p[i - 1].nb &&
		    p[i].off + p[i].nb - p[from].off <= cap)
			continue;
		group[ng++] = i;
		from = i;
	}
	group[ng] = n;
	return ng;
}

/* ----------------------------------------------------------------- check */

static int check_task(struct job *j, uint64_t t, struct reader_scratch *sc,
		      uint8_t *enc, struct sp_err *err)
{
	struct reader_shard *sh = j->data;
	uint64_t off, nb;
	uint8_t *p;

	if (!reader_chunk_extent(j->r, sh, t, &off, &nb))
		return SHARDPIPE_OK;
	return reader_load_chunk(j->r, sh, t, sc, enc, NULL,
				 (size_t)j->r->chunk_bytes, err, &p);
}

/* Decode every chunk of the open shard sh, just opened, on every
 * thread; where requests cost, its chunks in reads of neighbours. */
int reader_check_shard(struct shardpipe_reader *r, struct reader_shard *sh)
{
	struct piece *p = NULL;
	uint64_t *g = NULL, n = r->nsorted;
	struct job j;
	int rc;

	if (sh->obj == NULL)
		return SHARDPIPE_OK;
	job_init(&j, r, check_task, r->n_inner, sh);
	if (r->src->coalesce > 0 && r->sharded && n > 0) {
		p = malloc(n * sizeof(*p));
		g = malloc((n + 1) * sizeof(*g));
		if (p == NULL || g == NULL) {
			free(p);
			free(g);
			pthread_mutex_destroy(&j.emu);
			return sp_err_set(&r->err, SHARDPIPE_ERR_NOMEM,
					  "out of memory for a check");
		}
		for (uint64_t i = 0; i < n; i++)
			p[i] = (struct piece){ r->sorted[i].off,
					       r->sorted[i].nbytes,
					       r->sorted[i].chunk,
					       r->sorted[i].chunk, 0 };
		j.ntasks = group_pieces(p, n, r->src->coalesce, g);
		j.piece = p;
		j.group = g;
		j.shard = sh;
	}
	rc = run_job(r, &j);
	pthread_mutex_destroy(&j.emu);
	free(p);
	free(g);
	return rc;
}

/* ------------------------------------------------------------- selection */

/* A chunk along one dim that the selection touches: its index in the
 * chunk grid, and the selected indices in it (output indices k0 ..
 * k0 + kn - 1). */
struct touch {
	uint64_t g, k0, kn;
};

/* The touched chunks of one dim that lie in one shard. */
struct run {
	uint64_t s, first, n;
};

struct seldim {
	struct touch *t;
	uint64_t nt;
	struct run *run;
	uint64_t nrun;
};

struct sel {
	uint64_t start[SHARDPIPE_MAX_RANK], count[SHARDPIPE_MAX_RANK];
	uint64_t step[SHARDPIPE_MAX_RANK];
	uint64_t ostride[SHARDPIPE_MAX_RANK];   /* bytes */
	uint64_t cstride[SHARDPIPE_MAX_RANK];   /* bytes, in a chunk */
	uint64_t sstride[SHARDPIPE_MAX_RANK];   /* cstride * step */
	uint8_t *out;
	/* A chunk wholly selected lands as one contiguous block of the
	 * output: decode it there. */
	int direct;
	struct seldim dim[SHARDPIPE_MAX_RANK];

	/* The batch at hand. */
	struct reader_shard *slot;
	uint32_t nslots;
	uint64_t index_bytes;
	uint64_t *task;          /* per task: slot, then a touch per dim */
	uint64_t ntask;
	/* Where requests cost: the batch's chunks, grouped into reads. */
	struct piece *piece;
	uint64_t *group;
};

/* The chunks along dim d that the selection's indices meet.  When the
 * step is at least a chunk, each index meets its own chunk; else every
 * chunk from the first index's to the last one's holds some.  Either way
 * there are at most count + 1 of them. */
static int touch_dim(const struct shardpipe_reader *r, struct sel *s, int d)
{
	struct seldim *sd = &s->dim[d];
	uint64_t c = r->chunk[d], st = s->step[d], n = s->count[d];
	uint64_t a = s->start[d], last = a + (n - 1) * st;
	uint64_t g0 = a / c, g1 = last / c, cap;

	cap = st >= c ? n : g1 - g0 + 1;
	sd->t = malloc(cap * sizeof(*sd->t));
	sd->run = malloc(cap * sizeof(*sd->run));
	if (sd->t == NULL || sd->run == NULL)
		return SHARDPIPE_ERR_NOMEM;
	sd->nt = 0;
	if (st >= c) {
		for (uint64_t k = 0; k < n; k++)
			sd->t[sd->nt++] = (struct touch){ (a + k * st) / c, k, 1 };
	} else {
		for (uint64_t g = g0; g <= g1; g++) {
			uint64_t o = g * c, k0, k1;

			k0 = o <= a ? 0 : (o - a + st - 1) / st;
			k1 = (o + c - 1 - a) / st;
			if (k1 > n - 1)
				k1 = n - 1;
			sd->t[sd->nt++] = (struct touch){ g, k0, k1 - k0 + 1 };
		}
	}
	sd->nrun = 0;
	for (uint64_t i = 0; i < sd->nt; i++) {
		uint64_t sh = sd->t[i].g / r->cps[d];

		if (sd->nrun > 0 && sd->run[sd->nrun - 1].s == sh)
			sd->run[sd->nrun - 1].n++;
		else
			sd->run[sd->nrun++] = (struct run){ sh, i, 1 };
	}
	return SHARDPIPE_OK;
}

static void fill_elems(const struct shardpipe_reader *r, uint8_t *dst,
		       uint64_t n, uint64_t stride)
{
	size_t es = r->esize;

	if (stride == es) {
		if (r->fill_zero) {
			memset(dst, 0, n * es);
			return;
		}
		/* Double the filled prefix. */
		if (n == 0)
			return;
		memcpy(dst, r->fill, es);
		for (uint64_t done = 1; done < n; done *= 2)
			memcpy(dst + done * es, dst,
			       (done < n - done ? done : n - done) * es);
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		memcpy(dst + i * stride, r->fill, es);
}

/* Copy n elements src[i * ss] to dst[i * ds]; the common sizes spelt
 * out so that the compiler moves each in one instruction. */
static void copy_elems(uint8_t *dst, uint64_t ds, const uint8_t *src,
		       uint64_t ss, uint64_t n, size_t es)
{
	if (ss == es && ds == es) {
		memcpy(dst, src, n * es);
		return;
	}
	switch (es) {
	case 1:
		for (uint64_t i = 0; i < n; i++)
			dst[i * ds] = src[i * ss];
		return;
	case 2:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * ds, src + i * ss, 2);
		return;
	case 4:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * ds, src + i * ss, 4);
		return;
	case 8:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * ds, src + i * ss, 8);
		return;
	default:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * ds, src + i * ss, es);
	}
}

/*
 * The box of n[] elements at dst (strides ds, bytes) from src (strides
 * ss), or the fill value when src is NULL.
 */
static void copy_box(const struct shardpipe_reader *r, uint8_t *dst,
		     const uint64_t *ds, const uint8_t *src,
		     const uint64_t *ss, const uint64_t *n)
{
	uint64_t i[SHARDPIPE_MAX_RANK] = { 0 };
	int last = r->rank - 1;
	uint64_t doff = 0, soff = 0;

	for (;;) {
		int d;

		if (src != NULL)
			copy_elems(dst + doff, ds[last], src + soff, ss[last],
				   n[last], r->esize);
		else
			fill_elems(r, dst + doff, n[last], ds[last]);
		for (d = last - 1; d >= 0; d--) {
			if (++i[d] < n[d]) {
				doff += ds[d];
				soff += ss[d];
				break;
			}
			doff -= (i[d] - 1) * ds[d];
			soff -= (i[d] - 1) * ss[d];
			i[d] = 0;
		}
		if (d < 0)
			return;
	}
}

/* Task t's chunk: its slot and its place in its shard. */
static const struct reader_shard *task_chunk(const struct shardpipe_reader *r,
					     const struct sel *s, uint64_t t,
					     uint64_t *lin)
{
	const uint64_t *tk = s->task + t * (uint64_t)(r->rank + 1);

	*lin = 0;
	for (int d = 0; d < r->rank; d++)
		*lin = *lin * r->cps[d] + s->dim[d].t[tk[1 + d]].g % r->cps[d];
	return &s->slot[tk[0]];
}

static int read_task(struct job *j, uint64_t t, struct reader_scratch *sc,
		     uint8_t *enc, struct sp_err *err)
{
	struct shardpipe_reader *r = j->r;
	struct sel *s = j->data;
	int rank = r->rank;
	const uint64_t *tk = s->task + t * (uint64_t)(rank + 1);
	const struct reader_shard *sh = &s->slot[tk[0]];
	const uint64_t *ss = s->sstride;
	uint64_t n[SHARDPIPE_MAX_RANK];
	uint64_t lin = 0, doff = 0, soff = 0, off, nb, want;
	int whole = 1, rc;
	uint8_t *src;

	for (int d = 0; d < rank; d++) {
		const struct touch *e = &s->dim[d].t[tk[1 + d]];
		uint64_t first = s->start[d] + e->k0 * s->step[d];

		lin = lin * r->cps[d] + e->g % r->cps[d];
		doff += e->k0 * s->ostride[d];
		soff += (first - e->g * r->chunk[d]) * s->cstride[d];
		n[d] = e->kn;
		whole &= e->kn == r->chunk[d];
	}
	if (!reader_chunk_extent(r, sh, lin, &off, &nb)) {
		copy_box(r, s->out + doff, s->ostride, NULL, ss, n);
		return SHARDPIPE_OK;
	}
	if (whole && s->direct)
		return reader_load_chunk(r, sh, lin, sc, enc, s->out + doff,
					 (size_t)r->chunk_bytes, err, &src);
	if (whole && enc == NULL) {
		int placed;

		SP_FORWARD(reader_place_raw(r, sh, lin, sc, s->out + doff,
					    s->ostride, &placed, err));
		if (placed)
			return SHARDPIPE_OK;
	}
	/* The decoded bytes needed end with the box's last element. */
	want = soff + r->esize;
	for (int d = 0; d < rank; d++)
		want += (n[d] - 1) * ss[d];
	rc = reader_load_chunk(r, sh, lin, sc, enc, NULL, (size_t)want, err,
			       &src);
	if (rc == SHARDPIPE_OK)
		copy_box(r, s->out + doff, s->ostride, src + soff, ss, n);
	return rc;
}

static void close_slots(struct shardpipe_reader *r, struct sel *s,
			uint32_t keep)
{
	for (uint32_t i = 0; i < s->nslots; i++)
		if (i != keep)
			reader_shard_close(r, &s->slot[i]);
	if (keep < s->nslots) {
		s->slot[0] = s->slot[keep];
		s->nslots = 1;
		s->index_bytes = s->slot[0].index != NULL ? r->index_bytes : 0;
	} else {
		s->nslots = 0;
		s->index_bytes = 0;
	}
}

/* Decode the batch's chunks; keep slot `keep` open (a shard whose
 * chunks go on into the next batch), close the others. */
static int flush(struct shardpipe_reader *r, struct sel *s, uint32_t keep)
{
	struct job j;
	int rc = SHARDPIPE_OK;

	if (s->ntask > 0) {
		job_init(&j, r, read_task, s->ntask, s);
		if (s->piece != NULL) {
			for (uint64_t t = 0; t < s->ntask; t++) {
				struct piece *p = &s->piece[t];
				const struct reader_shard *sh =
					task_chunk(r, s, t, &p->lin);

				p->task = t;
				p->slot = (uint32_t)(sh - s->slot);
				if (!reader_chunk_extent(r, sh, p->lin, &p->off,
							 &p->nb))
					p->off = p->nb = 0;
			}
			j.ntasks = group_pieces(s->piece, s->ntask,
						r->src->coalesce, s->group);
			j.piece = s->piece;
			j.group = s->group;
			j.shard = s->slot;
		}
		rc = run_job(r, &j);
		pthread_mutex_destroy(&j.emu);
	}
	s->ntask = 0;
	close_slots(r, s, keep);
	return rc;
}

/* Advance the counter c over 0 .. lim - 1 per dim; 0 at the end. */
static int next_index(uint64_t *c, const uint64_t *lim, int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++c[d] < lim[d])
			return 1;
		c[d] = 0;
	}
	return 0;
}

static int read_sel(struct shardpipe_reader *r, struct sel *s)
{
	int rank = r->rank, rc = SHARDPIPE_OK;
	uint64_t js[SHARDPIPE_MAX_RANK] = { 0 }, nruns[SHARDPIPE_MAX_RANK];
	size_t es = r->esize;

	s->cstride[rank - 1] = es;
	for (int d = rank - 2; d >= 0; d--)
		s->cstride[d] = s->cstride[d + 1] * r->chunk[d + 1];
	for (int d = 0; d < rank; d++)
		s->sstride[d] = s->cstride[d] * s->step[d];
	/* A whole chunk is one block of the output when each dim with more
	 * than one element steps by 1 and lies at the chunk's own stride. */
	s->direct = 1;
	for (int d = 0; d < rank; d++)
		if (r->chunk[d] > 1 &&
		    (s->step[d] != 1 || s->ostride[d] != s->cstride[d]))
			s->direct = 0;
	for (int d = 0; d < rank && rc == SHARDPIPE_OK; d++) {
		rc = touch_dim(r, s, d);
		nruns[d] = s->dim[d].nrun;
	}
	if (rc != SHARDPIPE_OK)
		return sp_err_set(&r->err, rc, "out of memory for the "
				  "selection's chunks");
	s->slot = calloc(BATCH_SHARDS, sizeof(*s->slot));
	s->task = malloc((size_t)BATCH_TASKS * (size_t)(rank + 1) *
			 sizeof(uint64_t));
	if (r->src->coalesce > 0) {
		s->piece = malloc(BATCH_TASKS * sizeof(*s->piece));
		s->group = malloc((BATCH_TASKS + 1) * sizeof(*s->group));
		if (s->piece == NULL || s->group == NULL)
			return sp_err_set(&r->err, SHARDPIPE_ERR_NOMEM,
					  "out of memory for a read");
	}
	if (s->slot == NULL || s->task == NULL)
		return sp_err_set(&r->err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for a read");
	do {
		uint64_t sc[SHARDPIPE_MAX_RANK], lim[SHARDPIPE_MAX_RANK];
		uint64_t ci[SHARDPIPE_MAX_RANK] = { 0 };
		uint32_t slot;

		if (s->nslots == BATCH_SHARDS ||
		    s->index_bytes + r->index_bytes > BATCH_INDEX_BYTES) {
			rc = flush(r, s, UINT32_MAX);
			if (rc != SHARDPIPE_OK)
				break;
		}
		for (int d = 0; d < rank; d++) {
			const struct run *ru = &s->dim[d].run[js[d]];

			sc[d] = ru->s;
			lim[d] = ru->n;
		}
		slot = s->nslots;
		rc = reader_shard_open(r, &s->slot[slot], sc, &r->err);
		s->nslots++;
		if (rc != SHARDPIPE_OK)
			break;
		if (s->slot[slot].index != NULL)
			s->index_bytes += r->index_bytes;
		do {
			uint64_t *tk;

			if (s->ntask == BATCH_TASKS) {
				rc = flush(r, s, slot);
				if (rc != SHARDPIPE_OK)
					break;
				slot = 0;
			}
			tk = s->task + s->ntask++ * (uint64_t)(rank + 1);
			tk[0] = slot;
			for (int d = 0; d < rank; d++)
				tk[1 + d] = s->dim[d].run[js[d]].first + ci[d];
		} while (next_index(ci, lim, rank));
	} while (rc == SHARDPIPE_OK && next_index(js, nruns, rank));
	if (rc == SHARDPIPE_OK)
		rc = flush(r, s, UINT32_MAX);
	else
		close_slots(r, s, UINT32_MAX);
	return rc;
}

/*
 * Check a selection against the array and the output buffer: every
 * step at least 1, the last selected index inside the extent, the
 * elements at the strides given neither overlapping nor reaching past
 * out_bytes.  *total gets the bytes of the selection.
 */
static int check_sel(struct shardpipe_reader *r, struct sel *s,
		     const int64_t *out_stride, size_t out_bytes,
		     uint64_t *total)
{
	int rank = r->rank, order[SHARDPIPE_MAX_RANK], m = 0;
	uint64_t n = 1, span;

	for (int d = 0; d < rank; d++) {
		uint64_t last;

		SP_RETURN_IF(s->step[d] == 0, &r->err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "dimension %d: a step of 0", d);
		if (s->count[d] > 0)
			SP_RETURN_IF(!sp_mul_ok(s->count[d] - 1, s->step[d],
						&last) ||
					     !sp_add_ok(last, s->start[d],
							&last) ||
					     last >= r->shape[d],
				     &r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				     "dimension %d: %llu elements from %llu "
				     "by %llu go beyond the extent %llu",
				     d, (unsigned long long)s->count[d],
				     (unsigned long long)s->start[d],
				     (unsigned long long)s->step[d],
				     (unsigned long long)r->shape[d]);
		if (!sp_mul_ok(n, s->count[d], &n))
			return sp_err_set(&r->err, SHARDPIPE_ERR_OVERFLOW,
					  "the region's size overflows");
	}
	SP_RETURN_IF(!sp_mul_ok(n, r->esize, total) || *total > SIZE_MAX,
		     &r->err, SHARDPIPE_ERR_OVERFLOW,
		     "the region's size overflows");
	if (out_stride == NULL) {
		s->ostride[rank - 1] = r->esize;
		for (int d = rank - 2; d >= 0; d--)
			s->ostride[d] = s->ostride[d + 1] * s->count[d + 1];
		SP_RETURN_IF(*total > out_bytes, &r->err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "the region holds %llu bytes, the output buffer "
			     "%zu", (unsigned long long)*total, out_bytes);
		return SHARDPIPE_OK;
	}
	if (*total == 0)
		return SHARDPIPE_OK;
	/* Sorted by stride, each dim must step past everything the dims
	 * below it reach: then no two elements share a byte. */
	span = r->esize;
	for (int d = 0; d < rank; d++) {
		SP_RETURN_IF(out_stride[d] < 0, &r->err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "out_stride[%d] = %lld: negative", d,
			     (long long)out_stride[d]);
		s->ostride[d] = (uint64_t)out_stride[d];
		if (s->count[d] > 1)
			order[m++] = d;
	}
	for (int a = 1; a < m; a++)
		for (int b = a; b > 0 && s->ostride[order[b - 1]] >
						 s->ostride[order[b]]; b--) {
			int t = order[b];

			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	for (int a = 0; a < m; a++) {
		int d = order[a];
		uint64_t reach;

		SP_RETURN_IF(s->ostride[d] < span, &r->err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "out_stride[%d] = %llu: elements would overlap "
			     "(at least %llu)", d,
			     (unsigned long long)s->ostride[d],
			     (unsigned long long)span);
		SP_RETURN_IF(!sp_mul_ok(s->count[d] - 1, s->ostride[d],
					&reach) ||
				     !sp_add_ok(span, reach, &span),
			     &r->err, SHARDPIPE_ERR_OVERFLOW,
			     "the output strides overflow");
	}
	SP_RETURN_IF(span > out_bytes, &r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "the region reaches %llu bytes at the strides given, "
		     "the output buffer holds %zu",
		     (unsigned long long)span, out_bytes);
	return SHARDPIPE_OK;
}

int shardpipe_reader_read_strided(shardpipe_reader *r, const uint64_t *start,
				  const uint64_t *count, const uint64_t *step,
				  void *out, const int64_t *out_stride,
				  size_t out_bytes)
{
	struct sel *s;
	uint64_t total = 0;
	int rc;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	sp_err_clear(&r->err);
	SP_RETURN_IF(start == NULL || count == NULL, &r->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "NULL start or count");
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return sp_err_set(&r->err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for a read");
	for (int d = 0; d < r->rank; d++) {
		s->start[d] = start[d];
		s->count[d] = count[d];
		s->step[d] = step != NULL ? step[d] : 1;
	}
	rc = check_sel(r, s, out_stride, out_bytes, &total);
	if (rc == SHARDPIPE_OK && total > 0 && out == NULL)
		rc = sp_err_set(&r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				"NULL output buffer");
	if (rc == SHARDPIPE_OK && total > 0) {
		s->out = out;
		rc = read_sel(r, s);
	}
	for (int d = 0; d < r->rank; d++) {
		free(s->dim[d].t);
		free(s->dim[d].run);
	}
	free(s->slot);
	free(s->task);
	free(s->piece);
	free(s->group);
	free(s);
	return rc;
}

int shardpipe_reader_read(shardpipe_reader *r, const uint64_t *start,
			  const uint64_t *count, void *out, size_t out_bytes)
{
	return shardpipe_reader_read_strided(r, start, count, NULL, out, NULL,
					     out_bytes);
}
