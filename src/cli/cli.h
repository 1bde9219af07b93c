/*
 * cli.h - the shardpipe program's subcommands and the option parsing they
 * share.  The program uses only the public API.
 */
#ifndef SHARDPIPE_CLI_H
#define SHARDPIPE_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "shardpipe.h"

/* Exit codes (documented in shardpipe(1)). */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,     /* the operation failed (I/O, corrupt store) */
	CLI_EXIT_USAGE = 2,    /* bad command line or array description */
	CLI_EXIT_MISMATCH = 3, /* verify/conform found a difference */
	CLI_EXIT_UNSUPPORTED = 4 /* a valid store uses a feature we lack */
};

/*
 * The exit status for a library error: 4 for a store feature we cannot
 * read, 1 when the operation failed (I/O, memory, a device, a compressor, a
 * malformed or corrupt store, a store another writer holds), 2 for
 * everything the caller asked wrongly
 * (the description, the backend, the path, an existing store).
 */
int cli_exit_status(int rc);

/*
 * The options given so far on one command line, so that a repeat is
 * refused naming it: no option is repeatable, and last-wins would
 * silently drop what the user typed first.
 */
#define CLI_MAX_OPTS 48
struct cli_seen {
	const char *cmd;                  /* "write", for messages */
	const char *opt[CLI_MAX_OPTS];
	const char *val[CLI_MAX_OPTS];    /* NULL for a flag */
	int n;
};

void cli_seen_init(struct cli_seen *seen, const char *cmd);
/* 0 the first time opt is given; -1, after naming it and both values,
 * the second time. */
int cli_once(struct cli_seen *seen, const char *opt, const char *val);
/*
 * If arg is one of the n flags (options without a value) in names, set
 * its slot to 1 and return 1; 0 if it is none of them; -1, after naming
 * it, when it was given before.
 */
int cli_flag(struct cli_seen *seen, const char *arg,
	     const char *const *names, int *const *slots, size_t n);
#define CLI_NFLAGS(names) (sizeof(names) / sizeof((names)[0]))
/*
 * argv[*i] is an option that takes a value: set *val to the next
 * argument and advance *i.  -1, after saying why, when there is no value
 * (or the next argument is an option).  cli_take also refuses an option
 * given before; cli_value alone serves the one documented as repeatable
 * (write's --attr).
 */
int cli_value(const struct cli_seen *seen, int argc, char **argv, int *i,
	      const char **val);
int cli_take(struct cli_seen *seen, int argc, char **argv, int *i,
	     const char **val);
/* As cli_take, the value being a count of at most max (cli_parse_u64). */
int cli_take_u64(struct cli_seen *seen, int argc, char **argv, int *i,
		 uint64_t max, uint64_t *out);
/*
 * The value s of option opt as a number of at most max: plain decimal
 * digits only (no sign, space, exponent or unit; not empty).  0, or -1
 * after a message naming opt and s.
 */
int cli_parse_u64(const char *opt, const char *s, uint64_t max,
		  uint64_t *out);

/* Options that describe an array, shared by write, demo, bench, conform. */
struct cli_desc_opts {
	const char *shape, *chunk, *shard, *names, *dtype, *codec;
	const char *shard_shape, *chunks_per_shard;
	const char *index_location, *backend;
	int threads;
	int overwrite;
	/* --fill-value, --write-empty-chunks, --durable */
	const char *fill_value;
	int write_empty_chunks;
	int durable;
	/* --storage-order I,J,..: append dims in storage order (numpy's
	 * transpose axes, design §3.3) */
	const char *storage_order;
	/* every option of the command line, the command's own included */
	struct cli_seen seen;
};

/*
 * If argv[*i] is one of the description options (--shape, --chunk,
 * --shard-shape, --chunks-per-shard, --shard, --names, --dtype, --codec,
 * --index-location, --backend, --threads, --overwrite, --fill-value,
 * --write-empty-chunks, --durable, --storage-order), consume it and its value, advancing *i,
 * and return 1; 0 if it is not; -1 (after printing why) on a missing
 * value, a repeat (o->seen, set up by cli_seen_init) or a bad --threads.
 */
int cli_desc_option(struct cli_desc_opts *o, int argc, char **argv, int *i);

/*
 * Build a description from the options; prints the error and returns
 * CLI_EXIT_USAGE on a bad value.
 */
int cli_desc_build(const struct cli_desc_opts *o, shardpipe_desc *desc);

/*
 * As cli_desc_build, over a desc that already holds an array (rank > 0,
 * from shardpipe_desc_from_store: write --append): the options given
 * replace its fields, the others stay, and --shape and --chunk may be
 * left out.  A --shape of another rank than the array's is refused here
 * (the other lists are read against it); every other difference is the
 * library's to refuse, naming the field.
 */
int cli_desc_apply(const struct cli_desc_opts *o, shardpipe_desc *desc);

/*
 * Warn on stderr when one shard would hold over 2 GiB or its index would be
 * larger than its data.  Called once the library has accepted desc: on a
 * description it refuses (a size that overflows), a warning about its
 * shards would come before the refusal and mislead.
 */
void cli_shard_warnings(const shardpipe_desc *desc);
/* --storage-order into desc before shardpipe_desc_from_store() reads a
 * store (write --append): the library needs it first where it moves the
 * append dim (design §3.3).  desc->rank becomes the list's length;
 * what is wrong with the list (another length than the store's rank, an
 * entry out of range) is refused by cli_desc_apply after the read. */
int cli_desc_order(const struct cli_desc_opts *o, shardpipe_desc *desc);
/* The storage dim the rows run along: where --storage-order put the
 * append dim (design §3.3), else 0. */
int cli_append_dim(const shardpipe_desc *desc);

/* The pyramid and OME-NGFF options (levels.c, doc/design.md §28). */
struct cli_levels_opts {
	const char *downsample, *method, *append_method, *levels;
	const char *units, *scale, *axis_types, *stop;
	int ngff;
};

/*
 * If argv[*i] is a pyramid option (--downsample DIMS, --method M,
 * --append-method M, --levels N, --stop DIM=N,.., --units DIM=UNIT,..,
 * --scale DIM=SIZE,.., --axis-types DIM=TYPE,.., --ngff), consume it and
 * its value and return 1; 0 if it is not; -1 (after printing why) on a
 * missing value or a repeat (seen: the command line's options).
 */
int cli_levels_option(struct cli_levels_opts *o, struct cli_seen *seen,
		      int argc, char **argv, int *i);

/*
 * Set desc's pyramid fields from the options, after cli_desc_build (dims
 * are named by --names or by index).  Prints the error and returns
 * CLI_EXIT_USAGE on a bad value; what the values mean together is the
 * library's to check at open.
 */
int cli_levels_build(const struct cli_levels_opts *o, shardpipe_desc *desc);

/* msg with every library field name in it (max_levels, ...) replaced by
 * the option that sets it (--levels, ...), in buf; else msg. */
const char *cli_levels_message(const char *msg, char *buf, size_t size);

/* Parse "a,b,c", the value of opt, into at most SHARDPIPE_MAX_RANK
 * numbers as cli_parse_u64 reads each; returns the count, or -1 after a
 * message naming opt and the entry at fault. */
int cli_parse_list(const char *opt, const char *s, uint64_t *out);
/*
 * Parse a --codec value into desc's codec, level and blosc fields: "none",
 * "zstd[:LEVEL[:checksum]]", "gzip[:LEVEL]" or
 * "blosc[:CNAME[:LEVEL[:SHUFFLE[:BLOCKSIZE]]]]" (defaults zstd, 1,
 * shuffle, 0 = automatic), through the library's
 * shardpipe_desc_set_codec().  Returns 0, or -1 after printing the
 * library's message (the field at fault and the closest valid word);
 * level ranges and what this build's c-blosc has are checked at open.
 */
int cli_parse_codec(const char *s, shardpipe_desc *desc);
/* *out = a * b; 0 when that overflows.  Every size product the program
 * forms from a store's or the user's numbers goes through here. */
static inline int cli_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

/* Print "shardpipe: " and the message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

double cli_now(void);

int cli_write(int argc, char **argv);
int cli_demo(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_group(int argc, char **argv);
int cli_cat(int argc, char **argv);
int cli_backends(int argc, char **argv);
int cli_conform(int argc, char **argv);
int cli_bench(int argc, char **argv);

/* write --frame-meta FILE.csv (frame_csv.c, design §28.9): the header's
 * fields and one row of values a frame, rows of them. */
struct frame_csv {
	shardpipe_frame_field fields[SHARDPIPE_MAX_FRAME_FIELDS];
	char *names[SHARDPIPE_MAX_FRAME_FIELDS];
	int n;
	shardpipe_frame_value *vals;   /* rows * n */
	uint64_t rows;
};
int frame_csv_read(struct frame_csv *c, const char *file);
void frame_csv_free(struct frame_csv *c);

#endif
