/* write.c - shardpipe write: stream raw bytes from a file or stdin. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "closest.h"

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
		"         [--fill-value V] [--write-empty-chunks] [--durable] "
		"OUT.zarr\n\n"
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
		"  --fill-value V    the fill value (default 0): an integer, "
		"true/false,\n"
		"                    or a float, nan, inf, -inf\n"
		"  --write-empty-chunks  store chunks that are all fill value "
		"too (default: leave\n"
		"                    them and shards of only such chunks out)\n"
		"  --durable         fsync every shard, directory and zarr.json "
		"before zarr.json\n"
		"                    advertises it\n");
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

/* "0,B,C": the shape with dim 0 unbounded, for the hint to stream. */
static const char *stream_shape(char *buf, size_t size,
				const shardpipe_desc *desc)
{
	uint64_t v[SHARDPIPE_MAX_RANK];

	for (int d = 0; d < desc->rank; d++)
		v[d] = d == 0 ? 0 : desc->dims[d].size;
	return list_str(buf, size, v, desc->rank);
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

static uint64_t stored;

static int add_size(const char *path, const struct stat *sb, int type,
		    struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F)
		stored += (uint64_t)sb->st_size;
	return 0;
}

/* The one line that says what was written; the bytes stored are the
 * files' sizes, read after close has written the last shards. */
static void summary(const char *out, const shardpipe_desc *desc,
		    uint64_t rows, uint64_t bytes_in, double secs)
{
	uint64_t shape[SHARDPIPE_MAX_RANK], chunk[SHARDPIPE_MAX_RANK];
	uint64_t shard[SHARDPIPE_MAX_RANK];
	char a[160], b[160], c[160], codec[64];

	for (int d = 0; d < desc->rank; d++) {
		shape[d] = d == 0 && desc->dims[0].size == 0 ? rows :
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
	/* An object store's sizes are not files to add up. */
	if (strncmp(out, "s3://", 5) != 0) {
		stored = 0;
		nftw(out, add_size, 16, FTW_PHYS);
		fprintf(stderr, "%llu stored (ratio %.2f), ",
			(unsigned long long)stored,
			stored ? (double)bytes_in / (double)stored : 0);
	}
	fprintf(stderr, "%.2f s\n", secs);
}

static const char *const write_opts[] = {
	"--shape", "--chunk", "--shard-shape", "--chunks-per-shard", "--shard",
	"--dtype", "--codec", "--names", "--index-location", "--input",
	"--backend", "--threads", "--overwrite", "--pad-partial",
	"--allow-short", "--quiet", "--fill-value", "--write-empty-chunks",
	"--durable", "--help",
};

int cli_write(int argc, char **argv)
{
	struct cli_desc_opts o = { 0 };
	const char *input = "-", *out = NULL;
	shardpipe_desc desc;
	shardpipe_stream *s;
	shardpipe_stats st;
	size_t bufsize = 8u << 20, held = 0;
	unsigned char *buf;
	FILE *in;
	int rc, progress, status = CLI_EXIT_OK;
	int pad_partial = 0, allow_short = 0, quiet = 0;
	uint64_t row_bytes, capacity = 0, appended = 0;
	double t0 = cli_now(), last = 0;
	char shp[160];
	struct stat sb;

	for (int i = 1; i < argc; i++) {
		int r = cli_desc_option(&o, argc, argv, &i);

		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (strcmp(argv[i], "--help") == 0) {
			write_usage(stdout);
			return CLI_EXIT_OK;
		} else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
			input = argv[++i];
		} else if (strcmp(argv[i], "--pad-partial") == 0) {
			pad_partial = 1;
		} else if (strcmp(argv[i], "--allow-short") == 0) {
			allow_short = 1;
		} else if (strcmp(argv[i], "--quiet") == 0) {
			quiet = 1;
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
		} else if (out == NULL) {
			out = argv[i];
		} else {
			cli_error("write: more than one output store");
			return CLI_EXIT_USAGE;
		}
	}
	if (out == NULL) {
		cli_error("write: no output store given");
		write_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_desc_build(&o, &desc)) != CLI_EXIT_OK)
		return rc;
	/* One row is one index of dim 0: every other dim, whole. */
	row_bytes = shardpipe_dtype_size(desc.dtype);
	for (int d = 1; d < desc.rank; d++)
		if (__builtin_mul_overflow(row_bytes, desc.dims[d].size,
					   &row_bytes))
			row_bytes = 0; /* the library refuses the shape */
	/* An array too large to count in bytes is the library's to refuse,
	 * with its message: no length check before that. */
	if (desc.dims[0].size != 0 &&
	    __builtin_mul_overflow(row_bytes, desc.dims[0].size, &capacity))
		row_bytes = 0;
	in = strcmp(input, "-") == 0 ? stdin : fopen(input, "rb");
	if (in == NULL) {
		cli_error("write: %s: %s", input, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	/* A regular file's size is known: refuse a length that cannot be
	 * the array before anything is written. */
	if (in != stdin && row_bytes != 0 && fstat(fileno(in), &sb) == 0 &&
	    S_ISREG(sb.st_mode)) {
		uint64_t size = (uint64_t)sb.st_size;
		const char *dt = shardpipe_dtype_name(desc.dtype);
		int refuse = 1;

		if (desc.dims[0].size == 0 && size % row_bytes != 0 &&
		    !pad_partial)
			cli_error("write: %s holds %llu bytes, not a whole "
				  "number of rows of %llu bytes (%s, every dim "
				  "after the first of --shape %s): %llu rows "
				  "and %llu bytes over; check --dtype and "
				  "--shape (--pad-partial fills a last partial "
				  "row)", input, (unsigned long long)size,
				  (unsigned long long)row_bytes, dt, o.shape,
				  (unsigned long long)(size / row_bytes),
				  (unsigned long long)(size % row_bytes));
		else if (desc.dims[0].size != 0 && size > capacity)
			cli_error("write: %s holds %llu bytes, %llu more than "
				  "the %llu bytes of --shape %s (%s); to take "
				  "every row, stream with --shape %s%s%s%s",
				  input, (unsigned long long)size,
				  (unsigned long long)(size - capacity),
				  (unsigned long long)capacity, o.shape, dt,
				  stream_shape(shp, sizeof(shp), &desc),
				  size % capacity == 0 ? " (or, for a stream "
				  "of arrays of that shape, --shape 0," : "",
				  size % capacity == 0 ? o.shape : "",
				  size % capacity == 0 ? ")" : "");
		else if (desc.dims[0].size != 0 && size < capacity &&
			 !allow_short)
			cli_error("write: %s holds %llu bytes, %llu fewer than "
				  "the %llu bytes of --shape %s (%s); "
				  "--allow-short writes it anyway, the rest "
				  "holding the fill value", input,
				  (unsigned long long)size,
				  (unsigned long long)(capacity - size),
				  (unsigned long long)capacity, o.shape, dt);
		else
			refuse = 0;
		if (refuse) {
			fclose(in);
			return CLI_EXIT_USAGE;
		}
	}
	rc = shardpipe_stream_open(&s, out, &desc);
	if (rc != SHARDPIPE_OK) {
		cli_error("write: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		if (in != stdin)
			fclose(in);
		return cli_exit_status(rc);
	}
	/* Room for at least one row, so that a partial one can be held. */
	if (row_bytes > bufsize && row_bytes <= SIZE_MAX)
		bufsize = (size_t)row_bytes;
	buf = malloc(bufsize);
	progress = isatty(STDERR_FILENO) && !quiet;
	while (buf != NULL) {
		/* Whatever has arrived, not a full buffer: a pipe fed frame
		 * by frame (a camera) is appended, and its shards become
		 * visible, as the frames come. */
		ssize_t got = read(fileno(in), buf + held, bufsize - held);
		size_t n = got > 0 ? (size_t)got : 0;
		size_t avail = held + n, whole = avail;

		if (got < 0 && errno == EINTR)
			continue;

		/* Only whole rows go in: a trailing partial row is held back
		 * until more input completes it. */
		if (row_bytes != 0)
			whole -= avail % row_bytes;
		if (capacity != 0 && whole > capacity - appended)
			whole = (size_t)(capacity - appended);
		if (whole > 0) {
			rc = shardpipe_stream_append(s, buf, whole);
			if (rc != SHARDPIPE_OK) {
				cli_error("write: %s: %s", shardpipe_strerror(rc),
					  shardpipe_stream_message(s));
				status = cli_exit_status(rc);
				break;
			}
			appended += whole;
		}
		held = avail - whole;
		memmove(buf, buf + whole, held);
		if (capacity != 0 && appended == capacity && held > 0)
			break; /* more than --shape takes: counted below */
		if (progress && cli_now() - last > 0.5) {
			last = cli_now();
			shardpipe_stream_stats(s, &st);
			fprintf(stderr, "\r%.2f GB in, %llu shards, %.2f GB/s ",
				(double)st.bytes_in / 1e9,
				(unsigned long long)st.shards_written,
				(double)st.bytes_in / 1e9 / (last - t0));
		}
		if (got <= 0) {
			if (got < 0) {
				cli_error("write: %s: read error: %s", input,
					  strerror(errno));
				status = CLI_EXIT_FAIL;
			}
			break;
		}
	}
	if (buf == NULL) {
		cli_error("write: out of memory");
		status = CLI_EXIT_FAIL;
	}
	if (progress)
		fputc('\n', stderr);
	if (status == CLI_EXIT_OK && capacity && appended == capacity &&
	    held > 0) {
		/* Count what is left, to say exactly how much. */
		uint64_t left = held;
		size_t n;

		while ((n = fread(buf, 1, bufsize, in)) > 0)
			left += n;
		cli_error("write: the input holds %llu bytes more than the "
			  "%llu bytes of --shape %s; they were not written; to "
			  "take every row, stream with --shape %s%s%s%s",
			  (unsigned long long)left,
			  (unsigned long long)capacity, o.shape,
			  stream_shape(shp, sizeof(shp), &desc),
			  left % capacity == 0 ? " (or, for a stream of "
			  "arrays of that shape, --shape 0," : "",
			  left % capacity == 0 ? o.shape : "",
			  left % capacity == 0 ? ")" : "");
		status = CLI_EXIT_USAGE;
	} else if (status == CLI_EXIT_OK && held > 0) {
		if (pad_partial) {
			/* The library fills the rest of the row. */
			rc = shardpipe_stream_append(s, buf, held);
			if (rc != SHARDPIPE_OK) {
				cli_error("write: %s: %s", shardpipe_strerror(rc),
					  shardpipe_stream_message(s));
				status = cli_exit_status(rc);
			}
			appended += held;
		} else {
			cli_error("write: the input ends %zu bytes into a row "
				  "of %llu bytes (%s); %llu whole rows were "
				  "written and the partial row was not "
				  "(--pad-partial fills it with the fill value)",
				  held, (unsigned long long)row_bytes,
				  shardpipe_dtype_name(desc.dtype),
				  (unsigned long long)(appended / row_bytes));
			status = CLI_EXIT_USAGE;
		}
	}
	if (status == CLI_EXIT_OK && capacity && appended < capacity &&
	    !allow_short) {
		cli_error("write: the input ended after %llu of the %llu bytes "
			  "of --shape %s; the store keeps that shape, rows "
			  "%llu and after holding the fill value "
			  "(--allow-short accepts this)",
			  (unsigned long long)appended,
			  (unsigned long long)capacity, o.shape,
			  (unsigned long long)(appended / row_bytes));
		status = CLI_EXIT_USAGE;
	}
	free(buf);
	if (in != stdin)
		fclose(in);
	rc = shardpipe_stream_close(s);
	if (rc != SHARDPIPE_OK) {
		if (status == CLI_EXIT_OK) {
			cli_error("write: %s: %s", shardpipe_strerror(rc),
				  shardpipe_last_error_message());
			status = cli_exit_status(rc);
		}
		return status;
	}
	if (!quiet) {
		uint64_t rows = row_bytes ? (appended + row_bytes - 1) /
					    row_bytes : 0;

		summary(out, &desc, rows, appended, cli_now() - t0);
	}
	return status;
}
