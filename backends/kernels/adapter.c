/*
 * adapter.c - the part of every device adapter plugin that is not its
 * API's calls (adapter.h, doc/design.md §10): which device the
 * environment chooses, probe, open over the kernel driver, the backend
 * table and the plugin's single entry point.  Compiled into each plugin
 * with driver.c and the adapter file that defines kdev_plugin_adapter.
 */
#include "adapter.h"

#include <ctype.h>
#include <stdlib.h>

/* 1 when needle occurs in hay, ignoring ASCII case; an empty needle
 * matches. */
static int name_matches(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay != '\0'; hay++) {
		size_t i = 0;

		while (i < n && hay[i] != '\0' &&
		       tolower((unsigned char)hay[i]) ==
			       tolower((unsigned char)needle[i]))
			i++;
		if (i == n)
			return 1;
	}
	return n == 0;
}

/* 1 when s is exactly `parts` decimal numbers joined by ':', stored in
 * index[]. */
static int parse_index(const char *s, unsigned parts,
		       unsigned index[KDEV_INDEX_MAX])
{
	for (unsigned k = 0; k < parts; k++) {
		unsigned long v = 0;

		if (*s < '0' || *s > '9')
			return 0;
		for (; *s >= '0' && *s <= '9'; s++) {
			v = v * 10 + (unsigned long)(*s - '0');
			if (v > 1000000)    /* no API numbers its devices so */
				return 0;
		}
		index[k] = (unsigned)v;
		if (*s != (k + 1 < parts ? ':' : '\0'))
			return 0;
		s++;
	}
	return 1;
}

enum choice_by { BY_AUTO, BY_INDEX, BY_NAME };

struct choice {
	const struct kdev_adapter *a;
	enum choice_by by;
	const char *want;
	unsigned index[KDEV_INDEX_MAX];
	unsigned seen;               /* devices listed */
	int found, have_first;
	struct kdev_device chosen, first;
};

static int visit(void *state, const struct kdev_device *d)
{
	struct choice *c = state;
	char name[256] = "";

	c->seen++;
	switch (c->by) {
	case BY_AUTO:
		if (!c->have_first) {
			c->first = *d;
			c->have_first = 1;
		}
		c->found = d->gpu;
		break;
	case BY_INDEX:
		c->found = memcmp(d->index, c->index,
				  c->a->index_parts * sizeof(*d->index)) == 0;
		break;
	case BY_NAME:
		c->a->name_of(d, name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		c->found = name_matches(name, c->want);
		break;
	}
	if (c->found)
		c->chosen = *d;
	return c->found;
}

int kdev_choose(const struct kdev_adapter *a, struct kdev_device *out,
		struct sp_err *err)
{
	const char *want = getenv(a->device_env);
	struct choice c;

	memset(&c, 0, sizeof(c));
	c.a = a;
	c.want = want;
	if (want == NULL || *want == '\0' || strcmp(want, "auto") == 0)
		c.by = BY_AUTO;
	else if (parse_index(want, a->index_parts, c.index))
		c.by = BY_INDEX;
	else
		c.by = BY_NAME;
	SP_FORWARD(a->list(visit, &c, err));
	if (!c.found && c.by == BY_AUTO && c.have_first) {
		c.chosen = c.first;
		c.found = 1;
	}
	if (c.found) {
		*out = c.chosen;
		return SHARDPIPE_OK;
	}
	SP_RETURN_IF(c.by == BY_INDEX, err, SHARDPIPE_ERR_BACKEND,
		     "%s=%s: there are %u %s device(s); give %s or part of "
		     "a name", a->device_env, want, c.seen, a->api,
		     a->index_form);
	SP_RETURN_IF(c.by == BY_NAME, err, SHARDPIPE_ERR_BACKEND,
		     "no %s device matches %s=%s: there are %u; give %s or "
		     "part of a name", a->api, a->device_env, want, c.seen,
		     a->index_form);
	return sp_err_set(err, SHARDPIPE_ERR_BACKEND, "no %s device", a->api);
}

int kdev_probe(const struct kdev_adapter *a, struct backend_probe *info)
{
	struct kdev_device d;
	struct sp_err err;

	sp_err_clear(&err);
	if (kdev_choose(a, &d, &err) != SHARDPIPE_OK) {
		info->usable = 0;
		snprintf(info->detail, sizeof(info->detail), "%s", err.msg);
		return SHARDPIPE_OK;
	}
	info->usable = 1;
	info->gpu = d.gpu;
	a->describe(&d, info->detail, sizeof(info->detail));
	return SHARDPIPE_OK;
}

int kdev_open(const struct kdev_adapter *a, const struct plan *plan,
	      void **ctx, struct sp_err *err)
{
	struct kdev_device d;
	struct kdev_limits lim;
	void *dev = NULL;
	int rc;

	*ctx = NULL;
	SP_FORWARD(kdev_choose(a, &d, err));
	memset(&lim, 0, sizeof(lim));
	rc = a->open(&d, plan, &dev, &lim, err);
	if (rc != SHARDPIPE_OK) {
		if (dev != NULL)
			a->ops->close(dev);
		return rc;
	}
	return kdrv_open(a->ops, dev, &lim, plan, (struct kdrv **)ctx, err);
}

/* ------------------------------------------------- the plugin's entry */

static int plugin_probe(struct backend_probe *info)
{
	return kdev_probe(&kdev_plugin_adapter, info);
}

static int plugin_open(const struct plan *plan, void **ctx,
		       struct sp_err *err)
{
	return kdev_open(&kdev_plugin_adapter, plan, ctx, err);
}

static const struct backend_ops plugin_backend = {
	.name = kdev_plugin_adapter.name,
	.probe = plugin_probe,
	.open = plugin_open,
	KDRV_STAGE_ENTRIES,
};

static const struct backend_plugin plugin = {
	.abi = SHARDPIPE_BACKEND_ABI,
	.ops = &plugin_backend,
};

const struct backend_plugin *shardpipe_backend_plugin(void)
{
	return &plugin;
}
