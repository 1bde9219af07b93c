/*
 * device-choice.c - the skeleton every device adapter plugin shares
 * (backends/kernels/adapter.c), run over a fake adapter with three
 * devices on two "platforms": which device the environment chooses (auto,
 * an index, a name), the refusals naming the variable and how many devices
 * there are, probe's report, open's hand-over and its cleanup of a partly
 * opened context, and the plugin's entry point.  No device is needed.
 */
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "tap.h"

#define ENV "SHARDPIPE_FAKE_DEVICE"

struct fake {
	const char *name;
	int gpu;
};

/* Two platforms: a CPU, then two GPUs. */
static const struct fake gpus[2][2] = {
	{ { "Acme: Slow CPU", 0 }, { NULL, 0 } },
	{ { "Zeta: Big GPU", 1 }, { "Zeta: small gpu 2", 1 } },
};
/* The same without GPUs, for auto's fallback. */
static const struct fake cpus[2][2] = {
	{ { "Acme: Slow CPU", 0 }, { NULL, 0 } },
	{ { "Acme: Other CPU", 0 }, { NULL, 0 } },
};

static const struct fake (*devices)[2] = gpus;
static int list_fails;
static unsigned visited, names_looked_up, closed;
static int open_sets_dev;
static struct kdev_device opened;

static int fake_list(kdev_visit_fn visit, void *state, struct sp_err *err)
{
	SP_RETURN_IF(list_fails, err, SHARDPIPE_ERR_BACKEND,
		     "no Fake platform (driver missing)");
	for (unsigned p = 0; p < 2; p++)
		for (unsigned i = 0; i < 2 && devices[p][i].name != NULL; i++) {
			struct kdev_device d = {
				.index = { p, i },
				.gpu = devices[p][i].gpu,
				.handle = { (void *)&devices[p][i], NULL },
			};

			visited++;
			if (visit(state, &d))
				return SHARDPIPE_OK;
		}
	return SHARDPIPE_OK;
}

static void fake_name_of(const struct kdev_device *d, char *buf, size_t n)
{
	names_looked_up++;
	snprintf(buf, n, "%s", ((const struct fake *)d->handle[0])->name);
}

static void fake_describe(const struct kdev_device *d, char *buf, size_t n)
{
	snprintf(buf, n, "%s (%u:%u)",
		 ((const struct fake *)d->handle[0])->name, d->index[0],
		 d->index[1]);
}

static int dev_marker;

/* Records the device and fails, before or after its context exists. */
static int fake_open(const struct kdev_device *d, const struct plan *plan,
		     void **dev, struct kdev_limits *lim, struct sp_err *err)
{
	(void)plan;
	(void)lim;
	opened = *d;
	if (open_sets_dev)
		*dev = &dev_marker;
	return sp_err_set(err, SHARDPIPE_ERR_DEVICE, "fake: cannot open");
}

static void fake_close(void *dev)
{
	if (dev == &dev_marker)
		closed++;
}

static const struct kdev_ops fake_ops = { .close = fake_close };

const struct kdev_adapter kdev_plugin_adapter = {
	.name = "fake",
	.api = "Fake",
	.device_env = ENV,
	.index_parts = 2,
	.index_form = "P:D",
	.ops = &fake_ops,
	.list = fake_list,
	.name_of = fake_name_of,
	.describe = fake_describe,
	.open = fake_open,
};

static const struct backend_ops *ops;

/* Probe with ENV set to want (NULL: unset); 1 when probe returned OK
 * with the usability and detail wanted. */
static int probe_says(const char *want, int usable, const char *detail,
		      int gpu)
{
	struct backend_probe info;
	int rc;

	if (want == NULL)
		unsetenv(ENV);
	else
		setenv(ENV, want, 1);
	memset(&info, 0, sizeof(info));
	visited = names_looked_up = 0;
	rc = ops->probe(&info);
	if (rc == SHARDPIPE_OK && info.usable == usable &&
	    strcmp(info.detail, detail) == 0 && (!usable || info.gpu == gpu))
		return 1;
	diag("probe returned %d, usable %d, gpu %d, \"%s\"", rc, info.usable,
	     info.gpu, info.detail);
	return 0;
}

static void chooses(const char *want, const char *detail, int gpu)
{
	ok(probe_says(want, 1, detail, gpu), "%s=%s chooses %s", ENV,
	   want ? want : "(unset)", detail);
}

static void refuses(const char *want, const char *message)
{
	ok(probe_says(want, 0, message, 0), "%s=%s is refused: %s", ENV, want,
	   message);
}

int main(void)
{
	const struct backend_plugin *pl = shardpipe_backend_plugin();
	const char *big = "Zeta: Big GPU (1:0)", *cpu = "Acme: Slow CPU (0:0)";
	const char *small = "Zeta: small gpu 2 (1:1)";
	struct sp_err err;
	void *ctx = &err;
	int rc;

	plan_lazy();
	ops = pl->ops;
	is_int(pl->abi, SHARDPIPE_BACKEND_ABI, "the entry reports the ABI");
	ok(strcmp(ops->name, "fake") == 0, "the backend is named by the "
	   "adapter: %s", ops->name);
	ok(ops->scatter == kdrv_op_scatter &&
	   ops->fetch_ranges == kdrv_op_fetch_ranges &&
	   ops->close == kdrv_op_close, "its stages are the driver's");

	/* auto: the first GPU, and the listing stops there. */
	chooses(NULL, big, 1);
	is_int(visited, 2, "auto lists no device past the first GPU");
	is_int(names_looked_up, 0, "and looks up no name");
	chooses("", big, 1);
	chooses("auto", big, 1);
	devices = cpus;
	chooses(NULL, cpu, 0);
	devices = gpus;

	/* An index: exactly index_parts numbers. */
	chooses("0:0", cpu, 0);
	chooses("1:1", small, 1);
	is_int(names_looked_up, 0, "an index looks up no name");
	refuses("2:0", ENV "=2:0: there are 3 Fake device(s); give P:D or "
		"part of a name");
	refuses("1:2", ENV "=1:2: there are 3 Fake device(s); give P:D or "
		"part of a name");

	/* Anything else is a name, matched ignoring case. */
	chooses("slow", cpu, 0);
	chooses("GPU 2", small, 1);
	chooses("zeta", big, 1);
	refuses("nothing", "no Fake device matches " ENV "=nothing: there "
		"are 3; give P:D or part of a name");
	refuses("1", "no Fake device matches " ENV "=1: there are 3; give "
		"P:D or part of a name");
	refuses("0:0:0", "no Fake device matches " ENV "=0:0:0: there are 3; "
		"give P:D or part of a name");
	refuses("+1:0", "no Fake device matches " ENV "=+1:0: there are 3; "
		"give P:D or part of a name");
	refuses("1:", "no Fake device matches " ENV "=1:: there are 3; give "
		"P:D or part of a name");
	refuses("99999999999:0", "no Fake device matches " ENV
		"=99999999999:0: there are 3; give P:D or part of a name");

	/* The API unusable: its own reason. */
	list_fails = 1;
	refuses("auto", "no Fake platform (driver missing)");
	sp_err_clear(&err);
	is_int(ops->open(NULL, &ctx, &err), SHARDPIPE_ERR_BACKEND,
	       "open fails with the listing's code");
	ok(strcmp(err.msg, "no Fake platform (driver missing)") == 0 &&
	   ctx == NULL, "and its message, leaving no context: %s", err.msg);
	list_fails = 0;

	/* open: the device chosen, and a partly opened context closed. */
	setenv(ENV, "1:1", 1);
	open_sets_dev = 1;
	sp_err_clear(&err);
	rc = ops->open(NULL, &ctx, &err);
	is_int(rc, SHARDPIPE_ERR_DEVICE, "a failed open returns its code");
	ok(opened.index[0] == 1 && opened.index[1] == 1,
	   "open was given the device the environment chose");
	is_int(closed, 1, "the partly opened context is closed once");
	ok(strcmp(err.msg, "fake: cannot open") == 0,
	   "the adapter's message stands: %s", err.msg);
	open_sets_dev = 0;
	rc = ops->open(NULL, &ctx, &err);
	is_int(closed, 1, "an open that created nothing closes nothing");
	setenv(ENV, "none such", 1);
	memset(&opened, 0xff, sizeof(opened));
	sp_err_clear(&err);
	is_int(ops->open(NULL, &ctx, &err), SHARDPIPE_ERR_BACKEND,
	       "open refuses a choice that names no device");
	ok(opened.index[0] == ~0u, "without calling the adapter's open");
	return done_testing();
}
