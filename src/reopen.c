/*
 * reopen.c - continuing an array a store holds (doc/design.md §29).
 *
 * The library's reader parses and checks the store's zarr.json; this file
 * keeps only what a writer needs beyond that: that the layout is one
 * shardpipe writes (one sharding_indexed codec, bytes and at most one
 * compressor inside, a CRC32C after the index, "/" chunk keys), the
 * compressor's settings, and the user attributes as written.
 */
#include "reopen.h"

#include <math.h>
#include <stdlib.h>

#include "codec.h"
#include "json.h"
#include "reader_impl.h"
#include "store_fs.h"
#include "zarr_node.h"

/* The one compressor of the shard's inner chain and its settings into
 * d (the reader has checked their types and ranges). */
static int load_codec(const struct reopen *ro, const char *path,
		      shardpipe_desc *d, struct sp_err *err)
{
	const struct json_value *root = json_root(ro->r->meta), *c;
	const struct json_value *conf;

	c = json_get(json_get(json_at(json_get(root, "codecs"), 0),
			      "configuration"), "codecs");
	d->codec = SHARDPIPE_CODEC_NONE;
	/* The first entry is "bytes" (the reader's check). */
	for (c = c != NULL ? c->child : NULL; c != NULL; c = c->next) {
		const struct json_value *name = json_get(c, "name"), *v;

		conf = json_get(c, "configuration");
		if (json_is_str(name, "bytes"))
			continue;
		if (json_is_str(name, "zstd")) {
			d->codec = SHARDPIPE_CODEC_ZSTD;
			v = json_get(conf, "level");
			d->level = v != NULL ? (int)v->i : 0;
			/* 0, numcodecs' default and zarr-python's, is
			 * libzstd's default level (reopen_merge). */
			SP_RETURN_IF(d->level < 0 || d->level > 22, err,
				     SHARDPIPE_ERR_UNSUPPORTED,
				     "%s: its zstd level %d is not one "
				     "shardpipe writes (0..22); nothing was "
				     "touched", path, d->level);
			v = json_get(conf, "checksum");
			d->zstd_checksum = v != NULL && v->type == JSON_TRUE;
		} else if (json_is_str(name, "gzip")) {
			d->codec = SHARDPIPE_CODEC_GZIP;
			v = json_get(conf, "level");
			d->level = v != NULL ? (int)v->i : 0;
		} else if (json_is_str(name, "blosc")) {
			int k;

			d->codec = SHARDPIPE_CODEC_BLOSC;
			d->level = (int)json_get(conf, "clevel")->i;
			for (k = 0; k < SHARDPIPE_BLOSC_CNAME_COUNT_; k++)
				if (json_is_str(json_get(conf, "cname"),
						codec_blosc_cname(k)))
					break;
			SP_RETURN_IF(k == SHARDPIPE_BLOSC_CNAME_COUNT_, err,
				     SHARDPIPE_ERR_UNSUPPORTED,
				     "%s: its blosc compressor \"%s\" is one "
				     "shardpipe does not write; nothing was "
				     "touched", path,
				     json_get(conf, "cname")->str);
			d->blosc_cname = (shardpipe_blosc_cname)k;
			for (k = 0; k < SHARDPIPE_BLOSC_SHUFFLE_COUNT_; k++)
				if (json_is_str(json_get(conf, "shuffle"),
						codec_blosc_shuffle(k)))
					break;
			d->blosc_shuffle = (shardpipe_blosc_shuffle)k;
			v = json_get(conf, "typesize");
			SP_RETURN_IF(v != NULL && v->u != ro->r->esize, err,
				     SHARDPIPE_ERR_UNSUPPORTED,
				     "%s: its blosc typesize %llu is not the "
				     "element size %zu, which shardpipe's "
				     "shuffle uses; nothing was touched", path,
				     (unsigned long long)v->u, ro->r->esize);
			v = json_get(conf, "blocksize");
			SP_RETURN_IF(v != NULL && v->u > UINT32_MAX, err,
				     SHARDPIPE_ERR_UNSUPPORTED,
				     "%s: its blosc blocksize %llu is beyond "
				     "what shardpipe writes; nothing was "
				     "touched", path, (unsigned long long)v->u);
			d->blosc_blocksize = v != NULL ? (uint32_t)v->u : 0;
		}
	}
	return SHARDPIPE_OK;
}

/* Refuse a layout the reader reads but shardpipe does not write: the
 * rewritten shards would differ in kind from the ones kept. */
static int check_layout(const struct shardpipe_reader *r, const char *path,
			struct sp_err *err)
{
	const struct json_value *root = json_root(r->meta), *st;
	const char *why = NULL;

	st = json_get(root, "storage_transformers");
	if (!r->sharded)
		why = "its chunks are not sharded (no sharding_indexed codec)";
	else if (r->key_v2 || r->sep != '/')
		why = "its chunk keys are not the default encoding with \"/\"";
	else if (!r->index_crc || r->index_big)
		why = "its shard index is not little-endian followed by a "
		      "CRC32C";
	else if (r->chain.big_endian && r->esize > 1)
		why = "its chunks are big-endian";
	else if (r->chain.n > 1 ||
		 (r->chain.n == 1 && r->chain.kind[0] == B2B_CRC32C))
		why = "its chunks go through more than bytes and one "
		      "compressor";
	else if (st != NULL && st->type == JSON_ARRAY && st->len > 0)
		why = "it has storage transformers";
	SP_RETURN_IF(why != NULL, err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: cannot be continued: %s, which shardpipe does not "
		     "write; nothing was touched", path, why);
	return SHARDPIPE_OK;
}

/* The directory path is in: a level of an image is not continued alone
 * (its levels above would no longer be its reductions). */
static int check_parent(const char *path, struct sp_err *err)
{
	char *up = store_fs_parent(path);
	enum zarr_node node = ZARR_NODE_NONE;
	struct sp_err ignored;
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(up == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (zarr_node_of(up, &node, &ignored) == SHARDPIPE_OK &&
	    node == ZARR_NODE_IMAGE)
		rc = sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
				"%s: is a level of the OME-NGFF image %s, "
				"whose levels are written together: continue "
				"the image at %s instead; nothing was touched",
				path, up, up);
	free(up);
	return rc;
}

/* Whether the store the reader failed to open has no zarr.json at all:
 * on S3, where no directory says so first (zarr_node_of). */
static int meta_missing(struct shardpipe_reader *r)
{
	struct source_obj *o = NULL;
	struct sp_err ignored;
	uint64_t size;

	if (r->src == NULL ||
	    r->src->ops->open(r->src, "zarr.json", &o, &size, &ignored) !=
		    SHARDPIPE_OK)
		return 0;
	r->src->ops->close(r->src, o);
	return o == NULL;
}

/* The storage dim `order` stores the append dim as, when it is a
 * permutation of 0..rank-1 (none, the identity: 0). */
static int stored_append_dim(const shardpipe_desc *d, int rank)
{
	int seen[SHARDPIPE_MAX_RANK] = { 0 }, a = 0;

	if (d == NULL || !DESC_HAS(d, storage_order))
		return 0;
	for (int i = rank; i < SHARDPIPE_MAX_RANK; i++)
		if (d->storage_order[i] != 0)
			return 0;
	for (int i = 0; i < rank; i++) {
		int o = d->storage_order[i];

		if (o < 0 || o >= rank || seen[o])
			return 0;
		seen[o] = 1;
		if (o == 0)
			a = i;
	}
	return a;
}

int reopen_load(struct reopen *ro, const char *path, int lock, int durable,
		const shardpipe_desc *given, struct sp_err *err)
{
	enum zarr_node node = ZARR_NODE_ARRAY;
	struct shardpipe_reader *r;

	/* S3 stores hold one array and no image (§24): the reader says what
	 * there is to say of what the prefix holds. */
	if (!store_is_s3(path)) {
		SP_FORWARD(zarr_node_of(path, &node, err));
		SP_RETURN_IF(node == ZARR_NODE_NONE, err, SHARDPIPE_ERR_PATH,
			     "%s: holds no store (no zarr.json) to continue",
			     path);
		SP_RETURN_IF(node == ZARR_NODE_GROUP, err, SHARDPIPE_ERR_PATH,
			     "%s: is a Zarr group; continue one of its arrays "
			     "at %s/NAME", path, path);
		SP_FORWARD(check_parent(path, err));
	}
	/* The lock before the read: no other writer moves the rows read.
	 * (S3 has none, §29.)  An image's is its group's directory. */
	if (lock)
		SP_FORWARD(store_reopen(&ro->store, path, durable, err));
	ro->levels = 1;
	if (!store_is_s3(path) && node == ZARR_NODE_IMAGE)
		return reopen_load_image(ro, path, given, err);
	r = reader_alloc();
	SP_RETURN_IF(r == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	ro->r = r;
	r->keep_meta = 1;
	r->path = strdup(path);
	SP_RETURN_IF(r->path == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	if (reader_open_store(r) != SHARDPIPE_OK) {
		if (store_is_s3(path) && meta_missing(r))
			return sp_err_set(err, SHARDPIPE_ERR_PATH,
					  "%s: holds no store (no zarr.json) "
					  "to continue", path);
		*err = r->err;
		return err->code;
	}
	SP_FORWARD(reopen_array_fields(ro, path, given, err));
	ro->level_rows[0] = ro->rows;
	ro->level_sr[0] = r->chunk[ro->append_dim] * r->cps[ro->append_dim];
	return SHARDPIPE_OK;
}

int reopen_array_fields(struct reopen *ro, const char *path,
			const shardpipe_desc *given, struct sp_err *err)
{
	const struct shardpipe_reader *r = ro->r;
	shardpipe_desc *d = &ro->desc;
	const int a = stored_append_dim(given, r->rank);

	SP_FORWARD(check_layout(r, path, err));
	shardpipe_desc_init(d);
	d->rank = r->rank;
	ro->append_dim = a;
	for (int k = 0; k < r->rank; k++) {
		d->dims[k].size = k == a ? 0 : r->shape[k];
		d->dims[k].chunk = r->chunk[k];
		d->dims[k].chunks_per_shard = r->cps[k];
		memcpy(ro->names[k], r->names[k], sizeof(ro->names[k]));
		d->dims[k].name = ro->names[k];
	}
	d->dtype = r->dtype;
	d->index_location = r->index_start ? SHARDPIPE_INDEX_START
					   : SHARDPIPE_INDEX_END;
	memcpy(d->fill_value, r->fill, sizeof(d->fill_value));
	ro->rows = r->shape[a];
	return load_codec(ro, path, d, err);
}

uint64_t reopen_base(const struct reopen *ro)
{
	uint64_t lcm = 1, low = UINT64_MAX;

	for (int L = 0; L < ro->levels; L++) {
		/* Level L's shard row, in level 0's rows. */
		uint64_t period = ro->level_sr[L] << ro->level_shift[L];
		uint64_t a = lcm, b = period, t, rows;

		while (b != 0) {
			t = a % b;
			a = b;
			b = t;
		}
		if (!sp_mul_ok(lcm / a, period, &lcm))
			return 0;
		rows = ro->level_rows[L] << ro->level_shift[L];
		if (ro->level_rows[L] > UINT64_MAX >> ro->level_shift[L])
			rows = UINT64_MAX;
		if (rows < low)
			low = rows;
	}
	if (ro->rows < low)
		low = ro->rows;
	return low / lcm * lcm;
}

void reopen_free(struct reopen *ro)
{
	shardpipe_reader_close(ro->r);
	ro->r = NULL;
	for (int i = 0; i < ro->n_fields; i++) {
		shardpipe_reader_close(ro->fr[i]);
		ro->fr[i] = NULL;
	}
	if (ro->group != NULL)
		json_free(ro->group);
	ro->group = NULL;
	free(ro->group_text);
	ro->group_text = NULL;
	store_free(ro->store);
	ro->store = NULL;
}

/* ------------------------------------------------------------- the check */

/* A field's two values, for the message. */
struct field {
	char name[40];
	char store[96], given[96];
};

static int differs_u64(struct field *f, const char *name, uint64_t st,
		       uint64_t gv)
{
	if (st == gv)
		return 0;
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->store, sizeof(f->store), "%llu", (unsigned long long)st);
	snprintf(f->given, sizeof(f->given), "%llu", (unsigned long long)gv);
	return 1;
}

static int differs_str(struct field *f, const char *name, const char *st,
		       const char *gv)
{
	if (strcmp(st, gv) == 0)
		return 0;
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->store, sizeof(f->store), "\"%s\"", st);
	snprintf(f->given, sizeof(f->given), "\"%s\"", gv);
	return 1;
}

/* Stops given with a pyramid are the store's, dim by dim; none given
 * takes the store's. */
static int stops_differ(struct field *f, const shardpipe_desc *st,
			const shardpipe_desc *g)
{
	int any = 0;

	for (int d = 0; d < SHARDPIPE_MAX_RANK; d++)
		any |= g->max_levels_dim[d] != 0;
	for (int d = 0; any && d < st->rank; d++)
		if (st->max_levels_dim[d] != g->max_levels_dim[d]) {
			char name[40];

			snprintf(name, sizeof(name), "max_levels_dim[%d]", d);
			return differs_u64(f, name,
					   (uint64_t)st->max_levels_dim[d],
					   (uint64_t)g->max_levels_dim[d]);
		}
	return 0;
}

static const char *name_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

/* The fill value's bytes, in hex, for the message. */
static void fill_hex(char *out, size_t n, const unsigned char *v, size_t es)
{
	size_t o = (size_t)snprintf(out, n, "0x");

	for (size_t k = es; k-- > 0 && o + 3 < n;)
		o += (size_t)snprintf(out + o, n - o, "%02x", v[k]);
}

/* The first array field of g that differs from the store's st, or 0. */
static int first_difference(const shardpipe_desc *st, const shardpipe_desc *g,
			    int a, struct field *f)
{
	char dims[4][40];
	const size_t es = shardpipe_dtype_size(st->dtype);

	if (differs_u64(f, "rank", (uint64_t)st->rank, (uint64_t)g->rank))
		return 1;
	for (int d = 0; d < st->rank; d++) {
		snprintf(dims[0], sizeof(dims[0]), "dim %d size", d);
		snprintf(dims[1], sizeof(dims[1]), "dim %d chunk", d);
		snprintf(dims[2], sizeof(dims[2]), "dim %d chunks per shard",
			 d);
		snprintf(dims[3], sizeof(dims[3]), "dim %d name", d);
		if ((d != a && differs_u64(f, dims[0], st->dims[d].size,
					   g->dims[d].size)) ||
		    differs_u64(f, dims[1], st->dims[d].chunk,
				g->dims[d].chunk) ||
		    differs_u64(f, dims[2], st->dims[d].chunks_per_shard,
				g->dims[d].chunks_per_shard) ||
		    differs_str(f, dims[3], name_or_empty(st->dims[d].name),
				name_or_empty(g->dims[d].name)))
			return 1;
	}
	if ((unsigned)g->dtype >= SHARDPIPE_DTYPE_COUNT_)
		return differs_u64(f, "dtype", st->dtype, g->dtype);
	if (differs_str(f, "dtype", shardpipe_dtype_name(st->dtype),
			shardpipe_dtype_name(g->dtype)))
		return 1;
	if (g->codec != st->codec) {
		snprintf(f->name, sizeof(f->name), "codec");
		snprintf(f->store, sizeof(f->store), "%s",
			 shardpipe_codec_name(st->codec));
		snprintf(f->given, sizeof(f->given), "%s",
			 (unsigned)g->codec < SHARDPIPE_CODEC_COUNT_
				 ? shardpipe_codec_name(g->codec)
				 : "(unknown)");
		return 1;
	}
	if (st->codec != SHARDPIPE_CODEC_NONE &&
	    differs_u64(f, "codec level", (uint64_t)st->level,
			(uint64_t)g->level))
		return 1;
	if (st->codec == SHARDPIPE_CODEC_ZSTD &&
	    differs_u64(f, "zstd checksum", (uint64_t)st->zstd_checksum,
			(uint64_t)(g->zstd_checksum != 0)))
		return 1;
	if (st->codec == SHARDPIPE_CODEC_BLOSC &&
	    (differs_u64(f, "blosc cname", st->blosc_cname, g->blosc_cname) ||
	     differs_u64(f, "blosc shuffle", st->blosc_shuffle,
			 g->blosc_shuffle) ||
	     differs_u64(f, "blosc blocksize", st->blosc_blocksize,
			 g->blosc_blocksize)))
		return 1;
	if (differs_str(f, "index location",
			st->index_location == SHARDPIPE_INDEX_START ? "start"
								    : "end",
			g->index_location == SHARDPIPE_INDEX_START ? "start"
								   : "end"))
		return 1;
	if (memcmp(st->fill_value, g->fill_value, es) != 0) {
		snprintf(f->name, sizeof(f->name), "fill value");
		fill_hex(f->store, sizeof(f->store), st->fill_value, es);
		fill_hex(f->given, sizeof(f->given), g->fill_value, es);
		return 1;
	}
	return 0;
}

/* Frame fields given (none: the store's) must be the store's, in its
 * order, which is the order of each frame's values (§28.9). */
static int fields_differ(const struct reopen *ro, const char *path,
			 const shardpipe_desc *g, struct sp_err *err)
{
	const size_t ns = ro->desc.n_frame_fields;
	const size_t ng = DESC_HAS(g, n_frame_fields) ? g->n_frame_fields : 0;

	if (ng == 0)
		return SHARDPIPE_OK;
	SP_RETURN_IF(g->frame_fields == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: n_frame_fields %zu "
		     "with frame_fields NULL", path, ng);
	for (size_t i = 0; i < ns || i < ng; i++) {
		const shardpipe_frame_field *s = i < ns ? &ro->fields[i] : NULL;
		const shardpipe_frame_field *f = i < ng ? &g->frame_fields[i]
						       : NULL;
		const char *gn = f != NULL && f->name != NULL ? f->name : "";

		SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "%s: frame field %zu \"%s\": the store has %zu "
			     "field(s), and not this one; nothing was touched",
			     path, i, gn, ns);
		SP_RETURN_IF(f == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "%s: frame field %zu \"%s\": the store has it, "
			     "the description does not (it names %zu); "
			     "nothing was touched", path, i, s->name, ng);
		SP_RETURN_IF(strcmp(s->name, gn) != 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame field "
			     "%zu: the store has \"%s\", the description "
			     "\"%s\"; nothing was touched", path, i, s->name,
			     gn);
		SP_RETURN_IF(s->dtype != f->dtype, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame field "
			     "\"%s\": the store has dtype %s, the "
			     "description %s; nothing was touched", path,
			     s->name, shardpipe_dtype_name(s->dtype),
			     (unsigned)f->dtype < SHARDPIPE_DTYPE_COUNT_
				     ? shardpipe_dtype_name(f->dtype)
				     : "(unknown)");
	}
	return SHARDPIPE_OK;
}

int reopen_merge(const struct reopen *ro, const char *path,
		 const shardpipe_desc *given, shardpipe_desc *out,
		 struct sp_err *err)
{
	const shardpipe_desc *st = &ro->desc;
	const int a = ro->append_dim;
	shardpipe_desc g;
	struct field f = { 0 };

	shardpipe_desc_init(&g);
	if (given != NULL) {
		SP_RETURN_IF(given->struct_size < offsetof(shardpipe_desc, rank) +
						      sizeof(given->rank),
			     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "description not initialised with "
			     "shardpipe_desc_init() (struct_size %zu)",
			     given->struct_size);
		memcpy(&g, given, given->struct_size < sizeof(g)
					  ? given->struct_size : sizeof(g));
		g.struct_size = sizeof(g);
	}
	SP_RETURN_IF(g.overwrite, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s: overwrite replaces a store, reopen continues it: "
		     "ask for one of them", path);
	SP_RETURN_IF(ro->group == NULL && (g.downsample != 0 || g.ngff), err,
		     SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: holds one array, which cannot be continued as a "
		     "pyramid (downsample, ngff); nothing was touched", path);
	/* A bound stops dim 0's halving early (§28.1): the levels' rows
	 * would no longer be those of the store's levels. */
	SP_RETURN_IF(ro->group != NULL && (st->downsample >> a & 1u) &&
			     g.rank != 0 && g.dims[a].size != 0,
		     err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: an image whose append dim (dim %d) halves is "
		     "continued unbounded only (a bound of %llu given); "
		     "nothing was touched", path, a,
		     (unsigned long long)g.dims[a].size);
	/* An image's pyramid as given, when given, must be the store's. */
	if (ro->group != NULL && g.downsample != 0) {
		struct field pf = { 0 };

		if (differs_u64(&pf, "downsample", st->downsample,
				g.downsample) ||
		    differs_u64(&pf, "method", (uint64_t)st->method,
				(uint64_t)g.method) ||
		    differs_u64(&pf, "append_method",
				(uint64_t)(int64_t)st->append_method,
				(uint64_t)(int64_t)(g.append_method == (int)g.method
							    ? -1
							    : g.append_method)) ||
		    (g.max_levels != 0 &&
		     differs_u64(&pf, "levels", (uint64_t)st->max_levels,
				 (uint64_t)g.max_levels)) ||
		    stops_differ(&pf, st, &g))
			return sp_err_set(err, SHARDPIPE_ERR_INVALID_ARGUMENT,
					  "%s: %s: the store has %s, the "
					  "description %s; nothing was touched",
					  path, pf.name, pf.store, pf.given);
	}
	/* Rows, bounds and shard rows run along storage dim a, the append
	 * dim's (reopen_load, §3.3). */
	SP_FORWARD(fields_differ(ro, path, &g, err));
	if (g.rank != 0 && first_difference(st, &g, a, &f))
		return sp_err_set(err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "%s: %s: the store has %s, the description "
				  "%s; nothing was touched", path, f.name,
				  f.store, f.given);
	SP_RETURN_IF(g.rank != 0 && g.dims[a].size != 0 &&
			     g.dims[a].size <= ro->rows,
		     err, SHARDPIPE_ERR_BEYOND_END,
		     "%s: dim %d: the store holds %llu rows already, so a "
		     "bound of %llu leaves none to append (a closed bounded "
		     "array holds all of its rows); nothing was touched",
		     path, a, (unsigned long long)ro->rows,
		     (unsigned long long)g.dims[a].size);
	/* The run's fields are the caller's, the array's the store's. */
	*out = g;
	out->rank = st->rank;
	for (int d = 0; d < st->rank; d++) {
		out->dims[d] = st->dims[d];
		if (d == a)
			out->dims[a].size = given != NULL && g.rank != 0
						    ? g.dims[a].size : 0;
	}
	out->dtype = st->dtype;
	out->codec = st->codec;
	out->level = st->codec != SHARDPIPE_CODEC_NONE ? st->level : g.level;
	/* numcodecs' level 0 (§29): the same encoder, named as the store
	 * names it (stream_open sets plan.level_default). */
	if (st->codec == SHARDPIPE_CODEC_ZSTD && st->level == 0)
		out->level = ZSTD_LEVEL_DEFAULT;
	out->zstd_checksum = st->zstd_checksum;
	out->blosc_cname = st->blosc_cname;
	out->blosc_shuffle = st->blosc_shuffle;
	out->blosc_blocksize = st->blosc_blocksize;
	out->index_location = st->index_location;
	memcpy(out->fill_value, st->fill_value, sizeof(out->fill_value));
	out->frame_fields = st->frame_fields;
	out->n_frame_fields = st->n_frame_fields;
	if (ro->group != NULL) {
		out->downsample = st->downsample;
		out->method = st->method;
		out->append_method = st->append_method;
		out->max_levels = st->max_levels;
		memcpy(out->max_levels_dim, st->max_levels_dim,
		       sizeof(out->max_levels_dim));
		out->ngff = st->ngff;
		memcpy(out->axis_type, st->axis_type, sizeof(out->axis_type));
		memcpy(out->unit, st->unit, sizeof(out->unit));
		memcpy(out->scale, st->scale, sizeof(out->scale));
	}
	return SHARDPIPE_OK;
}

/* ----------------------------------------------------------- attributes */

int reopen_attrs(const struct reopen *ro, struct attrs *a, struct sp_err *err)
{
	const struct json_value *v;

	/* An image's are its group's, beside the "ome" §28.4 renders. */
	v = json_get(json_root(ro->group != NULL ? ro->group : ro->r->meta),
		     "attributes");
	for (v = v != NULL ? v->child : NULL; v != NULL; v = v->next) {
		char *key;

		if (ro->group != NULL && v->key_len == 3 &&
		    memcmp(v->key, "ome", 3) == 0)
			continue;
		key = strndup(v->key, v->key_len);
		char *text = strndup(v->raw, v->raw_len);
		int rc;

		if (key == NULL || text == NULL) {
			free(key);
			free(text);
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		}
		rc = strlen(key) != v->key_len
			     ? sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
					  "%s: an attribute's key holds a NUL "
					  "character", ro->r->path)
			     : attrs_set(a, key, text, err);
		free(key);
		free(text);
		SP_FORWARD(rc);
	}
	return SHARDPIPE_OK;
}

/* ------------------------------------------------------------ public */

int shardpipe_desc_from_store(shardpipe_desc *desc, const char *path,
			      uint64_t *rows)
{
	static __thread char names[SHARDPIPE_MAX_RANK][64];
	static __thread char units[SHARDPIPE_MAX_RANK][32];
	static __thread char fnames[SHARDPIPE_MAX_FRAME_FIELDS][64];
	static __thread shardpipe_frame_field fields[SHARDPIPE_MAX_FRAME_FIELDS];
	struct reopen ro;
	struct sp_err err;
	int rc;

	if (desc == NULL || path == NULL) {
		sp_last_error_set("shardpipe_desc_from_store: NULL argument");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	if (desc->struct_size < offsetof(shardpipe_desc, rank) +
					sizeof(desc->rank)) {
		sp_last_error_set("description not initialised with "
				  "shardpipe_desc_init()");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	sp_err_clear(&err);
	memset(&ro, 0, sizeof(ro));
	/* The caller's storage order says which dim the rows run along. */
	rc = reopen_load(&ro, path, 0, 0, desc, &err);
	if (rc != SHARDPIPE_OK) {
		reopen_free(&ro);
		sp_last_error_set(err.msg);
		return rc;
	}
	memcpy(names, ro.names, sizeof(names));
	memcpy(units, ro.units, sizeof(units));
	for (int d = 0; d < ro.desc.rank; d++) {
		ro.desc.dims[d].name = names[d];
		if (ro.desc.unit[d] != NULL)
			ro.desc.unit[d] = units[d];
	}
	for (size_t i = 0; i < ro.desc.n_frame_fields; i++) {
		memcpy(fnames[i], ro.field_names[i], sizeof(fnames[i]));
		fields[i].name = fnames[i];
		fields[i].dtype = ro.fields[i].dtype;
	}
	ro.desc.frame_fields = ro.desc.n_frame_fields ? fields : NULL;
	/* Only the fields inside the caller's struct: it may be older. */
#define SET(field)                                                        \
	do {                                                              \
		if (DESC_HAS(desc, field))                                \
			memcpy(&desc->field, &ro.desc.field,              \
			       sizeof(desc->field));                      \
	} while (0)
	SET(rank);
	SET(dims);
	SET(dtype);
	SET(codec);
	SET(level);
	SET(index_location);
	SET(blosc_cname);
	SET(blosc_shuffle);
	SET(blosc_blocksize);
	SET(zstd_checksum);
	SET(fill_value);
	/* An image's pyramid. */
	SET(downsample);
	SET(method);
	SET(append_method);
	SET(max_levels);
	SET(max_levels_dim);
	SET(ngff);
	SET(axis_type);
	SET(unit);
	SET(scale);
	/* An image's frame fields (§28.9), in thread-local storage. */
	SET(frame_fields);
	SET(n_frame_fields);
#undef SET
	if (rows != NULL)
		*rows = ro.rows;
	reopen_free(&ro);
	return SHARDPIPE_OK;
}
