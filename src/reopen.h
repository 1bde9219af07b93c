/*
 * reopen.h - what a stream continuing an array learns from its store
 * (reopen.c, doc/design.md §29): the description its zarr.json gives, the
 * rows it advertises, and a reader for the rows written before.
 */
#ifndef SHARDPIPE_REOPEN_H
#define SHARDPIPE_REOPEN_H

#include "attrs.h"
#include "common.h"
#include "store.h"

struct reopen {
	struct store *store;     /* locked; the stream takes it over */
	struct shardpipe_reader *r;
	/* The store's array fields, as shardpipe_desc_from_store() sets
	 * them; dims[d].name points into names. */
	shardpipe_desc desc;
	char names[SHARDPIPE_MAX_RANK][64];
	uint64_t rows;           /* the rows its zarr.json advertises */
	/* The storage dim rows run along: 0, or where the caller's
	 * storage order put the append dim (design §3.3: zarr.json records
	 * no order); rows, dims[append_dim].size 0, the shard rows and an
	 * image's level shifts run along it. */
	int append_dim;
	/*
	 * An OME-NGFF image shardpipe wrote (reopen_image.c): its group's
	 * zarr.json, its levels (1 for an array), each level's advertised
	 * rows and rows a shard row, and the units desc points at.  r reads
	 * level 0.
	 */
	struct json_doc *group;
	char *group_text;        /* the text group's raw spans point into */
	int levels;
	uint64_t level_rows[SHARDPIPE_MAX_LEVELS];
	uint64_t level_sr[SHARDPIPE_MAX_LEVELS];
	/* Halvings of dim 0 from level 0 to level L (0 when it does not
	 * halve): level L's row r is level 0's row r << level_shift[L]. */
	int level_shift[SHARDPIPE_MAX_LEVELS];
	/* truncate_to_advertised took effect: the rows before the damaged
	 * shard row are all rows kept (rows and level_rows lowered), and
	 * that row's old shards are replaced or removed. */
	int truncated;
	char units[SHARDPIPE_MAX_RANK][32];
	/*
	 * An image's frame fields (doc/design.md §28.9), from its group's
	 * attributes.shardpipe.frame_meta: n_fields, "skipped" the last;
	 * fields[] the others, as desc.frame_fields (names point into
	 * field_names); fr[i] reads field i's array.
	 */
	int n_fields;
	char field_names[SHARDPIPE_MAX_FRAME_FIELDS + 1][64];
	shardpipe_frame_field fields[SHARDPIPE_MAX_FRAME_FIELDS];
	struct shardpipe_reader *fr[SHARDPIPE_MAX_FRAME_FIELDS + 1];
};

/* Read the array at path (a directory or an S3 prefix; an image at a
 * directory) and refuse what shardpipe does not
 * write, naming the part at fault; with lock, take the store's lock
 * first (store_reopen, durable as the stream will write).  A storage
 * order in given (NULL: none) that stores the append dim as storage dim
 * a makes the rows run along dim a; one that is no permutation is left
 * to the plan to refuse.  *ro zeroed by the caller; reopen_free()
 * releases it, whatever this returned.  Nothing is written. */
SP_INTERNAL int reopen_load(struct reopen *ro, const char *path, int lock,
			    int durable, const shardpipe_desc *given,
			    struct sp_err *err);

/*
 * The description a continuing stream runs with: given's fields of this
 * run (backend, threads, ...) and the store's array fields, after
 * checking that every array field given (rank not 0) equals the store's,
 * the message naming the field and both values.  given NULL: defaults.
 * dims[0].size is the bound of the run, in the array's rows.
 */
SP_INTERNAL int reopen_merge(const struct reopen *ro, const char *path,
			     const shardpipe_desc *given, shardpipe_desc *out,
			     struct sp_err *err);

/*
 * The image at path (a group whose zarr.json names shardpipe's pyramid in
 * attributes.ome), into ro as reopen_load() reads an array: level 0's
 * array fields and reader, the pyramid's fields (downsample, method,
 * levels, axes, units, scale) and each level's rows.  The caller has
 * taken the lock.  Refuses an image shardpipe did not write.
 */
SP_INTERNAL int reopen_load_image(struct reopen *ro, const char *path,
				  const shardpipe_desc *given,
				  struct sp_err *err);
/*
 * The frame fields' values of rows from..to-1 of the image into bits
 * (ro->n_fields a row, bit patterns as frame_meta keeps them), read from
 * the fields' chunks: each chunk up to level 0's advertised rows was
 * written before level 0's zarr.json advertised them (§28.9), even where
 * a writer killed meanwhile left a field's zarr.json advertising fewer.
 */
SP_INTERNAL int reopen_field_values(const struct reopen *ro, uint64_t from,
				    uint64_t to, uint64_t *bits,
				    struct sp_err *err);
/* Level 0's array fields of an array's reader into ro->desc (shared by
 * arrays and images), along the append dim given's storage order puts
 * (reopen_load). */
SP_INTERNAL int reopen_array_fields(struct reopen *ro, const char *path,
				    const shardpipe_desc *given,
				    struct sp_err *err);

/* The store's user attributes, each value's text as its zarr.json holds
 * it (an image's: its group's, beside "ome"), into a. */
SP_INTERNAL int reopen_attrs(const struct reopen *ro, struct attrs *a,
			     struct sp_err *err);

/* The row of level 0 every level of the continued stream counts from
 * (level L from it >> level_shift[L]): the last row at or below every
 * level's advertised rows (in level 0's rows) that starts a shard row of
 * each. */
SP_INTERNAL uint64_t reopen_base(const struct reopen *ro);

/* libzstd's default level, what level 0 means in numcodecs and libzstd. */
#define ZSTD_LEVEL_DEFAULT 3

SP_INTERNAL void reopen_free(struct reopen *ro);

#endif
