/*
 * pool.c - the process's cache of stream buffers (doc/design.md §27).
 *
 * A fresh page costs about six times its memcpy the first time it is
 * written (the fault, the kernel clearing it, the cgroup's accounting), so
 * a stream that touches its pools once per run pays for them again in
 * every run.  Buffers come from mmap rather than malloc so that their
 * pages are touched only where written (a shard set is mapped at its worst
 * case and touched as far as its shards fill) and so that this file, not
 * malloc's trimming, decides when memory goes back to the system.
 */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct cached {
	void *p;
	uint64_t bytes;
	struct cached *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct cached *head;     /* most recently given first */
static struct pool_stats st;
static int configured;

static uint64_t default_bound(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || page <= 0)
		return 0;
	return (uint64_t)pages * (uint64_t)page / 8;
}

static void unmap(void *p, uint64_t bytes)
{
	munmap(p, (size_t)bytes);
}

/* Under mu: cut the entries beyond the bound off the list and return
 * them, to be unmapped without the lock. */
static struct cached *trim_locked(void)
{
	struct cached **at = &head, *cut;
	uint64_t kept = 0;

	while (*at != NULL && kept + (*at)->bytes <= st.bound) {
		kept += (*at)->bytes;
		at = &(*at)->next;
	}
	cut = *at;
	*at = NULL;
	for (struct cached *c = cut; c != NULL; c = c->next) {
		st.cached_bytes -= c->bytes;
		st.cached_buffers--;
	}
	return cut;
}

static void unmap_list(struct cached *c)
{
	while (c != NULL) {
		struct cached *next = c->next;

		unmap(c->p, c->bytes);
		free(c);
		c = next;
	}
}

int pool_configure(struct sp_err *err)
{
	const char *v = getenv(POOL_CACHE_ENV);
	uint64_t bound = 0;
	struct cached *cut;

	if (v == NULL || *v == '\0') {
		bound = default_bound();
	} else {
		for (const char *c = v; *c != '\0'; c++) {
			unsigned d = (unsigned)(*c - '0');

			SP_RETURN_IF(d > 9 || bound > (UINT64_MAX - d) / 10,
				     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				     "%s=\"%s\": give the bytes of stream "
				     "buffers to keep for later streams, in "
				     "decimal digits (0 keeps none)",
				     POOL_CACHE_ENV, v);
			bound = bound * 10 + d;
		}
	}
	pthread_mutex_lock(&mu);
	st.bound = bound;
	configured = 1;
	cut = trim_locked();
	pthread_mutex_unlock(&mu);
	unmap_list(cut);
	return SHARDPIPE_OK;
}

void *pool_take(uint64_t bytes)
{
	void *p;

	if (bytes == 0 || bytes > SIZE_MAX)
		return NULL;
	pthread_mutex_lock(&mu);
	st.taken++;
	for (struct cached **at = &head; *at != NULL; at = &(*at)->next) {
		struct cached *c = *at;

		if (c->bytes != bytes)
			continue;
		*at = c->next;
		st.reused++;
		st.in_use_bytes += bytes;
		st.cached_bytes -= c->bytes;
		st.cached_buffers--;
		pthread_mutex_unlock(&mu);
		p = c->p;
		free(c);
		return p;
	}
	pthread_mutex_unlock(&mu);
	/* No reservation: most of a worst-case shard set is never written,
	 * and the stream's max_memory already bounds what it plans. */
	p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pthread_mutex_lock(&mu);
	st.in_use_bytes += bytes;
	pthread_mutex_unlock(&mu);
	return p;
}

void pool_give(void *p, uint64_t bytes)
{
	struct cached *c, *cut;

	if (p == NULL)
		return;
	c = malloc(sizeof(*c));
	pthread_mutex_lock(&mu);
	st.in_use_bytes -= bytes;
	if (!configured) {
		st.bound = default_bound();
		configured = 1;
	}
	if (c == NULL || bytes > st.bound) {
		pthread_mutex_unlock(&mu);
		free(c);
		unmap(p, bytes);
		return;
	}
	c->p = p;
	c->bytes = bytes;
	c->next = head;
	head = c;
	st.cached_bytes += bytes;
	st.cached_buffers++;
	cut = trim_locked();
	pthread_mutex_unlock(&mu);
	unmap_list(cut);
}

void pool_stats(struct pool_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = st;
	pthread_mutex_unlock(&mu);
}

void pool_drop_all(void)
{
	struct cached *all;

	pthread_mutex_lock(&mu);
	all = head;
	head = NULL;
	st.cached_bytes = 0;
	st.cached_buffers = 0;
	pthread_mutex_unlock(&mu);
	unmap_list(all);
}
