/*
 * adapter.h - what a device adapter plugin implements, and the skeleton
 * all of them share (adapter.c): the device chosen from the environment,
 * probe, open, the backend table and the plugin's entry point
 * (doc/design.md §10).
 *
 * A plugin is three files: its adapter (opencl.c, cuda.c), adapter.c and
 * driver.c.  The adapter file defines `kdev_plugin_adapter`: the struct
 * kdev_ops of driver.h, and how to list, name, describe and open its
 * devices.  It holds only its API's calls; everything the adapters would
 * otherwise repeat is in adapter.c.
 */
#ifndef SHARDPIPE_KERNEL_ADAPTER_H
#define SHARDPIPE_KERNEL_ADAPTER_H

#include <stddef.h>

#include "backend.h"
#include "driver.h"

/* The most numbers an index may have ("P:D" on OpenCL). */
#define KDEV_INDEX_MAX 2

/* One device, as the adapter lists it. */
struct kdev_device {
	/* Its place in the API's enumeration, the numbers an index in the
	 * environment gives: (platform, device) on OpenCL, (ordinal) on
	 * CUDA. */
	unsigned index[KDEV_INDEX_MAX];
	int gpu;
	/* The API's handles of the device, for the adapter's own use. */
	void *handle[2];
};

/* Called by list for each device; returns 1 to stop the listing. */
typedef int (*kdev_visit_fn)(void *state, const struct kdev_device *d);

struct kdev_adapter {
	char name[16];           /* the backend's name: "opencl" */
	const char *api;         /* the messages' word for the API: "OpenCL" */
	const char *device_env;  /* the variable choosing the device */
	unsigned index_parts;    /* numbers in an index: 2 for "P:D" */
	const char *index_form;  /* an index, in the messages' words */
	const struct kdev_ops *ops;
	/*
	 * Visit every device, in the order of their indices, until visit
	 * returns 1.  Fails (SHARDPIPE_ERR_BACKEND, saying why) when the API
	 * cannot be used here or has no device at all.
	 */
	int (*list)(kdev_visit_fn visit, void *state, struct sp_err *err);
	/* The name that a name in the environment is matched against (a
	 * case-insensitive substring), looked up only for that. */
	void (*name_of)(const struct kdev_device *d, char *buf, size_t n);
	/* The chosen device as probe reports it (name, kind, memory). */
	void (*describe)(const struct kdev_device *d, char *buf, size_t n);
	/*
	 * Create a context on the chosen device for plan (read for
	 * plan->trace: profile the device's work) and fill *lim (zeroed)
	 * from its properties.  *dev is set as soon as the context exists:
	 * on failure the skeleton closes it with ops->close, which therefore
	 * takes a partly opened context.
	 */
	int (*open)(const struct kdev_device *d, const struct plan *plan,
		    void **dev, struct kdev_limits *lim, struct sp_err *err);
};

/* The adapter of this plugin, defined in its adapter file. */
extern SP_DRIVER_API const struct kdev_adapter kdev_plugin_adapter;

/* The plugin's one exported symbol (SHARDPIPE_PLUGIN_ENTRY), made by
 * adapter.c for kdev_plugin_adapter: the backend ABI and the table of
 * kdev_probe, kdev_open and the driver's stage entries. */
__attribute__((visibility("default")))
const struct backend_plugin *shardpipe_backend_plugin(void);

/*
 * The device that a->device_env chooses: unset, empty or "auto" takes the
 * first GPU, else the first device; index_parts numbers joined by ':'
 * take the device of that index; any other text takes the first device
 * whose name contains it, ignoring ASCII case.  A choice that names no
 * device fails with SHARDPIPE_ERR_BACKEND, saying how many there are and
 * how to name one.
 */
SP_DRIVER_API int kdev_choose(const struct kdev_adapter *a,
			      struct kdev_device *out, struct sp_err *err);

/* backend_ops.probe and .open for adapter a: the chosen device, or why
 * there is none; and the driver opened over it. */
SP_DRIVER_API int kdev_probe(const struct kdev_adapter *a,
			     struct backend_probe *info);
SP_DRIVER_API int kdev_open(const struct kdev_adapter *a,
			    const struct plan *plan, void **ctx,
			    struct sp_err *err);

#endif
