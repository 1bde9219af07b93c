/*
 * lanes.c - the worker threads of a group, shared by its streams
 * (doc/design.md §26.2).  The same protocol as the cpu backend's own
 * crew (§6.2): workers sleep on a condition variable between jobs, the
 * caller works as lane 0, and a generation count says a job is new.
 */
#include "lanes.h"

#include <pthread.h>
#include <stdlib.h>

struct lanes {
	pthread_mutex_t mu;     /* guards the fields below */
	pthread_cond_t go, done, turn;
	pthread_t *tid;
	int n;                  /* lanes, the caller's included */
	int started;            /* worker threads running */
	int busy;               /* workers not done with this job */
	int quit;
	int refs;
	uint64_t gen;           /* jobs started */
	/* Jobs take turns in the order they came (a ticket each), so that
	 * a stream waits for at most one job of every other stream: a
	 * mutex would let a stream that comes back at once go again. */
	uint64_t next_ticket, serving;
	void (*fn)(void *arg, int lane);
	void *arg;
};

struct worker {
	struct lanes *l;
	int lane;
};

static void *worker_main(void *varg)
{
	struct worker w = *(struct worker *)varg;
	struct lanes *l = w.l;
	uint64_t seen = 0;

	free(varg);
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (l->gen == seen && !l->quit)
			pthread_cond_wait(&l->go, &l->mu);
		if (l->quit)
			break;
		seen = l->gen;
		pthread_mutex_unlock(&l->mu);
		l->fn(l->arg, w.lane);
		pthread_mutex_lock(&l->mu);
		if (--l->busy == 0)
			pthread_cond_signal(&l->done);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void lanes_stop(struct lanes *l)
{
	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	pthread_cond_broadcast(&l->go);
	pthread_mutex_unlock(&l->mu);
	for (int k = 0; k < l->started; k++)
		pthread_join(l->tid[k], NULL);
	pthread_cond_destroy(&l->go);
	pthread_cond_destroy(&l->done);
	pthread_cond_destroy(&l->turn);
	pthread_mutex_destroy(&l->mu);
	free(l->tid);
	free(l);
}

int lanes_create(struct lanes **out, int n, struct sp_err *err)
{
	struct lanes *l;

	*out = NULL;
	SP_RETURN_IF(n < 1, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%d lanes", n);
	l = calloc(1, sizeof(*l));
	SP_RETURN_IF(l == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	l->tid = calloc((size_t)n, sizeof(*l->tid));
	if (l->tid == NULL) {
		free(l);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for %d worker threads", n - 1);
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->go, NULL);
	pthread_cond_init(&l->done, NULL);
	pthread_cond_init(&l->turn, NULL);
	l->n = n;
	l->refs = 1;
	for (int k = 1; k < n; k++) {
		struct worker *w = malloc(sizeof(*w));

		if (w == NULL)
			break;
		w->l = l;
		w->lane = k;
		if (pthread_create(&l->tid[l->started], NULL, worker_main,
				   w) != 0) {
			free(w);
			break;
		}
		l->started++;
	}
	*out = l;
	return SHARDPIPE_OK;
}

struct lanes *lanes_ref(struct lanes *l)
{
	pthread_mutex_lock(&l->mu);
	l->refs++;
	pthread_mutex_unlock(&l->mu);
	return l;
}

void lanes_unref(struct lanes *l)
{
	int last;

	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	last = --l->refs == 0;
	pthread_mutex_unlock(&l->mu);
	if (last)
		lanes_stop(l);
}

int lanes_count(const struct lanes *l)
{
	return l->n;
}

void lanes_run(struct lanes *l, void (*fn)(void *arg, int lane), void *arg)
{
	uint64_t ticket;

	pthread_mutex_lock(&l->mu);
	ticket = l->next_ticket++;
	while (l->serving != ticket)
		pthread_cond_wait(&l->turn, &l->mu);
	l->fn = fn;
	l->arg = arg;
	l->busy = l->started;
	l->gen++;
	pthread_cond_broadcast(&l->go);
	pthread_mutex_unlock(&l->mu);
	fn(arg, 0);
	pthread_mutex_lock(&l->mu);
	while (l->busy > 0)
		pthread_cond_wait(&l->done, &l->mu);
	l->serving++;
	pthread_cond_broadcast(&l->turn);
	pthread_mutex_unlock(&l->mu);
}
