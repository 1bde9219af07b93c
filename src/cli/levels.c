/*
 * levels.c - the pyramid and OME-NGFF options of write, bench and
 * conform (doc/design.md §28): --downsample, --method, --append-method,
 * --levels, --stop, --ngff, --units, --scale, --axis-types.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "closest.h"

static const char *const methods[] = {
	"mean", "min", "max", "median", "decimate", "second_max", "second_min"
};
static const char *const axis_types[] = {
	"auto", "space", "time", "channel"
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

int cli_levels_option(struct cli_levels_opts *o, struct cli_seen *seen,
		      int argc, char **argv, int *i)
{
	static const char *const flags[] = { "--ngff" };
	int *const flag_slots[] = { &o->ngff };
	const char *arg = argv[*i];
	struct {
		const char *name;
		const char **slot;
	} opts[] = {
		{ "--downsample", &o->downsample },
		{ "--method", &o->method },
		{ "--append-method", &o->append_method },
		{ "--levels", &o->levels },
		{ "--stop", &o->stop },
		{ "--units", &o->units },
		{ "--scale", &o->scale },
		{ "--axis-types", &o->axis_types },
	};
	int r = cli_flag(seen, arg, flags, flag_slots, CLI_NFLAGS(flags));

	if (r != 0)
		return r;
	for (int k = 0; k < COUNT(opts); k++)
		if (strcmp(arg, opts[k].name) == 0)
			return cli_take(seen, argc, argv, i, opts[k].slot) != 0
				       ? -1 : 1;
	return 0;
}

/* Index of the word of len bytes in names, or -1 after saying which
 * words there are, and the closest. */
static int word(const char *opt, const char *s, size_t len,
		const char *const *names, int n)
{
	char list[160] = "";
	size_t used = 0;
	const char *near;

	for (int k = 0; k < n; k++) {
		if (strlen(names[k]) == len && strncmp(s, names[k], len) == 0)
			return k;
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%s", k == 0 ? "" :
					 k == n - 1 ? " or " : ", ", names[k]);
	}
	near = sp_closest(s, len, names, n);
	cli_error("%s: \"%.*s\" is not %s%s%s%s", opt, (int)len, s, list,
		  near ? "; did you mean " : "", near ? near : "",
		  near ? "?" : "");
	return -1;
}

/* The dim a name or index of len bytes stands for, or -1 after saying
 * which dims there are. */
static int dim_of(const char *opt, const char *s, size_t len,
		  const shardpipe_desc *desc)
{
	char list[SHARDPIPE_MAX_RANK * 66] = "";
	size_t used = 0;

	if (len > 0 && strspn(s, "0123456789") >= len) {
		long d = strtol(s, NULL, 10);

		if (len < 4 && d < desc->rank)
			return (int)d;
		cli_error("%s: dim %.*s is beyond the %d dims of --shape", opt,
			  (int)len, s, desc->rank);
		return -1;
	}
	for (int d = 0; d < desc->rank; d++) {
		const char *n = desc->dims[d].name;

		if (n != NULL && strlen(n) == len && strncmp(n, s, len) == 0)
			return d;
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%s", d ? ", " : "",
					 n && *n ? n : "(unnamed)");
	}
	cli_error("%s: no dim is named \"%.*s\" (--names: %s; an index "
		  "0..%d also names a dim)", opt, (int)len, s, list,
		  desc->rank - 1);
	return -1;
}

/*
 * Visit the DIM=VALUE items of a comma-separated list; each value is
 * copied into store[dim] (NUL-terminated).  Returns 0 or -1 after saying
 * why.
 */
static int dim_values(const char *opt, const char *list,
		      const shardpipe_desc *desc, char store[][64],
		      int seen[SHARDPIPE_MAX_RANK])
{
	const char *s = list;

	for (;;) {
		size_t len = strcspn(s, ","), key = strcspn(s, "=");
		int d;

		if (key >= len) {
			cli_error("%s: \"%.*s\" is not DIM=VALUE", opt, (int)len,
				  s);
			return -1;
		}
		if ((d = dim_of(opt, s, key, desc)) < 0)
			return -1;
		if (seen[d]) {
			cli_error("%s: dim %d is given twice", opt, d);
			return -1;
		}
		if (len - key - 1 >= 64 || len - key - 1 == 0) {
			cli_error("%s: the value for dim %d is empty or too "
				  "long", opt, d);
			return -1;
		}
		seen[d] = 1;
		memcpy(store[d], s + key + 1, len - key - 1);
		store[d][len - key - 1] = '\0';
		if (s[len] == '\0')
			return 0;
		s += len + 1;
	}
}

static int build_downsample(const struct cli_levels_opts *o,
			    shardpipe_desc *desc)
{
	const char *s = o->downsample;

	for (;;) {
		size_t len = strcspn(s, ",");
		int d = dim_of("--downsample", s, len, desc);

		if (d < 0)
			return -1;
		if (desc->downsample >> d & 1) {
			cli_error("--downsample: dim %d is given twice", d);
			return -1;
		}
		desc->downsample |= 1u << d;
		if (s[len] == '\0')
			return 0;
		s += len + 1;
	}
}

/* --stop DIM=N,..: a count of levels each, its range the library's to
 * check against the pyramid (it names the count a dim can have). */
static int build_stops(const struct cli_levels_opts *o, shardpipe_desc *desc)
{
	char vals[SHARDPIPE_MAX_RANK][64];
	int seen[SHARDPIPE_MAX_RANK] = { 0 };

	if (o->stop == NULL)
		return 0;
	if (dim_values("--stop", o->stop, desc, vals, seen) != 0)
		return -1;
	for (int d = 0; d < desc->rank; d++) {
		char *end;
		long n;

		if (!seen[d])
			continue;
		errno = 0;
		n = strtol(vals[d], &end, 10);
		if (vals[d][0] < '0' || vals[d][0] > '9' || *end != '\0' ||
		    errno != 0 || n < 2 || n > SHARDPIPE_MAX_LEVELS) {
			cli_error("--stop: \"%s\" for dim %d is not a count of "
				  "levels in 2..%d (the levels, level 0 "
				  "included, that the dim halves through)",
				  vals[d], d, SHARDPIPE_MAX_LEVELS);
			return -1;
		}
		desc->max_levels_dim[d] = (int)n;
	}
	return 0;
}

static int build_axes(const struct cli_levels_opts *o, shardpipe_desc *desc)
{
	static char units[SHARDPIPE_MAX_RANK][64];
	char vals[SHARDPIPE_MAX_RANK][64];
	int seen[SHARDPIPE_MAX_RANK] = { 0 };

	if (o->units != NULL) {
		if (dim_values("--units", o->units, desc, units, seen) != 0)
			return -1;
		for (int d = 0; d < desc->rank; d++)
			if (seen[d])
				desc->unit[d] = units[d];
	}
	memset(seen, 0, sizeof(seen));
	if (o->scale != NULL) {
		if (dim_values("--scale", o->scale, desc, vals, seen) != 0)
			return -1;
		for (int d = 0; d < desc->rank; d++) {
			char *end;

			if (!seen[d])
				continue;
			errno = 0;
			desc->scale[d] = strtod(vals[d], &end);
			if (*end != '\0' || errno != 0 ||
			    !(desc->scale[d] > 0) || isinf(desc->scale[d])) {
				cli_error("--scale: \"%s\" for dim %d is not a "
					  "positive number", vals[d], d);
				return -1;
			}
		}
	}
	memset(seen, 0, sizeof(seen));
	if (o->axis_types != NULL) {
		if (dim_values("--axis-types", o->axis_types, desc, vals,
			       seen) != 0)
			return -1;
		for (int d = 0; d < desc->rank; d++) {
			int k;

			if (!seen[d])
				continue;
			k = word("--axis-types", vals[d], strlen(vals[d]),
				 axis_types, COUNT(axis_types));
			if (k < 0)
				return -1;
			desc->axis_type[d] = (shardpipe_axis_type)k;
		}
	}
	return 0;
}

int cli_levels_build(const struct cli_levels_opts *o, shardpipe_desc *desc)
{
	int k;

	if (o->downsample != NULL && build_downsample(o, desc) != 0)
		return CLI_EXIT_USAGE;
	if (o->method != NULL) {
		if ((k = word("--method", o->method, strlen(o->method),
			      methods, COUNT(methods))) < 0)
			return CLI_EXIT_USAGE;
		desc->method = (shardpipe_method)k;
	}
	if (o->append_method != NULL) {
		if ((k = word("--append-method", o->append_method,
			      strlen(o->append_method), methods,
			      COUNT(methods))) < 0)
			return CLI_EXIT_USAGE;
		desc->append_method = k;
	}
	if (o->levels != NULL) {
		char *end;
		long n;

		errno = 0;
		n = strtol(o->levels, &end, 10);
		if (*o->levels < '0' || *o->levels > '9' || *end != '\0' ||
		    errno != 0 || n < 1 || n > SHARDPIPE_MAX_LEVELS) {
			cli_error("--levels: \"%s\" is not a count of levels "
				  "in 1..%d", o->levels, SHARDPIPE_MAX_LEVELS);
			return CLI_EXIT_USAGE;
		}
		desc->max_levels = (int)n;
	}
	desc->ngff = o->ngff;
	if (build_stops(o, desc) != 0)
		return CLI_EXIT_USAGE;
	return build_axes(o, desc) != 0 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

/* The library's field names, and the options that set them. */
static const char *const fields[][2] = {
	{ "append_method", "--append-method" },
	{ "max_levels_dim", "--stop" },
	{ "max_levels", "--levels" },
	{ "downsample", "--downsample" },
	{ "axis_type", "--axis-types" },
	{ "method", "--method" },
	{ "ngff", "--ngff" },
	{ "unit", "--units" },
	{ "scale", "--scale" },
	{ "storage_order", "--storage-order" },
};

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

const char *cli_levels_message(const char *msg, char *buf, size_t size)
{
	size_t used = 0;
	int changed = 0;

	for (const char *p = msg; *p != '\0' && used + 1 < size;) {
		int k = 0;

		for (; k < COUNT(fields); k++) {
			size_t n = strlen(fields[k][0]);

			if (strncmp(p, fields[k][0], n) == 0 &&
			    !ident_char(p[n]) &&
			    (p == msg || !ident_char(p[-1])))
				break;
		}
		if (k < COUNT(fields)) {
			used += (size_t)snprintf(buf + used, size - used, "%s",
						 fields[k][1]);
			p += strlen(fields[k][0]);
			changed = 1;
		} else {
			buf[used++] = *p++;
		}
		if (used >= size)
			used = size - 1;
	}
	buf[used] = '\0';
	return changed ? buf : msg;
}
