/*
 * reference.c - the `reference` backend: the kernel driver over a device
 * adapter whose memory is host memory and whose kernels are the C build of
 * backends/kernels/ (reference-kernels.c).  Everything completes before the
 * call that issued it returns, so there are no events, and the driver
 * times the calls themselves for SHARDPIPE_TRACE.
 * Slow by design; it is what the other kernel backends are checked against.
 * Asked for a work profile (SHARDPIPE_KERNEL_DEBUG=profile=FILE), it runs
 * every group as its local size of work-items and counts their work
 * (reference-profile.c).
 */
#include <stdlib.h>

#include "backend.h"
#include "driver.h"
#include "geometry.h"
#include "reference-kernels.h"

static int ref_alloc(void *dev, uint64_t bytes, kdev_buf *out,
		     struct sp_err *err)
{
	/* Kernels copy in words of up to 8 bytes; 64 keeps whole cache
	 * lines, as a device allocator would. */
	uint64_t rounded = (bytes + 63) & ~(uint64_t)63;

	SP_RETURN_IF(rounded < bytes || rounded > SIZE_MAX, err,
		     SHARDPIPE_ERR_NOMEM, "%llu bytes do not fit this host",
		     (unsigned long long)bytes);
	*out = aligned_alloc(64, (size_t)rounded);
	SP_RETURN_IF(*out == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %llu bytes", (unsigned long long)bytes);
	return SHARDPIPE_OK;
}

static void ref_free(void *dev, kdev_buf buf)
{
	free(buf);
}

static int ref_upload(void *dev, kdev_buf buf, uint64_t off, const void *src,
		      uint64_t n, kdev_event *done, struct sp_err *err)
{
	memcpy((uint8_t *)buf + off, src, n);
	if (done != NULL)
		*done = NULL;
	return SHARDPIPE_OK;
}

static int ref_download(void *dev, void *dst, kdev_buf buf, uint64_t off,
			uint64_t n, kdev_event *done, struct sp_err *err)
{
	memcpy(dst, (const uint8_t *)buf + off, n);
	if (done != NULL)
		*done = NULL;
	return SHARDPIPE_OK;
}

/* The device: nothing but the work profile, when one was asked for. */
struct ref_dev {
	struct ref_profile *prof;
};

static int ref_launch(void *dev, const struct kdev_launch *l, uint64_t global,
		      uint64_t local, kdev_event *done, struct sp_err *err)
{
	struct ref_dev *d = dev;
	const char *name = kdev_kernels[l->id].name;

	if (done != NULL)
		*done = NULL;

	SP_RETURN_IF(local == 0 || global % local != 0, err,
		     SHARDPIPE_ERR_DEVICE,
		     "reference: %s launched with global %llu, local %llu",
		     name, (unsigned long long)global,
		     (unsigned long long)local);
	if (d->prof != NULL)
		return ref_profile_run(d->prof, l->id, l->args, global / local,
				       local, err);
	return ref_kernel_run(l->id, l->args, global / local, err);
}

static int ref_work_start(void *dev, struct sp_err *err)
{
	struct ref_dev *d = dev;

	return d->prof != NULL ? SHARDPIPE_OK : ref_profile_open(&d->prof, err);
}

static int ref_work_write(void *dev, FILE *f, uint64_t local,
			      uint64_t batches)
{
	struct ref_dev *d = dev;

	return ref_profile_write(d->prof, f, local, batches);
}

static int ref_wait(void *dev, kdev_event ev, struct sp_err *err)
{
	return SHARDPIPE_OK;
}

static int ref_finish(void *dev, struct sp_err *err)
{
	return SHARDPIPE_OK;
}

static void ref_close(void *dev)
{
	struct ref_dev *d = dev;

	if (d != NULL)
		ref_profile_close(d->prof);
	free(d);
}

static const struct kdev_ops ref_device = {
	.alloc = ref_alloc,
	.free = ref_free,
	.upload = ref_upload,
	.download = ref_download,
	.launch = ref_launch,
	.wait = ref_wait,
	.finish = ref_finish,
	.close = ref_close,
	.work_start = ref_work_start,
	.work_write = ref_work_write,
};

static const struct kdev_limits ref_limits = {
	/* The local size only decides how many groups a launch has; each
	 * still runs with one work-item, except in the work profile. */
	.max_local = SP_WG_MAX,
	.local = 1,
	.max_groups = 4096,
	/* The CUDA plugin's choice, so that its path is the one checked. */
	.runs_per_item = 1,
	.one_item_groups = 1,
};

static int ref_probe(struct backend_probe *info)
{
	info->usable = 1;
	info->gpu = 0;
	snprintf(info->detail, sizeof(info->detail),
		 "kernel reference executor (C, one work-item per group)");
	return SHARDPIPE_OK;
}

static int ref_open(const struct plan *plan, void **ctx, struct sp_err *err)
{
	struct ref_dev *d = calloc(1, sizeof(*d));

	SP_RETURN_IF(d == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for the reference device");
	return kdrv_open(&ref_device, d, &ref_limits, plan,
			 (struct kdrv **)ctx, err);
}

const struct backend_ops sp_backend_reference = {
	.name = "reference",
	.probe = ref_probe,
	.open = ref_open,
	KDRV_STAGE_ENTRIES,
};
