/*
 * frame_csv.c - `shardpipe write --frame-meta FILE.csv` (design §28.9):
 * each frame's metadata from a CSV file, read whole and checked before
 * the store is made.  The header names the fields, each with an optional
 * type suffix (`time:f64,z_um:f64,n:i64,flag:bool`; no suffix: f64); each
 * following line holds one frame's values, line k for frame k.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cells of one line, split at commas, trimmed of blanks (in place). */
static int split(char *line, char **cells, int max)
{
	int n = 0;

	for (char *p = line;; ) {
		char *end = strchr(p, ','), *e;

		if (end != NULL)
			*end = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t' ||
				 e[-1] == '\r'))
			*--e = '\0';
		if (n == max)
			return max + 1;
		cells[n++] = p;
		if (end == NULL)
			return n;
		p = end + 1;
	}
}

static int parse_header(struct frame_csv *c, char *line, const char *file)
{
	char *cells[SHARDPIPE_MAX_FRAME_FIELDS + 1];
	int n = split(line, cells, SHARDPIPE_MAX_FRAME_FIELDS);

	if (n > SHARDPIPE_MAX_FRAME_FIELDS) {
		cli_error("write: --frame-meta %s: line 1: more than %d fields",
			  file, SHARDPIPE_MAX_FRAME_FIELDS);
		return CLI_EXIT_USAGE;
	}
	for (int i = 0; i < n; i++) {
		char *colon = strchr(cells[i], ':');
		const char *t = colon != NULL ? colon + 1 : "f64";

		if (colon != NULL)
			*colon = '\0';
		if (strcmp(t, "f64") == 0 || strcmp(t, "float64") == 0)
			c->fields[i].dtype = SHARDPIPE_DTYPE_FLOAT64;
		else if (strcmp(t, "i64") == 0 || strcmp(t, "int64") == 0)
			c->fields[i].dtype = SHARDPIPE_DTYPE_INT64;
		else if (strcmp(t, "bool") == 0)
			c->fields[i].dtype = SHARDPIPE_DTYPE_BOOL;
		else {
			cli_error("write: --frame-meta %s: line 1, column %d "
				  "\"%s\": type \"%s\" is not f64, i64 or "
				  "bool", file, i + 1, cells[i], t);
			return CLI_EXIT_USAGE;
		}
		c->names[i] = strdup(cells[i]);
		if (c->names[i] == NULL) {
			cli_error("write: out of memory");
			return CLI_EXIT_FAIL;
		}
		c->fields[i].name = c->names[i];
	}
	c->n = n;
	return CLI_EXIT_OK;
}

static int parse_cell(const struct frame_csv *c, const char *cell, int i,
		      shardpipe_frame_value *v, const char *file,
		      unsigned long line)
{
	char *end;

	errno = 0;
	switch (c->fields[i].dtype) {
	case SHARDPIPE_DTYPE_FLOAT64:
		v->f64 = strtod(cell, &end);
		/* "inf" is a value; 1e400, which strtod makes one, is a
		 * typo, not a measurement. */
		if (*cell != '\0' && *end == '\0' &&
		    !(errno == ERANGE && isinf(v->f64)))
			return CLI_EXIT_OK;
		break;
	case SHARDPIPE_DTYPE_INT64:
		v->i64 = strtoll(cell, &end, 10);
		if (*cell != '\0' && *end == '\0' && errno == 0)
			return CLI_EXIT_OK;
		break;
	default:
		if (strcmp(cell, "true") == 0 || strcmp(cell, "1") == 0) {
			v->b = 1;
			return CLI_EXIT_OK;
		}
		if (strcmp(cell, "false") == 0 || strcmp(cell, "0") == 0) {
			v->b = 0;
			return CLI_EXIT_OK;
		}
		break;
	}
	cli_error("write: --frame-meta %s: line %lu, field \"%s\": \"%s\" is "
		  "not %s", file, line, c->fields[i].name, cell,
		  c->fields[i].dtype == SHARDPIPE_DTYPE_FLOAT64 ? "a float64"
		  : c->fields[i].dtype == SHARDPIPE_DTYPE_INT64
		  ? "an int64" : "true, false, 1 or 0");
	return CLI_EXIT_USAGE;
}

int frame_csv_read(struct frame_csv *c, const char *file)
{
	FILE *f = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned long ln = 0;
	int status = CLI_EXIT_OK;

	memset(c, 0, sizeof(*c));
	if (f == NULL) {
		cli_error("write: --frame-meta %s: %s", file, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	while (status == CLI_EXIT_OK && getline(&line, &cap, f) >= 0) {
		char *cells[SHARDPIPE_MAX_FRAME_FIELDS + 1];
		int n;

		ln++;
		line[strcspn(line, "\n")] = '\0';
		if (ln == 1) {
			status = parse_header(c, line, file);
			continue;
		}
		if (line[strspn(line, " \t\r")] == '\0')
			continue;     /* a blank line, a trailing one */
		n = split(line, cells, c->n);
		if (n != c->n) {
			cli_error("write: --frame-meta %s: line %lu holds %s "
				  "%d values, the header names %d fields",
				  file, ln, n > c->n ? "more than" : "", 
				  n > c->n ? c->n : n, c->n);
			status = CLI_EXIT_USAGE;
			break;
		}
		if (c->rows % 1024 == 0) {
			shardpipe_frame_value *nv = realloc(c->vals,
				(c->rows + 1024) * (size_t)c->n * sizeof(*nv));

			if (nv == NULL) {
				cli_error("write: out of memory");
				status = CLI_EXIT_FAIL;
				break;
			}
			c->vals = nv;
		}
		for (int i = 0; i < c->n && status == CLI_EXIT_OK; i++)
			status = parse_cell(c, cells[i], i,
					    &c->vals[c->rows * c->n + i],
					    file, ln);
		c->rows++;
	}
	if (status == CLI_EXIT_OK && ferror(f)) {
		cli_error("write: --frame-meta %s: read error", file);
		status = CLI_EXIT_FAIL;
	}
	if (status == CLI_EXIT_OK && ln == 0) {
		cli_error("write: --frame-meta %s: empty; the first line names "
			  "the fields", file);
		status = CLI_EXIT_USAGE;
	}
	free(line);
	fclose(f);
	return status;
}

void frame_csv_free(struct frame_csv *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->names[i]);
	free(c->vals);
}
