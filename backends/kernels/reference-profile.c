/*
 * reference-profile.c - the reference executor's work profile
 * (doc/design.md §12.1): the kernels built once more from the one source,
 * for work-groups of many work-items, and the work each item does between
 * barriers counted.
 *
 * Each work-item is a coroutine (ucontext) with a stack of its own;
 * BARRIER() switches back to the scheduler, which resumes the items in
 * local-id order, one round per barrier.  Items do not really run at once,
 * but a correct kernel cannot tell: within a round they share nothing
 * that one writes and another reads (doc/design.md §7.1), so the bytes are
 * those of any other executor (§7.2), and the tests compare them.  Counting
 * is what takes time here, not the work: the normal reference path
 * (reference-kernels.c) is a separate build without any of it.
 */
#define SP_REF_PROFILE 1
#include "prelude-c.h"
#include "kernels.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "reference-calls.h"
#include "reference-kernels.h"

#if defined(__SANITIZE_ADDRESS__)
#define PROF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROF_ASAN 1
#endif
#endif
#ifdef PROF_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* Kernels keep their state in registers on a GPU and use little stack in
 * C; a sanitizer's redzones take more.  Pages never touched cost nothing. */
#define PROF_STACK_BYTES ((size_t)256 << 10)
/* Named phases one kernel may have. */
#define PROF_PHASES 32

enum item_state { ITEM_RUNS, ITEM_WAITS, ITEM_DONE };

struct prof_item {
	ucontext_t ctx;
	uint8_t *map;          /* guard page, then the stack */
	enum item_state state;
	uint64_t local_used;   /* bytes of local memory it has declared */
};

struct prof_phase {
	const char *name;      /* NULL: work before the kernel's first PHASE */
	uint64_t work, crit;
};

struct prof_kernel {
	uint64_t launches, units, work, crit;
	struct prof_phase phase[PROF_PHASES];
	unsigned nphase;
};

struct ref_profile {
	struct prof_item item[SP_WG_MAX];
	unsigned nstacks;      /* items with a stack so far */
	size_t page;
	ucontext_t sched;
	void (*call)(const struct kdev_arg *);
	const struct kdev_arg *args;
	uint64_t units;        /* UNIT() marks of the running group */
	const char *fault;     /* the rule the running group broke */
	const void *sched_bottom; /* the scheduler's stack, for ASan */
	size_t sched_size;
	alignas(16) uint8_t local[SP_PROF_LOCAL_BYTES];
	struct prof_kernel k[KDEV_NKERNELS];
};

/* The profile whose group runs on this thread. */
static _Thread_local struct ref_profile *prof_cur;
#ifdef PROF_ASAN
static _Thread_local void *prof_fake_stack;
#endif

/* Switch from context `from` to `to`, whose stack is [bottom, +size):
 * AddressSanitizer is told, so that it follows the stacks.  Not inlined:
 * what returns twice stays here, not in its callers' frames. */
__attribute__((noinline)) static void prof_switch(ucontext_t *from, ucontext_t *to, const void *bottom,
			size_t size)
{
#ifdef PROF_ASAN
	__sanitizer_start_switch_fiber(&prof_fake_stack, bottom, size);
	swapcontext(from, to);
	__sanitizer_finish_switch_fiber(prof_fake_stack, NULL, NULL);
#else
	(void)bottom;
	(void)size;
	swapcontext(from, to);
#endif
}

static void *item_stack(const struct ref_profile *p, const struct prof_item *it)
{
	return it->map + p->page;
}

/* Back to the scheduler, as the running item. */
static void item_yield(struct ref_profile *p)
{
	struct prof_item *it = &p->item[sp_ref_item.lid];

	prof_switch(&it->ctx, &p->sched, p->sched_bottom, p->sched_size);
}

/* The running item breaks a rule: the group ends here, and no item of it
 * is resumed again. */
static void item_fault(struct ref_profile *p, const char *why)
{
	p->fault = why;
	for (;;)
		item_yield(p);
}

static void sp_prof_barrier(void)
{
	struct ref_profile *p = prof_cur;

	p->item[sp_ref_item.lid].state = ITEM_WAITS;
	item_yield(p);
}

static void sp_prof_unit(void)
{
	if (sp_ref_item.lid == 0)
		prof_cur->units++;
}

static void *sp_prof_local(u64 bytes)
{
	struct ref_profile *p = prof_cur;
	struct prof_item *it = &p->item[sp_ref_item.lid];
	uint64_t at = it->local_used, len = (bytes + 15) & ~(u64)15;

	if (len < bytes || len > SP_PROF_LOCAL_BYTES - at)
		item_fault(p, "declares more local memory than 64 KiB");
	it->local_used = at + len;
	return p->local + at;
}

static void item_main(void)
{
	struct ref_profile *p = prof_cur;

#ifdef PROF_ASAN
	__sanitizer_finish_switch_fiber(prof_fake_stack, &p->sched_bottom,
					&p->sched_size);
#endif
	p->call(p->args);
	p->item[sp_ref_item.lid].state = ITEM_DONE;
	item_yield(p);
}

int ref_profile_open(struct ref_profile **out, struct sp_err *err)
{
	struct ref_profile *p = calloc(1, sizeof(*p));
	long page = sysconf(_SC_PAGESIZE);

	*out = NULL;
	SP_RETURN_IF(p == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for the work profile");
	p->page = page > 0 ? (size_t)page : 4096;
	*out = p;
	return SHARDPIPE_OK;
}

void ref_profile_close(struct ref_profile *p)
{
	if (p == NULL)
		return;
	for (unsigned i = 0; i < p->nstacks; i++)
		munmap(p->item[i].map, p->page + PROF_STACK_BYTES);
	free(p);
}

/* Stacks for `local` items, each above a page that faults when a kernel
 * overflows its stack instead of overwriting the next. */
static int make_stacks(struct ref_profile *p, uint64_t local,
		       struct sp_err *err)
{
	for (; p->nstacks < local; p->nstacks++) {
		struct prof_item *it = &p->item[p->nstacks];
		void *m = mmap(NULL, p->page + PROF_STACK_BYTES,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);

		SP_RETURN_IF(m == MAP_FAILED, err, SHARDPIPE_ERR_NOMEM,
			     "reference profile: no memory for the stack of "
			     "work-item %u: %s", p->nstacks, strerror(errno));
		it->map = m;
		if (mprotect(m, p->page, PROT_NONE) != 0) {
			munmap(m, p->page + PROF_STACK_BYTES);
			it->map = NULL;
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "reference profile: guarding a "
					  "stack: %s", strerror(errno));
		}
	}
	return SHARDPIPE_OK;
}

static struct prof_phase *phase_of(struct prof_kernel *k, const char *name)
{
	for (unsigned i = 0; i < k->nphase; i++)
		if (k->phase[i].name == name ||
		    (name != NULL && k->phase[i].name != NULL &&
		     strcmp(k->phase[i].name, name) == 0))
			return &k->phase[i];
	if (k->nphase == PROF_PHASES)
		return &k->phase[PROF_PHASES - 1];
	k->phase[k->nphase].name = name;
	return &k->phase[k->nphase++];
}

/* A fresh coroutine that will run the kernel from its start.  Apart, so
 * that getcontext, which returns twice, leaves run_group's frame alone. */
__attribute__((noinline)) static void item_start(struct ref_profile *p,
						 struct prof_item *it)
{
	getcontext(&it->ctx);
	it->ctx.uc_stack.ss_sp = item_stack(p, it);
	it->ctx.uc_stack.ss_size = PROF_STACK_BYTES;
	it->ctx.uc_link = NULL;
	makecontext(&it->ctx, item_main, 0);
	it->state = ITEM_RUNS;
	it->local_used = 0;
}

/*
 * One work-group: rounds of resuming every item until it waits at a
 * barrier or returns.  A round is a phase (§12.1): its critical path is the
 * most work one item did in it.
 */
static int run_group(struct ref_profile *p, struct prof_kernel *k,
		     const char *name, uint64_t local, struct sp_err *err)
{
	uint64_t group_work = 0;

	for (uint64_t i = 0; i < local; i++)
		item_start(p, &p->item[i]);
	/* Local memory starts undefined on a device: a kernel that reads
	 * it before writing it shows as bytes that differ. */
	memset(p->local, 0xA5, sizeof(p->local));
	sp_ref_item.phase = NULL;
	sp_ref_item.ls = local;
	p->units = 0;
	for (;;) {
		uint64_t most = 0, sum = 0, waiting = 0;
		struct prof_phase *ph;

		for (uint64_t i = 0; i < local; i++) {
			struct prof_item *it = &p->item[i];

			sp_ref_item.lid = i;
			sp_ref_item.work = 0;
			it->state = ITEM_RUNS;
			prof_switch(&p->sched, &it->ctx, item_stack(p, it),
				    PROF_STACK_BYTES);
			SP_RETURN_IF(p->fault != NULL, err,
				     SHARDPIPE_ERR_DEVICE,
				     "reference profile: %s: work-item %llu "
				     "of group %llu %s", name,
				     (unsigned long long)i,
				     (unsigned long long)sp_ref_item.group,
				     p->fault);
			sum += sp_ref_item.work;
			if (sp_ref_item.work > most)
				most = sp_ref_item.work;
			waiting += it->state == ITEM_WAITS;
		}
		ph = phase_of(k, sp_ref_item.phase);
		ph->work += sum;
		ph->crit += most;
		k->work += sum;
		k->crit += most;
		group_work += sum;
		if (waiting == 0)
			break;
		SP_RETURN_IF(waiting != local, err, SHARDPIPE_ERR_DEVICE,
			     "reference profile: %s: in group %llu, %llu of "
			     "%llu work-items returned while the others wait "
			     "at a barrier", name,
			     (unsigned long long)sp_ref_item.group,
			     (unsigned long long)(local - waiting),
			     (unsigned long long)local);
	}
	/* A kernel without UNIT() marks: each group that worked is one. */
	k->units += p->units != 0 ? p->units : group_work != 0;
	return SHARDPIPE_OK;
}

int ref_profile_run(struct ref_profile *p, unsigned id,
		    const struct kdev_arg *args, uint64_t groups,
		    uint64_t local, struct sp_err *err)
{
	struct prof_kernel *k;
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(id >= KDEV_NKERNELS, err, SHARDPIPE_ERR_DEVICE,
		     "reference: no kernel %u", id);
	SP_RETURN_IF(local < 1 || local > SP_WG_MAX, err,
		     SHARDPIPE_ERR_DEVICE,
		     "reference profile: %s: local size %llu is not in 1..%d",
		     kdev_kernels[id].name, (unsigned long long)local,
		     SP_WG_MAX);
	SP_FORWARD(make_stacks(p, local, err));
	k = &p->k[id];
	k->launches++;
	p->call = calls[id];
	p->args = args;
	p->fault = NULL;
	prof_cur = p;
	for (uint64_t g = 0; g < groups && rc == SHARDPIPE_OK; g++) {
		sp_ref_item.group = g;
		sp_ref_item.groups = groups;
		rc = run_group(p, k, kdev_kernels[id].name, local, err);
	}
	prof_cur = NULL;
	return rc;
}

static int write_row(FILE *f, const char *kernel, const char *phase,
		     uint64_t work, uint64_t crit, uint64_t local,
		     const char *units)
{
	return fprintf(f, "%-16s %-12s %14llu %12llu %9.1f of %-4llu %s\n",
		       kernel, phase, (unsigned long long)work,
		       (unsigned long long)crit,
		       crit ? (double)work / (double)crit : 0.0,
		       (unsigned long long)local, units) < 0;
}

int ref_profile_write(const struct ref_profile *p, FILE *f, uint64_t local,
		      uint64_t batches)
{
	int bad = 0;

	bad |= fprintf(f,
		       "# kernel work profile (doc/design.md §12.1): reference "
		       "executor, local size %llu, %llu batch%s\n"
		       "# work: units of §12.2; critical: the sum over phases "
		       "(barrier to barrier) of the most work one item did; "
		       "parallelism: their ratio, of the local size's lanes; "
		       "units: independent work-groups' worth of work per "
		       "batch\n",
		       (unsigned long long)local, (unsigned long long)batches,
		       batches == 1 ? "" : "es") < 0;
	bad |= fprintf(f, "%-16s %-12s %14s %12s %17s %s\n", "kernel",
		       "phase", "work", "critical", "parallelism",
		       "units/batch") < 0;
	for (unsigned id = 0; id < KDEV_NKERNELS; id++) {
		const struct prof_kernel *k = &p->k[id];
		const char *name = kdev_kernels[id].name;
		char units[32];

		if (k->launches == 0)
			continue;
		for (unsigned i = 0; i < k->nphase; i++) {
			const struct prof_phase *ph = &k->phase[i];

			if (ph->name == NULL && ph->work == 0)
				continue;
			if (ph->name == NULL && k->nphase == 1)
				continue;
			bad |= write_row(f, name, ph->name ? ph->name : "-",
					 ph->work, ph->crit, local, "-");
		}
		snprintf(units, sizeof(units), "%.1f",
			 batches ? (double)k->units / (double)batches : 0.0);
		bad |= write_row(f, name, "all", k->work, k->crit, local,
				 units);
	}
	bad |= ferror(f);
	return bad ? -1 : 0;
}
