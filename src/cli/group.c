/* group.c - shardpipe group: make a Zarr group for write --array, or an
 * OME-NGFF plate for write --plate-field (doc/design.md §28.8). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void group_usage(FILE *f)
{
	fprintf(f, "usage: shardpipe group create STORE\n"
		   "       shardpipe group create --plate ROWS,COLS | --rows "
		   "R,.. --columns C,..\n"
		   "             [--field-count N] [--plate-name NAME] "
		   "[--acquisitions NAME,..] STORE\n\n"
		   "Makes STORE an empty Zarr v3 group (a directory whose "
		   "zarr.json says\n\"node_type\": \"group\"), durably, for "
		   "'shardpipe write --array NAME STORE' to\nwrite arrays "
		   "into.  STORE must not exist or be an empty directory; "
		   "its parent\nmust exist.  'shardpipe verify STORE' lists "
		   "a group's arrays and checks each.\n"
		   "With a plate option STORE is an OME-NGFF 0.5 "
		   "high-content screening plate, for\n'shardpipe write "
		   "--plate-field ROW/COL/F STORE' to write its fields into:\n"
		   "  --plate ROWS,COLS        that many rows, named A..Z, "
		   "AA.., and columns, 1..\n"
		   "  --rows R,..              the rows' names instead "
		   "(A-Z a-z 0-9, distinct)\n"
		   "  --columns C,..           the columns' names instead\n"
		   "  --field-count N          fields per well at most "
		   "(default 1)\n"
		   "  --plate-name NAME        the plate's name (default "
		   "\"plate\")\n"
		   "  --acquisitions NAME,..   the acquisitions, ids 0, 1, "
		   "... in that order\n");
}

/* A comma-separated list into its items, in place; an empty list or an
 * empty item is one empty name, which the plate refuses by name. */
static size_t split_list(char *s, char **out, size_t cap)
{
	size_t n = 0;

	for (char *p = s;; p++) {
		if (n == cap)
			return cap + 1;
		out[n++] = p;
		p = strchr(p, ',');
		if (p == NULL)
			return n;
		*p = '\0';
	}
}

/* Row r's name as a spreadsheet's column letters: A..Z, AA, AB, ... */
static void row_name(char *buf, size_t r)
{
	char tmp[16];
	size_t n = 0;

	for (r++; r > 0; r = (r - 1) / 26)
		tmp[n++] = (char)('A' + (r - 1) % 26);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
}

#define MAX_NAMES 4097  /* one past the plate's bound, for its message */

struct plate_args {
	const char *plate, *rows, *cols, *fields, *name, *acqs;
};

static int parse_count(const char *what, const char *s, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 ||
	    *out > max) {
		cli_error("group create: %s \"%s\": expected a number "
			  "0..%ld", what, s, max);
		return -1;
	}
	return 0;
}

static int create_plate(const char *store, struct plate_args *pa)
{
	static char names[2][MAX_NAMES][16];
	char *lists[3] = { NULL, NULL, NULL };
	char **items[3];
	size_t n[3] = { 0, 0, 0 };
	shardpipe_plate_desc d;
	shardpipe_plate *p;
	int rc, status = CLI_EXIT_USAGE;
	long v;

	for (int k = 0; k < 3; k++)
		items[k] = calloc(MAX_NAMES + 1, sizeof(char *));
	if (items[0] == NULL || items[1] == NULL || items[2] == NULL) {
		cli_error("group create: out of memory");
		status = CLI_EXIT_FAIL;
		goto out;
	}
	if (pa->plate != NULL) {
		char *c, *end;
		long r, k;

		errno = 0;
		r = strtol(pa->plate, &end, 10);
		c = end;
		if (*pa->plate < '0' || *pa->plate > '9' || *c != ',' ||
		    errno != 0 || c[1] < '0' || c[1] > '9' ||
		    (k = strtol(c + 1, &end, 10), *end != '\0') ||
		    errno != 0 || r > MAX_NAMES || k > MAX_NAMES) {
			cli_error("group create: --plate \"%s\": expected "
				  "ROWS,COLS, two counts up to 4096 (96 "
				  "wells: 8,12)", pa->plate);
			goto out;
		}
		n[0] = (size_t)r;
		n[1] = (size_t)k;
		for (size_t i = 0; i < n[0]; i++) {
			row_name(names[0][i], i);
			items[0][i] = names[0][i];
		}
		for (size_t i = 0; i < n[1]; i++) {
			snprintf(names[1][i], sizeof(names[1][i]), "%d",
				 (int)i + 1);
			items[1][i] = names[1][i];
		}
	}
	/* The names given replace the counted ones. */
	{
		const char *given[3] = { pa->rows, pa->cols, pa->acqs };

		for (int k = 0; k < 3; k++) {
			if (given[k] == NULL)
				continue;
			lists[k] = strdup(given[k]);
			if (lists[k] == NULL) {
				cli_error("group create: out of memory");
				status = CLI_EXIT_FAIL;
				goto out;
			}
			n[k] = split_list(lists[k], items[k], MAX_NAMES);
		}
	}
	shardpipe_plate_desc_init(&d);
	d.rows = (const char *const *)items[0];
	d.nrows = n[0];
	d.columns = (const char *const *)items[1];
	d.ncolumns = n[1];
	d.acquisitions = (const char *const *)items[2];
	d.nacquisitions = n[2];
	d.name = pa->name;
	if (pa->fields != NULL) {
		if (parse_count("--field-count", pa->fields, INT_MAX, &v) != 0)
			goto out;
		d.field_count = (int)v;
	}
	rc = shardpipe_plate_create(&p, store, &d, 1);
	if (rc != SHARDPIPE_OK) {
		cli_error("group create: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		status = cli_exit_status(rc);
		goto out;
	}
	shardpipe_plate_close(p);
	status = CLI_EXIT_OK;
out:
	for (int k = 0; k < 3; k++) {
		free(lists[k]);
		free(items[k]);
	}
	return status;
}

int cli_group(int argc, char **argv)
{
	static const char *const opts[] = {
		"--plate", "--rows", "--columns", "--field-count",
		"--plate-name", "--acquisitions",
	};
	struct plate_args pa = { 0 };
	const char **slots[] = { &pa.plate, &pa.rows, &pa.cols, &pa.fields,
				 &pa.name, &pa.acqs };
	const char *store = NULL;
	shardpipe_group *g;
	int rc, any = 0;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		group_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argc < 2 || strcmp(argv[1], "create") != 0) {
		if (argc < 2)
			cli_error("group: no subcommand given");
		else
			cli_error("group: unknown subcommand \"%s\"", argv[1]);
		group_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		size_t k = 0;

		while (k < sizeof(opts) / sizeof(opts[0]) &&
		       strcmp(argv[i], opts[k]) != 0)
			k++;
		if (strcmp(argv[i], "--help") == 0) {
			group_usage(stdout);
			return CLI_EXIT_OK;
		} else if (k < sizeof(opts) / sizeof(opts[0])) {
			if (i + 1 >= argc) {
				cli_error("group create: %s needs a value",
					  opts[k]);
				return CLI_EXIT_USAGE;
			}
			if (*slots[k] != NULL) {
				cli_error("group create: %s given twice",
					  opts[k]);
				return CLI_EXIT_USAGE;
			}
			*slots[k] = argv[++i];
			any = 1;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_error("group create: unknown option %s", argv[i]);
			return CLI_EXIT_USAGE;
		} else if (store != NULL) {
			cli_error("group create: one store only: %s and %s",
				  store, argv[i]);
			return CLI_EXIT_USAGE;
		} else {
			store = argv[i];
		}
	}
	if (store == NULL) {
		cli_error("group create: no store given");
		group_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (any) {
		if (pa.plate == NULL && (pa.rows == NULL || pa.cols == NULL)) {
			cli_error("group create: a plate needs --plate "
				  "ROWS,COLS, or --rows and --columns");
			return CLI_EXIT_USAGE;
		}
		return create_plate(store, &pa);
	}
	rc = shardpipe_group_create(&g, store, 1);
	if (rc != SHARDPIPE_OK) {
		cli_error("group create: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		return cli_exit_status(rc);
	}
	shardpipe_group_close(g);
	return CLI_EXIT_OK;
}
