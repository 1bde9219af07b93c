/*
 * plan.c - the geometry of a stream (doc/design.md §3.1), computed once
 * at open and only executed by the backends.
 */
#include "plan.h"

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "codec.h"
#include "ome.h"

/* A batch is grown to about this many input bytes, so that small epochs
 * still give every thread several chunks and amortise per-batch costs. */
#define BATCH_TARGET_BYTES (16u << 20)
/* ... but not beyond this many chunks: a batch is always processed whole,
 * so a stream that closes early pays for every slot of its last batch. */
#define BATCH_MAX_CHUNKS 1024u

/* perm and pos_slot are 32-bit: an epoch of more chunks than this would
 * need pools far beyond any device's memory anyway. */
#define MAX_EPOCH_CHUNKS (1u << 31)

static int dim_label(char *buf, size_t n, const shardpipe_desc *desc, int d)
{
	const char *name = desc->dims[d].name;

	if (name != NULL && *name != '\0')
		return snprintf(buf, n, "dim %d (%s)", d, name);
	return snprintf(buf, n, "dim %d", d);
}

static int check_name(const char *name, int d, struct sp_err *err)
{
	size_t len;

	if (name == NULL)
		return SHARDPIPE_OK;
	len = strlen(name);
	SP_RETURN_IF(len >= 64, err, SHARDPIPE_ERR_NAME,
		     "dim %d: name is %zu bytes long, the limit is 63", d, len);
	for (size_t i = 0; i < len; i++)
		SP_RETURN_IF((unsigned char)name[i] < 0x20 || name[i] == '"' ||
			     name[i] == '\\', err, SHARDPIPE_ERR_NAME,
			     "dim %d: name \"%s\" holds a control character, "
			     "a quote or a backslash", d, name);
	return SHARDPIPE_OK;
}

/* The blosc fields, or their defaults when the caller's struct predates
 * them (struct_size too small to hold them). */
static void blosc_settings(const shardpipe_desc *desc,
			   shardpipe_blosc_cname *cname,
			   shardpipe_blosc_shuffle *shuffle, uint32_t *blocksize)
{
	*cname = SHARDPIPE_BLOSC_ZSTD;
	*shuffle = SHARDPIPE_BLOSC_SHUFFLE;
	*blocksize = 0;
	if (!SHARDPIPE_HAS_FIELD(desc, blosc_blocksize))
		return;
	*cname = desc->blosc_cname;
	*shuffle = desc->blosc_shuffle;
	*blocksize = desc->blosc_blocksize;
}

/* The fill value and the flags after it, or their defaults for a caller
 * built before them. */
static int fill_settings(struct plan *p, const shardpipe_desc *desc,
			 struct sp_err *err)
{
	if (SHARDPIPE_HAS_FIELD(desc, fill_value))
		memcpy(p->fill, desc->fill_value, p->esize);
	if (SHARDPIPE_HAS_FIELD(desc, write_empty_chunks))
		p->write_empty_chunks = desc->write_empty_chunks != 0;
	if (SHARDPIPE_HAS_FIELD(desc, durable))
		p->durable = desc->durable != 0;
	if (SHARDPIPE_HAS_FIELD(desc, max_memory))
		p->max_memory = desc->max_memory;
	SP_RETURN_IF(p->dtype == SHARDPIPE_DTYPE_BOOL && p->fill[0] > 1, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "fill_value %u is not a bool (0 or 1)", p->fill[0]);
	for (unsigned i = 0; i < p->esize; i++)
		p->fill_le[i] = sp_host_big_endian() ?
					p->fill[p->esize - 1 - i] : p->fill[i];
	return SHARDPIPE_OK;
}

static int check_desc(const shardpipe_desc *desc, struct sp_err *err)
{
	char label[96];

	SP_RETURN_IF(!SHARDPIPE_HAS_FIELD(desc, overwrite), err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "description not initialised with shardpipe_desc_init()");
	SP_RETURN_IF(desc->rank < 1 || desc->rank > SHARDPIPE_MAX_RANK, err,
		     SHARDPIPE_ERR_RANK, "rank %d is outside 1..%d", desc->rank,
		     SHARDPIPE_MAX_RANK);
	for (int d = 0; d < desc->rank; d++) {
		const shardpipe_dim *dim = &desc->dims[d];

		SP_FORWARD(check_name(dim->name, d, err));
		dim_label(label, sizeof(label), desc, d);
		SP_RETURN_IF(dim->chunk == 0, err, SHARDPIPE_ERR_CHUNK_SIZE,
			     "%s: chunk size is 0", label);
		SP_RETURN_IF(dim->chunks_per_shard == 0, err,
			     SHARDPIPE_ERR_SHARD_SIZE,
			     "%s: chunks per shard is 0", label);
	}
	SP_RETURN_IF((unsigned)desc->dtype >= SHARDPIPE_DTYPE_COUNT_, err,
		     SHARDPIPE_ERR_DTYPE, "unknown data type %d",
		     (int)desc->dtype);
	SP_RETURN_IF((unsigned)desc->codec >= SHARDPIPE_CODEC_COUNT_, err,
		     SHARDPIPE_ERR_CODEC, "unknown codec %d", (int)desc->codec);
	SP_FORWARD(codec_check_level(desc->codec, desc->level, err));
	if (desc->codec == SHARDPIPE_CODEC_BLOSC) {
		shardpipe_blosc_cname cname;
		shardpipe_blosc_shuffle shuffle;
		uint32_t blocksize;

		blosc_settings(desc, &cname, &shuffle, &blocksize);
		SP_FORWARD(codec_check_blosc(cname, shuffle, blocksize, err));
	}
	SP_RETURN_IF(desc->index_location != SHARDPIPE_INDEX_END &&
		     desc->index_location != SHARDPIPE_INDEX_START,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "unknown index location %d", (int)desc->index_location);
	SP_RETURN_IF(desc->threads < 0, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "thread count %d is negative", desc->threads);
	/* Each thread holds its own compressor contexts and scratch: a
	 * count far past any machine's cores would only exhaust memory. */
	SP_RETURN_IF(desc->threads > SHARDPIPE_MAX_THREADS, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "thread count %d is above %d", desc->threads,
		     SHARDPIPE_MAX_THREADS);
	return SHARDPIPE_OK;
}

#define MUL(a, b, out, what)                                                  \
	SP_RETURN_IF(!sp_mul_ok((a), (b), (out)), err, SHARDPIPE_ERR_OVERFLOW, \
		     "%s overflows 64 bits", (what))

static int compute_sizes(struct plan *p, struct sp_err *err)
{
	uint64_t row_elems = 1, v;

	p->chunk_elems = 1;
	p->M = 1;
	p->S = 1;
	p->chunks_per_shard_inner = 1;
	for (int d = 0; d < p->rank; d++) {
		char what[80];

		snprintf(what, sizeof(what), "dim %d: shard extent",
			 p->sdim[d]);
		MUL(p->chunk[d], p->cps[d], &v, what);
		MUL(p->chunk_elems, p->chunk[d], &p->chunk_elems,
		    "elements per chunk");
		if (p->size[d] != 0) {
			p->chunk_count[d] = sp_ceil_div(p->size[d], p->chunk[d]);
			p->shard_count[d] =
				sp_ceil_div(p->chunk_count[d], p->cps[d]);
		}
		if (d == 0)
			continue;
		MUL(row_elems, p->size[d], &row_elems, "elements per row");
		MUL(p->M, p->chunk_count[d], &p->M, "chunks per epoch");
		MUL(p->S, p->shard_count[d], &p->S, "shards per shard epoch");
		MUL(p->chunks_per_shard_inner, p->cps[d],
		    &p->chunks_per_shard_inner, "chunks per shard");
	}
	MUL(p->chunks_per_shard_inner, p->cps[0], &p->chunks_per_shard,
	    "chunks per shard");
	MUL(p->chunk_elems, p->esize, &p->chunk_bytes, "bytes per chunk");
	MUL(row_elems, p->esize, &p->row_bytes, "bytes per row");
	MUL(p->row_bytes, p->chunk[0], &p->epoch_bytes, "bytes per epoch");
	if (p->size[0] != 0)
		MUL(p->row_bytes, p->size[0], &v, "bytes in the array");
	SP_RETURN_IF(p->M > MAX_EPOCH_CHUNKS, err, SHARDPIPE_ERR_OVERFLOW,
		     "%llu chunks per epoch exceeds the limit of %u",
		     (unsigned long long)p->M, MAX_EPOCH_CHUNKS);
	SP_RETURN_IF(p->chunks_per_shard > (UINT64_MAX - 4) / 16, err,
		     SHARDPIPE_ERR_OVERFLOW, "shard index size overflows");
	p->index_bytes = 16 * p->chunks_per_shard + 4;

	SP_RETURN_IF(p->codec == SHARDPIPE_CODEC_BLOSC &&
		     p->chunk_bytes > CODEC_BLOSC_MAX_BYTES, err,
		     SHARDPIPE_ERR_OVERFLOW,
		     "a chunk of %llu bytes exceeds the blosc format's "
		     "limit of %llu",
		     (unsigned long long)p->chunk_bytes,
		     (unsigned long long)CODEC_BLOSC_MAX_BYTES);
	p->slot_capacity = codec_bound(p->codec, p->chunk_bytes);
	SP_RETURN_IF(p->slot_capacity < p->chunk_bytes, err,
		     SHARDPIPE_ERR_OVERFLOW, "chunk bound overflows");
	return SHARDPIPE_OK;
}

void plan_set_epochs(struct plan *p, uint64_t k)
{
	if (p->chunk_count[0] != 0 && k > p->chunk_count[0])
		k = p->chunk_count[0];
	p->K = k > 0 ? k : 1;
	p->batch_bytes = p->K * p->epoch_bytes;
}

/* The batch's pools must be countable in this host's memory. */
static int check_batch(const struct plan *p, struct sp_err *err)
{
	uint64_t v;

	MUL(p->epoch_bytes, p->K, &v, "bytes per batch");
	MUL(p->K * p->M, p->slot_capacity, &v, "compressed pool size");
	SP_RETURN_IF(v > SIZE_MAX || p->batch_bytes > SIZE_MAX, err,
		     SHARDPIPE_ERR_OVERFLOW,
		     "a batch of %llu bytes does not fit this host's memory",
		     (unsigned long long)v);
	return SHARDPIPE_OK;
}

/* Batches: whole epochs, about BATCH_TARGET_BYTES, never more epochs than
 * a bounded array has. */
static int compute_batch(struct plan *p, struct sp_err *err)
{
	uint64_t k = 1;

	if (p->epoch_bytes < BATCH_TARGET_BYTES)
		k = BATCH_TARGET_BYTES / p->epoch_bytes;
	if (p->chunk_count[0] != 0 && k > p->chunk_count[0])
		k = p->chunk_count[0];
	if (k > 1 && k * p->M > BATCH_MAX_CHUNKS)
		k = p->M >= BATCH_MAX_CHUNKS ? 1 : BATCH_MAX_CHUNKS / p->M;
	MUL(p->epoch_bytes, k, &p->batch_bytes, "bytes per batch");
	plan_set_epochs(p, k);
	return check_batch(p, err);
}

/*
 * The storage order (design §3.3): a permutation of 0..rank-1, or all zero
 * for the identity.  Every refusal names the entry at fault.  Sets
 * p->order to the append dim of each storage dim; plan_init reorders it
 * into plan order (plan_order).
 */
static int order_settings(struct plan *p, const shardpipe_desc *desc,
			  struct sp_err *err)
{
	int seen[SHARDPIPE_MAX_RANK] = { 0 }, any = 0;

	for (int d = 0; d < SHARDPIPE_MAX_RANK; d++)
		p->order[d] = d;
	if (!SHARDPIPE_HAS_FIELD(desc, storage_order))
		return SHARDPIPE_OK;
	for (int d = 0; d < SHARDPIPE_MAX_RANK; d++)
		any |= desc->storage_order[d] != 0;
	if (!any)
		return SHARDPIPE_OK;
	for (int d = p->rank; d < SHARDPIPE_MAX_RANK; d++)
		SP_RETURN_IF(desc->storage_order[d] != 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "storage_order[%d] = %d lies past rank %d "
			     "(entries past the rank must be 0)", d,
			     desc->storage_order[d], p->rank);
	for (int d = 0; d < p->rank; d++) {
		int a = desc->storage_order[d];

		SP_RETURN_IF(a < 0 || a >= p->rank, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "storage_order[%d] = %d is outside 0..%d", d, a,
			     p->rank - 1);
		SP_RETURN_IF(seen[a], err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "storage_order[%d] = %d repeats an earlier entry: "
			     "not a permutation of 0..%d", d, a, p->rank - 1);
		seen[a] = 1;
		p->order[d] = a;
		p->permuted |= a != d;
	}
	/* The backend view of a moved append dim (plan_backend_view) has
	 * one dim more. */
	SP_RETURN_IF(p->order[0] != 0 && p->rank == SHARDPIPE_MAX_RANK, err,
		     SHARDPIPE_ERR_RANK,
		     "storage_order[0] = %d at rank %d: the append dim may "
		     "move from storage dim 0 only below rank %d",
		     p->order[0], p->rank, SHARDPIPE_MAX_RANK);
	return SHARDPIPE_OK;
}

/*
 * Plan order (design §3.3): the append dim first, then the other storage
 * dims in storage order, so that epochs, shard rows and every dim-0 rule
 * of the host stay along the append dim wherever it is stored.  sdim[w]
 * is the storage dim of plan dim w; order becomes the append dim of each
 * plan dim.
 */
static void plan_order(struct plan *p)
{
	int order[SHARDPIPE_MAX_RANK], w = 1;

	for (int d = 0; d < p->rank; d++) {
		if (p->order[d] == 0) {
			p->sdim[0] = d;
			continue;
		}
		p->sdim[w++] = d;
	}
	for (w = 0; w < p->rank; w++)
		order[w] = p->order[p->sdim[w]];
	memcpy(p->order, order, sizeof(int) * (size_t)p->rank);
}

int plan_dim_of(const struct plan *p, int s)
{
	for (int w = 0; w < p->rank; w++)
		if (p->sdim[w] == s)
			return w;
	return s;
}

/* Coordinates in plan order (a shard's, say) into storage order. */
void plan_to_storage(const struct plan *p, const uint64_t *in, uint64_t *out)
{
	uint64_t v[SHARDPIPE_MAX_RANK];

	for (int w = 0; w < p->rank; w++)
		v[p->sdim[w]] = in[w];
	memcpy(out, v, sizeof(uint64_t) * (size_t)p->rank);
}

/* Chunks row-major over the plan's dims, in a pool of epochs' chunks
 * row-major over dims 1.. */
static void chunk_strides(struct plan *p)
{
	uint64_t elem = 1, tile = p->chunk_elems;

	for (int d = p->rank - 1; d >= 0; d--) {
		p->elem_stride[d] = elem;
		p->tile_stride[d] = d > 0 ? tile : 0;
		elem *= p->chunk[d];
		if (d > 0)
			tile *= p->chunk_count[d];
	}
}

static void compute_strides(struct plan *p)
{
	uint64_t in = 1;
	uint64_t ashape[SHARDPIPE_MAX_RANK], astride[SHARDPIPE_MAX_RANK];

	/* The caller's rows are row-major in append order, whose dim
	 * order[d] is plan dim d; the scatter walks plan order, so plan
	 * dim d steps by its append dim's stride. */
	for (int d = 0; d < p->rank; d++)
		ashape[p->order[d]] = p->size[d];
	for (int a = p->rank - 1; a >= 0; a--) {
		astride[a] = in;
		if (a > 0)
			in *= ashape[a];
	}
	for (int d = 0; d < p->rank; d++)
		p->in_stride[d] = astride[p->order[d]];
	chunk_strides(p);
}

void plan_backend_view(const struct plan *p, struct plan *v)
{
	int w = 1;

	*v = *p;
	if (p->sdim[0] == 0)
		return;
	v->rank = p->rank + 1;
	v->size[0] = p->chunk_count[0];
	v->chunk[0] = 1;
	v->in_stride[0] = p->epoch_bytes / p->esize;
	v->row_bytes = p->epoch_bytes;
	v->names[0][0] = '\0';
	for (int d = 0; d < p->rank; d++) {
		const int b = d + 1, f = d == p->sdim[0] ? 0 : w++;

		v->size[b] = p->size[f];
		v->chunk[b] = p->chunk[f];
		v->cps[b] = p->cps[f];
		v->chunk_count[b] = p->chunk_count[f];
		v->shard_count[b] = p->shard_count[f];
		v->in_stride[b] = p->in_stride[f];
		memcpy(v->names[b], p->names[f], sizeof(v->names[b]));
		if (f == 0) {
			/* One chunk of the epoch's rows: past the array's
			 * end they are fill in the input already. */
			v->size[b] = p->chunk[0];
			v->cps[b] = v->chunk_count[b] = v->shard_count[b] = 1;
		}
	}
	v->cps[0] = p->cps[0];
	v->chunk_count[0] = p->chunk_count[0];
	v->shard_count[0] = p->shard_count[0];
	chunk_strides(v);
}

/* Unravel chunk i of an epoch into chunk coordinates along dims 1.. */
static void chunk_coords(const struct plan *p, uint64_t i, uint64_t *t)
{
	for (int d = p->rank - 1; d >= 1; d--) {
		t[d] = i % p->chunk_count[d];
		i /= p->chunk_count[d];
	}
	t[0] = 0;
}

static int compute_permutation(struct plan *p, struct sp_err *err)
{
	uint64_t t[SHARDPIPE_MAX_RANK], slot_step[SHARDPIPE_MAX_RANK];
	uint64_t steps = 1;

	p->perm = malloc(p->M * sizeof(*p->perm));
	p->pos_slot = malloc(p->M * sizeof(*p->pos_slot));
	p->shard_first = calloc(p->S + 1, sizeof(*p->shard_first));
	SP_RETURN_IF(!p->perm || !p->pos_slot || !p->shard_first, err,
		     SHARDPIPE_ERR_NOMEM,
		     "out of memory for the shard permutation of %llu chunks",
		     (unsigned long long)p->M);

	/* Chunks in each shard: the product of its extents, which are
	 * shorter than cps at the array's far edges. */
	for (uint64_t k = 0; k < p->S; k++) {
		uint64_t rest = k, n = 1;

		for (int d = p->rank - 1; d >= 1; d--) {
			uint64_t s = rest % p->shard_count[d];
			uint64_t left = p->chunk_count[d] - s * p->cps[d];

			rest /= p->shard_count[d];
			n *= left < p->cps[d] ? left : p->cps[d];
		}
		p->shard_first[k + 1] = p->shard_first[k] + n;
	}
	/* A shard's index slots are row-major over its chunk grid in
	 * storage order, wherever the append dim lies in it. */
	for (int d = p->rank - 1; d >= 0; d--)
		for (int w = 0; w < p->rank; w++)
			if (p->sdim[w] == d) {
				slot_step[w] = steps;
				steps *= p->cps[w];
			}
	p->epoch_slots = slot_step[0];
	for (uint64_t i = 0; i < p->M; i++) {
		uint64_t shard = 0, rank_in = 0, slot = 0;

		chunk_coords(p, i, t);
		for (int d = 1; d < p->rank; d++) {
			uint64_t s = t[d] / p->cps[d], w = t[d] % p->cps[d];
			uint64_t left = p->chunk_count[d] - s * p->cps[d];
			uint64_t ext = left < p->cps[d] ? left : p->cps[d];

			shard = shard * p->shard_count[d] + s;
			rank_in = rank_in * ext + w;
			slot += w * slot_step[d];
		}
		p->perm[i] = (uint32_t)(p->shard_first[shard] + rank_in);
		p->pos_slot[p->perm[i]] = (uint32_t)slot;
	}
	return SHARDPIPE_OK;
}

static int resolve_threads(int threads)
{
	return threads > 0 ? threads : sp_cores();
}

int plan_init(struct plan *p, const shardpipe_desc *desc, struct sp_err *err)
{
	int rc;

	memset(p, 0, sizeof(*p));
	SP_FORWARD(check_desc(desc, err));
	p->rank = desc->rank;
	p->dtype = desc->dtype;
	p->codec = desc->codec;
	p->level = desc->codec == SHARDPIPE_CODEC_NONE ? 0 : desc->level;
	p->index_location = desc->index_location;
	if (desc->codec == SHARDPIPE_CODEC_BLOSC)
		blosc_settings(desc, &p->blosc_cname, &p->blosc_shuffle,
			       &p->blosc_blocksize);
	/* A caller whose struct predates the field gets no checksum. */
	if (desc->codec == SHARDPIPE_CODEC_ZSTD &&
	    SHARDPIPE_HAS_FIELD(desc, zstd_checksum))
		p->zstd_checksum = desc->zstd_checksum != 0;
	p->threads = resolve_threads(desc->threads);
	p->esize = (unsigned)shardpipe_dtype_size(desc->dtype);
	SP_FORWARD(order_settings(p, desc, err));
	plan_order(p);
	for (int w = 0; w < p->rank; w++) {
		const shardpipe_dim *dim = &desc->dims[p->sdim[w]];
		char label[96];

		p->size[w] = dim->size;
		p->chunk[w] = dim->chunk;
		p->cps[w] = dim->chunks_per_shard;
		if (dim->name != NULL)
			snprintf(p->names[w], sizeof(p->names[w]), "%s",
				 dim->name);
		dim_label(label, sizeof(label), desc, p->sdim[w]);
		SP_RETURN_IF(w > 0 && dim->size == 0, err,
			     SHARDPIPE_ERR_DIM_SIZE,
			     "%s: size 0 (only the append dim, storage dim "
			     "%d, may be unbounded)", label, p->sdim[0]);
	}
	SP_FORWARD(fill_settings(p, desc, err));
	SP_FORWARD(compute_sizes(p, err));
	SP_FORWARD(compute_batch(p, err));
	compute_strides(p);
	rc = compute_permutation(p, err);
	if (rc != SHARDPIPE_OK)
		plan_free(p);
	return rc;
}

void plan_free(struct plan *p)
{
	free(p->perm);
	free(p->pos_slot);
	free(p->shard_first);
	p->perm = NULL;
	p->pos_slot = NULL;
	p->shard_first = NULL;
}

void plan_chunk_box(const struct plan *p, uint64_t i,
		    uint64_t origin[SHARDPIPE_MAX_RANK],
		    uint64_t extent[SHARDPIPE_MAX_RANK])
{
	uint64_t t[SHARDPIPE_MAX_RANK];

	chunk_coords(p, i, t);
	origin[0] = 0;
	extent[0] = p->chunk[0];
	for (int d = 1; d < p->rank; d++) {
		uint64_t left;

		origin[d] = t[d] * p->chunk[d];
		left = p->size[d] - origin[d];
		extent[d] = left < p->chunk[d] ? left : p->chunk[d];
	}
}

void plan_shard_coords(const struct plan *p, uint64_t s0, uint64_t k,
		       uint64_t coords[SHARDPIPE_MAX_RANK])
{
	for (int d = p->rank - 1; d >= 1; d--) {
		coords[d] = k % p->shard_count[d];
		k /= p->shard_count[d];
	}
	coords[0] = s0;
}

/*
 * Pyramids (doc/design.md §28.1).  Level L+1 halves, rounding up, every
 * flagged dim of level L that is larger than 1 (an unbounded dim 0 always
 * halves) and has not reached its own stop (max_levels_dim); chunk and shard shapes stay those of level 0 in elements,
 * clamped to the level's shape.  Every level batches as many epochs as
 * level 0, so that a batch of level 0 makes at most one of each level
 * above it.
 */

/* The pyramid's fields, or none for a caller built before them (they
 * came together, so the last one tells). */
static void pyramid_fields(const shardpipe_desc *desc, const struct plan *p0,
			   struct plan_levels *pl, int *max_levels, int *ngff)
{
	memcpy(pl->sdim, p0->sdim, sizeof(pl->sdim));
	pl->downsample = 0;
	pl->method = SHARDPIPE_METHOD_MEAN;
	pl->append_method = -1;
	*max_levels = 0;
	*ngff = 0;
	if (!SHARDPIPE_HAS_FIELD(desc, scale))
		return;
	pl->downsample = desc->downsample;
	pl->method = (int)desc->method;
	pl->append_method = desc->append_method;
	*max_levels = desc->max_levels;
	*ngff = desc->ngff != 0;
	if (SHARDPIPE_HAS_FIELD(desc, max_levels_dim))
		memcpy(pl->stop, desc->max_levels_dim, sizeof(pl->stop));
}

/* Whether plan dim d of level L, of these sizes, halves into level
 * L + 1 (its flag and stop are its storage dim's). */
static int halves(const struct plan_levels *pl, const uint64_t *size, int d,
		  int L)
{
	const int s = pl->sdim[d];

	return (pl->downsample >> s & 1) != 0 && (size[d] == 0 || size[d] > 1) &&
	       (pl->stop[s] == 0 || L + 1 < pl->stop[s]);
}

/* Any dim of level L still halving and larger than its chunk. */
static int level_exceeds_chunk(const struct plan_levels *pl,
			       const struct plan *p0, const uint64_t *size,
			       int L)
{
	for (int d = 0; d < p0->rank; d++)
		if (halves(pl, size, d, L) && size[d] > p0->chunk[d])
			return 1;
	return 0;
}

/* The levels dim d can halve through before it is 1: without end
 * (SHARDPIPE_MAX_LEVELS) for an unbounded dim 0. */
static int own_levels(const struct plan *p0, int d)
{
	int h = 0;

	if (p0->size[d] == 0)
		return SHARDPIPE_MAX_LEVELS;
	while (h < 64 && ((uint64_t)1 << h) < p0->size[d])
		h++;
	return h + 1;
}

/* The same, ended by its stop (plan dim d). */
static int dim_levels(const struct plan_levels *pl, const struct plan *p0,
		      int d)
{
	int own = own_levels(p0, d), stop = pl->stop[pl->sdim[d]];

	return stop != 0 && stop < own ? stop : own;
}

/* Levels until no flagged dim halves any more (0 when none is flagged). */
static int levels_possible(const struct plan_levels *pl, const struct plan *p0)
{
	int most = 0;

	for (int d = 0; d < p0->rank; d++)
		if ((pl->downsample >> pl->sdim[d] & 1) != 0 &&
		    dim_levels(pl, p0, d) > most)
			most = dim_levels(pl, p0, d);
	return most;
}

/* Each stop on a downsampled dim, 2 or more and within what the dim can
 * halve (doc/design.md §28.1); the pyramid's own count is checked after
 * it is known. */
static int check_stops(const struct plan_levels *pl, const struct plan *p0,
		       const shardpipe_desc *desc, struct sp_err *err)
{
	char label[96];

	for (int d = 0; d < SHARDPIPE_MAX_RANK; d++) {
		int s = pl->stop[d], own;

		if (s == 0)
			continue;
		SP_RETURN_IF(d >= p0->rank, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "max_levels_dim: dim %d is beyond rank %d", d,
			     p0->rank);
		dim_label(label, sizeof(label), desc, d);
		SP_RETURN_IF(s < 0 || s == 1, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "max_levels_dim: %s: %d is not a count of levels "
			     "to halve through (2 or more; 0 for no stop%s)",
			     label, s, s == 1 ? ", and a dim that never halves "
			     "is left out of downsample" : "");
		SP_RETURN_IF((pl->downsample >> d & 1) == 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "max_levels_dim: %s: %d, but downsample does not "
			     "halve it", label, s);
		own = own_levels(p0, plan_dim_of(p0, d));
		SP_RETURN_IF(s > own, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "max_levels_dim: %s: %d levels, but it is 1 "
			     "element at level %d, so at most %d", label, s,
			     own - 1, own);
	}
	return SHARDPIPE_OK;
}

static int check_pyramid(const struct plan_levels *pl, const struct plan *p0,
			 const shardpipe_desc *desc, int max_levels,
			 struct sp_err *err)
{
	char label[96];

	SP_RETURN_IF((uint64_t)pl->downsample >> p0->rank != 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "downsample 0x%x flags a dim beyond rank %d",
		     (unsigned)pl->downsample, p0->rank);
	SP_RETURN_IF(pl->method < 0 || pl->method >= SHARDPIPE_METHOD_COUNT_,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "method %d is not one of mean, min, max, median, decimate, "
		     "second_max, second_min (0..6)", pl->method);
	SP_RETURN_IF(pl->append_method < -1 ||
		     pl->append_method >= SHARDPIPE_METHOD_COUNT_, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "append_method %d is not -1 (the method) or one of mean, "
		     "min, max, median, decimate, second_max, second_min (0..6)",
		     pl->append_method);
	SP_RETURN_IF(pl->append_method >= 0 &&
			     (pl->downsample >> p0->sdim[0] & 1) == 0,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "append_method %s: it reduces along dim %d, the append "
		     "dim, which downsample does not halve",
		     ome_method_name(pl->append_method), p0->sdim[0]);
	SP_RETURN_IF(max_levels < 0 || max_levels > SHARDPIPE_MAX_LEVELS, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "max_levels %d is outside 0..%d", max_levels,
		     SHARDPIPE_MAX_LEVELS);
	SP_RETURN_IF(max_levels > 1 && pl->downsample == 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "max_levels %d, but downsample halves no dim", max_levels);
	for (int d = 0; d < p0->rank; d++) {
		double sc = SHARDPIPE_HAS_FIELD(desc, scale) ? desc->scale[d]
							     : 0;

		dim_label(label, sizeof(label), desc, d);
		SP_RETURN_IF((pl->downsample >> d & 1) != 0 &&
			     p0->size[plan_dim_of(p0, d)] == 1, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "downsample: %s has size 1 and cannot halve",
			     label);
		SP_RETURN_IF(!(sc == 0 || (sc > 0 && sc <= 1.7e308)), err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "scale: %s: %g is not a positive finite number",
			     label, sc);
	}
	return SHARDPIPE_OK;
}

/* How many levels: max_levels, checked against what the dims allow, or
 * until every flagged dim fits one chunk. */
static int count_levels(struct plan_levels *pl, const struct plan *p0,
			int max_levels, struct sp_err *err)
{
	int possible = levels_possible(pl, p0);
	uint64_t size[SHARDPIPE_MAX_RANK];

	if (pl->downsample == 0) {
		pl->n = 1;
		return SHARDPIPE_OK;
	}
	if (max_levels > 0) {
		SP_RETURN_IF(max_levels > possible, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "max_levels %d: no downsampled dim halves past "
			     "level %d (each is 1 element or at its stop), so "
			     "at most %d levels", max_levels, possible - 1,
			     possible);
		pl->n = max_levels;
		return SHARDPIPE_OK;
	}
	SP_RETURN_IF(pl->downsample == 1u << p0->sdim[0] && p0->size[0] == 0,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "downsample halves only dim %d, which is unbounded: give "
		     "max_levels", p0->sdim[0]);
	memcpy(size, p0->size, sizeof(size));
	pl->n = 1;
	while (pl->n < SHARDPIPE_MAX_LEVELS &&
	       level_exceeds_chunk(pl, p0, size, pl->n - 1)) {
		for (int d = 0; d < p0->rank; d++)
			if (halves(pl, size, d, pl->n - 1))
				size[d] = sp_ceil_div(size[d], 2);
		pl->n++;
	}
	return SHARDPIPE_OK;
}

/* A stop past the pyramid's levels would never be reached. */
static int check_stops_reached(const struct plan_levels *pl,
			       const struct plan *p0,
			       const shardpipe_desc *desc, int max_levels,
			       struct sp_err *err)
{
	char label[96];

	for (int d = 0; d < p0->rank; d++) {
		dim_label(label, sizeof(label), desc, d);
		SP_RETURN_IF(pl->stop[d] > pl->n, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "max_levels_dim: %s: %d levels, beyond the "
			     "pyramid's %d (%s)", label, pl->stop[d], pl->n,
			     max_levels > 0 ? "max_levels" :
			     "the default: until every dim still halving fits "
			     "in one chunk; give max_levels for more");
	}
	return SHARDPIPE_OK;
}

/* Level q's plan, one above prev: its shape halved, chunks and shards of
 * level 0 clamped to it, level 0's batch. */
static int level_plan(const struct plan_levels *pl, struct plan *q,
		      const struct plan *prev, const struct plan *p0,
		      struct sp_err *err)
{
	*q = *prev;
	q->perm = NULL;
	q->pos_slot = NULL;
	q->shard_first = NULL;
	q->scale_level = prev->scale_level + 1;
	memset(q->reduce_geo, 0, sizeof(q->reduce_geo));
	memset(q->chunk_count, 0, sizeof(q->chunk_count));
	memset(q->shard_count, 0, sizeof(q->shard_count));
	/* A level's rows are the reduction's output, row-major in plan
	 * order (the append dim first) whatever order level 0's input
	 * came in; the level keeps level 0's sdim, so that a moved append
	 * dim is stored as level 0 stores it (design §3.3). */
	for (int d = 0; d < q->rank; d++)
		q->order[d] = d;
	q->permuted = 0;
	for (int d = 0; d < q->rank; d++) {
		uint64_t count;

		if (halves(pl, prev->size, d, prev->scale_level) &&
		    prev->size[d] != 0)
			q->size[d] = sp_ceil_div(prev->size[d], 2);
		q->chunk[d] = p0->chunk[d];
		q->cps[d] = p0->cps[d];
		if (q->size[d] == 0)
			continue;
		if (q->chunk[d] > q->size[d])
			q->chunk[d] = q->size[d];
		count = sp_ceil_div(q->size[d], q->chunk[d]);
		if (q->cps[d] > count)
			q->cps[d] = count;
	}
	SP_FORWARD(compute_sizes(q, err));
	plan_set_epochs(q, p0->K);
	SP_FORWARD(check_batch(q, err));
	compute_strides(q);
	return compute_permutation(q, err);
}

static uint64_t kind_of(shardpipe_dtype t)
{
	switch (t) {
	case SHARDPIPE_DTYPE_INT8:
	case SHARDPIPE_DTYPE_INT16:
	case SHARDPIPE_DTYPE_INT32:
	case SHARDPIPE_DTYPE_INT64:
		return SP_RD_SINT;
	case SHARDPIPE_DTYPE_FLOAT16:
	case SHARDPIPE_DTYPE_FLOAT32:
	case SHARDPIPE_DTYPE_FLOAT64:
		return SP_RD_FLOAT;
	default:
		return SP_RD_UINT;
	}
}

/* The table by which p's rows reduce into those of next (reduce.h);
 * decide's sizes say which dims halve: p's own, or for a region writer's
 * box the whole array's level (a box's edge dim of 1 element still halves
 * where the array's does, its block replicating the element, §30.5). */
static void reduce_table(const struct plan_levels *pl, struct plan *p,
			 const struct plan *next, const struct plan *decide)
{
	uint64_t *g = p->reduce_geo, fill = 0;
	int f0 = halves(pl, decide->size, 0, p->scale_level) ? 2 : 1;

	memset(p->reduce_geo, 0, sizeof(p->reduce_geo));
	for (unsigned i = 0; i < p->esize; i++)
		fill |= (uint64_t)p->fill_le[i] << (8 * i);
	g[SP_RGEO_RANK] = (uint64_t)p->rank;
	g[SP_RGEO_ESIZE] = p->esize;
	g[SP_RGEO_KIND] = kind_of(p->dtype);
	g[SP_RGEO_METHOD] = (uint64_t)pl->method;
	g[SP_RGEO_APPEND] = (uint64_t)(f0 == 2 && pl->append_method >= 0 ?
					       pl->append_method : pl->method);
	g[SP_RGEO_F0] = (uint64_t)f0;
	g[SP_RGEO_IN_ROW] = p->row_bytes / p->esize;
	g[SP_RGEO_OUT_ROW] = next->row_bytes / next->esize;
	g[SP_RGEO_FILL] = fill;
	g[SP_RGEO_PER_ITEM] = 1;
	for (int d = 1; d < p->rank; d++) {
		int f = halves(pl, decide->size, d, p->scale_level) ? 2 : 1;

		g[SP_RGEO_OUT_SIZE(d)] = next->size[d];
		g[SP_RGEO_IN_SIZE(d)] = p->size[d];
		g[SP_RGEO_IN_STRIDE(d)] = p->in_stride[d];
		g[SP_RGEO_FACTOR(d)] = (uint64_t)f;
		g[SP_RGEO_KS] += f == 2;
	}
}

/*
 * Each level's scale and translation per dim (OME-NGFF 0.5, "multiscales"
 * datasets): an element of a level whose dim halved h times covers 2^h
 * elements of level 0, so its size is 2^h times theirs, and it stands at
 * their centre, (2^h - 1) / 2 of them in; a decimated dim keeps the first
 * element's place.
 */
static void transformations(struct plan_levels *pl, const struct plan *p0,
			    const shardpipe_desc *desc)
{
	for (int d = 0; d < p0->rank; d++) {
		double s0 = SHARDPIPE_HAS_FIELD(desc, scale) &&
					    desc->scale[d] > 0 ?
				    desc->scale[d] : 1.0;
		const int w = plan_dim_of(p0, d);
		int m = w == 0 && pl->append_method >= 0 ? pl->append_method
							: pl->method;
		double f = 1;

		for (int L = 0; L < pl->n; L++) {
			const struct plan *p = L == 0 ? p0 : &pl->level[L];

			pl->scale[L][d] = s0 * f;
			pl->translation[L][d] =
				m == SHARDPIPE_METHOD_DECIMATE ? 0
							       : s0 * (f - 1) / 2;
			if (L + 1 < pl->n && halves(pl, p->size, w, L))
				f *= 2;
		}
	}
}

uint64_t plan_reduce_rows(const struct plan *p, uint64_t carried,
			  uint64_t nrows, int tail)
{
	uint64_t v = carried + nrows;

	if (p->reduce_geo[SP_RGEO_F0] != 2)
		return v;
	return v / 2 + (v % 2 != 0 && tail != SP_RD_TAIL_NONE);
}

int plan_levels_init(struct plan_levels *pl, struct plan *p0,
		     const shardpipe_desc *desc, struct sp_err *err)
{
	int max_levels, ngff, rc = SHARDPIPE_OK;

	memset(pl, 0, sizeof(*pl));
	p0->scale_level = 0;
	memset(p0->reduce_geo, 0, sizeof(p0->reduce_geo));
	pyramid_fields(desc, p0, pl, &max_levels, &ngff);
	pl->n = 1;
	pl->group = ngff || pl->downsample != 0;
	SP_FORWARD(check_pyramid(pl, p0, desc, max_levels, err));
	SP_FORWARD(check_stops(pl, p0, desc, err));
	SP_FORWARD(count_levels(pl, p0, max_levels, err));
	SP_FORWARD(check_stops_reached(pl, p0, desc, max_levels, err));
	for (int L = 1; L < pl->n && rc == SHARDPIPE_OK; L++) {
		struct plan *prev = L == 1 ? p0 : &pl->level[L - 1];

		rc = level_plan(pl, &pl->level[L], prev, p0, err);
		if (rc == SHARDPIPE_OK)
			reduce_table(pl, prev, &pl->level[L], prev);
	}
	if (rc != SHARDPIPE_OK) {
		plan_levels_free(pl);
		return rc;
	}
	transformations(pl, p0, desc);
	return SHARDPIPE_OK;
}

void plan_levels_free(struct plan_levels *pl)
{
	for (int L = 1; L < SHARDPIPE_MAX_LEVELS; L++)
		plan_free(&pl->level[L]);
	pl->n = 1;
}

int plan_levels_shift(const struct plan_levels *pl, const struct plan *p0,
		      int L, int d)
{
	int h = 0;

	for (int k = 0; k < L && k + 1 < pl->n; k++) {
		const uint64_t *g = (k == 0 ? p0 : &pl->level[k])->reduce_geo;

		h += d == 0 ? g[SP_RGEO_F0] == 2 : g[SP_RGEO_FACTOR(d)] == 2;
	}
	return h;
}

/*
 * A region writer's levels (doc/design.md §30.5): the whole array's
 * levels cut to the box lo..hi of level 0, which is aligned to every
 * level's shard (region.c).  Nothing is planned again from the box: its
 * level count, chunk and shard shapes and halving dims are the whole
 * array's, so that its shards are the array's; only the sizes are the
 * box's, and origin[L] its first element at level L.
 */
int plan_levels_box(struct plan_levels *pl, struct plan *p0,
		    const struct plan_levels *whole, const struct plan *w0,
		    const uint64_t *lo, const uint64_t *hi, struct sp_err *err)
{
	int rc = SHARDPIPE_OK;

	*pl = *whole;
	memset(pl->level, 0, sizeof(pl->level));
	p0->scale_level = 0;
	memset(p0->reduce_geo, 0, sizeof(p0->reduce_geo));
	for (int L = 1; L < pl->n && rc == SHARDPIPE_OK; L++) {
		struct plan *q = &pl->level[L];
		struct plan *prev = L == 1 ? p0 : &pl->level[L - 1];
		const struct plan *wq = &whole->level[L];

		*q = *prev;
		q->perm = NULL;
		q->pos_slot = NULL;
		q->shard_first = NULL;
		q->scale_level = L;
		memset(q->reduce_geo, 0, sizeof(q->reduce_geo));
		memset(q->chunk_count, 0, sizeof(q->chunk_count));
		memset(q->shard_count, 0, sizeof(q->shard_count));
		for (int d = 0; d < q->rank; d++) {
			int h = plan_levels_shift(whole, w0, L, d);
			uint64_t top = hi[d] == w0->size[d] ? wq->size[d]
							    : hi[d] >> h;

			pl->origin[L][d] = lo[d] >> h;
			q->chunk[d] = wq->chunk[d];
			q->cps[d] = wq->cps[d];
			q->size[d] = wq->size[d] == 0 ? 0
						      : top - pl->origin[L][d];
		}
		rc = compute_sizes(q, err);
		if (rc == SHARDPIPE_OK) {
			plan_set_epochs(q, p0->K);
			rc = check_batch(q, err);
		}
		if (rc == SHARDPIPE_OK) {
			compute_strides(q);
			rc = compute_permutation(q, err);
		}
		if (rc == SHARDPIPE_OK)
			reduce_table(pl, prev, q,
				     L == 1 ? w0 : &whole->level[L - 1]);
	}
	if (rc != SHARDPIPE_OK)
		plan_levels_free(pl);
	return rc;
}
