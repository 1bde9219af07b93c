/* options.c - parsing shared by the subcommands. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("shardpipe: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_exit_status(int rc)
{
	switch (rc) {
	case SHARDPIPE_OK:
		return CLI_EXIT_OK;
	case SHARDPIPE_ERR_UNSUPPORTED:
		return CLI_EXIT_UNSUPPORTED;
	case SHARDPIPE_ERR_NOMEM:
	case SHARDPIPE_ERR_IO:
	case SHARDPIPE_ERR_NOSPACE:
	case SHARDPIPE_ERR_ACCESS:
	case SHARDPIPE_ERR_CLOSED:
	case SHARDPIPE_ERR_SINK:
	case SHARDPIPE_ERR_DEVICE:
	case SHARDPIPE_ERR_CODEC_FAILED:
	case SHARDPIPE_ERR_FORMAT:
	case SHARDPIPE_ERR_CORRUPT:
	case SHARDPIPE_ERR_ABI:
	case SHARDPIPE_ERR_BUSY:
		return CLI_EXIT_FAIL;
	default:
		return CLI_EXIT_USAGE;
	}
}

/*
 * The len digits at s as a number no larger than max: 0, or -1 after
 * saying what is wrong with them ("is not a number", "is above MAX").
 * strtoull alone would take a sign and leading spaces and wrap a
 * negative number around.
 */
static int digits(const char *opt, const char *what, const char *s,
		  size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0) {
		cli_error("%s: %s is empty; give a number", opt, what);
		return -1;
	}
	for (size_t k = 0; k < len; k++) {
		if (s[k] < '0' || s[k] > '9') {
			cli_error("%s: %s \"%.*s\" is not a number (decimal "
				  "digits only: no sign, space or unit)", opt,
				  what, (int)len, s);
			return -1;
		}
		if (!cli_mul_ok(v, 10, &v) || v + (uint64_t)(s[k] - '0') < v ||
		    v + (uint64_t)(s[k] - '0') > max) {
			cli_error("%s: %s \"%.*s\" is above %llu", opt, what,
				  (int)len, s, (unsigned long long)max);
			return -1;
		}
		v += (uint64_t)(s[k] - '0');
	}
	*out = v;
	return 0;
}

int cli_parse_u64(const char *opt, const char *s, uint64_t max,
		  uint64_t *out)
{
	return digits(opt, "value", s, strlen(s), max, out);
}

int cli_parse_list(const char *opt, const char *list, uint64_t *out)
{
	const char *s = list;
	int n = 0;

	for (;;) {
		size_t len = strcspn(s, ",");
		char what[32];

		if (n == SHARDPIPE_MAX_RANK) {
			cli_error("%s: \"%s\" lists more than %d sizes", opt,
				  list, SHARDPIPE_MAX_RANK);
			return -1;
		}
		snprintf(what, sizeof(what), "entry %d", n + 1);
		if (digits(opt, what, s, len, UINT64_MAX, &out[n]) != 0)
			return -1;
		n++;
		if (s[len] == '\0')
			return n;
		s += len + 1;
	}
}

void cli_seen_init(struct cli_seen *seen, const char *cmd)
{
	memset(seen, 0, sizeof(*seen));
	seen->cmd = cmd;
}

int cli_once(struct cli_seen *seen, const char *opt, const char *val)
{
	for (int k = 0; k < seen->n; k++) {
		if (strcmp(seen->opt[k], opt) != 0)
			continue;
		if (val != NULL)
			cli_error("%s: %s given twice (\"%s\" and \"%s\"); "
				  "give it once", seen->cmd, opt, seen->val[k],
				  val);
		else
			cli_error("%s: %s given twice; give it once",
				  seen->cmd, opt);
		return -1;
	}
	if (seen->n < CLI_MAX_OPTS) {
		seen->opt[seen->n] = opt;
		seen->val[seen->n++] = val;
	}
	return 0;
}

int cli_flag(struct cli_seen *seen, const char *arg,
	     const char *const *names, int *const *slots, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (strcmp(arg, names[k]) != 0)
			continue;
		if (cli_once(seen, arg, NULL) != 0)
			return -1;
		*slots[k] = 1;
		return 1;
	}
	return 0;
}

int cli_value(const struct cli_seen *seen, int argc, char **argv, int *i,
	      const char **val)
{
	const char *opt = argv[*i];

	if (*i + 1 >= argc) {
		cli_error("%s: %s needs a value", seen->cmd, opt);
		return -1;
	}
	/* "--input --quiet" forgot the value; no value starts so. */
	if (strncmp(argv[*i + 1], "--", 2) == 0) {
		cli_error("%s: %s needs a value, not the option %s", seen->cmd,
			  opt, argv[*i + 1]);
		return -1;
	}
	*val = argv[++*i];
	return 0;
}

int cli_take(struct cli_seen *seen, int argc, char **argv, int *i,
	     const char **val)
{
	const char *opt = argv[*i];

	if (cli_value(seen, argc, argv, i, val) != 0)
		return -1;
	return cli_once(seen, opt, *val);
}

int cli_take_u64(struct cli_seen *seen, int argc, char **argv, int *i,
		 uint64_t max, uint64_t *out)
{
	const char *opt = argv[*i], *val;

	if (cli_take(seen, argc, argv, i, &val) != 0)
		return -1;
	return cli_parse_u64(opt, val, max, out);
}

int cli_parse_codec(const char *s, shardpipe_desc *desc)
{
	/* The grammar and its messages are the library's, shared with the
	 * bindings. */
	if (shardpipe_desc_set_codec(desc, s) == SHARDPIPE_OK)
		return 0;
	cli_error("--codec: %s", shardpipe_last_error_message());
	return -1;
}

static const char *const desc_opts[] = {
	"--shape", "--chunk", "--shard", "--names", "--dtype", "--codec",
	"--index-location", "--backend", "--shard-shape", "--chunks-per-shard",
	"--fill-value", "--storage-order", "--threads",
};

int cli_desc_option(struct cli_desc_opts *o, int argc, char **argv, int *i)
{
	const char *arg = argv[*i];
	const char **slots[] = {
		&o->shape, &o->chunk, &o->shard, &o->names, &o->dtype,
		&o->codec, &o->index_location, &o->backend, &o->shard_shape,
		&o->chunks_per_shard, &o->fill_value, &o->storage_order, NULL,
	};
	const char *const flags[] = {
		"--overwrite", "--write-empty-chunks", "--durable",
	};
	int *const flag_slots[] = {
		&o->overwrite, &o->write_empty_chunks, &o->durable,
	};
	int r = cli_flag(&o->seen, arg, flags, flag_slots, CLI_NFLAGS(flags));

	if (r != 0)
		return r;
	for (size_t k = 0; k < sizeof(desc_opts) / sizeof(desc_opts[0]); k++) {
		uint64_t threads;

		if (strcmp(arg, desc_opts[k]) != 0)
			continue;
		if (slots[k] != NULL)
			return cli_take(&o->seen, argc, argv, i, slots[k]) == 0
				       ? 1 : -1;
		if (cli_take_u64(&o->seen, argc, argv, i,
				 SHARDPIPE_MAX_THREADS, &threads) != 0)
			return -1;
		o->threads = (int)threads;
		return 1;
	}
	return 0;
}

/*
 * Whether --shard's chunk counts look like a shard shape in elements: the
 * shard exceeds every bounded dim by more than a chunk (with dim 0
 * unbounded and no other dim bounded, nothing can be told).
 */
static int shard_mistaken(int rank, const uint64_t *shape,
			  const uint64_t *chunk, const uint64_t *cps)
{
	int bounded = 0;

	for (int d = 0; d < rank; d++) {
		uint64_t elems;

		if (shape[d] == 0)
			continue;
		bounded = 1;
		if (!__builtin_mul_overflow(chunk[d], cps[d], &elems) &&
		    elems <= shape[d] + chunk[d])
			return 0;
	}
	return bounded;
}

void cli_shard_warnings(const shardpipe_desc *desc)
{
	double raw = (double)shardpipe_dtype_size(desc->dtype), data = raw;
	double entries = 1;
	uint64_t chunk_bytes = shardpipe_dtype_size(desc->dtype);

	/* A chunk whose size overflows is the library's to refuse; warning
	 * about its shards first would only confuse. */
	for (int d = 0; d < desc->rank; d++)
		if (__builtin_mul_overflow(chunk_bytes, desc->dims[d].chunk,
					   &chunk_bytes))
			return;
	for (int d = 0; d < desc->rank; d++) {
		const shardpipe_dim *m = &desc->dims[d];
		double elems = (double)m->chunk * (double)m->chunks_per_shard;
		double used = elems;

		/* Chunks past a bounded edge are never written. */
		if (m->size != 0 && m->chunk != 0) {
			double edge = (double)((m->size + m->chunk - 1) /
					       m->chunk) * (double)m->chunk;

			if (edge < used)
				used = edge;
		}
		raw *= elems;
		data *= used;
		entries *= (double)m->chunks_per_shard;
	}
	if (raw > 2.0 * (1u << 30))
		fprintf(stderr, "shardpipe: warning: one shard spans %.1f GiB "
			"of array (over 2 GiB); many readers and file systems "
			"handle smaller shards better\n", raw / (1u << 30));
	if (16 * entries + 4 > data)
		fprintf(stderr, "shardpipe: warning: each shard index "
			"(%.0f bytes, 16 per chunk slot) is larger than the "
			"data it indexes (at most %.0f bytes); fewer chunks per "
			"shard would keep it small\n", 16 * entries + 4, data);
}

/* IEEE binary16 nearest to x (ties to even), x finite and below 65520 in
 * magnitude. */
static uint16_t half_bits(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x);
	int e;

	if (a < ldexp(1, -14))
		return sign | (uint16_t)nearbyint(ldexp(a, 24));
	frexp(a, &e);
	e -= 1;
	/* A mantissa rounding up carries into the exponent by itself. */
	return sign | (uint16_t)(((unsigned)(e + 15) << 10) +
				 (unsigned)nearbyint((ldexp(a, -e) - 1) * 1024));
}

/* The low n bytes of v as an n-byte integer in the host's order. */
static void put_native(unsigned char *dst, uint64_t v, size_t n)
{
	const uint16_t one = 1;
	int little = *(const unsigned char *)&one;

	for (size_t i = 0; i < n; i++)
		dst[little ? i : n - 1 - i] = (unsigned char)(v >> (8 * i));
}

/*
 * Parse a --fill-value for desc->dtype into desc->fill_value: true/false
 * (or 1/0) for bool, a decimal integer in the type's range, or for floats
 * a decimal number, nan, inf, -inf, or "0x" and 2 * size hex digits: the
 * bit pattern, Zarr's form of a NaN with a payload (doc/design.md §22.1),
 * so that a value zarr.json shows can be given back.  strtod's own hex
 * floats ("0x1p3") and "nan(...)" are refused: in Zarr "0x" means bits,
 * and the two readings of one string must not differ silently.  Returns
 * 0 or -1.
 */
static int parse_fill(const char *s, shardpipe_desc *desc)
{
	size_t n = shardpipe_dtype_size(desc->dtype);
	char *end;

	errno = 0;
	/* strtoll and strtod would skip leading spaces and take a '+'. */
	if (*s == '\0' || *s == '+' || isspace((unsigned char)*s))
		return -1;
	if (desc->dtype > SHARDPIPE_DTYPE_BOOL &&
	    desc->dtype <= SHARDPIPE_DTYPE_UINT64 &&
	    strspn(s + (*s == '-'), "0123456789") != strlen(s + (*s == '-')))
		return -1;
	if (desc->dtype == SHARDPIPE_DTYPE_BOOL) {
		int v = strcmp(s, "true") == 0 || strcmp(s, "1") == 0;

		if (!v && strcmp(s, "false") != 0 && strcmp(s, "0") != 0)
			return -1;
		desc->fill_value[0] = (unsigned char)v;
	} else if (desc->dtype <= SHARDPIPE_DTYPE_INT64) {
		long long v = strtoll(s, &end, 10);
		long long hi = n == 8 ? LLONG_MAX : (1ll << (8 * n - 1)) - 1;

		if (errno != 0 || *end != '\0' || v > hi || v < -hi - 1)
			return -1;
		put_native(desc->fill_value, (uint64_t)v, n);
	} else if (desc->dtype <= SHARDPIPE_DTYPE_UINT64) {
		unsigned long long v;
		unsigned long long hi = n == 8 ? ULLONG_MAX
					       : (1ull << (8 * n)) - 1;

		if (*s == '-')
			return -1;
		v = strtoull(s, &end, 10);
		if (errno != 0 || *end != '\0' || v > hi)
			return -1;
		put_native(desc->fill_value, v, n);
	} else if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		unsigned long long v;

		if (strlen(s + 2) != 2 * n ||
		    strspn(s + 2, "0123456789abcdefABCDEF") != 2 * n)
			return -1;
		v = strtoull(s + 2, &end, 16);
		put_native(desc->fill_value, v, n);
	} else {
		double x;

		if (strpbrk(s, "xX(") != NULL)
			return -1;
		x = strtod(s, &end);
		if (*end != '\0' || (errno == ERANGE && isinf(x)))
			return -1;
		if (desc->dtype == SHARDPIPE_DTYPE_FLOAT64) {
			memcpy(desc->fill_value, &x, 8);
		} else if (desc->dtype == SHARDPIPE_DTYPE_FLOAT32) {
			float f = (float)x;

			if (isinf(f) && !isinf(x))
				return -1;
			memcpy(desc->fill_value, &f, 4);
		} else {
			uint16_t h;

			if (isnan(x))
				h = 0x7e00;
			else if (isinf(x))
				h = x < 0 ? 0xfc00 : 0x7c00;
			else if (fabs(x) >= 65520.0)
				return -1;
			else
				h = half_bits(x);
			memcpy(desc->fill_value, &h, 2);
		}
	}
	return 0;
}

int cli_append_dim(const shardpipe_desc *desc)
{
	/* All zero is the identity: the first entry, 0, says so too. */
	for (int d = 0; d < desc->rank; d++)
		if (desc->storage_order[d] == 0)
			return d;
	return 0;
}

/*
 * --storage-order I,J,..: for each storage dim, the append dim it holds
 * (design §3.3), one per dim of --shape.  Whether the list is a
 * permutation the library decides and names; a count other than the rank
 * is refused here, where the rank is known.
 */
static int parse_order(const char *s, shardpipe_desc *desc)
{
	uint64_t v[SHARDPIPE_MAX_RANK];
	int n = cli_parse_list("--storage-order", s, v);

	if (n < 0)
		return -1;
	if (n != desc->rank) {
		cli_error("--storage-order: \"%s\" lists %d dims, the array "
			  "has %d", s, n, desc->rank);
		return -1;
	}
	for (int d = 0; d < n; d++) {
		if (v[d] >= (uint64_t)n) {
			/* Counted from 1, as cli_parse_list counts. */
			cli_error("--storage-order: entry %d is %llu, outside "
				  "0..%d", d + 1, (unsigned long long)v[d],
				  n - 1);
			return -1;
		}
		desc->storage_order[d] = (int)v[d];
	}
	return 0;
}

int cli_desc_order(const struct cli_desc_opts *o, shardpipe_desc *desc)
{
	uint64_t v[SHARDPIPE_MAX_RANK];
	int n;

	if (o->storage_order == NULL)
		return CLI_EXIT_OK;
	if ((n = cli_parse_list("--storage-order", o->storage_order, v)) < 0)
		return CLI_EXIT_USAGE;
	/* Checked against the store's rank once it is read
	 * (cli_desc_apply); the library takes none that is no permutation
	 * of it. */
	desc->rank = n;
	for (int d = 0; d < n; d++)
		desc->storage_order[d] = v[d] < (uint64_t)n ? (int)v[d] : -1;
	return CLI_EXIT_OK;
}

int cli_desc_build(const struct cli_desc_opts *o, shardpipe_desc *desc)
{
	shardpipe_desc_init(desc);
	if (o->shape == NULL || o->chunk == NULL) {
		cli_error("--shape and --chunk are required");
		return CLI_EXIT_USAGE;
	}
	return cli_desc_apply(o, desc);
}

int cli_desc_apply(const struct cli_desc_opts *o, shardpipe_desc *desc)
{
	uint64_t shape[SHARDPIPE_MAX_RANK], chunk[SHARDPIPE_MAX_RANK];
	uint64_t shard[SHARDPIPE_MAX_RANK];
	static char names[SHARDPIPE_MAX_RANK][64];
	/* A store's array (write --append): what is not given stays. */
	const int have = desc->rank;
	int rank = have, n;

	for (int d = 0; d < have; d++) {
		shape[d] = desc->dims[d].size;
		chunk[d] = desc->dims[d].chunk;
		shard[d] = desc->dims[d].chunks_per_shard;
	}
	if (o->shape != NULL) {
		rank = cli_parse_list("--shape", o->shape, shape);
		if (rank < 0)
			return CLI_EXIT_USAGE;
		/* The other lists are read against this rank; the store's
		 * would be misread against another. */
		if (have != 0 && rank != have) {
			cli_error("--shape: \"%s\" lists %d sizes; the array "
				  "has %d dims", o->shape, rank, have);
			return CLI_EXIT_USAGE;
		}
	}
	if (o->chunk != NULL) {
		n = cli_parse_list("--chunk", o->chunk, chunk);
		if (n < 0)
			return CLI_EXIT_USAGE;
		if (n != rank && o->shape != NULL) {
			cli_error("--chunk: \"%s\" must list %d sizes, like "
				  "--shape", o->chunk, rank);
			return CLI_EXIT_USAGE;
		}
		if (n != rank) {
			cli_error("--chunk: \"%s\" must list %d sizes, one per "
				  "dim of the array", o->chunk, rank);
			return CLI_EXIT_USAGE;
		}
	}
	if ((o->shard != NULL) + (o->shard_shape != NULL) +
	    (o->chunks_per_shard != NULL) > 1) {
		cli_error("give one of --shard-shape, --chunks-per-shard and "
			  "--shard");
		return CLI_EXIT_USAGE;
	}
	if (o->shard_shape != NULL) {
		n = cli_parse_list("--shard-shape", o->shard_shape, shard);
		if (n < 0)
			return CLI_EXIT_USAGE;
		if (n != rank) {
			cli_error("--shard-shape: \"%s\" must list %d sizes in "
				  "elements, %s", o->shard_shape, rank,
				  o->shape != NULL ? "like --shape"
						   : "one per dim of the array");
			return CLI_EXIT_USAGE;
		}
		for (int d = 0; d < rank; d++) {
			if (chunk[d] == 0)
				break; /* the library names the zero chunk */
			if (shard[d] == 0 || shard[d] % chunk[d] != 0) {
				cli_error("--shard-shape: %llu on dim %d is not "
					  "a multiple of the chunk %llu",
					  (unsigned long long)shard[d], d,
					  (unsigned long long)chunk[d]);
				return CLI_EXIT_USAGE;
			}
			shard[d] /= chunk[d];
		}
	} else if (o->shard != NULL || o->chunks_per_shard != NULL) {
		const char *v = o->shard ? o->shard : o->chunks_per_shard;
		const char *opt = o->shard ? "--shard" : "--chunks-per-shard";

		n = cli_parse_list(opt, v, shard);
		if (n < 0)
			return CLI_EXIT_USAGE;
		if (n != rank) {
			cli_error("%s: \"%s\" must list %d chunk counts", opt,
				  v, rank);
			return CLI_EXIT_USAGE;
		}
	} else if (have == 0) {
		for (int d = 0; d < rank; d++)
			shard[d] = 1;
	}
	if (o->shard != NULL && shard_mistaken(rank, shape, chunk, shard)) {
		cli_error("--shard %s counts chunks per shard, so each shard "
			  "would be far larger than the array on every bounded "
			  "dim; for a shard shape in elements (zarr-python's "
			  "shards=) use --shard-shape %s, or say "
			  "--chunks-per-shard %s if that is meant", o->shard,
			  o->shard, o->shard);
		return CLI_EXIT_USAGE;
	}
	desc->rank = rank;
	for (int d = 0; d < rank; d++) {
		desc->dims[d].size = shape[d];
		desc->dims[d].chunk = chunk[d];
		desc->dims[d].chunks_per_shard = shard[d];
	}
	if (o->names != NULL) {
		const char *s = o->names;

		for (int d = 0; d < rank; d++) {
			size_t len = strcspn(s, ",");

			if (len >= sizeof(names[d])) {
				cli_error("--names: name %d is too long", d);
				return CLI_EXIT_USAGE;
			}
			memcpy(names[d], s, len);
			names[d][len] = '\0';
			desc->dims[d].name = names[d];
			s += len;
			if (*s == ',')
				s++;
			else if (d + 1 < rank) {
				cli_error("--names: \"%s\" names fewer than %d "
					  "dims", o->names, rank);
				return CLI_EXIT_USAGE;
			}
		}
		if (*s != '\0') {
			cli_error("--names: \"%s\" names more than %d dims",
				  o->names, rank);
			return CLI_EXIT_USAGE;
		}
	}
	if (o->dtype != NULL &&
	    shardpipe_dtype_from_name(o->dtype, &desc->dtype) != SHARDPIPE_OK) {
		cli_error("--dtype: unknown data type \"%s\" (bool, int8..int64, "
			  "uint8..uint64, float16, float32, float64)", o->dtype);
		return CLI_EXIT_USAGE;
	}
	if (o->codec != NULL && cli_parse_codec(o->codec, desc) != 0)
		return CLI_EXIT_USAGE;
	if (o->index_location != NULL) {
		if (strcmp(o->index_location, "end") == 0)
			desc->index_location = SHARDPIPE_INDEX_END;
		else if (strcmp(o->index_location, "start") == 0)
			desc->index_location = SHARDPIPE_INDEX_START;
		else {
			cli_error("--index-location: \"%s\" is not start or end",
				  o->index_location);
			return CLI_EXIT_USAGE;
		}
	}
	if (o->backend != NULL)
		desc->backend = o->backend;
	desc->threads = o->threads;
	desc->overwrite = o->overwrite;
	desc->write_empty_chunks = o->write_empty_chunks;
	desc->durable = o->durable;
	if (o->storage_order != NULL && parse_order(o->storage_order, desc) != 0)
		return CLI_EXIT_USAGE;
	if (o->fill_value != NULL && parse_fill(o->fill_value, desc) != 0) {
		cli_error("--fill-value: \"%s\" is not a %s value", o->fill_value,
			  shardpipe_dtype_name(desc->dtype));
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}
