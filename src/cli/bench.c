/*
 * bench.c - the `shardpipe bench` command: its options and named
 * workloads.  The measurement and the report are bench/'s (bench.h), which
 * this file calls and which knows nothing of the program.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "bench.h"

struct workload {
	const char *name, *shape, *chunk, *shard, *names;
};

/* The workloads; all uint16 unless --dtype says otherwise. */
static const struct workload workloads[] = {
	{ "cube", "40,256,256,256,3", "4,32,64,64,1", "2,2,2,2,3", "t,z,y,x,c" },
	{ "frames", "200,2,2048,2304", "1,1,512,576", "1,1,4,4", "t,c,y,x" },
	{ "stack", "1024,2048,2048", "64,64,64", "1,16,16", "z,y,x" },
};

static void bench_usage(FILE *f)
{
	fprintf(f,
		"usage: shardpipe bench [cube|frames|stack|--all] [--fill F] "
		"[--codec C] [--dtype T]\n"
		"         [--shape S --chunk C --shard N] [--names A,B,..] "
		"[--index-location L]\n"
		"         [--rows N | --size BYTES] [--unbounded] "
		"[--span BYTES|row|epoch] [--frames N]\n"
		"         [--threads N] [--backend B]\n"
		"         [--output DIR [--overwrite] [--resume-at K]] [--bound] "
		"[--repeat N] [--json]\n"
		"         [--profile] [--local N] [--levels N|all] "
		"[--downsample D,..] [--method M]\n\n"
		"Streams a workload through the library and reports "
		"throughput per stage.\n"
		"  cube      t,z,y,x,c = 40,256,256,256,3, chunk 4,32,64,64,1, "
		"shard 2,2,2,2,3\n"
		"  frames    t,c,y,x = 200,2,2048,2304, chunk 1,1,512,576, "
		"shard 1,1,4,4 (default)\n"
		"  stack     z,y,x = 1024,2048,2048, chunk 64,64,64, "
		"shard 1,16,16\n"
		"  --all           every workload with every fill, each with "
		"its bound and in a\n"
		"                  process of its own, printed as one table "
		"row each\n"
		"                  (bench/README.md's table; with --json, one "
		"object per line)\n"
		"  --fill F        micro (default: blobs and shot noise), "
		"noise12 (uniform 12-bit),\n"
		"                  xor (XOR of the coordinates), zeros\n"
		"  --codec C       any codec write takes: none, zstd[:LEVEL], "
		"gzip[:LEVEL],\n"
		"                  blosc:CNAME:LEVEL:SHUFFLE (e.g. "
		"blosc:zstd:1:shuffle); default zstd:1\n"
		"  --dtype T       element type (default uint16)\n"
		"  --shape, --chunk, --shard, --names, --index-location\n"
		"                  any other geometry, as for write\n"
		"  --fill-value, --write-empty-chunks, --durable, --storage-order\n"
		"                  as for write (--durable needs --output)\n"
		"  --rows N        append N rows of dim 0 (default: the "
		"workload's size)\n"
		"  --size BYTES    append about BYTES of input instead: whole "
		"epochs (chunk rows\n"
		"                  of dim 0), at least one\n"
		"  --unbounded     declare dim 0 unbounded (size 0)\n"
		"  --span BYTES|row|epoch\n"
		"                  bytes per append, or one dim-0 row (the "
		"default) or one epoch\n"
		"                  (chunk rows of dim 0) per append\n"
		"  --frames N      distinct rows in the pattern (default: "
		"micro 4, or one chunk's\n"
		"                  depth along dim 0 if more; noise12, xor "
		"and zeros 16)\n"
		"  --output DIR    write a real store, a directory or "
		"s3://BUCKET/PREFIX (default:\n"
		"                  a sink that counts and discards)\n"
		"  --overwrite     replace a store already at DIR\n"
		"  --resume-at K   before each run, write the first K rows "
		"to --output and close;\n"
		"                  the run reopens that store and appends "
		"rows K.. (the report\n"
		"                  gives the reopen's time)\n"
		"  --bound         also compress the same chunks with the "
		"same codec, level and\n"
		"                  threads and nothing else, and report the "
		"fraction of that\n"
		"  --repeat N      run N times, each run followed by its bound, "
		"and report the\n"
		"                  fastest of each (1..100, default 1)\n"
		"  --json          one JSON object on stdout instead of the "
		"table\n"
		"  --profile       count the kernels' work on the reference "
		"backend (the default\n"
		"                  with it) and print, per kernel and phase, "
		"work, critical path,\n"
		"                  parallelism and units per batch; --rows "
		"defaults to one epoch\n"
		"  --local N       run the kernel backends' work-groups with N "
		"items (1..256;\n"
		"                  default the device's, 128 with --profile)\n"
		"  --levels N|all  a pyramid of N levels (all: until y and x fit "
		"a chunk), over\n"
		"                  y,x unless --downsample says; write's pyramid "
		"options apply.\n"
		"                  Each run is followed by the same input "
		"without the pyramid,\n"
		"                  to the same kind of store (--output, else the "
		"counting sink,\n"
		"                  which takes every level), and the report gives "
		"their ratio;\n"
		"                  with --bound and no --output, one untimed run "
		"first writes\n"
		"                  a temporary directory, the levels read back for "
		"their bound\n");
}

/* The command line, before a workload fills in what it leaves out. */
struct bench_args {
	struct cli_desc_opts o;
	struct cli_levels_opts l;
	const struct workload *w;
	const char *fill_name, *output, *span_text;
	uint64_t rows, size, frames, local, resume_at;
	int unbounded, json, bound, repeat, all, profile;
	int fill_given, size_given;
};

static const struct workload *workload_find(const char *name)
{
	for (size_t j = 0; j < sizeof(workloads) / sizeof(workloads[0]); j++)
		if (strcmp(name, workloads[j].name) == 0)
			return &workloads[j];
	return NULL;
}

/* What cannot go together; -1 to go on, or CLI_EXIT_USAGE after saying
 * why. */
static int check_args(const struct bench_args *a, const char *named)
{
	const struct cli_desc_opts *o = &a->o;
	/* --all names its workloads, fills and runs itself. */
	const char *const clash[][2] = {
		{ named, "a workload" }, { o->shape, "--shape" },
		{ o->chunk, "--chunk" }, { o->shard, "--shard" },
		{ o->shard_shape, "--shard-shape" },
		{ o->chunks_per_shard, "--chunks-per-shard" },
		{ o->names, "--names" }, { a->output, "--output" },
		{ a->fill_given ? "" : NULL, "--fill" },
		{ a->profile ? "" : NULL, "--profile" },
		/* A pyramid's dims are a workload's own: the cube's channel
		 * axis refused one only after the rows before it had run. */
		{ a->l.levels, "--levels" }, { a->l.downsample, "--downsample" },
	};

	if (a->rows != 0 && a->size != 0) {
		cli_error("bench: --rows and --size both say how much to "
			  "append; give one");
		return CLI_EXIT_USAGE;
	}
	if (a->size == 0 && a->size_given) {
		cli_error("bench: --size 0: give the bytes of input per run");
		return CLI_EXIT_USAGE;
	}
	for (size_t k = 0; a->all && k < sizeof(clash) / sizeof(clash[0]);
	     k++)
		if (clash[k][0] != NULL) {
			cli_error("bench: --all runs every workload with every "
				  "fill; %s cannot go with it", clash[k][1]);
			return CLI_EXIT_USAGE;
		}
	return -1;
}

/* Returns -1 to go on, or the exit status (--help, a bad option). */
static int parse_args(struct bench_args *a, int argc, char **argv)
{
	const char *named = NULL;

	a->w = &workloads[1];
	a->fill_name = "micro";
	a->repeat = 1;
	cli_seen_init(&a->o.seen, "bench");
	for (int i = 1; i < argc; i++) {
		int k = cli_desc_option(&a->o, argc, argv, &i);
		const char *arg = argv[i];
		const char *const flags[] = { "--unbounded", "--bound", "--json",
					      "--all", "--profile" };
		int *const flag_slots[] = { &a->unbounded, &a->bound, &a->json,
					    &a->all, &a->profile };
		uint64_t v;

		if (k == 0)
			k = cli_levels_option(&a->l, &a->o.seen, argc, argv,
					      &i);
		if (k < 0)
			return CLI_EXIT_USAGE;
		if (k > 0)
			continue;
		if (strcmp(arg, "--help") == 0) {
			bench_usage(stdout);
			return CLI_EXIT_OK;
		} else if (strcmp(arg, "--fill") == 0) {
			k = cli_take(&a->o.seen, argc, argv, &i, &a->fill_name);
			a->fill_given = 1;
		} else if (strcmp(arg, "--rows") == 0) {
			k = cli_take_u64(&a->o.seen, argc, argv, &i, UINT64_MAX,
					 &a->rows);
		} else if (strcmp(arg, "--size") == 0) {
			k = cli_take_u64(&a->o.seen, argc, argv, &i, UINT64_MAX,
					 &a->size);
			a->size_given = 1;
		} else if (strcmp(arg, "--span") == 0) {
			k = cli_take(&a->o.seen, argc, argv, &i, &a->span_text);
		} else if (strcmp(arg, "--frames") == 0) {
			k = cli_take_u64(&a->o.seen, argc, argv, &i, UINT64_MAX,
					 &a->frames);
		} else if (strcmp(arg, "--repeat") == 0) {
			k = cli_take_u64(&a->o.seen, argc, argv, &i, 100, &v);
			if (k == 0 && v < 1) {
				cli_error("bench: --repeat: 0 runs; give 1 to "
					  "100");
				k = -1;
			}
			a->repeat = (int)v;
		} else if (strcmp(arg, "--output") == 0) {
			k = cli_take(&a->o.seen, argc, argv, &i, &a->output);
		} else if (strcmp(arg, "--resume-at") == 0) {
			k = cli_take_u64(&a->o.seen, argc, argv, &i, UINT64_MAX,
					 &a->resume_at);
		} else if (strcmp(arg, "--local") == 0) {
			k = cli_take_u64(&a->o.seen, argc, argv, &i, 256,
					 &a->local);
			if (k == 0 && a->local < 1) {
				cli_error("bench: --local: 0 items; give 1 to "
					  "256");
				k = -1;
			}
		} else if ((k = cli_flag(&a->o.seen, arg, flags, flag_slots,
					 CLI_NFLAGS(flags))) != 0) {
			k = k < 0 ? -1 : 0;
		} else if (arg[0] != '-') {
			if (named != NULL) {
				cli_error("bench: one workload only: %s and %s",
					  named, arg);
				return CLI_EXIT_USAGE;
			}
			named = arg;
			a->w = workload_find(arg);
			if (a->w == NULL) {
				cli_error("bench: unknown workload \"%s\" (cube, "
					  "frames, stack)", arg);
				return CLI_EXIT_USAGE;
			}
		} else {
			cli_error("bench: unknown option %s", arg);
			bench_usage(stderr);
			return CLI_EXIT_USAGE;
		}
		if (k != 0)
			return CLI_EXIT_USAGE;
	}
	return check_args(a, named);
}

/* The measurement the arguments ask for: the workload supplies whatever
 * geometry the options leave out.  Returns CLI_EXIT_OK or, after saying
 * why, CLI_EXIT_USAGE. */
static int setup_from_args(struct bench_args *a, struct bench_setup *su)
{
	struct cli_desc_opts *o = &a->o;
	int fill = bench_fill_from_name(a->fill_name);
	uint64_t row_bytes, epoch_rows;

	memset(su, 0, sizeof(*su));
	if (fill < 0) {
		cli_error("bench: --fill: \"%s\" is not micro, noise12, xor or "
			  "zeros", a->fill_name);
		return CLI_EXIT_USAGE;
	}
	su->workload = o->shape != NULL ? "custom" : a->w->name;
	if (o->shape == NULL) {
		o->shape = a->w->shape;
		if (o->names == NULL)
			o->names = a->w->names;
	}
	if (o->chunk == NULL)
		o->chunk = a->w->chunk;
	if (o->shard == NULL && o->shard_shape == NULL &&
	    o->chunks_per_shard == NULL && strcmp(su->workload, "custom") != 0)
		o->shard = a->w->shard;
	if (o->dtype == NULL)
		o->dtype = "uint16";
	/* The work profile: the reference backend counts it, slowly, so one
	 * epoch unless asked for more. */
	if (a->profile) {
		if (o->backend == NULL)
			o->backend = "reference";
		if (strcmp(o->backend, "reference") != 0 || a->json) {
			cli_error("bench: --profile counts work on the "
				  "reference backend and prints a table: not "
				  "with %s", a->json ? "--json" : o->backend);
			return CLI_EXIT_USAGE;
		}
		if (a->local == 0)
			a->local = 128;
	}
	/* --levels alone: a pyramid over y and x; "all": every level. */
	if (a->l.levels != NULL && a->l.downsample == NULL)
		a->l.downsample = "y,x";
	if (a->l.levels != NULL && strcmp(a->l.levels, "all") == 0)
		a->l.levels = NULL;
	if (cli_desc_build(o, &su->desc) != CLI_EXIT_OK ||
	    cli_levels_build(&a->l, &su->desc) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	cli_shard_warnings(&su->desc);
	/* Rows, epochs and spans below are counted along storage dim 0. */
	if (cli_append_dim(&su->desc) != 0) {
		cli_error("bench: --storage-order %s stores the append dim as "
			  "storage dim %d; bench appends along storage dim 0 "
			  "only", o->storage_order,
			  cli_append_dim(&su->desc));
		return CLI_EXIT_USAGE;
	}
	if (su->desc.rank < 2) {
		cli_error("bench: arrays of rank 1 are not benchmarked");
		return CLI_EXIT_USAGE;
	}
	if (su->desc.durable && a->output == NULL) {
		cli_error("bench: --durable needs --output: the counting sink "
			  "writes no files to make durable");
		return CLI_EXIT_USAGE;
	}
	row_bytes = shardpipe_dtype_size(su->desc.dtype);
	for (int d = 1; d < su->desc.rank; d++)
		row_bytes *= su->desc.dims[d].size;
	epoch_rows = su->desc.dims[0].chunk;
	su->rows = a->rows != 0 ? a->rows :
		   a->profile ? epoch_rows : su->desc.dims[0].size;
	if (a->size != 0) {
		/* Whole epochs, so that every run ends on a full batch. */
		su->rows = a->size / row_bytes / epoch_rows * epoch_rows;
		if (su->rows < epoch_rows)
			su->rows = epoch_rows;
	}
	if (su->rows == 0) {
		cli_error("bench: an unbounded --shape needs --rows or --size");
		return CLI_EXIT_USAGE;
	}
	if (a->span_text == NULL || strcmp(a->span_text, "row") == 0)
		su->span = 0;
	else if (strcmp(a->span_text, "epoch") == 0)
		su->span = epoch_rows * row_bytes;
	else if (a->span_text[0] < '0' || a->span_text[0] > '9') {
		cli_error("bench: --span: \"%s\" is not a byte count, row or "
			  "epoch", a->span_text);
		return CLI_EXIT_USAGE;
	} else if (cli_parse_u64("--span", a->span_text, UINT64_MAX,
				 &su->span) != 0)
		return CLI_EXIT_USAGE;
	su->desc.dims[0].size = a->unbounded ? 0 : su->rows;
	su->fill = (enum bench_fill)fill;
	su->frames = a->frames;
	su->output = a->output;
	if (a->resume_at > 0 && (a->output == NULL || a->resume_at >= su->rows ||
				 su->desc.downsample || su->desc.ngff)) {
		cli_error("bench: --resume-at %llu needs --output, fewer rows "
			  "than --rows (%llu) and no pyramid",
			  (unsigned long long)a->resume_at,
			  (unsigned long long)su->rows);
		return CLI_EXIT_USAGE;
	}
	su->resume_at = a->resume_at;
	su->repeat = a->repeat;
	su->bound = a->bound;
	su->quiet = a->json;
	su->codec_text = o->codec != NULL ? o->codec : "zstd:1";
	return CLI_EXIT_OK;
}

/* One measurement, reported as its own table or JSON object, or as a
 * row of --all's table. */
static int bench_one(struct bench_args *a)
{
	struct bench_setup su;
	struct bench_result r;
	struct bench_profile prof;
	int rc = setup_from_args(a, &su);

	if (rc != CLI_EXIT_OK)
		return rc;
	if (a->all) {
		su.quiet = 1;
		fprintf(stderr, "bench: %s, fill %s, %llu rows...\n",
			su.workload, a->fill_name, (unsigned long long)su.rows);
	}
	rc = bench_kernel_debug(&prof, a->profile, a->local, r.message,
				sizeof(r.message));
	if (rc == SHARDPIPE_OK)
		rc = bench_run(&su, &r);
	if (rc == SHARDPIPE_OK) {
		if (a->json)
			bench_report_json(&r);
		else if (a->all)
			bench_report_row(&r);
		else
			bench_report_text(&r);
		rc = bench_profile_print(&prof, r.backend, r.message,
					 sizeof(r.message));
	}
	bench_profile_done(&prof);
	if (rc != SHARDPIPE_OK) {
		cli_error("bench: %s, fill %s: %s", su.workload, a->fill_name,
			  r.message);
		return cli_exit_status(rc);
	}
	return CLI_EXIT_OK;
}

/*
 * One row of --all in a process of its own.  In this one, a row would take
 * the pools that the previous row of its workload gave back
 * (doc/design.md §27): its first run would start warm and its peak memory
 * would read 0 above a baseline that already holds them.  Alone, each row is what
 * `bench WORKLOAD --fill F` prints, whatever ran before it.
 */
static int bench_row_alone(struct bench_args *one)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		cli_error("bench: %s, fill %s: cannot start its process: %s",
			  one->w->name, one->fill_name, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (pid == 0) {
		int rc = bench_one(one);

		fflush(stdout);
		_exit(rc);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			cli_error("bench: %s, fill %s: %s", one->w->name,
				  one->fill_name, strerror(errno));
			return CLI_EXIT_FAIL;
		}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	/* A reader that went away (`| head`) ends --all as it would end a
	 * single row: by the same signal, without a word. */
	if (WTERMSIG(status) == SIGPIPE) {
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
	cli_error("bench: %s, fill %s: its process was killed by signal %d",
		  one->w->name, one->fill_name, WTERMSIG(status));
	return CLI_EXIT_FAIL;
}

int cli_bench(int argc, char **argv)
{
	static const char *const fills[] = { "micro", "noise12", "xor",
					     "zeros" };
	static const char *const order[] = { "frames", "stack", "cube" };
	struct bench_args a = { 0 };
	int rc = parse_args(&a, argc, argv);

	if (rc >= 0)
		return rc;
	if (!a.all)
		return bench_one(&a);
	/* Every workload with every fill, each with its bound: the table of
	 * bench/README.md, one row as each run ends. */
	a.bound = 1;
	if (!a.json)
		bench_report_row_head();
	for (size_t w = 0; w < sizeof(order) / sizeof(order[0]); w++)
		for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
			struct bench_args one = a;

			one.w = workload_find(order[w]);
			one.fill_name = fills[f];
			rc = bench_row_alone(&one);
			if (rc != CLI_EXIT_OK)
				return rc;
		}
	return CLI_EXIT_OK;
}
