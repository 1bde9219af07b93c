/*
 * lanes.c - the worker threads of a group, shared by its streams
 * (doc/design.md §26.2).  Like the cpu backend's own crew (§6.2), the
 * workers sleep on a condition variable between jobs and the caller works
 * as lane 0; unlike it, a job waits for no other to end before the free
 * lanes start on it.
 */
#include "lanes.h"

#include <pthread.h>
#include <stdlib.h>

/* A job asked for and not yet done by every lane: on its caller's stack,
 * in the list from the moment it is asked for until its last lane
 * returns.  Tickets are handed out in the order jobs come, so the list is
 * in ticket order. */
struct job {
	void (*fn)(void *arg, int lane);
	void *arg;
	uint64_t ticket;
	int left;               /* workers not done with it */
	struct job *next;
};

struct lanes {
	pthread_mutex_t mu;     /* guards the fields below */
	pthread_cond_t go, done, turn;
	pthread_t *tid;
	int n;                  /* lanes, the caller's included */
	int started;            /* worker threads running */
	int quit;
	int refs;
	/* Lane 0 (a caller's thread) runs jobs in the order they came, a
	 * ticket each, so that a stream waits for at most one job of every
	 * other stream: a mutex would let a stream that comes back at once
	 * go again.  The workers take the same order. */
	uint64_t next_ticket, serving;
	struct job *jobs, **last;
};

struct worker {
	struct lanes *l;
	int lane;
};

/* The oldest job worker has not entered: tickets below `seen` it has. */
static struct job *next_job(struct lanes *l, uint64_t seen)
{
	for (struct job *j = l->jobs; j != NULL; j = j->next)
		if (j->ticket >= seen)
			return j;
	return NULL;
}

/*
 * A worker runs every job once, in ticket order, and goes on to the next
 * as soon as it finds no more items in one: while the last items of a
 * job are still running on other lanes, the free lanes work on the next
 * job (another stream's, or a pyramid's next level), rather than waiting
 * for the job to end (doc/design.md §26.2).
 */
static void *worker_main(void *varg)
{
	struct worker w = *(struct worker *)varg;
	struct lanes *l = w.l;
	uint64_t seen = 0;

	free(varg);
	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct job *j;

		while ((j = next_job(l, seen)) == NULL && !l->quit)
			pthread_cond_wait(&l->go, &l->mu);
		if (j == NULL)
			break;
		seen = j->ticket + 1;
		pthread_mutex_unlock(&l->mu);
		j->fn(j->arg, w.lane);
		pthread_mutex_lock(&l->mu);
		if (--j->left == 0)
			pthread_cond_broadcast(&l->done);
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
	l->last = &l->jobs;
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
	struct job j = { .fn = fn, .arg = arg };
	struct job **p;

	pthread_mutex_lock(&l->mu);
	j.ticket = l->next_ticket++;
	j.left = l->started;
	*l->last = &j;
	l->last = &j.next;
	pthread_cond_broadcast(&l->go);
	while (l->serving != j.ticket)
		pthread_cond_wait(&l->turn, &l->mu);
	pthread_mutex_unlock(&l->mu);
	fn(arg, 0);
	pthread_mutex_lock(&l->mu);
	/* This caller is done with the job: the next caller's lane 0 may
	 * start while the workers finish this one's last items. */
	l->serving++;
	pthread_cond_broadcast(&l->turn);
	while (j.left > 0)
		pthread_cond_wait(&l->done, &l->mu);
	for (p = &l->jobs; *p != &j; p = &(*p)->next)
		;
	*p = j.next;
	if (l->last == &j.next)
		l->last = p;
	pthread_mutex_unlock(&l->mu);
}
