/*
 * lanes.c - the shared worker threads (src/lanes.c, doc/design.md §26.2):
 * a job's free lanes go on to the next job while its last items still
 * run, in both directions (a worker starts the next caller's job while
 * lane 0 finishes this one, and the next caller's lane 0 starts while a
 * worker finishes it); every lane runs every job once, in the order the
 * jobs were asked for, and lanes_run returns only when all are done;
 * several callers at once, jobs of random sizes from the seed, count
 * every item once.  A test that would hang on the old one-job-at-a-time
 * lanes fails after a minute instead.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lanes.h"
#include "tap.h"
#include "testutil.h"

/* Wait for *flag under mu, a minute at most: 0 when it never came. */
static int wait_flag(pthread_mutex_t *mu, pthread_cond_t *cv, int *flag)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(mu);
	while (!*flag && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(cv, mu, &until);
	rc = *flag;
	pthread_mutex_unlock(mu);
	return rc;
}

static void set_flag(pthread_mutex_t *mu, pthread_cond_t *cv, int *flag)
{
	pthread_mutex_lock(mu);
	*flag = 1;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(mu);
}

/* Two jobs, A then B, two lanes.  `hold` is the lane of A that waits
 * inside A until B has run on some lane; B records which lanes ran it. */
struct overlap {
	struct lanes *l;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int hold;
	int b_ran, a_asked, seen_timeout;
	int a_lanes[2], b_lanes[2];
};

static void job_a(void *arg, int lane)
{
	struct overlap *o = arg;

	__atomic_add_fetch(&o->a_lanes[lane], 1, __ATOMIC_RELAXED);
	if (lane == o->hold &&
	    !wait_flag(&o->mu, &o->cv, &o->b_ran))
		o->seen_timeout = 1;
}

static void job_b(void *arg, int lane)
{
	struct overlap *o = arg;

	__atomic_add_fetch(&o->b_lanes[lane], 1, __ATOMIC_RELAXED);
	set_flag(&o->mu, &o->cv, &o->b_ran);
}

static void *caller_a(void *arg)
{
	struct overlap *o = arg;

	lanes_run(o->l, job_a, o);
	return NULL;
}

static void overlap_case(int hold)
{
	struct overlap o;
	pthread_t t;

	memset(&o, 0, sizeof(o));
	pthread_mutex_init(&o.mu, NULL);
	pthread_cond_init(&o.cv, NULL);
	o.hold = hold;
	if (lanes_create(&o.l, 2, NULL) != 0)
		bail("lanes_create");
	pthread_create(&t, NULL, caller_a, &o);
	/* B is asked for after A: wait until A's lanes are in it. */
	while (__atomic_load_n(&o.a_lanes[0], __ATOMIC_RELAXED) +
		       __atomic_load_n(&o.a_lanes[1], __ATOMIC_RELAXED) == 0)
		sched_yield();
	lanes_run(o.l, job_b, &o);
	pthread_join(t, NULL);
	ok(!o.seen_timeout && o.b_ran,
	   "lane %d of job A still in A: job B ran meanwhile on lane %d",
	   hold, hold == 0 ? 1 : 0);
	ok(o.a_lanes[0] == 1 && o.a_lanes[1] == 1 && o.b_lanes[0] == 1 &&
		   o.b_lanes[1] == 1,
	   "lane %d held: each lane ran A once and B once (A %d %d, B %d %d)",
	   hold, o.a_lanes[0], o.a_lanes[1], o.b_lanes[0], o.b_lanes[1]);
	lanes_unref(o.l);
	pthread_cond_destroy(&o.cv);
	pthread_mutex_destroy(&o.mu);
}

/* Several callers, each running jobs of random sizes: items are taken
 * from the job's counter, as the cpu backend's jobs do; every lane
 * records the jobs it entered, in order. */
#define NLANES 3
#define NCALLERS 4
#define MAX_ITEMS 64

struct sjob {
	uint64_t id;
	uint64_t next, total;
	uint64_t sum;             /* of the items' numbers, every lane's */
	int entered[NLANES], left[NLANES];
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_ids;
static uint64_t *g_seq[NLANES];   /* the jobs each lane entered, in order */
static size_t g_len[NLANES];

static void stress_job(void *arg, int lane)
{
	struct sjob *j = arg;

	__atomic_add_fetch(&j->entered[lane], 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&g_mu);
	g_seq[lane][g_len[lane]++] = j->id;
	pthread_mutex_unlock(&g_mu);
	for (;;) {
		uint64_t k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);

		if (k >= j->total)
			break;
		__atomic_add_fetch(&j->sum, k + 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&j->left[lane], 1, __ATOMIC_RELEASE);
}

struct scaller {
	struct lanes *l;
	uint64_t rng;
	int rounds;
	int bad;                  /* jobs whose counts were wrong */
};

static void *stress_caller(void *arg)
{
	struct scaller *c = arg;

	for (int r = 0; r < c->rounds; r++) {
		struct sjob *j = calloc(1, sizeof(*j));

		if (j == NULL)
			bail("out of memory");
		j->total = test_rand(&c->rng) % MAX_ITEMS;
		j->id = __atomic_fetch_add(&g_ids, 1, __ATOMIC_RELAXED);
		lanes_run(c->l, stress_job, j);
		/* Every lane in and out of the job before lanes_run returned:
		 * the job is freed next. */
		for (int k = 0; k < NLANES; k++)
			if (__atomic_load_n(&j->left[k], __ATOMIC_ACQUIRE) != 1 ||
			    j->entered[k] != 1)
				c->bad++;
		if (j->sum != j->total * (j->total + 1) / 2)
			c->bad++;
		free(j);
	}
	return NULL;
}

static void stress(uint64_t seed)
{
	struct lanes *l;
	pthread_t t[NCALLERS];
	struct scaller c[NCALLERS];
	long rounds = test_sized("rounds per caller", 2000, 200);
	size_t jobs = (size_t)rounds * NCALLERS;
	int bad = 0, same = 1;

	for (int k = 0; k < NLANES; k++)
		g_seq[k] = test_xmalloc(jobs * sizeof(**g_seq));
	if (lanes_create(&l, NLANES, NULL) != 0)
		bail("lanes_create");
	for (int i = 0; i < NCALLERS; i++) {
		c[i].l = l;
		c[i].rng = seed + (uint64_t)i * 0x9e3779b97f4a7c15u;
		c[i].rounds = (int)rounds;
		c[i].bad = 0;
		pthread_create(&t[i], NULL, stress_caller, &c[i]);
	}
	for (int i = 0; i < NCALLERS; i++) {
		pthread_join(t[i], NULL);
		bad += c[i].bad;
	}
	lanes_unref(l);
	is_int(bad, 0,
	       "%d callers x %ld jobs on %d lanes: every lane ran every job "
	       "once and left it before its lanes_run returned, every item "
	       "counted once", NCALLERS, rounds, NLANES);
	/* The order asked for is the tickets', which the test cannot see:
	 * that every lane, lane 0 (the callers) included, took the jobs in
	 * one order is what holds them to it. */
	for (int k = 1; k < NLANES; k++)
		same = same && g_len[k] == g_len[0] &&
		       memcmp(g_seq[k], g_seq[0], jobs * sizeof(**g_seq)) == 0;
	ok(same && g_len[0] == jobs,
	   "every lane, the callers' lane 0 and each worker, took the %zu "
	   "jobs in one order", jobs);
	for (int k = 0; k < NLANES; k++)
		free(g_seq[k]);
}

int main(void)
{
	uint64_t seed = test_seed();

	plan(6);
	overlap_case(1);
	overlap_case(0);
	stress(seed);
	return done_testing();
}
