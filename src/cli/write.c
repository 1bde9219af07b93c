/* write.c - shardpipe write: stream raw bytes from a file or stdin. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "closest.h"
#include "bench.h"

static void write_usage(FILE *f)
{
	fprintf(f,
		"usage: shardpipe write --shape S --chunk C [--shard-shape S] "
		"[--dtype T]\n"
		"         [--codec C] [--names A,B,..] [--index-location "
		"start|end]\n"
		"         [--input FILE|-] [--pad-partial] [--allow-short] "
		"[--quiet]\n"
		"         [--backend B] [--threads N] [--overwrite]\n"
		"         [--fill-value V] [--write-empty-chunks] [--durable]\n"
		"         [--attr KEY=JSON]... [--array NAME]\n"
		"         [--plate-field ROW/COL/F [--acquisition ID]] "
		"[--downsample D,..] [--method M]\n"
		"         [--append-method M] [--levels N] [--stop D=N,..] "
		"[--ngff]\n"
		"         [--units D=U,..] [--scale D=S,..] [--axis-types D=T,..] "
		"\n"
		"         [--storage-order I,J,..] OUT.zarr\n"
		"       shardpipe write --append [--truncate-to-advertised] "
		"[options] OUT.zarr\n\n"
		"Streams raw row-major array bytes in host byte order (stdin "
		"by default) into a\nsharded Zarr v3 store, then prints what "
		"it wrote on stderr.  OUT.zarr is a\ndirectory, or "
		"s3://BUCKET/PREFIX for S3 (endpoint, region and credentials "
		"from\nthe environment: see shardpipe(1)).\n"
		"  --shape S         sizes, slowest dim first; 0 in dim 0 = "
		"unbounded (size from input)\n"
		"  --chunk C         chunk (inner chunk) size per dim\n"
		"  --shard-shape S   shard size per dim in elements, a multiple "
		"of --chunk\n"
		"                    (zarr-python's shards=; default one chunk "
		"per shard)\n"
		"  --chunks-per-shard N  the same as chunks per shard per dim\n"
		"  --shard N         chunks per shard per dim, refused when it "
		"looks like a shard\n"
		"                    shape in elements (use one of the two "
		"above)\n"
		"  --dtype T         bool, int8..int64, uint8..uint64, float16, "
		"float32, float64\n"
		"                    (default uint8)\n"
		"  --codec C         none, zstd[:LEVEL[:checksum]] (1..22), "
		"gzip[:LEVEL] (0..9);\n"
		"                    default zstd:1\n"
		"                    or blosc[:CNAME[:LEVEL[:SHUFFLE[:BLOCKSIZE]]]]"
		" (kernel backends: zstd):\n"
		"                    CNAME zstd (default), lz4, lz4hc, blosclz, "
		"zlib; LEVEL 0..9\n"
		"                    (default 1); SHUFFLE noshuffle, shuffle "
		"(default), bitshuffle;\n"
		"                    BLOCKSIZE bytes, 0 = automatic (default); "
		"e.g. blosc:zstd:1:shuffle\n"
		"  --names A,B,..    dimension names\n"
		"  --index-location  where each shard keeps its index (default "
		"end)\n"
		"  --input FILE      read FILE instead of stdin ('-' = stdin)\n"
		"  --pad-partial     accept input ending inside a row of dim 0 "
		"and fill the rest\n"
		"                    of that row with the fill value (else exit "
		"2)\n"
		"  --allow-short     accept input shorter than a bounded --shape "
		"(the rest is the\n"
		"                    fill value; else exit 2)\n"
		"  --quiet           no summary line\n"
		"  --backend B       auto, cpu, reference, opencl, cuda "
		"(SHARDPIPE_BACKEND overrides)\n"
		"  --threads N       worker threads, 0 = every core (default)\n"
		"  --overwrite       replace a store already at OUT.zarr\n"
		"  --append          continue the store at OUT.zarr after the "
		"rows it holds: its\n"
		"                    shape, dtype, chunks, codec, names, index "
		"location and fill\n"
		"                    value are taken from it (any given must "
		"equal its own); dim 0\n"
		"                    of --shape is the row this run stops at "
		"(0 = unbounded)\n"
		"  --truncate-to-advertised  with --append: when a shard of "
		"the store's last\n"
		"                    shard row does not decode, drop that row "
		"and continue from\n"
		"                    the rows before it instead of refusing\n"
		"  --fill-value V    the fill value (default 0): an integer, "
		"true/false,\n"
		"                    or a float, nan, inf, -inf, or 0x and the bits in hex\n"
		"                    (Zarr's form, e.g. 0x7fc00001 for a float32 NaN)\n"
		"  --write-empty-chunks  store chunks that are all fill value "
		"too (default: leave\n"
		"                    them and shards of only such chunks out)\n"
		"  --durable         fsync every shard, directory and zarr.json "
		"before zarr.json\n"
		"                    advertises it\n"
		"  --storage-order I,J,..  storage dim i holds append dim "
		"entry i (numpy's\n"
		"                    transpose axes): --shape, --chunk, --names "
		"and the rest are\n"
		"                    in storage order, the input's rows in append "
		"order, along\n"
		"                    the dim whose entry is 0 (e.g. 0,3,1,2: "
		"(t,y,x,c) frames stored\n"
		"                    as (t,c,y,x); 1,0,2,3: (t,c,y,x) stored "
		"as (c,t,y,x));\n"
		"                    default the identity\n"
		"  --attr KEY=JSON   a user attribute in zarr.json (KEY: up to "
		"the first '=';\n"
		"                    JSON: one JSON value); repeatable, a later "
		"KEY replaces;\n"
		"                    \"ome\" is reserved (a pyramid's go in its group)\n"
		"  --array NAME      write the array NAME of the group OUT.zarr "
		"(made by\n"
		"                    'shardpipe group create'), at OUT.zarr/NAME;"
		" NAME: a-z A-Z\n"
		"                    0-9 - _ ., not starting with . or __, "
		"not zarr.json;\n"
		"                    --overwrite replaces that array only\n"
		"  --plate-field ROW/COL/F  write field F of well ROW/COL of "
		"the plate OUT.zarr\n"
		"                    (made by 'shardpipe group create --plate'), "
		"an OME-NGFF\n"
		"                    image at OUT.zarr/ROW/COL/F; a field is "
		"written once\n"
		"  --acquisition ID  the plate's acquisition the field belongs "
		"to\n"
		"  --frame-meta FILE.csv  per-frame values of an image (--ngff "
		"or --downsample):\n"
		"                    a header of fields NAME[:f64|i64|bool], "
		"then one line of\n"
		"                    values a frame; each field an array "
		"OUT.zarr/NAME\n"
		"Pyramids (an OME-NGFF 0.5 image: a group, arrays OUT/0, OUT/1, "
		"...):\n"
		"  --downsample D,..  dims that halve from each level to the "
		"next (names or\n"
		"                    indices; time and space axes only)\n"
		"  --method M        mean (default), min, max, median, "
		"decimate,\n"
		"                    second_max or second_min\n"
		"  --append-method M along dim 0: reduce each row by --method, "
		"then the two by M\n"
		"  --levels N        levels, level 0 included (default: until "
		"every halving dim\n"
		"                    fits one chunk)\n"
		"  --stop D=N,..     a downsampled dim halves through its first "
		"N levels only\n"
		"                    (z=3: z halves twice, y and x go on)\n"
		"  --ngff            the OME-NGFF layout even without "
		"--downsample\n"
		"  --units D=U,..    OME-NGFF units (micrometer, second, ...)\n"
		"  --scale D=S,..    the physical size of one element of level 0"
		"\n"
		"  --axis-types D=T,..  space, time or channel for dims not "
		"named t, c, z, y, x\n");
}

/* "A,B,C" of n numbers into buf. */
static const char *list_str(char *buf, size_t size, const uint64_t *v, int n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int d = 0; d < n && used < size; d++)
		used += (size_t)snprintf(buf + used, size - used, "%s%llu",
					 d ? "," : "", (unsigned long long)v[d]);
	return buf;
}

/*
 * The hint for input longer than a bounded --shape (extra bytes over it,
 * 0 when not known): stream dim 0 instead, and, when the input is a whole
 * number of arrays of that shape, stream those.
 */
static const char *stream_hint(char *buf, size_t size,
			       const shardpipe_desc *desc, const char *shape,
			       uint64_t extra, uint64_t capacity)
{
	uint64_t v[SHARDPIPE_MAX_RANK];
	char unbounded[160];
	const int a = cli_append_dim(desc);

	for (int d = 0; d < desc->rank; d++)
		v[d] = d == a ? 0 : desc->dims[d].size;
	list_str(unbounded, sizeof(unbounded), v, desc->rank);
	if (extra != 0 && extra % capacity == 0)
		snprintf(buf, size, "to take every row, stream with --shape "
			 "%s (or, for a stream of arrays of that shape, "
			 "--shape 0,%s)", unbounded, shape);
	else
		snprintf(buf, size, "to take every row, stream with --shape %s",
			 unbounded);
	return buf;
}

static void codec_str(char *buf, size_t size, const shardpipe_desc *desc)
{
	static const char *const cnames[] = {
		"zstd", "lz4", "lz4hc", "blosclz", "zlib",
	};
	static const char *const shuffles[] = {
		"noshuffle", "shuffle", "bitshuffle",
	};

	switch (desc->codec) {
	case SHARDPIPE_CODEC_NONE:
		snprintf(buf, size, "none");
		break;
	case SHARDPIPE_CODEC_BLOSC:
		snprintf(buf, size, "blosc:%s:%d:%s",
			 cnames[desc->blosc_cname], desc->level,
			 shuffles[desc->blosc_shuffle]);
		break;
	default:
		snprintf(buf, size, "%s:%d%s", shardpipe_codec_name(desc->codec),
			 desc->level, desc->zstd_checksum ? ":checksum" : "");
	}
}

/* The one line that says what was written; the bytes stored are the
 * files' sizes, read after close has written the last shards, and the
 * ratio is the array's over them (a continued store's rows before this
 * run's included: they are in those files too). */
static void summary(const char *out, const shardpipe_desc *desc,
		    uint64_t rows, uint64_t bytes_in, uint64_t array_bytes,
		    double secs)
{
	uint64_t shape[SHARDPIPE_MAX_RANK], chunk[SHARDPIPE_MAX_RANK];
	uint64_t shard[SHARDPIPE_MAX_RANK];
	char a[160], b[160], c[160], codec[64];
	const int ad = cli_append_dim(desc);

	for (int d = 0; d < desc->rank; d++) {
		shape[d] = d == ad && desc->dims[d].size == 0 ? rows :
			   desc->dims[d].size;
		chunk[d] = desc->dims[d].chunk;
		shard[d] = chunk[d] * desc->dims[d].chunks_per_shard;
	}
	codec_str(codec, sizeof(codec), desc);
	fprintf(stderr, "shardpipe: wrote %s: shape %s %s, chunks %s, shards "
		"%s, %s; %llu bytes in, ", out,
		list_str(a, sizeof(a), shape, desc->rank),
		shardpipe_dtype_name(desc->dtype),
		list_str(b, sizeof(b), chunk, desc->rank),
		list_str(c, sizeof(c), shard, desc->rank), codec,
		(unsigned long long)bytes_in);
	/* An object store (s3://) has no files to add up. */
	uint64_t stored = bench_store_bytes(out);
	if (stored > 0)
		fprintf(stderr, "%llu stored (ratio %.2f), ",
			(unsigned long long)stored,
			(double)array_bytes / (double)stored);
	fprintf(stderr, "%.2f s\n", secs);
}

static const char *const write_opts[] = {
	"--shape", "--chunk", "--shard-shape", "--chunks-per-shard", "--shard",
	"--dtype", "--codec", "--names", "--index-location", "--input",
	"--backend", "--threads", "--overwrite", "--pad-partial",
	"--allow-short", "--quiet", "--fill-value", "--write-empty-chunks",
	"--durable", "--attr", "--array", "--plate-field", "--acquisition",
	"--frame-meta",
	"--append",
	"--truncate-to-advertised", "--downsample", "--method",
	"--append-method", "--levels", "--stop", "--ngff", "--units",
	"--scale", "--axis-types", "--storage-order", "--help",
};

struct write_args {
	struct cli_desc_opts o;
	struct cli_levels_opts l;
	const char *input, *out;
	const char *array;        /* --array NAME, or NULL */
	/* --plate-field ROW/COL/F, split; --acquisition ID (-1: none). */
	const char *plate_field, *acquisition;
	const char *frame_meta;   /* --frame-meta FILE.csv, or NULL */
	char row[256], col[256];
	int field, acq;
	int pad_partial, allow_short, quiet, append, truncate;
	/* --attr KEY=JSON, room for argc; the keys are malloc'd. */
	shardpipe_attribute *attrs;
	int nattrs;
};

/* --attr KEY=JSON as a description's attribute: the key is what comes
 * before the first '=', the JSON what follows. */
static int split_attr(const char *arg, shardpipe_attribute *at)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL) {
		cli_error("write: --attr %.60s: expected KEY=JSON", arg);
		return CLI_EXIT_USAGE;
	}
	at->key = strndup(arg, (size_t)(eq - arg));
	at->json = eq + 1;
	if (at->key == NULL) {
		cli_error("write: out of memory");
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

/* --plate-field ROW/COL/F and --acquisition ID, split and checked for
 * form; the plate checks the names and numbers.  -1 to go on. */
static int plate_args(struct write_args *a)
{
	const char *f = a->plate_field;
	char *end;
	long v;
	int n = 0;

	a->acq = -1;
	if (f == NULL) {
		if (a->acquisition == NULL)
			return -1;
		cli_error("write: --acquisition is given with --plate-field");
		return CLI_EXIT_USAGE;
	}
	if (a->array != NULL || a->append) {
		cli_error("write: --plate-field: not with %s",
			  a->array != NULL ? "--array" : "--append (a plate's "
			  "field is written once)");
		return CLI_EXIT_USAGE;
	}
	if (sscanf(f, "%255[^/]/%255[^/]/%n", a->row, a->col, &n) != 2 ||
	    n == 0 || f[n] < '0' || f[n] > '9' ||
	    (errno = 0, v = strtol(f + n, &end, 10), *end != '\0') ||
	    errno != 0 || v > INT_MAX) {
		cli_error("write: --plate-field \"%s\": expected ROW/COL/F, "
			  "as A/1/0 (F a field's number)", f);
		return CLI_EXIT_USAGE;
	}
	a->field = (int)v;
	if (a->acquisition != NULL) {
		errno = 0;
		v = strtol(a->acquisition, &end, 10);
		if (*a->acquisition == '\0' || *end != '\0' || errno != 0 ||
		    v < 0 || v > INT_MAX) {
			cli_error("write: --acquisition \"%s\": expected an "
				  "acquisition's id, a number >= 0",
				  a->acquisition);
			return CLI_EXIT_USAGE;
		}
		a->acq = (int)v;
	}
	return -1;
}

/* Returns -1 to go on, or the exit status (--help, a bad option). */
static int parse_args(struct write_args *a, int argc, char **argv)
{
	const char *const flags[] = {
		"--pad-partial", "--allow-short", "--quiet", "--append",
		"--truncate-to-advertised",
	};
	int *const flag_slots[] = {
		&a->pad_partial, &a->allow_short, &a->quiet, &a->append,
		&a->truncate,
	};

	a->input = "-";
	cli_seen_init(&a->o.seen, "write");
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val;
		int r = cli_desc_option(&a->o, argc, argv, &i);

		if (r == 0)
			r = cli_levels_option(&a->l, &a->o.seen, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (strcmp(arg, "--help") == 0) {
			write_usage(stdout);
			return CLI_EXIT_OK;
		} else if (strcmp(arg, "--input") == 0) {
			if (cli_take(&a->o.seen, argc, argv, &i, &a->input) != 0)
				return CLI_EXIT_USAGE;
		} else if ((r = cli_flag(&a->o.seen, arg, flags, flag_slots,
					 CLI_NFLAGS(flags))) != 0) {
			if (r < 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(arg, "--array") == 0) {
			if (cli_take(&a->o.seen, argc, argv, &i, &a->array) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(arg, "--plate-field") == 0) {
			if (cli_take(&a->o.seen, argc, argv, &i,
				     &a->plate_field) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(arg, "--frame-meta") == 0) {
			if (cli_take(&a->o.seen, argc, argv, &i,
				     &a->frame_meta) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(arg, "--acquisition") == 0) {
			if (cli_take(&a->o.seen, argc, argv, &i,
				     &a->acquisition) != 0)
				return CLI_EXIT_USAGE;
		} else if (strcmp(arg, "--attr") == 0) {
			/* Repeatable (documented): one attribute each. */
			if (cli_value(&a->o.seen, argc, argv, &i, &val) != 0)
				return CLI_EXIT_USAGE;
			r = split_attr(val, &a->attrs[a->nattrs++]);
			if (r != CLI_EXIT_OK)
				return r;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			const char *near = sp_closest(argv[i],
				strcspn(argv[i], "="), write_opts,
				(int)(sizeof(write_opts) / sizeof(*write_opts)));

			if (near != NULL)
				cli_error("write: unknown option %s; did you "
					  "mean %s?", argv[i], near);
			else
				cli_error("write: unknown option %s", argv[i]);
			write_usage(stderr);
			return CLI_EXIT_USAGE;
		} else if (a->out == NULL) {
			a->out = argv[i];
		} else {
			cli_error("write: one output store only: %s and %s",
				  a->out, argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	if (a->out == NULL) {
		cli_error("write: no output store given");
		write_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return plate_args(a);
}

/* One write in progress: the input, the stream, and the bytes between. */
struct writer {
	const struct write_args *a;
	shardpipe_desc desc;
	/* The array's directory: OUT, or OUT/NAME with --array. */
	char *path;
	FILE *in;
	shardpipe_stream *s;
	/* With --append, the rows the store holds already; else 0. */
	uint64_t start;
	/* One row is one index of dim 0; capacity is the bytes a bounded
	 * array takes from the input, the rows from start to its end (0
	 * when dim 0 is unbounded, or with --append when no row is left:
	 * full, the library refuses it). */
	uint64_t row_bytes, capacity, appended;
	int full;
	/* For messages: the shape the rows follow ("--shape S", or with
	 * --append and no --shape the store's), and what a bounded
	 * capacity spans ("--shape S", with --append "rows R..N-1 of
	 * --shape S"). */
	char shape[200], bound[260];
	unsigned char *buf;
	size_t bufsize, held;     /* held: a partial row kept back */
	double t0;
	struct frame_csv csv;     /* --frame-meta; csv.n 0 without */
};

/* The row and array sizes in bytes; 0 when they overflow, leaving the
 * refusal to the library, with its message.  And the shape and bound
 * the messages name. */
static void sizes_of(struct writer *w)
{
	const shardpipe_desc *desc = &w->desc;
	const int ad = cli_append_dim(desc);
	const uint64_t end = desc->dims[ad].size;
	uint64_t v[SHARDPIPE_MAX_RANK];
	char list[160];

	/* A row: one index of the append dim, wherever it is stored. */
	w->row_bytes = shardpipe_dtype_size(desc->dtype);
	for (int d = 0; d < desc->rank; d++)
		if (d != ad && __builtin_mul_overflow(w->row_bytes, desc->dims[d].size,
					   &w->row_bytes))
			w->row_bytes = 0;
	w->full = end != 0 && end <= w->start;
	if (end != 0 && !w->full &&
	    __builtin_mul_overflow(w->row_bytes, end - w->start,
				   &w->capacity))
		w->row_bytes = 0;
	if (w->a->o.shape != NULL) {
		snprintf(w->shape, sizeof(w->shape), "--shape %s",
			 w->a->o.shape);
	} else {
		for (int d = 0; d < desc->rank; d++)
			v[d] = d == ad ? w->start : desc->dims[d].size;
		snprintf(w->shape, sizeof(w->shape), "the shape %s of %s",
			 list_str(list, sizeof(list), v, desc->rank), w->path);
	}
	if (w->start != 0 && end != 0 && !w->full)
		snprintf(w->bound, sizeof(w->bound), "rows %llu..%llu of %s",
			 (unsigned long long)w->start,
			 (unsigned long long)(end - 1), w->shape);
	else
		snprintf(w->bound, sizeof(w->bound), "%s", w->shape);
}

/* Refuse, before anything is written, an input that cannot be the array:
 * a directory (it opens, and fails only at the first read, after the
 * store would exist), or a regular file of the wrong length.  Returns
 * CLI_EXIT_OK or, after saying why, CLI_EXIT_USAGE. */
static int check_input(const struct writer *w)
{
	const struct write_args *a = w->a;
	const char *dt = shardpipe_dtype_name(w->desc.dtype);
	const uint64_t rb = w->row_bytes, cap = w->capacity;
	struct stat sb;
	uint64_t size;
	char hint[512];
	const int ad = cli_append_dim(&w->desc);

	if (fstat(fileno(w->in), &sb) == 0 && S_ISDIR(sb.st_mode)) {
		cli_error("write: --input %s is a directory, not a file of "
			  "array bytes", a->input);
		return CLI_EXIT_USAGE;
	}
	if (w->in == stdin || rb == 0 || !S_ISREG(sb.st_mode))
		return CLI_EXIT_OK;
	size = (uint64_t)sb.st_size;
	if (w->desc.dims[ad].size == 0 && size % rb != 0 && !a->pad_partial)
		cli_error("write: %s holds %llu bytes, not a whole number of "
			  "rows of %llu bytes (%s, every dim but the append dim "
			  "of %s): %llu rows and %llu bytes over; "
			  "check --dtype and --shape (--pad-partial fills a "
			  "last partial row)", a->input,
			  (unsigned long long)size, (unsigned long long)rb, dt,
			  w->shape, (unsigned long long)(size / rb),
			  (unsigned long long)(size % rb));
	else if (w->desc.dims[ad].size != 0 && size > cap)
		cli_error("write: %s holds %llu bytes, %llu more than the %llu "
			  "bytes of %s (%s); %s", a->input,
			  (unsigned long long)size,
			  (unsigned long long)(size - cap),
			  (unsigned long long)cap, w->bound, dt,
			  stream_hint(hint, sizeof(hint), &w->desc,
				      a->o.shape, a->append ? 0 : size, cap));
	else if (w->desc.dims[ad].size != 0 && size < cap && !a->allow_short)
		cli_error("write: %s holds %llu bytes, %llu fewer than the %llu "
			  "bytes of %s (%s); --allow-short writes it "
			  "anyway, the rest holding the fill value", a->input,
			  (unsigned long long)size,
			  (unsigned long long)(cap - size),
			  (unsigned long long)cap, w->bound, dt);
	else
		return CLI_EXIT_OK;
	return CLI_EXIT_USAGE;
}

/*
 * A stop asked for by a signal (doc/design.md §16.5).  SIGINT from a
 * terminal reaches every process of a pipeline (`camera | shardpipe
 * write`), SIGTERM comes from a service manager, SIGHUP from a closed
 * session: each would kill the writer with every row of its unfinished
 * shards unwritten.  The first one stops the reading instead, and the
 * stream is closed as at the end of the input; the handler then gives the
 * signal back its default, so a second one kills at once.
 */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
	signal(sig, SIG_DFL);
}

static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP };
#define N_STOP_SIGS (sizeof(stop_sigs) / sizeof(stop_sigs[0]))

/* Which of them the caller ignores (nohup, a background job of a shell
 * without job control), read before the stream opens: a backend's
 * libraries may install handlers of their own (PoCL's LLVM takes all
 * three), and the caller's wish is what counts. */
static void note_ignored(int ignored[N_STOP_SIGS])
{
	for (size_t i = 0; i < N_STOP_SIGS; i++) {
		struct sigaction old;

		ignored[i] = sigaction(stop_sigs[i], NULL, &old) == 0 &&
			     old.sa_handler == SIG_IGN;
	}
}

/* No SA_RESTART: a read blocked on a silent pipe returns EINTR.  An
 * ignored signal is ignored again, whatever handler a library put there
 * since. */
static void catch_stops(const int ignored[N_STOP_SIGS])
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_STOP_SIGS; i++) {
		sa.sa_handler = ignored[i] ? SIG_IGN : on_stop;
		sigaction(stop_sigs[i], &sa, NULL);
	}
}

/* Append n bytes of buf; CLI_EXIT_OK or, after saying why, the library
 * code's exit status. */
static int append(struct writer *w, size_t n)
{
	int rc;

	if (w->csv.n > 0) {
		/* Whole rows: --pad-partial is refused with --frame-meta. */
		uint64_t row0 = w->appended / w->row_bytes;
		uint64_t k = n / w->row_bytes;

		if (row0 + k > w->csv.rows) {
			cli_error("write: --frame-meta %s holds values for %llu "
				  "frames; the input's frame %llu has none "
				  "(the %llu frames before it are written)",
				  w->a->frame_meta,
				  (unsigned long long)w->csv.rows,
				  (unsigned long long)w->csv.rows,
				  (unsigned long long)w->csv.rows);
			k = w->csv.rows > row0 ? w->csv.rows - row0 : 0;
			if (k > 0 && shardpipe_stream_append_meta(w->s, w->buf,
					(size_t)(k * w->row_bytes),
					w->csv.vals + row0 * w->csv.n) ==
					SHARDPIPE_OK)
				w->appended += k * w->row_bytes;
			return CLI_EXIT_USAGE;
		}
		rc = shardpipe_stream_append_meta(w->s, w->buf, n,
						  w->csv.vals +
						  row0 * w->csv.n);
	} else {
		rc = shardpipe_stream_append(w->s, w->buf, n);
	}
	if (rc != SHARDPIPE_OK) {
		cli_error("write: %s: %s", shardpipe_strerror(rc),
			  shardpipe_stream_message(w->s));
		return cli_exit_status(rc);
	}
	w->appended += n;
	return CLI_EXIT_OK;
}

/*
 * Append the input as it arrives, whole rows only, until it ends or a
 * bounded array is full; a trailing partial row stays in w->held.  With
 * progress, a line on stderr every half second.
 */
static int stream_input(struct writer *w, int progress)
{
	double last = 0;
	int status = CLI_EXIT_OK;

	while (!stop_signal) {
		/* Whatever has arrived, not a full buffer: a pipe fed frame
		 * by frame (a camera) is appended, and its shards become
		 * visible, as the frames come. */
		ssize_t got = read(fileno(w->in), w->buf + w->held,
				   w->bufsize - w->held);
		size_t n = got > 0 ? (size_t)got : 0;
		size_t avail = w->held + n, whole = avail;

		if (got < 0 && errno == EINTR)
			continue;
		if (w->row_bytes != 0)
			whole -= avail % w->row_bytes;
		if (w->capacity != 0 && whole > w->capacity - w->appended)
			whole = (size_t)(w->capacity - w->appended);
		if (whole > 0 && (status = append(w, whole)) != CLI_EXIT_OK)
			break;
		w->held = avail - whole;
		memmove(w->buf, w->buf + whole, w->held);
		if (w->capacity != 0 && w->appended == w->capacity &&
		    w->held > 0)
			break; /* more than --shape takes: counted after */
		if (progress && cli_now() - last > 0.5) {
			shardpipe_stats st;

			last = cli_now();
			shardpipe_stream_stats(w->s, &st);
			fprintf(stderr, "\r%.2f GB in, %llu shards, %.2f GB/s ",
				(double)st.bytes_in / 1e9,
				(unsigned long long)st.shards_written,
				(double)st.bytes_in / 1e9 / (last - w->t0));
		}
		if (got <= 0) {
			if (got < 0) {
				cli_error("write: %s: read error: %s",
					  w->a->input, strerror(errno));
				status = CLI_EXIT_FAIL;
			}
			break;
		}
	}
	if (progress)
		fputc('\n', stderr);
	return status;
}

/* Once the input stopped: input beyond a bounded array, a partial last
 * row, an array left short. */
static int finish_input(struct writer *w)
{
	const struct write_args *a = w->a;
	char hint[512];

	if (w->capacity && w->appended == w->capacity && w->held > 0) {
		/* Exactly how much is left when the input is a regular file,
		 * by its size.  Anything else (a pipe, /dev/zero, a camera)
		 * is not read on: it may never end. */
		struct stat sb;
		off_t at = lseek(fileno(w->in), 0, SEEK_CUR);
		int exact = at >= 0 && fstat(fileno(w->in), &sb) == 0 &&
			    S_ISREG(sb.st_mode) && sb.st_size >= at;
		uint64_t left = w->held +
				(exact ? (uint64_t)(sb.st_size - at) : 0);

		cli_error("write: the input holds %s%llu bytes more than the "
			  "%llu bytes of %s; they were not written; %s",
			  exact ? "" : "at least ", (unsigned long long)left,
			  (unsigned long long)w->capacity, w->bound,
			  stream_hint(hint, sizeof(hint), &w->desc,
				      a->o.shape,
				      exact && !a->append ? left : 0,
				      w->capacity));
		return CLI_EXIT_USAGE;
	}
	if (w->held > 0 && a->pad_partial) {
		/* The library fills the rest of the row. */
		int status = append(w, w->held);

		if (status != CLI_EXIT_OK)
			return status;
	} else if (w->held > 0) {
		cli_error("write: the input ends %zu bytes into a row of %llu "
			  "bytes (%s); %llu whole rows were written and the "
			  "partial row was not (--pad-partial fills it with "
			  "the fill value)", w->held,
			  (unsigned long long)w->row_bytes,
			  shardpipe_dtype_name(w->desc.dtype),
			  (unsigned long long)(w->appended / w->row_bytes));
		return CLI_EXIT_USAGE;
	}
	if (w->csv.n > 0 && w->appended / w->row_bytes != w->csv.rows) {
		cli_error("write: --frame-meta %s holds values for %llu frames, "
			  "the input %llu; the %llu frames are written with "
			  "theirs", a->frame_meta,
			  (unsigned long long)w->csv.rows,
			  (unsigned long long)(w->appended / w->row_bytes),
			  (unsigned long long)(w->appended / w->row_bytes));
		return CLI_EXIT_USAGE;
	}
	if (w->capacity && w->appended < w->capacity && !a->allow_short) {
		cli_error("write: the input ended after %llu of the %llu bytes "
			  "of %s; the store keeps that shape, rows "
			  "%llu and after holding the fill value "
			  "(--allow-short accepts this)",
			  (unsigned long long)w->appended,
			  (unsigned long long)w->capacity, w->bound,
			  (unsigned long long)(w->start +
					       w->appended / w->row_bytes));
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* Stopped by a signal: what was read in whole rows is written; the exit
 * status is the shell's for a process the signal ended (128 + its number),
 * so a script still sees that the input was cut short. */
static int stopped(struct writer *w)
{
	int sig = stop_signal;

	cli_error("write: stopped by %s after %llu whole rows (%llu bytes); "
		  "they are written and the store is closed%s",
		  sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM"
							    : "SIGHUP",
		  (unsigned long long)(w->row_bytes ? w->appended / w->row_bytes
						    : 0),
		  (unsigned long long)w->appended,
		  w->held > 0 ? "; a partial row read after them is not" : "");
	return 128 + sig;
}

/* Whether dir has a zarr.json: an absent group gets a hint. */
static int has_meta(const char *dir)
{
	char *p = malloc(strlen(dir) + sizeof("/zarr.json"));
	int has;

	if (p == NULL)
		return 1;
	sprintf(p, "%s/zarr.json", dir);
	has = access(p, F_OK) == 0;
	free(p);
	return has;
}

/* Whether a non-directory is at path: no group could be made there, so
 * the hint to make one is left out. */
static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* A library refusal of the array at w->path, as every one is printed. */
static int refused(const struct writer *w, int rc)
{
	const struct write_args *a = w->a;
	char msg[600];

	/* A pyramid field's refusal names the option that sets it. */
	cli_error("write: %s%s%s%s: %s",
		  a->array ? "--array " : a->plate_field ? "--plate-field "
							 : "",
		  a->array ? a->array : a->plate_field ? a->plate_field : "",
		  a->array || a->plate_field ? ": " : "",
		  shardpipe_strerror(rc),
		  cli_levels_message(shardpipe_last_error_message(), msg,
				     sizeof(msg)));
	return cli_exit_status(rc);
}

/* The group at OUT, for --array; NULL after saying why (*status). */
static shardpipe_group *open_group(const struct writer *w, int *status)
{
	const struct write_args *a = w->a;
	shardpipe_group *g;
	int rc = shardpipe_group_open(&g, a->out, w->desc.threads);

	if (rc == SHARDPIPE_ERR_PATH && !has_meta(a->out) &&
	    !is_file(a->out)) {
		cli_error("write: --array %s: %s (make the group with "
			  "'shardpipe group create %s')", a->array,
			  shardpipe_last_error_message(), a->out);
		*status = cli_exit_status(rc);
		return NULL;
	}
	if (rc != SHARDPIPE_OK) {
		*status = refused(w, rc);
		return NULL;
	}
	return g;
}

/* The stream: a store of its own at OUT, or with --array the array NAME of
 * the group at OUT; with --append, the array there continued. */
static int open_stream(struct writer *w)
{
	const struct write_args *a = w->a;
	shardpipe_group *g;
	int rc, status;

	if (a->append) {
		rc = shardpipe_stream_reopen(&w->s, w->path, &w->desc);
	} else if (a->plate_field != NULL) {
		shardpipe_plate *p;

		rc = shardpipe_plate_open(&p, a->out, w->desc.threads);
		if (rc == SHARDPIPE_OK) {
			rc = shardpipe_plate_field(&w->s, p, a->row, a->col,
						   a->field, a->acq, &w->desc);
			shardpipe_plate_close(p);
		}
	} else if (a->array == NULL) {
		rc = shardpipe_stream_open(&w->s, a->out, &w->desc);
	} else {
		if ((g = open_group(w, &status)) == NULL)
			return status;
		rc = shardpipe_group_stream(&w->s, g, a->array, &w->desc);
		shardpipe_group_close(g);
	}
	if (rc != SHARDPIPE_OK)
		return refused(w, rc);
	/* The row the stream continues after, as it read it under its lock
	 * (fewer than the store advertised when --truncate-to-advertised
	 * dropped a damaged shard row). */
	if (a->append) {
		shardpipe_stats st;

		if (shardpipe_stream_stats(w->s, &st) == SHARDPIPE_OK &&
		    st.rows_written != w->start) {
			w->start = st.rows_written;
			sizes_of(w);
		}
	}
	/* The store's geometry was warned about when it was made. */
	if (!a->append)
		cli_shard_warnings(&w->desc);
	else if (!a->quiet)
		fprintf(stderr, "shardpipe: write: %s: continuing after %llu "
			"row%s\n", w->path, (unsigned long long)w->start,
			w->start == 1 ? "" : "s");
	return CLI_EXIT_OK;
}

/*
 * --append --array NAME: NAME must be an array the group at OUT lists,
 * which also holds it to the names --array takes (no path of another
 * store through it).
 */
static int group_has(const struct writer *w)
{
	const struct write_args *a = w->a;
	int status, found = 0;
	shardpipe_group *g = open_group(w, &status);

	if (g == NULL)
		return status;
	for (size_t i = 0; i < shardpipe_group_array_count(g); i++)
		found |= strcmp(shardpipe_group_array_name(g, i), a->array) == 0;
	shardpipe_group_close(g);
	if (found)
		return CLI_EXIT_OK;
	cli_error("write: --append --array %s: the group %s holds no array %s "
		  "to continue (without --append, write starts it)", a->array,
		  a->out, a->array);
	return CLI_EXIT_USAGE;
}

/*
 * --append: the description is the store's, with the options given laid
 * over it; whether they agree with the store is the library's to say at
 * reopen, naming the field.  w->start: the rows the store holds.
 */
static int append_desc(struct writer *w)
{
	const struct write_args *a = w->a;
	const struct cli_levels_opts *l = &a->l;
	int rc;

	if (a->o.overwrite) {
		cli_error("write: --append continues the store at %s and "
			  "--overwrite replaces it; give one of them", a->out);
		return CLI_EXIT_USAGE;
	}
	if (l->downsample || l->method || l->append_method || l->levels ||
	    l->stop || l->units || l->scale || l->axis_types || l->ngff) {
		cli_error("write: --append: an image's pyramid is the "
			  "store's: --downsample, --method, --append-method, "
			  "--levels, --stop, --ngff, --units, --scale and "
			  "--axis-types are not given with --append");
		return CLI_EXIT_USAGE;
	}
	shardpipe_desc_init(&w->desc);
	if (a->array != NULL && (rc = group_has(w)) != CLI_EXIT_OK)
		return rc;
	if (cli_desc_order(&a->o, &w->desc) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	rc = shardpipe_desc_from_store(&w->desc, w->path, &w->start);
	if (rc == SHARDPIPE_ERR_PATH && !has_meta(w->path) &&
	    !is_file(w->path)) {
		cli_error("write: --append: %s: %s (without --append, write "
			  "starts a new store there)", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		return cli_exit_status(rc);
	}
	if (rc != SHARDPIPE_OK)
		return refused(w, rc);
	w->desc.truncate_to_advertised = a->truncate;
	return cli_desc_apply(&a->o, &w->desc);
}

/* The write, once the command line is read: the description, the input
 * checked against it, the stream, the input streamed, the summary. */
static int run_write(struct writer *w, int ignored[N_STOP_SIGS])
{
	const struct write_args *a = w->a;
	int rc, status;

	if (a->truncate && !a->append) {
		cli_error("write: --truncate-to-advertised drops the damaged "
			  "last shard row of a store --append continues; give "
			  "--append");
		return CLI_EXIT_USAGE;
	}
	if (a->append)
		rc = append_desc(w);
	else if ((rc = cli_desc_build(&a->o, &w->desc)) == CLI_EXIT_OK)
		rc = cli_levels_build(&a->l, &w->desc);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (a->frame_meta != NULL && a->pad_partial) {
		cli_error("write: --frame-meta: not with --pad-partial (each "
			  "frame's values go with a whole frame)");
		return CLI_EXIT_USAGE;
	}
	/* A continued image's fields go on (§29): its frames need their
	 * values, the CSV's fields the library checks against the store's. */
	if (a->append && a->frame_meta == NULL && w->desc.n_frame_fields > 0) {
		char names[SHARDPIPE_MAX_FRAME_FIELDS * 66] = "";
		size_t len = 0;

		for (size_t i = 0; i < w->desc.n_frame_fields; i++)
			len += (size_t)snprintf(names + len, sizeof(names) - len,
						"%s%s", i ? "," : "",
						w->desc.frame_fields[i].name);
		cli_error("write: --append: the image %s has frame fields "
			  "(%s): give --frame-meta FILE.csv with the values of "
			  "the frames appended", w->path, names);
		return CLI_EXIT_USAGE;
	}
	if (a->frame_meta != NULL &&
	    (rc = frame_csv_read(&w->csv, a->frame_meta)) != CLI_EXIT_OK)
		return rc;
	note_ignored(ignored);
	/* The library checks them at open, before anything is written. */
	w->desc.attributes = a->attrs;
	w->desc.nattributes = (size_t)a->nattrs;
	w->desc.frame_fields = w->csv.fields;
	w->desc.n_frame_fields = (size_t)w->csv.n;
	sizes_of(w);
	w->in = strcmp(a->input, "-") == 0 ? stdin : fopen(a->input, "rb");
	if (w->in == NULL) {
		cli_error("write: %s: %s", a->input, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	/* A bound the store has reached already is the library's to refuse
	 * at reopen, saying so, whatever the input. */
	status = w->full ? CLI_EXIT_OK : check_input(w);
	if (status == CLI_EXIT_OK)
		status = open_stream(w);
	if (status != CLI_EXIT_OK) {
		if (w->in != stdin)
			fclose(w->in);
		return status;
	}
	/* Room for at least one row, so that a partial one can be held. */
	if (w->row_bytes > w->bufsize && w->row_bytes <= SIZE_MAX)
		w->bufsize = (size_t)w->row_bytes;
	w->buf = malloc(w->bufsize);
	if (w->buf == NULL) {
		cli_error("write: out of memory");
		status = CLI_EXIT_FAIL;
	} else {
		catch_stops(ignored);
		status = stream_input(w, isatty(STDERR_FILENO) && !a->quiet);
		if (status == CLI_EXIT_OK && stop_signal)
			status = stopped(w);
		else if (status == CLI_EXIT_OK)
			status = finish_input(w);
	}
	free(w->buf);
	if (w->in != stdin)
		fclose(w->in);
	rc = shardpipe_stream_close(w->s);
	if (rc != SHARDPIPE_OK) {
		if (status == CLI_EXIT_OK) {
			cli_error("write: %s: %s", shardpipe_strerror(rc),
				  shardpipe_last_error_message());
			status = cli_exit_status(rc);
		}
		return status;
	}
	if (!a->quiet) {
		uint64_t rows = w->row_bytes ? (w->appended + w->row_bytes - 1) /
					       w->row_bytes : 0;

		summary(w->path, &w->desc, w->start + rows, w->appended,
			w->start > 0 ? (w->start + rows) * w->row_bytes
				     : w->appended,
			cli_now() - w->t0);
	}
	return status;
}

static int write_store(struct write_args *a, int argc, char **argv)
{
	struct writer w = { .a = a, .bufsize = 8u << 20, .t0 = cli_now() };
	int rc = parse_args(a, argc, argv), status;
	int ignored[N_STOP_SIGS];

	if (rc >= 0)
		return rc;
	w.path = malloc(strlen(a->out) + (a->array ? strlen(a->array) : 0) +
			(a->plate_field ? strlen(a->plate_field) : 0) + 2);
	if (w.path == NULL) {
		cli_error("write: out of memory");
		return CLI_EXIT_FAIL;
	}
	if (a->array != NULL)
		sprintf(w.path, "%s/%s", a->out, a->array);
	else if (a->plate_field != NULL)
		sprintf(w.path, "%s/%s/%s/%d", a->out, a->row, a->col,
			a->field);
	else
		strcpy(w.path, a->out);
	status = run_write(&w, ignored);
	frame_csv_free(&w.csv);
	free(w.path);
	return status;
}

int cli_write(int argc, char **argv)
{
	struct write_args a = { 0 };
	int status;

	a.attrs = calloc((size_t)argc, sizeof(*a.attrs));
	if (a.attrs == NULL) {
		cli_error("write: out of memory");
		return CLI_EXIT_FAIL;
	}
	status = write_store(&a, argc, argv);
	for (int k = 0; k < a.nattrs; k++)
		free((char *)a.attrs[k].key);
	free(a.attrs);
	return status;
}
