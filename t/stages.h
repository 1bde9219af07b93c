/*
 * stages.h - what the stage tests share: a whole batch fetched through a
 * backend's two fetch entries into the test's own memory.
 */
#ifndef SHARDPIPE_T_STAGES_H
#define SHARDPIPE_T_STAGES_H

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "testutil.h"

struct fetched {
	uint64_t *offsets;   /* n + 1 */
	uint8_t *data;       /* offsets[n] bytes */
};

/*
 * Fetch the oldest aggregated batch of n chunks whole.  The bytes come in
 * three ranges, out of order and split inside a chunk, so that
 * fetch_ranges is checked to place each range where it is told.
 */
static inline int fetch_batch(const struct backend_ops *ops, void *ctx,
			      uint64_t n, struct fetched *f,
			      struct sp_err *err)
{
	const uint64_t *off;
	struct batch_range r[3];
	uint64_t total, a, b;
	int rc = ops->fetch_offsets(ctx, &off, err);

	f->offsets = NULL;
	f->data = NULL;
	if (rc != SHARDPIPE_OK)
		return rc;
	total = off[n];
	f->offsets = test_xmalloc((n + 1) * sizeof(*off));
	memcpy(f->offsets, off, (n + 1) * sizeof(*off));
	f->data = test_xmalloc(total);
	a = total / 3;
	b = total - total / 5;
	r[0] = (struct batch_range){ f->data + b, b, total - b };
	r[1] = (struct batch_range){ f->data, 0, a };
	r[2] = (struct batch_range){ f->data + a, a, b - a };
	return ops->fetch_ranges(ctx, r, 3, err);
}

static inline void fetched_free(struct fetched *f)
{
	free(f->offsets);
	free(f->data);
	f->offsets = NULL;
	f->data = NULL;
}

#endif
