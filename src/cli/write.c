/* write.c - shardpipe write: stream raw bytes from a file or stdin. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void write_usage(FILE *f)
{
	fprintf(f,
		"usage: shardpipe write --shape S --chunk C [--shard N] "
		"[--dtype T] [--codec C]\n"
		"         [--names A,B,..] [--index-location start|end] "
		"[--input FILE|-]\n"
		"         [--backend B] [--threads N] [--overwrite]\n"
		"         [--fill-value V] [--write-empty-chunks] [--durable] "
		"OUT.zarr\n\n"
		"Streams raw row-major array bytes (stdin by default) into a "
		"sharded Zarr v3 store.\n"
		"  --shape S         sizes, slowest dim first; 0 in dim 0 = "
		"unbounded (size from input)\n"
		"  --chunk C         chunk (inner chunk) size per dim\n"
		"  --shard N         chunks per shard per dim (default 1 each)\n"
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

int cli_write(int argc, char **argv)
{
	struct cli_desc_opts o = { 0 };
	const char *input = "-", *out = NULL;
	shardpipe_desc desc;
	shardpipe_stream *s;
	shardpipe_stats st;
	size_t bufsize = 8u << 20;
	unsigned char *buf;
	FILE *in;
	int rc, progress, status = CLI_EXIT_OK;
	double t0 = cli_now(), last = 0;

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
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
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
	in = strcmp(input, "-") == 0 ? stdin : fopen(input, "rb");
	if (in == NULL) {
		cli_error("write: %s: %s", input, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	rc = shardpipe_stream_open(&s, out, &desc);
	if (rc != SHARDPIPE_OK) {
		cli_error("write: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		if (in != stdin)
			fclose(in);
		return cli_exit_status(rc);
	}
	buf = malloc(bufsize);
	progress = isatty(STDERR_FILENO);
	while (buf != NULL) {
		/* Whatever has arrived, not a full buffer: a pipe fed frame
		 * by frame (a camera) is appended, and its shards become
		 * visible, as the frames come. */
		ssize_t got = read(fileno(in), buf, bufsize);
		size_t n = got > 0 ? (size_t)got : 0;

		if (got < 0 && errno == EINTR)
			continue;

		if (n > 0) {
			rc = shardpipe_stream_append(s, buf, n);
			if (rc != SHARDPIPE_OK) {
				cli_error("write: %s: %s", shardpipe_strerror(rc),
					  shardpipe_stream_message(s));
				status = CLI_EXIT_FAIL;
				break;
			}
		}
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
	free(buf);
	if (in != stdin)
		fclose(in);
	rc = shardpipe_stream_close(s);
	if (rc != SHARDPIPE_OK && status == CLI_EXIT_OK) {
		cli_error("write: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		status = CLI_EXIT_FAIL;
	}
	return status;
}
