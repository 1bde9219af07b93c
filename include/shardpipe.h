/*
 * shardpipe.h - stream N-dimensional arrays into sharded Zarr v3 stores.
 *
 * This is the only installed header of libshardpipe.  Every exported name
 * starts with shardpipe_ or SHARDPIPE_.
 *
 * A stream is opened from an array description, receives the array's bytes
 * in row-major order (C order, dim 0 slowest) through any number of appends
 * of any size, and writes a Zarr v3 array whose single codec is
 * "sharding_indexed".  Calls on one stream must not run concurrently; distinct
 * streams are independent and may be used from different threads.
 */
#ifndef SHARDPIPE_H
#define SHARDPIPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(SHARDPIPE_BUILDING_LIBRARY)
#define SHARDPIPE_API __declspec(dllexport)
#elif defined(__GNUC__) && defined(SHARDPIPE_BUILDING_LIBRARY)
#define SHARDPIPE_API __attribute__((visibility("default")))
#else
#define SHARDPIPE_API
#endif

#define SHARDPIPE_VERSION_MAJOR 0
#define SHARDPIPE_VERSION_MINOR 1
#define SHARDPIPE_VERSION_PATCH 0

/* The most dimensions an array may have. */
#define SHARDPIPE_MAX_RANK 16

/* The most worker threads a description may ask for. */
#define SHARDPIPE_MAX_THREADS 4096

/*
 * Structs that may grow.  shardpipe_desc and shardpipe_sink (filled by the
 * caller) and shardpipe_stats, shardpipe_array_info and
 * shardpipe_backend_info (filled by the library) begin with struct_size,
 * and later releases only append fields, so that a program and a library
 * built from different releases still agree:
 *
 * - A caller's struct is initialised by an _init function, a macro that
 *   passes sizeof: struct_size says how much of it the caller owns, and
 *   the library reads no field beyond it (a field it lacks takes its
 *   default).
 * - The library fills an output struct through a getter, a macro that
 *   passes sizeof(*out): it writes only the bytes that both the caller's
 *   struct and its own hold, leaves every byte past them untouched, and
 *   sets struct_size to how many it wrote.
 *
 * A size of 0, or one too small to hold struct_size, is refused with
 * SHARDPIPE_ERR_INVALID_ARGUMENT.  Bindings that lay a struct out
 * themselves call the _sized functions with their own struct's size.
 * SHARDPIPE_HAS_FIELD(p, field) says whether *p, as struct_size describes
 * it, holds field: whether the library filled it, or the caller's struct
 * has it.
 */
#define SHARDPIPE_HAS_FIELD(p, field)                                       \
	((size_t)((const char *)&(p)->field - (const char *)(p)) +          \
		 sizeof((p)->field) <= (p)->struct_size)

/*
 * Error codes.  Values are stable across releases; new codes are only ever
 * appended.  Every call that can fail returns one of these.
 */
typedef enum shardpipe_error {
	SHARDPIPE_OK = 0,
	SHARDPIPE_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer or a bad enum */
	SHARDPIPE_ERR_RANK = 2,             /* rank 0 or above SHARDPIPE_MAX_RANK */
	SHARDPIPE_ERR_DIM_SIZE = 3,         /* size 0 on a dimension other than 0 */
	SHARDPIPE_ERR_CHUNK_SIZE = 4,       /* a chunk size of 0 */
	SHARDPIPE_ERR_SHARD_SIZE = 5,       /* zero chunks per shard */
	SHARDPIPE_ERR_OVERFLOW = 6,         /* a product of sizes does not fit */
	SHARDPIPE_ERR_DTYPE = 7,            /* unknown data type */
	SHARDPIPE_ERR_CODEC = 8,            /* unknown or unavailable codec */
	SHARDPIPE_ERR_LEVEL = 9,            /* level out of the codec's range */
	SHARDPIPE_ERR_BACKEND = 10,         /* unknown or unusable backend */
	SHARDPIPE_ERR_PATH = 11,            /* path cannot hold a store */
	SHARDPIPE_ERR_EXISTS = 12,          /* path holds a store or other files */
	SHARDPIPE_ERR_NOMEM = 13,           /* an allocation failed */
	SHARDPIPE_ERR_IO = 14,              /* a read or write failed (EIO, ...) */
	SHARDPIPE_ERR_NOSPACE = 15,         /* the filesystem is full (ENOSPC) */
	SHARDPIPE_ERR_ACCESS = 16,          /* permission denied (EACCES) */
	SHARDPIPE_ERR_BEYOND_END = 17,      /* append past the append dim's bound */
	SHARDPIPE_ERR_CLOSED = 18,          /* the stream already failed or closed */
	SHARDPIPE_ERR_SINK = 19,            /* a sink callback reported failure */
	SHARDPIPE_ERR_DEVICE = 20,          /* a backend's device call failed */
	SHARDPIPE_ERR_CODEC_FAILED = 21,    /* a compressor failed */
	SHARDPIPE_ERR_FORMAT = 22,          /* a store read is malformed */
	SHARDPIPE_ERR_CORRUPT = 23,         /* checksum or decode failure */
	SHARDPIPE_ERR_UNSUPPORTED = 24,     /* a store feature we cannot read */
	SHARDPIPE_ERR_NAME = 25,            /* a bad dimension or array name */
	SHARDPIPE_ERR_ABI = 26,             /* a plugin built for another ABI */
	SHARDPIPE_ERR_BUSY = 27,            /* another writer holds the store */
	SHARDPIPE_ERR_COUNT_                /* not an error: the number of codes */
} shardpipe_error;

/* Element types of the Zarr v3 core spec. */
typedef enum shardpipe_dtype {
	SHARDPIPE_DTYPE_BOOL = 0,
	SHARDPIPE_DTYPE_INT8,
	SHARDPIPE_DTYPE_INT16,
	SHARDPIPE_DTYPE_INT32,
	SHARDPIPE_DTYPE_INT64,
	SHARDPIPE_DTYPE_UINT8,
	SHARDPIPE_DTYPE_UINT16,
	SHARDPIPE_DTYPE_UINT32,
	SHARDPIPE_DTYPE_UINT64,
	SHARDPIPE_DTYPE_FLOAT16,
	SHARDPIPE_DTYPE_FLOAT32,
	SHARDPIPE_DTYPE_FLOAT64,
	SHARDPIPE_DTYPE_COUNT_
} shardpipe_dtype;

/* The bytes-to-bytes codec applied to each chunk inside a shard. */
typedef enum shardpipe_codec {
	SHARDPIPE_CODEC_NONE = 0,
	SHARDPIPE_CODEC_ZSTD = 1, /* levels 1..22, as libzstd's */
	SHARDPIPE_CODEC_GZIP = 2, /* levels 0..9, as zlib's (0 stores) */
	/* Levels 0..9, Blosc's clevel (0 stores).  Each chunk is one blosc1
	 * container (c-blosc 1.x format) with the internal compressor,
	 * shuffle and block size of the description's blosc_ fields; the
	 * shuffle works on elements of the dtype's size.  The cpu backend
	 * needs c-blosc at build time (SHARDPIPE_ERR_CODEC otherwise); the
	 * kernel backends write SHARDPIPE_BLOSC_ZSTD only. */
	SHARDPIPE_CODEC_BLOSC = 3,
	SHARDPIPE_CODEC_COUNT_
} shardpipe_codec;

/* Blosc's internal compressor, Zarr's blosc "cname".  Which ones a build
 * has depends on c-blosc's; one it lacks is refused at open with
 * SHARDPIPE_ERR_CODEC. */
typedef enum shardpipe_blosc_cname {
	SHARDPIPE_BLOSC_ZSTD = 0,
	SHARDPIPE_BLOSC_LZ4 = 1,
	SHARDPIPE_BLOSC_LZ4HC = 2,
	SHARDPIPE_BLOSC_BLOSCLZ = 3,
	SHARDPIPE_BLOSC_ZLIB = 4,
	SHARDPIPE_BLOSC_CNAME_COUNT_
} shardpipe_blosc_cname;

/* Blosc's filter before compression, Zarr's blosc "shuffle". */
typedef enum shardpipe_blosc_shuffle {
	SHARDPIPE_BLOSC_NOSHUFFLE = 0,
	SHARDPIPE_BLOSC_SHUFFLE = 1,     /* byte k of every element together */
	SHARDPIPE_BLOSC_BITSHUFFLE = 2,  /* bit k of every element together */
	SHARDPIPE_BLOSC_SHUFFLE_COUNT_
} shardpipe_blosc_shuffle;

/* Where each shard keeps its chunk index. */
typedef enum shardpipe_index_location {
	SHARDPIPE_INDEX_END = 0,
	SHARDPIPE_INDEX_START = 1
} shardpipe_index_location;

/* One dimension of the array, slowest first. */
typedef struct shardpipe_dim {
	/* Zarr dimension name; NULL or "" leaves it unnamed (JSON null). */
	const char *name;
	/* Extent in elements.  0 (dim 0 only) means unbounded: the array
	 * grows as data is appended. */
	uint64_t size;
	/* Extent of one chunk (Zarr's inner chunk) in elements, >= 1. */
	uint64_t chunk;
	/* Chunks per shard along this dimension, >= 1. */
	uint64_t chunks_per_shard;
} shardpipe_dim;

/* One user attribute of the array's zarr.json: a key and the text of one
 * JSON value (see shardpipe_stream_set_attribute()). */
typedef struct shardpipe_attribute {
	const char *key;
	const char *json;
} shardpipe_attribute;

/*
 * Pyramids (see "Pyramids" in shardpipe(3)).  Each level above level 0
 * halves the downsampled dims of the level below it, every block of 2^k
 * elements (k the dims that halve) reduced to one element by a method.
 * The rules are exact, so every backend writes the same bits:
 *
 *   MEAN      integers: the exact mean rounded half to even (bool: true
 *             when more than half are true); floats: a fixed pairwise tree
 *             over the block, each step (a + b) / 2 rounded once to
 *             nearest even in the element's format.
 *   MIN, MAX  by value.
 *   MEDIAN    the lower of the two middle elements.
 *   DECIMATE  the block's first element.
 *   SECOND_MAX, SECOND_MIN  the second-highest or second-lowest element:
 *             the block sorted by value, equal values counted ({5, 5, 3,
 *             1} gives 5 and 3), so that one bright or dark outlier is
 *             dropped where MAX or MIN would spread it; a block of one
 *             element gives it, a block of two the other extreme.
 *
 * Floats order -0 below +0; MEAN, MIN and MAX of a block holding a NaN
 * give its first NaN, MEDIAN, SECOND_MAX and SECOND_MIN sort NaNs above
 * +inf (equal values in block order, so that of two NaNs the earlier
 * ranks lower).  Blocks are taken in
 * row-major order, dim 0 slowest; a block at the far edge of a dim with
 * an odd size takes its last element twice.
 */
typedef enum shardpipe_method {
	SHARDPIPE_METHOD_MEAN = 0,
	SHARDPIPE_METHOD_MIN = 1,
	SHARDPIPE_METHOD_MAX = 2,
	SHARDPIPE_METHOD_MEDIAN = 3,
	SHARDPIPE_METHOD_DECIMATE = 4,
	SHARDPIPE_METHOD_SECOND_MAX = 5,
	SHARDPIPE_METHOD_SECOND_MIN = 6,
	SHARDPIPE_METHOD_COUNT_
} shardpipe_method;

/* What an axis of an OME-NGFF image measures (its "type"). */
typedef enum shardpipe_axis_type {
	/* From the dim's name: t or time, c or channel, z, y or x. */
	SHARDPIPE_AXIS_AUTO = 0,
	SHARDPIPE_AXIS_SPACE = 1,
	SHARDPIPE_AXIS_TIME = 2,
	SHARDPIPE_AXIS_CHANNEL = 3,
	SHARDPIPE_AXIS_COUNT_
} shardpipe_axis_type;

/* The most levels a pyramid may have, level 0 included. */
#define SHARDPIPE_MAX_LEVELS 32

/*
 * The description of an array and how to write it.  Initialise it with
 * shardpipe_desc_init(), which also records the struct's size so that later
 * releases may append fields without breaking callers built against this
 * one (see "Structs that may grow" above).  The library copies everything
 * it needs at open; the strings need not outlive the call.
 */
/*
 * A per-frame metadata field (a timestamp, a stage position, a flag):
 * one value a row of dim 0, given with each frame by
 * shardpipe_stream_append_meta() and stored as a 1-D Zarr array beside
 * the image (see "Frame metadata" in shardpipe(3)).  name: 1 .. 63 of
 * A-Z a-z 0-9 _, not all digits (those are the image's levels), not
 * "skipped" (the field every stream with fields has).  dtype:
 * SHARDPIPE_DTYPE_FLOAT64, _INT64 or _BOOL.
 */
typedef struct shardpipe_frame_field {
	const char *name;
	shardpipe_dtype dtype;
} shardpipe_frame_field;

/* One field's value for one frame: f64, i64 or b (0 or 1) by its
 * dtype. */
typedef union shardpipe_frame_value {
	double f64;
	int64_t i64;
	int b;
} shardpipe_frame_value;

/* Fields a stream takes at most, "skipped" not counted. */
#define SHARDPIPE_MAX_FRAME_FIELDS 32

typedef struct shardpipe_desc {
	size_t struct_size;       /* set by shardpipe_desc_init() */
	int rank;                 /* 1..SHARDPIPE_MAX_RANK */
	shardpipe_dim dims[SHARDPIPE_MAX_RANK];
	shardpipe_dtype dtype;
	shardpipe_codec codec;    /* default SHARDPIPE_CODEC_ZSTD */
	int level;                /* default 1 */
	shardpipe_index_location index_location; /* default END */
	/* "auto" (or NULL), "cpu", "reference", "opencl", "cuda".  The
	 * environment variable SHARDPIPE_BACKEND, when set and not empty,
	 * overrides this field. */
	const char *backend;
	/* Worker threads, 0 (default) = every core; at most
	 * SHARDPIPE_MAX_THREADS. */
	int threads;
	int overwrite;            /* nonzero: replace a store already at path */
	/* Read only with SHARDPIPE_CODEC_BLOSC.  A caller built before these
	 * fields existed (a smaller struct_size) gets their defaults. */
	shardpipe_blosc_cname blosc_cname;     /* default ZSTD */
	shardpipe_blosc_shuffle blosc_shuffle; /* default SHUFFLE */
	/* Bytes per blosc block, 0 (default) = automatic: for zstd the whole
	 * chunk up to 1 MiB on cpu, 256 KiB on the kernel backends; c-blosc's
	 * choice for the other compressors;
	 * otherwise 128 .. 2^31 - 1, recorded in zarr.json as asked.  c-blosc
	 * rounds it down to whole elements, caps it at the chunk, and raises
	 * it to 64 KiB or more for the compressors it splits into byte
	 * streams (all but zstd); each chunk's header holds the size used. */
	uint32_t blosc_blocksize;
	/* Read only with SHARDPIPE_CODEC_ZSTD: nonzero ends every chunk's
	 * frame with a content checksum (the low 32 bits of XXH64, RFC 8878),
	 * Zarr's zstd "checksum": true.  Default 0.  Every backend honours it;
	 * the kernel backends compute the checksum on the device. */
	int zstd_checksum;
	/* The fill value (Zarr's "fill_value"): one element of dtype as it
	 * lies in memory, in the host's byte order, in the first
	 * shardpipe_dtype_size(dtype) bytes (the rest is ignored).  Any
	 * value of the dtype, NaN and infinities included; a bool is 0 or 1.
	 * Default all zero.  The spans of shardpipe_stream_skip() hold it,
	 * and so does every cell of an edge chunk past the array's edge,
	 * along any dim (readers never return those), as zarr-python pads.
	 * A caller built before this field gets zero. */
	unsigned char fill_value[8];
	/* Zero (the default, as in zarr-python and TensorStore): a chunk
	 * whose cells inside the array all equal the fill value, byte for
	 * byte, is not stored (its index entry is 2^64 - 1, as the
	 * sharding spec says), and a shard whose chunks are all such is
	 * not written; readers return the fill value there.  Nonzero:
	 * every chunk and shard is written. */
	int write_empty_chunks;
	/* Nonzero: every object of a filesystem store is made durable
	 * before the next zarr.json can advertise it (see "Durability" in
	 * shardpipe(3)).  Default 0.  Ignored by sinks. */
	int durable;
	/* Bytes the stream's staging, backend pools and shard sets may
	 * plan for (shardpipe_stats.pool_bytes); 0 (default) = no cap.  A
	 * cap lowers the epochs per batch until the pools fit; open refuses
	 * with SHARDPIPE_ERR_NOMEM when even one epoch a batch does not. */
	uint64_t max_memory;
	/* User attributes, in zarr.json from the first one written:
	 * nattributes entries set in order as shardpipe_stream_set_attribute()
	 * sets them (a later key replaces an earlier one).  One it would
	 * refuse makes the open fail with SHARDPIPE_ERR_INVALID_ARGUMENT,
	 * naming its key, before anything is written.  Default NULL, 0. */
	const shardpipe_attribute *attributes;
	size_t nattributes;
	/*
	 * Pyramids and OME-NGFF images (see "Pyramids" in shardpipe(3)).
	 * downsample: bit d set halves dim d from each level to the next
	 * (rounding up), while it is larger than 1.  With any bit set, or
	 * with ngff nonzero, the store is an OME-NGFF 0.5 image: a group
	 * whose zarr.json holds attributes.ome (its axes, and one dataset
	 * per level with its scale and translation) and whose arrays 0, 1,
	 * ... are the levels, each sharded as a single array would be.  That
	 * needs rank 2 to 5, every dim named, an axis type for each (below),
	 * at most one time axis and it first, at most one channel axis and it
	 * next, then 2 or 3 space axes; only time and space dims halve.
	 * Default 0 and 0: one array, as without these fields.  A sink
	 * takes an image only through its object callback (open_sink
	 * refuses one without it); an "s3://" store refuses both for now
	 * (SHARDPIPE_ERR_UNSUPPORTED): an image needs a directory.
	 */
	uint32_t downsample;
	shardpipe_method method;  /* default SHARDPIPE_METHOD_MEAN */
	/* When downsample halves dim 0: -1 (default) reduces each block
	 * whole by method; a shardpipe_method reduces each of the block's
	 * two rows by method, then the two results by this one. */
	int append_method;
	/* Levels, level 0 included, 1 .. SHARDPIPE_MAX_LEVELS; 0 (default):
	 * until every halving dim of a level fits in one chunk (an
	 * unbounded dim 0 needs a number).  A count beyond the level where
	 * every halving dim is 1 is refused. */
	int max_levels;
	int ngff;                 /* nonzero: OME-NGFF layout, even at 1 level */
	/* Per dim, for the OME-NGFF axes: its type (default AUTO, from the
	 * name), its unit (NULL or "": none; a space axis takes one of the
	 * spec's units of length, "micrometer", ..., a time axis one of time,
	 * "second", ...), and the physical size of one level-0 element along
	 * it (0: 1.0; a level's scale multiplies it by the level's factor). */
	shardpipe_axis_type axis_type[SHARDPIPE_MAX_RANK];
	const char *unit[SHARDPIPE_MAX_RANK];
	double scale[SHARDPIPE_MAX_RANK];
	/* Read only by shardpipe_stream_reopen(): nonzero drops the store's
	 * last shard row when one of its shards does not decode (a CRC
	 * mismatch, a truncated file) and continues from the rows before
	 * it, instead of refusing; zarr.json then advertises those rows
	 * from its next update.  Default 0. */
	int truncate_to_advertised;
	/* Per dim, for an anisotropic pyramid: the levels, level 0
	 * included, through which a downsampled dim halves, as max_levels
	 * counts them; past them it keeps its size (z halving for 3 levels
	 * while y and x go on: max_levels_dim[z] = 3).  0 (default): no stop
	 * of its own, it halves while it is larger than 1.  Otherwise 2 ..
	 * the pyramid's levels, on a downsampled dim only, and no more than
	 * the dim can halve; the default level count stops when every dim
	 * still halving fits in one chunk.  A caller built before this
	 * field gets no stops. */
	int max_levels_dim[SHARDPIPE_MAX_RANK];
	/* Per-frame metadata (see "Frame metadata" in shardpipe(3)):
	 * n_frame_fields fields, each a 1-D array beside the image's levels,
	 * so an OME-NGFF image only (ngff or downsample); plus a bool field
	 * "skipped" the library adds.  The stream copies them at open.  With
	 * fields, frames are appended with shardpipe_stream_append_meta();
	 * shardpipe_stream_append() is refused.  Default none. */
	const shardpipe_frame_field *frame_fields;
	size_t n_frame_fields;
	/* Storage order (see "Storage order" in shardpipe(3)): the store
	 * holds the appended array transposed, storage dim i being append
	 * dim storage_order[i] (numpy's stored = appended.transpose(order)).
	 * dims[] (sizes, chunks, shards, names) and every other per-dim
	 * field are in STORAGE order, as zarr.json lists them; each append
	 * gives rows in append order, whose dim storage_order[i] has size
	 * dims[i].size.  All zero (default): identity.  Otherwise a
	 * permutation of 0 .. rank-1 (entries past rank 0).  The append
	 * dim may be stored as any dim a (storage_order[a] == 0): zarr.json
	 * grows dims[a], the only dim that may be unbounded; then rank
	 * SHARDPIPE_MAX_RANK, ngff, downsample and reopening the store are
	 * refused.  Pyramids take any order with storage_order[0] == 0.  A
	 * caller built before this field gets the identity. */
	int storage_order[SHARDPIPE_MAX_RANK];
} shardpipe_desc;

/*
 * Fill *desc with defaults: rank 0 (the caller must set it), dtype uint8,
 * codec zstd level 1, index at end, backend "auto", all cores, no overwrite;
 * for blosc: compressor zstd, byte shuffle, automatic block size; no
 * pyramid (method mean, append_method -1).
 */
SHARDPIPE_API void shardpipe_desc_init(shardpipe_desc *desc);

/*
 * What shardpipe_desc_init() compiles to: fills only the first `size`
 * bytes, so that a program built against an older, smaller description
 * stays safe with a newer library.  Call it directly only from bindings
 * that lay the struct out themselves (pass their struct's size).
 */
SHARDPIPE_API void shardpipe_desc_init_sized(shardpipe_desc *desc,
					     size_t size);
#define shardpipe_desc_init(desc) \
	shardpipe_desc_init_sized((desc), sizeof(*(desc)))

/*
 * Set desc's codec, level, zstd_checksum and blosc_ fields from a codec
 * string, the grammar of the command-line tool's --codec: "none",
 * "zstd[:LEVEL[:checksum]]", "gzip[:LEVEL]" or
 * "blosc[:CNAME[:LEVEL[:SHUFFLE[:BLOCKSIZE]]]]" (CNAME zstd, lz4, lz4hc,
 * blosclz or zlib; SHUFFLE noshuffle, shuffle or bitshuffle; defaults
 * level 1, zstd, shuffle, 0 = automatic).  Fields left out take their
 * defaults.  A string that does not parse returns SHARDPIPE_ERR_CODEC,
 * leaves *desc unchanged, and shardpipe_last_error_message() names the
 * field at fault.  Level ranges and what this build's c-blosc has are
 * checked at open.  desc must have been initialised by
 * shardpipe_desc_init().
 */
SHARDPIPE_API int shardpipe_desc_set_codec(shardpipe_desc *desc,
					   const char *spec);

/* One piece of a shard's chunk data (shardpipe_sink.shard_parts). */
typedef struct shardpipe_part {
	const void *data;
	size_t bytes;
} shardpipe_part;

/*
 * A sink receives finished shards instead of the filesystem store.
 *
 * shard() is called once per shard, in the order shards complete, with the
 * shard's coordinates in the shard grid (rank entries), its chunk data and
 * its serialized index (pairs of little-endian uint64 offset/nbytes followed
 * by the CRC32C of the pairs).  With SHARDPIPE_INDEX_END the shard object is
 * data followed by index; with SHARDPIPE_INDEX_START it is index followed by
 * data, and the offsets already account for that.  metadata(), if not NULL,
 * receives the current zarr.json text each time it changes.  The pointers
 * are valid only during the call.  A callback returns 0 on success; any
 * other value makes the stream fail with SHARDPIPE_ERR_SINK, and that error
 * is sticky.  Callbacks run on the stream's writer thread (or on the
 * caller's thread inside open_sink, for the first metadata, and inside
 * flush and close), one at a time, never two at once for one stream.
 *
 * shard_parts(), when not NULL, is called instead of shard(): the same
 * shard with its chunk data as nparts pieces (at least one) which, one
 * after the other, are the bytes shard() would get as data.  A stream
 * whose backend compresses each chunk into a place of its own (cpu) hands
 * them over so without first copying them together; shard() gets them
 * copied.  A sink needs one of the two, or object().
 *
 * object(), when not NULL, is called instead of all three: with every
 * object a directory store would hold, by its key below the store's root
 * ("zarr.json", "c/0/1/2"; for an image, with downsample, ngff or frame
 * fields, the group's "zarr.json" and each array's below its name,
 * "0/zarr.json", "1/c/0/0/0", "skipped/c/0"), its bytes as nparts pieces
 * (at least one) one after the other.  A key comes again when its object
 * changes (zarr.json); the last one given is the object.  A sink with
 * object() takes an image, which the others refuse (one array only).
 * Its callbacks run one at a time even though each level of a pyramid has
 * a writer thread of its own.
 */
typedef struct shardpipe_sink {
	size_t struct_size;       /* set by shardpipe_sink_init() */
	void *user;
	int (*shard)(void *user, const uint64_t *coords, int rank,
		     const void *data, size_t data_bytes,
		     const void *index, size_t index_bytes);
	int (*metadata)(void *user, const char *json, size_t json_bytes);
	int (*shard_parts)(void *user, const uint64_t *coords, int rank,
			   const shardpipe_part *parts, size_t nparts,
			   const void *index, size_t index_bytes);
	int (*object)(void *user, const char *key,
		      const shardpipe_part *parts, size_t nparts);
} shardpipe_sink;

/*
 * Clear *sink (user and callbacks NULL) and record its size; call it
 * before setting the fields.  The macro passes sizeof(*sink) to
 * shardpipe_sink_init_sized(), which writes only that many bytes.
 * shardpipe_stream_open_sink() refuses a sink whose struct_size was not
 * set this way (0, or too small to hold the shard callback) with
 * SHARDPIPE_ERR_INVALID_ARGUMENT, and reads no callback beyond it.
 */
SHARDPIPE_API void shardpipe_sink_init_sized(shardpipe_sink *sink,
					     size_t size);
#define shardpipe_sink_init(sink) \
	shardpipe_sink_init_sized((sink), sizeof(*(sink)))

typedef struct shardpipe_stream shardpipe_stream;

/*
 * Validate *desc and open a stream that writes a store in directory `path`
 * (created if missing), or on S3 when path is "s3://BUCKET/PREFIX": the
 * endpoint, region and credentials come from the environment, and a
 * library built without S3 support refuses such a path with
 * SHARDPIPE_ERR_UNSUPPORTED (shardpipe(3), "S3 stores").  An invalid
 * description, an unusable backend or an unwritable path is refused
 * before anything is written: no directory, file or object is created.  A
 * path that already holds a store (a zarr.json) is refused with
 * SHARDPIPE_ERR_EXISTS unless desc->overwrite is set (to continue it
 * instead, see shardpipe_stream_reopen()).  The stream holds an advisory
 * lock on the store's directory until close (SHARDPIPE_ERR_BUSY for a
 * second stream on it).
 *
 * When the environment variable SHARDPIPE_TRACE names a file, the stream
 * records every stage of every batch, on its threads and its device, into
 * that file as a Chrome/Perfetto trace (JSON): the first traced stream of a
 * process creates the file or replaces an earlier shardpipe trace, later
 * ones add to it, and close writes what is left.  A file that exists and is
 * not a shardpipe trace is refused with SHARDPIPE_ERR_EXISTS and left as it
 * is, one that cannot be created with SHARDPIPE_ERR_IO, before anything
 * else is written; a failure to add to it later is returned by close.
 *
 * On failure *out is NULL, unless the failure happened after the stream
 * object could be allocated, in which case *out is still NULL and the
 * message is available from shardpipe_last_error_message().
 */
SHARDPIPE_API int shardpipe_stream_open(shardpipe_stream **out,
					const char *path,
					const shardpipe_desc *desc);

/*
 * Continue the array at `path`, a directory or "s3://BUCKET/PREFIX" (see
 * "Pausing and resuming an acquisition" in shardpipe(3)): a store
 * shardpipe wrote, closed or cut short by a crash, or one another writer
 * made in a layout shardpipe writes (a Zarr v3 array, one
 * sharding_indexed codec with bytes and at most one of zstd, gzip or
 * blosc inside, index codecs bytes and crc32c, default chunk keys with
 * "/"); or an OME-NGFF image shardpipe wrote, every level continued
 * (unbounded when its dim 0 halves).  Appends start at the row after
 * the last one the store's zarr.json advertises.
 *
 * desc NULL, or desc->rank 0: the array's fields (rank, dims, dtype,
 * codec and its settings, index_location, fill_value, dimension names;
 * an image's pyramid fields too) are the store's.  Otherwise each must
 * equal the store's: a difference is refused with
 * SHARDPIPE_ERR_INVALID_ARGUMENT, the message naming the field, the
 * store's value and desc's (an image's pyramid fields are compared when
 * desc->downsample is set, else taken from the store).  dims[0].size is
 * the bound of this run: 0 continues unbounded, N stops at row N
 * (refused with SHARDPIPE_ERR_BEYOND_END when the store advertises N rows
 * already: a closed bounded array advertises all of its rows).  zarr.json
 * records no storage order: a store written with one is continued with
 * desc->storage_order set again, and where that stores the append dim as
 * storage dim a, rows, bound and the comparison skip dim a instead of
 * dim 0 (dims[a].size is the bound, dims[0].size the store's size; an
 * image's levels likewise).  The rest
 * of desc (backend, threads, durable, max_memory, write_empty_chunks)
 * applies to this run; the store's user attributes are kept and desc's
 * set over them.  overwrite must be 0.  An image's frame fields
 * continue: n_frame_fields 0 takes the store's, fields given must be
 * the store's, names, dtypes and order (else SHARDPIPE_ERR_INVALID_ARGUMENT
 * naming the field); frames are then appended with
 * shardpipe_stream_append_meta().
 *
 * The advertised rows stay byte for byte.  Those in the last, partial
 * shard row are read back (decoded), and that row's shards are written
 * anew with them and the rows appended after them, each under a
 * temporary name renamed into place (on S3, one upload replacing the
 * object), so that a crash leaves the old shard or the new one.  Shard
 * files past the advertised rows (left by a writer that was killed) are
 * the array's orphans and are removed, and so are a killed writer's
 * temporaries and, on S3, its unfinished multipart uploads; no other
 * file is touched.  Writing rows 0..N-1 in one run, or 0..k-1, closing or
 * being killed, then reopening and writing k..N-1, gives the same files.
 *
 * Nothing is changed when it refuses: SHARDPIPE_ERR_PATH when path holds
 * no array, SHARDPIPE_ERR_UNSUPPORTED for a layout shardpipe does not
 * write (the message says which part; a level of an image alone, or a
 * bound on an image whose dim 0 halves, among them), SHARDPIPE_ERR_CORRUPT or
 * SHARDPIPE_ERR_FORMAT when a shard of the last advertised shard row
 * does not decode (the message names it), SHARDPIPE_ERR_ACCESS for a
 * store that cannot be written.  Every stream on a directory store,
 * opened or reopened, holds an advisory lock (flock) on the store's
 * directory until it is closed: a second stream on it, in this process
 * or another, is refused with SHARDPIPE_ERR_BUSY.  S3 has no lock: the
 * caller keeps writers of one prefix apart (shardpipe(3)).
 */
SHARDPIPE_API int shardpipe_stream_reopen(shardpipe_stream **out,
					  const char *path,
					  const shardpipe_desc *desc);

/*
 * Many writers of one array (doc/design.md §30).
 *
 * A stream that writes only the shards of the box lo..hi (elements, per
 * dim, hi exclusive) of the array *desc describes (the WHOLE array: dims
 * sizes are the full shape; dims[0].size 0 = unbounded dim 0, then hi[0]
 * must be 0 = "to the end" and lo[0] a multiple of the shard row).  lo
 * and hi are multiples of the shard shape (chunk * chunks_per_shard)
 * except hi at the array's edge.  Appends take the box's bytes in
 * row-major order of the box's shape; the stream writes exactly the
 * box's shards (each atomically: temp name + rename) and NEVER writes
 * zarr.json.  path must exist as a directory that is empty or holds this
 * array (its zarr.json, equal to desc's, and/or its c/ tree), or be an
 * "s3://BUCKET/PREFIX" whose prefix holds nothing else (see below).
 * Refusals, before anything is written: not aligned, hi beyond the
 * extent, lo not below hi -> SHARDPIPE_ERR_INVALID_ARGUMENT naming the
 * dim and the nearest aligned box; a zarr.json of a different array ->
 * SHARDPIPE_ERR_EXISTS naming the field; other files (objects) in path
 * -> SHARDPIPE_ERR_EXISTS; an image's frame_fields, or an image on
 * s3:// -> SHARDPIPE_ERR_UNSUPPORTED; overwrite ->
 * SHARDPIPE_ERR_INVALID_ARGUMENT.
 * A pyramid or OME-NGFF image (downsample, ngff; design §30.5): lo and hi
 * are multiples of every level's shard shape in level-0 elements (level
 * L's chunk * chunks_per_shard, clamped to the level, times 2^h, h the
 * times the dim halved up to L: their least common multiple, the dim's
 * size when larger) except hi at the edge, and the stream writes every
 * level's shards of the box, byte for byte those of one image stream.
 * On a directory, region writers share the store's lock (an ordinary
 * stream on it, or one opened while they hold it, gets
 * SHARDPIPE_ERR_BUSY); each claims its
 * box while open: a region writer whose box overlaps that of one open
 * gets SHARDPIPE_ERR_BUSY naming it at open, and so does a writer of a
 * shard another is writing at that moment; one whose box meets a box
 * written whole since the array was last published gets
 * SHARDPIPE_ERR_EXISTS naming it (at open; at close for a box to the
 * end, hi[0] 0, whose rows are known only then), while the same box
 * again (a retried task) is written.  On S3, which has no lock, there
 * are no claims: each shard is written only where no object has its key
 * (If-None-Match: *, on the PUT or the multipart Complete), and an object
 * found there is read back: the same bytes (a retried task, a re-run) are
 * success, other bytes SHARDPIPE_ERR_EXISTS naming the shard (another
 * writer's, an overlapping box, even one written earlier), returned by
 * the write that finds it or by close; nothing is replaced
 * (doc/design.md §30.4).  stats.rows_written counts rows of the box whose
 * shards are all written.
 */
SHARDPIPE_API int shardpipe_stream_open_region(shardpipe_stream **out,
					       const char *path,
					       const shardpipe_desc *desc,
					       const uint64_t *lo,
					       const uint64_t *hi);

/*
 * Write (atomically) the zarr.json of the array *desc describes at path,
 * advertising `rows` rows of dim 0 (for a bounded array, rows =
 * dims[0].size is the "finalize" step), with desc's attributes.  Called
 * by ONE process (the Dask client, MPI rank 0) after every region writer
 * covering those rows has closed successfully or written them.  An existing zarr.json of
 * the same array is replaced (a re-run is an identical rewrite); one of a
 * different array -> SHARDPIPE_ERR_EXISTS; rows beyond a bounded dim 0
 * -> SHARDPIPE_ERR_INVALID_ARGUMENT; an ordinary stream writing path,
 * or a region writer still open that has not written its shards of
 * those rows -> SHARDPIPE_ERR_BUSY (a killed writer's claim is
 * removed).  An image writes every level's zarr.json (level L
 * advertising rows halved, rounding up, as often as dim 0 halved) and then
 * the group's, with the same checks on each; while a region writer of
 * the image is still open, only rows below its box can be published.
 * On S3 ("s3://BUCKET/PREFIX") the same checks, then one PUT of
 * zarr.json; nothing tells it whether every writer closed: the caller's
 * order does.
 */
SHARDPIPE_API int shardpipe_array_publish(const char *path,
					  const shardpipe_desc *desc,
					  uint64_t rows);

/*
 * Set the array fields of *desc (as shardpipe_stream_reopen() takes
 * them: rank, dims with dims[0].size 0, dtype, codec and its settings,
 * index_location, fill_value and dimension names; for an image also its
 * pyramid: downsample, method, append_method, max_levels, ngff,
 * axis_type, unit and scale, and its frame_fields and n_frame_fields,
 * "skipped" left out) from the array or image at path, and *rows,
 * when rows is not NULL, to the rows its zarr.json advertises (an
 * image's level 0's).  The dimension names, units and frame fields point
 * into storage
 * of the library's that lives until the next call of this function on
 * the same thread.  Other fields are left as they are; nothing is
 * written.  When desc->storage_order, set by the caller, stores the
 * append dim as storage dim a, the rows run along dim a: dims[a].size is
 * 0, dims[0].size the store's size, and *rows its size along dim a.
 * Refused as shardpipe_stream_reopen() refuses a store, *desc untouched
 * then.
 */
SHARDPIPE_API int shardpipe_desc_from_store(shardpipe_desc *desc,
					    const char *path, uint64_t *rows);

/* As shardpipe_stream_open(), delivering shards to *sink, which
 * shardpipe_sink_init() initialised and which names a shard, shard_parts
 * or object callback.  The sink struct is copied. */
SHARDPIPE_API int shardpipe_stream_open_sink(shardpipe_stream **out,
					     const shardpipe_sink *sink,
					     const shardpipe_desc *desc);

/*
 * Append nbytes of array data, continuing where the previous append ended.
 * Spans may have any size and alignment; the bytes are copied before the
 * call returns.  Appending beyond a bounded dim 0 writes what fits, then
 * returns SHARDPIPE_ERR_BEYOND_END (everything before stays valid and the
 * stream can still be closed).  data == NULL with nbytes > 0 is refused
 * with SHARDPIPE_ERR_INVALID_ARGUMENT and consumes nothing, without
 * failing the stream.  Any other failure is sticky: every later call
 * returns the same code.
 */
SHARDPIPE_API int shardpipe_stream_append(shardpipe_stream *s,
					  const void *data, size_t nbytes);

/*
 * Advance the stream by nbytes of fill value, as if that many bytes of
 * elements equal to desc->fill_value had been appended (a dropped frame,
 * a hole), without the caller building them.  nbytes and the bytes
 * appended so far must both be multiples of the element size, otherwise
 * SHARDPIPE_ERR_INVALID_ARGUMENT, consuming nothing and not failing the
 * stream.  Past a bounded dim 0, and on any other failure, as
 * shardpipe_stream_append().  Chunks left all fill value are not stored
 * unless desc->write_empty_chunks is set.
 */
SHARDPIPE_API int shardpipe_stream_skip(shardpipe_stream *s, uint64_t nbytes);

/*
 * Append whole frames (rows of dim 0) with their metadata: nbytes a
 * multiple of one row's bytes, values k * n_frame_fields values for the
 * k rows, row by row, each row's in the order of desc->frame_fields.
 * The stream must be at a row boundary.  Refused before anything is
 * appended, SHARDPIPE_ERR_INVALID_ARGUMENT naming the row and field, for
 * a bool other than 0 or 1, a partial row, a stream with no fields; the
 * values are written beside the rows, advertised in the same zarr.json
 * update as the image's rows and never ahead of them.  A skip
 * (shardpipe_stream_skip) gives each row it completes the fill values
 * (NaN, 0, false) and "skipped" true.  Past a bounded dim 0, and on any
 * other failure, as shardpipe_stream_append().
 */
SHARDPIPE_API int shardpipe_stream_append_meta(shardpipe_stream *s,
					       const void *data, size_t nbytes,
					       const shardpipe_frame_value *values);

/* Bounds on user attributes: the bytes all of an array's attributes may
 * add to zarr.json (keys quoted, values as given, with their separators),
 * and how deeply one value may nest arrays and objects. */
#define SHARDPIPE_MAX_ATTRIBUTES_BYTES (1u << 20)
#define SHARDPIPE_MAX_ATTRIBUTE_DEPTH 32

/*
 * Set the user attribute `key` of the array to `json`, the text of one
 * JSON value (RFC 8259: an object, array, string, number, true, false or
 * null, in UTF-8), replacing an earlier value of the same key; json NULL
 * removes the key.  Attributes go into the "attributes" object of
 * zarr.json, in the order their keys were first set, with the next
 * metadata update: when the next shard epoch's shards are written, at
 * shardpipe_stream_flush() (which publishes them at once), or at close.
 * (Attributes known before the stream opens belong in desc->attributes,
 * checked at open and in zarr.json from the start.)
 * The text is written as given, only the whitespace around it trimmed,
 * so numbers keep every digit.  The key may be any non-empty UTF-8
 * string; quotes, backslashes and control characters are escaped in
 * zarr.json.  The key "ome" is reserved for the library's OME-NGFF
 * metadata.
 *
 * Refused with SHARDPIPE_ERR_INVALID_ARGUMENT, leaving the attributes
 * unchanged and the stream usable (shardpipe_stream_message() names the
 * key and the fault): a NULL or empty key, the key "ome", a key or text
 * that is not well-formed UTF-8, text that is not exactly one JSON value
 * (the message gives the byte offset), a value nested deeper than
 * SHARDPIPE_MAX_ATTRIBUTE_DEPTH, attributes that would exceed
 * SHARDPIPE_MAX_ATTRIBUTES_BYTES.  On a stream that has failed, the
 * stream's error.  The stream must not have been closed (close frees it).
 */
SHARDPIPE_API int shardpipe_stream_set_attribute(shardpipe_stream *s,
						 const char *key,
						 const char *json);

/* Write every shard whose chunks are all complete, then zarr.json. */
SHARDPIPE_API int shardpipe_stream_flush(shardpipe_stream *s);

/*
 * Write the partial last shard epoch (chunks padded with the fill value),
 * the final zarr.json, and release the stream.  Returns the stream's first
 * error if it had one.  Always frees s; s may be NULL.
 */
SHARDPIPE_API int shardpipe_stream_close(shardpipe_stream *s);

/* Counters of a stream so far. */
typedef struct shardpipe_stats {
	size_t struct_size;       /* bytes the library filled */
	uint64_t bytes_in;        /* array bytes appended */
	uint64_t bytes_out;       /* shard bytes written, indexes included */
	uint64_t shards_written;
	uint64_t chunks_written;
	uint64_t rows_written;    /* dim 0 rows covered by written shards */
	/* Seconds spent in each stage, summed over batches (stages that
	 * overlap are each counted in full). */
	double seconds_stage;     /* copying appended spans into batches */
	double seconds_scatter;
	double seconds_compress;
	double seconds_aggregate; /* aggregate and fetch */
	double seconds_write;     /* shard index, serialization, store */
	uint64_t pool_bytes;      /* memory planned for staging and pools */
	/* Appends and skips that waited for the pipeline (a free staging
	 * buffer, room in its queue, or a batch scattered from the
	 * caller's span), and the seconds they waited in all. */
	uint64_t appends_blocked;
	double seconds_blocked;
	/* Of bytes_in, those copied into staging; the rest (spans of whole
	 * batches or, on cpu, whole epochs, arriving while the pipeline is
	 * busy) were read straight from the caller's memory. */
	uint64_t bytes_staged;
} shardpipe_stats;

/*
 * Fill *out with the stream's counters.  A macro: it passes sizeof(*out) to
 * shardpipe_stream_stats_sized(), which writes only the fields that lie
 * inside that size and sets out->struct_size to the bytes written.
 * SHARDPIPE_ERR_INVALID_ARGUMENT, *out untouched, when s or out is NULL or
 * the size cannot hold struct_size.
 */
SHARDPIPE_API int shardpipe_stream_stats_sized(const shardpipe_stream *s,
					       shardpipe_stats *out,
					       size_t size);
#define shardpipe_stream_stats(s, out) \
	shardpipe_stream_stats_sized((s), (out), sizeof(*(out)))

/* The backend a stream runs on ("cpu", "opencl", ...). */
SHARDPIPE_API const char *shardpipe_stream_backend(const shardpipe_stream *s);

/*
 * The message of the stream's last error, naming the dimension, value or
 * file at fault ("" if none).  Valid until the next call on s.
 */
SHARDPIPE_API const char *shardpipe_stream_message(const shardpipe_stream *s);

/* The message of the last failed open on this thread (thread-local). */
SHARDPIPE_API const char *shardpipe_last_error_message(void);

/* A static English sentence for an error code. */
SHARDPIPE_API const char *shardpipe_strerror(int code);

/* "MAJOR.MINOR.PATCH" of the library actually loaded. */
SHARDPIPE_API const char *shardpipe_version(void);

/* Names and conversions used by the command-line tool and bindings. */
SHARDPIPE_API const char *shardpipe_dtype_name(shardpipe_dtype t);
SHARDPIPE_API int shardpipe_dtype_from_name(const char *name,
					    shardpipe_dtype *out);
SHARDPIPE_API size_t shardpipe_dtype_size(shardpipe_dtype t);
SHARDPIPE_API const char *shardpipe_codec_name(shardpipe_codec c);

/*
 * Backends.  Index i in 0..shardpipe_backend_count()-1.  usable is set to 1
 * when the backend can run here; detail then names its device, otherwise it
 * says why not.  Probing may load a plugin.
 */
typedef struct shardpipe_backend_info {
	size_t struct_size;  /* bytes the library filled */
	const char *name;
	int usable;
	int gpu;          /* the device is a GPU ("auto" prefers those) */
	char detail[256];
} shardpipe_backend_info;

SHARDPIPE_API int shardpipe_backend_count(void);
/*
 * Fill *out for backend i.  A macro passing sizeof(*out), like
 * shardpipe_stream_stats(): only the fields inside that size are written.
 * SHARDPIPE_ERR_INVALID_ARGUMENT when i is out of range, out is NULL or the
 * size cannot hold struct_size.
 */
SHARDPIPE_API int shardpipe_backend_probe_sized(int i,
						shardpipe_backend_info *out,
						size_t size);
#define shardpipe_backend_probe(i, out) \
	shardpipe_backend_probe_sized((i), (out), sizeof(*(out)))

/*
 * Groups: several arrays under one Zarr v3 group (a directory whose
 * zarr.json says "node_type": "group"), each array a child directory
 * written by its own stream, and all of a group's streams sharing one
 * set of worker threads (shardpipe(3), "Groups").  Filesystem stores
 * only: an "s3://" path is refused with SHARDPIPE_ERR_UNSUPPORTED.
 */
typedef struct shardpipe_group shardpipe_group;

/*
 * Make a new, empty group at directory `path` (created if missing; an
 * empty directory is taken): its zarr.json is written and made durable
 * (fsync of the file and the directory) before the call returns.  A path
 * that holds a store (a zarr.json) is refused with SHARDPIPE_ERR_EXISTS,
 * a directory holding other files likewise, an unusable path as
 * shardpipe_stream_open() refuses it; nothing is written then.  threads:
 * the worker threads the group's streams share, 0 = every core, at most
 * SHARDPIPE_MAX_THREADS (SHARDPIPE_ERR_INVALID_ARGUMENT otherwise).  On
 * failure *out is NULL and shardpipe_last_error_message() says why.
 */
SHARDPIPE_API int shardpipe_group_create(shardpipe_group **out,
					 const char *path, int threads);

/*
 * Open the existing group at `path`, to add or replace arrays and to list
 * them.  SHARDPIPE_ERR_PATH when path has no zarr.json or its zarr.json
 * is not a Zarr v3 group (an array, say); threads as in
 * shardpipe_group_create().  Nothing is written.
 */
SHARDPIPE_API int shardpipe_group_open(shardpipe_group **out,
				       const char *path, int threads);

/*
 * Open a stream writing the array `name` of group g, at path/name, as
 * shardpipe_stream_open() would, except that desc->threads is replaced
 * by the group's threads: on "cpu" the stream compresses on the group's
 * shared threads, taking turns with the group's other streams batch by
 * batch (the kernel backends use their device as before).  name is a
 * Zarr node name: 1 to 255 bytes of a-z, A-Z, 0-9, '-', '_', '.', not
 * starting with '.' or "__"; another is refused with SHARDPIPE_ERR_NAME.
 * An array already there is refused with SHARDPIPE_ERR_EXISTS unless
 * desc->overwrite is set, which replaces that array only (its zarr.json
 * and chunk tree); a child that is a group, or a directory of files
 * that is no array, is refused with or without overwrite.
 *
 * The streams are ordinary streams: each is used by one thread at a
 * time, distinct streams from different threads at once, and each is
 * closed by shardpipe_stream_close(), before or after the group.  Calls
 * on one group must not run concurrently.
 */
SHARDPIPE_API int shardpipe_group_stream(shardpipe_stream **out,
					 shardpipe_group *g, const char *name,
					 const shardpipe_desc *desc);

/* The arrays the group held when it was opened (children whose zarr.json
 * declares an array), sorted by name; arrays opened since are not listed.
 * shardpipe_group_array_name() returns NULL when i is out of range; the
 * name lives as long as g. */
SHARDPIPE_API size_t shardpipe_group_array_count(const shardpipe_group *g);
SHARDPIPE_API const char *shardpipe_group_array_name(const shardpipe_group *g,
						     size_t i);

/* Release the group.  Streams it opened stay usable: the shared threads
 * stop when the last of them is closed.  g may be NULL. */
SHARDPIPE_API void shardpipe_group_close(shardpipe_group *g);

/*
 * High-content screening plates (OME-NGFF 0.5 "plate" and "well"; see
 * "Plates" in shardpipe(3)): a group whose zarr.json describes the
 * plate's rows, columns, fields per well and acquisitions, a group per
 * row (path/A) and per well (path/A/1) whose zarr.json lists the well's
 * fields, and each field of view an OME-NGFF image (path/A/1/0, one
 * level or a pyramid) written by a stream.  The plate lists a well, and
 * a well a field, once the field's image exists, so a plate is valid
 * for readers from its first field on, whatever the order fields are
 * written in; a well no field is written to stays out of the plate's
 * "wells" (the spec has no well without images).  Directories only.
 */
typedef struct shardpipe_plate shardpipe_plate;

typedef struct shardpipe_plate_desc {
	size_t struct_size;          /* set by shardpipe_plate_desc_init() */
	/* Row and column names, nrows and ncolumns >= 1 of them: 1 to 255
	 * of A-Z a-z 0-9 each, distinct within rows and within columns. */
	const char *const *rows;
	size_t nrows;
	const char *const *columns;
	size_t ncolumns;
	int field_count;             /* fields per well at most; default 1 */
	const char *name;            /* the plate's name; NULL: "plate" */
	/* The acquisitions' names (UTF-8), acquisition i having id i;
	 * default NULL, 0: none. */
	const char *const *acquisitions;
	size_t nacquisitions;
} shardpipe_plate_desc;

/* Fill *desc with defaults: no rows or columns (the caller sets them),
 * field_count 1, name NULL, no acquisitions. */
SHARDPIPE_API void shardpipe_plate_desc_init_sized(shardpipe_plate_desc *desc,
						   size_t size);
#define shardpipe_plate_desc_init(desc) \
	shardpipe_plate_desc_init_sized((desc), sizeof(*(desc)))

/*
 * Make a new plate at directory `path` (created if missing; an empty
 * directory is taken), its zarr.json written durably.  Refused before
 * anything is written: no rows or columns, a name that is not
 * alphanumeric or is repeated (SHARDPIPE_ERR_NAME), field_count below 1,
 * a plate or acquisition name that is not UTF-8
 * (SHARDPIPE_ERR_INVALID_ARGUMENT); a path holding a store or other
 * files as shardpipe_group_create() refuses it.  threads as there.
 */
SHARDPIPE_API int shardpipe_plate_create(shardpipe_plate **out,
					 const char *path,
					 const shardpipe_plate_desc *desc,
					 int threads);

/* Open the plate at `path` to write more fields: SHARDPIPE_ERR_PATH when
 * its zarr.json holds no OME-NGFF 0.5 plate with a field_count.  Nothing
 * is written. */
SHARDPIPE_API int shardpipe_plate_open(shardpipe_plate **out,
				       const char *path, int threads);

/*
 * Open a stream writing field `field` (0 .. field_count - 1) of the well
 * at row `row` and column `column`, an OME-NGFF image at path/ROW/COL/F
 * (desc->ngff is taken as set; desc->downsample makes it a pyramid),
 * on the plate's shared threads as shardpipe_group_stream() does.
 * acquisition: an id of the plate's acquisitions, or -1 for none.  The
 * row's and the well's groups are made when absent, and the well's and
 * the plate's zarr.json list the field and its well once the image's
 * first zarr.json is written, before this returns.  Refused before
 * anything is written: a row or column not in the plate
 * (SHARDPIPE_ERR_NAME), a field or acquisition out of range
 * (SHARDPIPE_ERR_INVALID_ARGUMENT), a field written before
 * (SHARDPIPE_ERR_EXISTS, desc->overwrite notwithstanding), a row or well
 * path holding something that is no row or well group
 * (SHARDPIPE_ERR_EXISTS), and whatever shardpipe_stream_open() refuses.
 * Calls on one plate may run from several threads at once, and fields
 * of one plate may be opened by several processes at once: the plate's
 * metadata is rewritten under a lock on its directory.
 */
SHARDPIPE_API int shardpipe_plate_field(shardpipe_stream **out,
					shardpipe_plate *p, const char *row,
					const char *column, int field,
					int acquisition,
					const shardpipe_desc *desc);

/* Release the plate; its streams stay usable, as a group's.  p may be
 * NULL. */
SHARDPIPE_API void shardpipe_plate_close(shardpipe_plate *p);

/*
 * Reading.  A reader opens any Zarr v3 array whose chunks use the codecs
 * shardpipe knows (bytes, optionally inside sharding_indexed, with zstd,
 * gzip, blosc (when built with c-blosc) or crc32c), treating every byte of
 * the store as untrusted input.
 */
typedef struct shardpipe_reader shardpipe_reader;

typedef struct shardpipe_array_info {
	size_t struct_size;  /* bytes the library filled */
	int rank;
	uint64_t shape[SHARDPIPE_MAX_RANK];
	uint64_t chunk[SHARDPIPE_MAX_RANK];  /* read chunk (inner chunk) */
	uint64_t shard[SHARDPIPE_MAX_RANK];  /* stored object shape; = chunk
					       * when unsharded */
	shardpipe_dtype dtype;
	char dim_names[SHARDPIPE_MAX_RANK][64];
	/* An OME-NGFF image opened at its group (see "Pyramids" in
	 * shardpipe(3)): the number of its levels, of which the reader
	 * reads level 0 (the fields above are level 0's); 0 for an array
	 * opened directly.  levels_recomputed: shardpipe_reader_check()
	 * recomputed every level from the one below it (the image's method
	 * is one shardpipe knows). */
	int levels;
	int levels_recomputed;
} shardpipe_array_info;

/* Open the array at directory `path`, or at "s3://BUCKET/PREFIX" (read
 * with ranged GETs), or, when path is an OME-NGFF image's group, its
 * level 0 (shardpipe_array_info.levels says how many there are; "path/1"
 * opens level 1 of one written by shardpipe).  On failure *out is NULL
 * and shardpipe_last_error_message() says why. */
SHARDPIPE_API int shardpipe_reader_open(shardpipe_reader **out,
					const char *path);
/*
 * Fill *out with the array's shape, chunking and names.  A macro passing
 * sizeof(*out), like shardpipe_stream_stats(): only the fields inside
 * that size are written.  SHARDPIPE_ERR_INVALID_ARGUMENT when r or out is
 * NULL or the size cannot hold struct_size.
 */
SHARDPIPE_API int shardpipe_reader_info_sized(const shardpipe_reader *r,
					      shardpipe_array_info *out,
					      size_t size);
#define shardpipe_reader_info(r, out) \
	shardpipe_reader_info_sized((r), (out), sizeof(*(out)))

/*
 * Read the hyper-rectangle [start, start+count) into out (row-major, native
 * byte order), which holds out_bytes bytes.  The region's size,
 * prod(count) * element size, must fit: SHARDPIPE_ERR_OVERFLOW when that
 * product overflows, SHARDPIPE_ERR_INVALID_ARGUMENT when it exceeds
 * out_bytes; nothing is written then.  Missing chunks read as the fill
 * value.  Every index, CRC32C and decoded size is checked.
 */
SHARDPIPE_API int shardpipe_reader_read(shardpipe_reader *r,
					const uint64_t *start,
					const uint64_t *count, void *out,
					size_t out_bytes);

/*
 * Read the elements start[d] + k * step[d], k < count[d], of every dim d
 * (step NULL: every step 1; each step at least 1, the last element
 * inside the extent) into out, element (k0, k1, ...) at byte
 * sum(k[d] * out_stride[d]) (out_stride NULL: packed row-major, as
 * shardpipe_reader_read() writes).  Strides are bytes, not negative, and
 * place no two elements on the same byte (a view of a NumPy array's
 * buffer, in any order of its dims); every byte written lies inside
 * out_bytes, else SHARDPIPE_ERR_INVALID_ARGUMENT before anything is
 * read.  Only the chunks holding selected elements are read (a step
 * longer than a chunk passes over the chunks between), each decoded on
 * one of the reader's threads, straight into out when it is a contiguous
 * part of it.  On failure out holds what was decoded by then.
 */
SHARDPIPE_API int shardpipe_reader_read_strided(shardpipe_reader *r,
						const uint64_t *start,
						const uint64_t *count,
						const uint64_t *step, void *out,
						const int64_t *out_stride,
						size_t out_bytes);

/*
 * Decode on `threads` threads, the caller's among them (0, the default:
 * one per core; at most 4096).  A reader is used by one thread at a
 * time; its own threads start at the first read with more than one chunk
 * to decode and stop when it is closed.
 */
SHARDPIPE_API int shardpipe_reader_set_threads(shardpipe_reader *r,
					       int threads);

/* What a reader fetched from its store since it was opened: every
 * shard index and chunk read (bytes and requests: ranged GETs on S3),
 * and the chunks decoded. */
typedef struct shardpipe_read_stats {
	size_t struct_size;  /* bytes the library filled */
	uint64_t bytes_read;
	uint64_t requests;
	uint64_t chunks_decoded;
} shardpipe_read_stats;

SHARDPIPE_API int shardpipe_reader_stats_sized(const shardpipe_reader *r,
					       shardpipe_read_stats *out,
					       size_t size);
#define shardpipe_reader_stats(r, out) \
	shardpipe_reader_stats_sized((r), (out), sizeof(*(out)))

/*
 * Check every stored object: index CRCs, index bounds, every chunk decodes
 * to its exact size.  Stops at the first fault; the message names the shard
 * and chunk.  A reader opened at an OME-NGFF image's group checks every
 * level so, and, when the image's "type" is a shardpipe_method, each level
 * above 0 against the level below it reduced by that method (recomputed
 * by the reader, element by element): a difference is
 * SHARDPIPE_ERR_CORRUPT, naming the level, the element and both values.
 */
SHARDPIPE_API int shardpipe_reader_check(shardpipe_reader *r);

SHARDPIPE_API const char *shardpipe_reader_message(const shardpipe_reader *r);
SHARDPIPE_API void shardpipe_reader_close(shardpipe_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* SHARDPIPE_H */
