/*
 * ome.c - the axes of an OME-NGFF 0.5 image (doc/design.md §28.4): the
 * "axes" metadata of the spec, its order and its units.
 */
#include "ome.h"

#include "closest.h"

/* The spec's units ("axes" metadata), valid UDUNITS-2 names. */
static const char *const space_units[] = {
	"angstrom", "attometer", "centimeter", "decimeter", "exameter",
	"femtometer", "foot", "gigameter", "hectometer", "inch", "kilometer",
	"megameter", "meter", "micrometer", "mile", "millimeter", "nanometer",
	"parsec", "petameter", "picometer", "terameter", "yard", "yoctometer",
	"yottameter", "zeptometer", "zettameter"
};
static const char *const time_units[] = {
	"attosecond", "centisecond", "day", "decisecond", "exasecond",
	"femtosecond", "gigasecond", "hectosecond", "hour", "kilosecond",
	"megasecond", "microsecond", "millisecond", "minute", "nanosecond",
	"petasecond", "picosecond", "second", "terasecond", "yoctosecond",
	"yottasecond", "zeptosecond", "zettasecond"
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const method_names[SHARDPIPE_METHOD_COUNT_] = {
	"mean", "min", "max", "median", "decimate", "second_max", "second_min"
};

const char *ome_method_name(int method)
{
	return method >= 0 && method < SHARDPIPE_METHOD_COUNT_ ?
		       method_names[method] : "unknown";
}

/* The name of storage dim d: the axes are in storage order, the plan's
 * names in plan order (design §3.3). */
static const char *name_of(const struct plan *p, int d)
{
	return p->names[plan_dim_of(p, d)];
}

static int label(char *buf, size_t n, const struct plan *p, int d)
{
	if (name_of(p, d)[0] != '\0')
		return snprintf(buf, n, "dim %d (%s)", d, name_of(p, d));
	return snprintf(buf, n, "dim %d", d);
}

/* The type a name implies, or NULL. */
static const char *type_of_name(const char *name)
{
	if (strcmp(name, "t") == 0 || strcmp(name, "time") == 0)
		return "time";
	if (strcmp(name, "c") == 0 || strcmp(name, "channel") == 0)
		return "channel";
	if (strcmp(name, "z") == 0 || strcmp(name, "y") == 0 ||
	    strcmp(name, "x") == 0)
		return "space";
	return NULL;
}

static int resolve_type(struct plan_levels *pl, const struct plan *p0,
			const shardpipe_desc *desc, int d, struct sp_err *err)
{
	static const char *const given[SHARDPIPE_AXIS_COUNT_] = {
		NULL, "space", "time", "channel"
	};
	shardpipe_axis_type t = desc->axis_type[d];
	const char *type;
	char what[96];

	label(what, sizeof(what), p0, d);
	SP_RETURN_IF((unsigned)t >= SHARDPIPE_AXIS_COUNT_, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "axis_type: %s: %d is not auto, space, time or channel",
		     what, (int)t);
	type = t != SHARDPIPE_AXIS_AUTO ? given[t] : type_of_name(name_of(p0, d));
	SP_RETURN_IF(type == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "axis_type: %s has none for an OME-NGFF image: name it "
		     "t, c, z, y or x, or give its type", what);
	snprintf(pl->axis_type[d], sizeof(pl->axis_type[d]), "%s", type);
	return SHARDPIPE_OK;
}

/* Time first, then channel, then the space axes (2 or 3). */
static int check_order(const struct plan_levels *pl, const struct plan *p0,
		       struct sp_err *err)
{
	int space = 0, channels = 0;
	char what[96];

	for (int d = 0; d < p0->rank; d++) {
		const char *t = pl->axis_type[d];

		label(what, sizeof(what), p0, d);
		SP_RETURN_IF(strcmp(t, "time") == 0 && d != 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "%s: the time axis of an OME-NGFF image comes "
			     "first", what);
		if (strcmp(t, "channel") == 0) {
			SP_RETURN_IF(space > 0 || channels > 0, err,
				     SHARDPIPE_ERR_INVALID_ARGUMENT,
				     "%s: an OME-NGFF image has one channel "
				     "axis, after time and before the space "
				     "axes", what);
			channels++;
		}
		if (strcmp(t, "space") == 0)
			space++;
	}
	SP_RETURN_IF(space < 2 || space > 3, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "an OME-NGFF image has 2 or 3 space axes (z, y, x), "
		     "not %d", space);
	return SHARDPIPE_OK;
}

static int check_unit(struct plan_levels *pl, const struct plan *p0,
		      const shardpipe_desc *desc, int d, struct sp_err *err)
{
	const char *u = desc->unit[d], *near;
	const char *t = pl->axis_type[d];
	int space = strcmp(t, "space") == 0;
	const char *const *list = space ? space_units : time_units;
	int n = space ? COUNT(space_units) : COUNT(time_units);
	char what[96];

	if (u == NULL || *u == '\0')
		return SHARDPIPE_OK;
	label(what, sizeof(what), p0, d);
	SP_RETURN_IF(strcmp(t, "channel") == 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "unit: %s: \"%s\", but a channel axis has none", what,
		     u);
	for (int i = 0; i < n; i++)
		if (strcmp(u, list[i]) == 0) {
			snprintf(pl->unit[d], sizeof(pl->unit[d]), "%s", u);
			return SHARDPIPE_OK;
		}
	near = sp_closest(u, strlen(u), list, n);
	return sp_err_set(err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			  "unit: %s: \"%s\" is not one of OME-NGFF's %s "
			  "units (%s%s%s)", what, u, space ? "space" : "time",
			  near ? "did you mean " : "such as ",
			  near ? near : space ? "micrometer or nanometer"
					  : "second or millisecond",
			  near ? "?" : "");
}

int ome_axes_init(struct plan_levels *pl, const struct plan *p0,
		  const shardpipe_desc *desc, struct sp_err *err)
{
	char what[96];

	if (!pl->group)
		return SHARDPIPE_OK;
	SP_RETURN_IF(p0->rank < 2 || p0->rank > 5, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "an OME-NGFF image has 2 to 5 dims, not %d", p0->rank);
	for (int d = 0; d < p0->rank; d++) {
		label(what, sizeof(what), p0, d);
		SP_RETURN_IF(name_of(p0, d)[0] == '\0', err, SHARDPIPE_ERR_NAME,
			     "%s has no name: an OME-NGFF image names every "
			     "axis (t, c, z, y, x)", what);
		for (int e = 0; e < d; e++)
			SP_RETURN_IF(strcmp(name_of(p0, e), name_of(p0, d)) == 0,
				     err, SHARDPIPE_ERR_NAME,
				     "%s: dim %d has the same name; OME-NGFF "
				     "axis names are distinct", what, e);
		SP_FORWARD(resolve_type(pl, p0, desc, d, err));
	}
	SP_FORWARD(check_order(pl, p0, err));
	for (int d = 0; d < p0->rank; d++) {
		label(what, sizeof(what), p0, d);
		SP_RETURN_IF((pl->downsample >> d & 1) != 0 &&
			     strcmp(pl->axis_type[d], "channel") == 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "downsample: %s is a channel axis, which does "
			     "not halve", what);
		SP_FORWARD(check_unit(pl, p0, desc, d, err));
	}
	return SHARDPIPE_OK;
}
