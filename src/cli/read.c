/* read.c - shardpipe verify, cat and backends. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* A store that cannot be read: 4 when it uses a feature we lack, 1
 * otherwise (missing, malformed, corrupt, I/O). */
static int reader_status(int rc)
{
	return rc == SHARDPIPE_ERR_UNSUPPORTED ? CLI_EXIT_UNSUPPORTED
					       : CLI_EXIT_FAIL;
}

/* Dim-0 rows per read: one shard's worth, so every shard is decoded once.
 * Every size is a checked product: a store's shape is input, and a wrapped
 * slab size once meant a 1-byte buffer for a multi-terabyte row. */
static int read_slabs(shardpipe_reader *r, const char *what, const char *path,
		      int (*each)(void *, const void *, size_t, uint64_t),
		      void *user)
{
	shardpipe_array_info info;
	uint64_t start[SHARDPIPE_MAX_RANK] = { 0 }, count[SHARDPIPE_MAX_RANK];
	uint64_t row_bytes, slab, slab_bytes;
	unsigned char *buf;
	int rc;

	shardpipe_reader_info(r, &info);
	row_bytes = shardpipe_dtype_size(info.dtype);
	for (int d = 1; d < info.rank; d++) {
		count[d] = info.shape[d];
		if (!cli_mul_ok(row_bytes, info.shape[d], &row_bytes)) {
			cli_error("%s: %s: one row of the array (dimensions "
				  "1 to %d) holds more than 2^64 bytes", what,
				  path, info.rank - 1);
			return CLI_EXIT_FAIL;
		}
	}
	slab = info.shard[0] ? info.shard[0] : 1;
	/* Keep a slab within 1 GiB when shards are very tall. */
	while (slab > 1 && (!cli_mul_ok(slab, row_bytes, &slab_bytes) ||
			    slab_bytes > (1ull << 30)))
		slab /= 2;
	if (!cli_mul_ok(slab, row_bytes, &slab_bytes) ||
	    slab_bytes > (1ull << 30)) {
		cli_error("%s: %s: one row of the array (dimension 0 fixed) "
			  "holds %llu bytes, more than the 1 GiB read at once",
			  what, path, (unsigned long long)row_bytes);
		return CLI_EXIT_FAIL;
	}
	buf = malloc(slab_bytes != 0 ? (size_t)slab_bytes : 1);
	if (buf == NULL) {
		cli_error("%s: %s: out of memory for %llu rows of %llu bytes",
			  what, path, (unsigned long long)slab,
			  (unsigned long long)row_bytes);
		return CLI_EXIT_FAIL;
	}
	for (uint64_t row = 0; row < info.shape[0]; row += slab) {
		uint64_t n = info.shape[0] - row < slab ? info.shape[0] - row
							: slab;

		start[0] = row;
		count[0] = n;
		rc = shardpipe_reader_read(r, start, count, buf,
					   (size_t)slab_bytes);
		if (rc != SHARDPIPE_OK) {
			cli_error("%s: %s: %s: %s", what, path,
				  shardpipe_strerror(rc),
				  shardpipe_reader_message(r));
			free(buf);
			return reader_status(rc);
		}
		/* n <= slab, so n * row_bytes <= slab_bytes. */
		rc = each(user, buf, (size_t)(n * row_bytes), row);
		if (rc != CLI_EXIT_OK) {
			free(buf);
			return rc;
		}
		if (info.shape[0] - row <= slab)
			break;
	}
	free(buf);
	return CLI_EXIT_OK;
}

/* The group at path, or NULL when path is not one (quietly). */
static shardpipe_group *group_at(const char *path)
{
	shardpipe_group *g;

	return shardpipe_group_open(&g, path, 1) == SHARDPIPE_OK ? g : NULL;
}

/* "a, b, c" of the group's arrays, on stderr. */
static void list_arrays(const shardpipe_group *g)
{
	size_t n = shardpipe_group_array_count(g);

	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "",
			shardpipe_group_array_name(g, i));
}

static int open_store(const char *what, const char *path,
		      shardpipe_reader **r)
{
	int rc = shardpipe_reader_open(r, path);
	shardpipe_group *g;
	char *why;

	if (rc == SHARDPIPE_OK)
		return CLI_EXIT_OK;
	/* The group probe below sets the last error too: keep the
	 * reader's, which says what is wrong with the array. */
	why = strdup(shardpipe_last_error_message());
	/* A group is no array: name what it holds instead. */
	if ((g = group_at(path)) != NULL) {
		cli_error("%s: %s: is a Zarr group of %zu array(s), not an "
			  "array; name one as %s/NAME", what, path,
			  shardpipe_group_array_count(g), path);
		if (shardpipe_group_array_count(g) > 0) {
			fprintf(stderr, "shardpipe: its arrays: ");
			list_arrays(g);
			fputc('\n', stderr);
		}
		shardpipe_group_close(g);
		free(why);
		return CLI_EXIT_USAGE;
	}
	cli_error("%s: %s: %s: %s", what, path, shardpipe_strerror(rc),
		  why != NULL ? why : "out of memory");
	free(why);
	return reader_status(rc);
}

struct against {
	FILE *raw;
	const char *path;
	unsigned char *buf;
	size_t cap;
	uint64_t done; /* bytes compared before this slab */
	int mismatch;
};

static int compare_slab(void *user, const void *data, size_t n, uint64_t row)
{
	struct against *a = user;
	const unsigned char *d = data;

	(void)row;
	if (n > a->cap) {
		free(a->buf);
		a->buf = malloc(n);
		a->cap = a->buf ? n : 0;
		if (a->buf == NULL) {
			cli_error("verify: out of memory");
			return CLI_EXIT_FAIL;
		}
	}
	size_t got = fread(a->buf, 1, n, a->raw);

	/* A file that cannot be read (a directory, EIO) differs from no
	 * store: an error, not a mismatch at the byte where reading
	 * stopped. */
	if (got < n && ferror(a->raw)) {
		cli_error("verify: --against %s: %s", a->path,
			  strerror(errno));
		return CLI_EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++) {
		if (i >= got || a->buf[i] != d[i]) {
			uint64_t at = a->done + i;

			if (i >= got)
				cli_error("verify: %s ends at byte %llu, the "
					  "store holds more", a->path,
					  (unsigned long long)at);
			else
				cli_error("verify: byte %llu differs: store "
					  "0x%02x, %s 0x%02x",
					  (unsigned long long)at, d[i], a->path,
					  a->buf[i]);
			a->mismatch = 1;
			return CLI_EXIT_MISMATCH;
		}
	}
	a->done += n;
	return CLI_EXIT_OK;
}

static int verify_array(const char *store, const char *raw);
static int verify_group(const char *store, const char *raw, int depth);

/* Groups inside groups deeper than this are not walked (a plate is 3). */
#define MAX_GROUP_DEPTH 16

/* Whether name is one of the group's arrays. */
static int listed(const shardpipe_group *g, const char *name)
{
	for (size_t i = 0; i < shardpipe_group_array_count(g); i++)
		if (strcmp(shardpipe_group_array_name(g, i), name) == 0)
			return 1;
	return 0;
}

/*
 * The group lists only the children it can read as arrays under a name it
 * would write; a child with a zarr.json that is no group (an array cut
 * short by a crash or damaged, an array another writer named "a b") is
 * verified too, so that verify of the group does not call a damaged array
 * valid by leaving it out.  run 0: only count them in *count, for the
 * header.  A child that is a group (a plate's rows and wells; an image
 * is no group here) is verified as a group in turn, when run.  Their first
 * failure's status, or 0.
 */
static int verify_unlisted(const char *store, const shardpipe_group *g,
			   int run, size_t *count, int depth)
{
	struct dirent **names, *e;
	int status = CLI_EXIT_OK;
	/* In name order, so that a plate's wells come as A/1, A/2, B/1. */
	int n = scandir(store, &names, NULL, alphasort);

	*count = 0;
	if (n < 0)
		return CLI_EXIT_OK; /* listed a moment ago; nothing to add */
	for (int i = 0; i < n; free(names[i++])) {
		shardpipe_group *child;
		struct stat st;
		char *path, *meta;
		int st_rc;

		e = names[i];
		if (e->d_name[0] == '.' || listed(g, e->d_name))
			continue;
		path = malloc(strlen(store) + strlen(e->d_name) + 2);
		meta = malloc(strlen(store) + strlen(e->d_name) +
			      sizeof("/zarr.json") + 1);
		if (path == NULL || meta == NULL) {
			free(path);
			free(meta);
			cli_error("verify: out of memory");
			status = CLI_EXIT_FAIL;
			continue;
		}
		sprintf(path, "%s/%s", store, e->d_name);
		sprintf(meta, "%s/zarr.json", path);
		/* No zarr.json: the user's files, not a node. */
		if (lstat(meta, &st) == 0) {
			child = group_at(path);
			if (child == NULL)
				++*count;
			if (child == NULL && run) {
				st_rc = verify_array(path, NULL);
				if (status == CLI_EXIT_OK)
					status = st_rc;
			} else if (run && lstat(path, &st) == 0 &&
				   S_ISDIR(st.st_mode)) {
				st_rc = depth < MAX_GROUP_DEPTH
						? verify_group(path, NULL,
							       depth + 1)
						: CLI_EXIT_OK;
				if (status == CLI_EXIT_OK)
					status = st_rc;
			}
			shardpipe_group_close(child);
		}
		free(meta);
		free(path);
	}
	free(names);
	return status;
}

/* verify of a group: what it holds, each of its arrays in turn, and the
 * groups inside it; the first failure's status. */
static int verify_group(const char *store, const char *raw, int depth)
{
	shardpipe_group *g = group_at(store);
	int status = CLI_EXIT_OK, st;
	size_t n, more;

	if (g == NULL)
		return verify_array(store, raw);
	n = shardpipe_group_array_count(g);
	if (raw != NULL) {
		cli_error("verify: %s: is a Zarr group of %zu array(s); "
			  "--against compares one array: give %s/NAME", store,
			  n, store);
		shardpipe_group_close(g);
		return CLI_EXIT_USAGE;
	}
	st = verify_unlisted(store, g, 0, &more, depth);
	printf("%s: Zarr group of %zu array(s)\n", store, n + more);
	for (size_t i = 0; i < n; i++) {
		const char *name = shardpipe_group_array_name(g, i);
		char *path = malloc(strlen(store) + strlen(name) + 2);

		if (path == NULL) {
			cli_error("verify: out of memory");
			shardpipe_group_close(g);
			return CLI_EXIT_FAIL;
		}
		sprintf(path, "%s/%s", store, name);
		st = verify_array(path, NULL);
		if (status == CLI_EXIT_OK)
			status = st;
		free(path);
	}
	st = verify_unlisted(store, g, 1, &more, depth);
	if (status == CLI_EXIT_OK)
		status = st;
	shardpipe_group_close(g);
	return status;
}

int cli_verify(int argc, char **argv)
{
	const char *store = NULL, *raw = NULL;
	struct cli_seen seen;

	cli_seen_init(&seen, "verify");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			printf("usage: shardpipe verify STORE [--against RAW]\n\n"
			       "Checks zarr.json, every shard index and CRC32C, "
			       "and decodes every chunk;\nwith --against, "
			       "compares the decoded array to a raw file.\n"
			       "An OME-NGFF image (STORE a group) is checked "
			       "level by level, each level\nrecomputed from the "
			       "one below it; --against compares level 0, and "
			       "STORE/1\nnames level 1 alone.\n"
			       "STORE is a directory or s3://BUCKET/PREFIX.  "
			       "A group (shardpipe group)\nis listed and each "
			       "of its arrays verified, then each group in "
			       "it (a plate's\nwells); STORE/NAME is one of "
			       "them.\n"
			       "Exit status: 0 valid, 1 corrupt or unreadable, "
			       "3 differs from RAW,\n4 uses a codec or feature "
			       "shardpipe does not support.\n");
			return CLI_EXIT_OK;
		} else if (strcmp(argv[i], "--against") == 0) {
			if (cli_take(&seen, argc, argv, &i, &raw) != 0)
				return CLI_EXIT_USAGE;
		} else if (argv[i][0] == '-') {
			cli_error("verify: unknown option %s", argv[i]);
			return CLI_EXIT_USAGE;
		} else if (store != NULL) {
			cli_error("verify: one store only: %s and %s", store,
				  argv[i]);
			return CLI_EXIT_USAGE;
		} else {
			store = argv[i];
		}
	}
	if (store == NULL) {
		cli_error("verify: no store given");
		return CLI_EXIT_USAGE;
	}
	return verify_group(store, raw, 0);
}

/* verify of one array: its indexes and chunks, and --against. */
static int verify_array(const char *store, const char *raw)
{
	shardpipe_reader *r;
	shardpipe_array_info info;
	int rc, status;

	if ((status = open_store("verify", store, &r)) != CLI_EXIT_OK)
		return status;
	rc = shardpipe_reader_check(r);
	if (rc != SHARDPIPE_OK) {
		cli_error("verify: %s: %s: %s", store, shardpipe_strerror(rc),
			  shardpipe_reader_message(r));
		shardpipe_reader_close(r);
		return reader_status(rc);
	}
	shardpipe_reader_info(r, &info);
	if (raw != NULL) {
		struct against a = { .path = raw };

		a.raw = fopen(raw, "rb");
		if (a.raw == NULL) {
			cli_error("verify: %s: %s", raw, strerror(errno));
			shardpipe_reader_close(r);
			return CLI_EXIT_FAIL;
		}
		status = read_slabs(r, "verify", store, compare_slab, &a);
		if (status == CLI_EXIT_OK && fgetc(a.raw) != EOF) {
			cli_error("verify: %s holds more bytes than the store",
				  raw);
			status = CLI_EXIT_MISMATCH;
		} else if (status == CLI_EXIT_OK && ferror(a.raw)) {
			cli_error("verify: --against %s: %s", raw,
				  strerror(errno));
			status = CLI_EXIT_FAIL;
		}
		fclose(a.raw);
		free(a.buf);
	}
	shardpipe_reader_close(r);
	if (status == CLI_EXIT_OK) {
		printf("%s: valid, ", store);
		if (info.levels > 0)
			printf("an OME-NGFF image of %d level%s%s; level 0 ",
			       info.levels, info.levels > 1 ? "s" : "",
			       info.levels < 2 ? "" :
			       info.levels_recomputed ?
				       ", each equal to the one below it "
				       "reduced" :
				       ", not recomputed (a method shardpipe "
				       "does not know)");
		printf("shape ");
		for (int d = 0; d < info.rank; d++)
			printf("%s%llu", d ? "," : "",
			       (unsigned long long)info.shape[d]);
		printf(", %s%s\n", shardpipe_dtype_name(info.dtype),
		       raw ? ", equal to the raw file" : "");
	}
	return status;
}

static int write_slab(void *user, const void *data, size_t n, uint64_t row)
{
	FILE *out = user;

	(void)row;
	if (fwrite(data, 1, n, out) != n) {
		cli_error("cat: write failed: %s", strerror(errno));
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

/*
 * Whether path, once resolved, lies inside directory dir: `cat -o` there
 * would truncate one of the files it is about to read (zarr.json, a
 * shard) before reading it.
 */
static int inside(const char *dir, const char *path)
{
	char *d = realpath(dir, NULL), *p = realpath(path, NULL);
	int in = 0;

	if (p == NULL && errno == ENOENT) {
		/* A new file: where its directory is. */
		char *copy = strdup(path), *slash;

		if (copy != NULL) {
			slash = strrchr(copy, '/');
			if (slash == NULL)
				p = realpath(".", NULL);
			else if (slash == copy)
				p = realpath("/", NULL);
			else {
				*slash = '\0';
				p = realpath(copy, NULL);
			}
			free(copy);
		}
	}
	if (d != NULL && p != NULL) {
		size_t n = strlen(d);

		in = strncmp(p, d, n) == 0 && (p[n] == '/' || p[n] == '\0');
	}
	free(d);
	free(p);
	return in;
}

int cli_cat(int argc, char **argv)
{
	const char *store = NULL, *outpath = NULL;
	shardpipe_reader *r;
	FILE *out = stdout;
	struct cli_seen seen;
	int status;

	cli_seen_init(&seen, "cat");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			printf("usage: shardpipe cat STORE [-o FILE]\n\n"
			       "Writes the decoded array as raw row-major bytes "
			       "(elements in the host's byte order)\nto stdout or FILE.  "
			       "Of an OME-NGFF image, level 0; STORE/1 is "
			       "level 1.\nSTORE is a directory or s3://BUCKET/PREFIX.\n");
			return CLI_EXIT_OK;
		} else if (strcmp(argv[i], "-o") == 0) {
			if (cli_take(&seen, argc, argv, &i, &outpath) != 0)
				return CLI_EXIT_USAGE;
		} else if (argv[i][0] == '-') {
			cli_error("cat: unknown option %s", argv[i]);
			return CLI_EXIT_USAGE;
		} else if (store != NULL) {
			cli_error("cat: one store only: %s and %s", store,
				  argv[i]);
			return CLI_EXIT_USAGE;
		} else {
			store = argv[i];
		}
	}
	if (store == NULL) {
		cli_error("cat: no store given");
		return CLI_EXIT_USAGE;
	}
	if (outpath != NULL && inside(store, outpath)) {
		cli_error("cat: -o %s lies inside the store %s, whose files it "
			  "would overwrite; write elsewhere", outpath, store);
		return CLI_EXIT_USAGE;
	}
	if ((status = open_store("cat", store, &r)) != CLI_EXIT_OK)
		return status;
	if (outpath != NULL && (out = fopen(outpath, "wb")) == NULL) {
		cli_error("cat: %s: %s", outpath, strerror(errno));
		shardpipe_reader_close(r);
		return CLI_EXIT_FAIL;
	}
	status = read_slabs(r, "cat", store, write_slab, out);
	if (fflush(out) != 0 && status == CLI_EXIT_OK) {
		cli_error("cat: write failed: %s", strerror(errno));
		status = CLI_EXIT_FAIL;
	}
	if (out != stdout)
		fclose(out);
	shardpipe_reader_close(r);
	return status;
}

int cli_backends(int argc, char **argv)
{
	if (argc > 1) {
		int help = argc == 2 && strcmp(argv[1], "--help") == 0;

		if (!help)
			cli_error("backends: takes no arguments, not %s",
				  argv[1]);
		fprintf(help ? stdout : stderr, "usage: shardpipe backends\n\n"
			"Lists every backend, whether it can run here, and its "
			"device or why not.\n");
		return help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	for (int i = 0; i < shardpipe_backend_count(); i++) {
		shardpipe_backend_info info;

		shardpipe_backend_probe(i, &info);
		printf("%s: %s%s\n", info.name,
		       info.usable ? "" : "unusable: ", info.detail);
	}
	return CLI_EXIT_OK;
}
