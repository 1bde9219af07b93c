/*
 * backend.c - the registry of backends: the ones linked in, and plugins
 * (backend-<name>.so) loaded with dlopen at first use from
 * SHARDPIPE_PLUGIN_PATH (colon-separated) or the installed plugin
 * directory, each checked for the ABI it was built with.  An uninstalled
 * library searches its build tree's .libs instead, so that a program run
 * from the build tree finds the plugins built beside it.
 */
#define _GNU_SOURCE
#include "backend.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SHARDPIPE_PLUGIN_DIR
#define SHARDPIPE_PLUGIN_DIR "/usr/local/lib/shardpipe"
#endif

/*
 * The default plugin directory (doc/design.md §5.2): an uninstalled
 * library is libtool's <build>/.libs/libshardpipe.so.0, beside
 * <build>/libshardpipe.la and the plugins built with it, so code loaded
 * from a directory named .libs whose parent holds libshardpipe.la searches
 * that directory; anything else, the installed library included, searches
 * the installed directory.  Found at run time, not compiled in, so that no
 * build path is written into the library (§25.4).
 */
static const char *plugin_dir(void)
{
	static char dir[4096];
	char la[4096];
	Dl_info di;
	const char *slash;
	int len;

	if (dladdr((void *)plugin_dir, &di) == 0 || di.dli_fname == NULL ||
	    (slash = strrchr(di.dli_fname, '/')) == NULL ||
	    slash - di.dli_fname < 6 || strncmp(slash - 6, "/.libs", 6) != 0 ||
	    slash - di.dli_fname >= (ptrdiff_t)sizeof(dir))
		return SHARDPIPE_PLUGIN_DIR;
	len = (int)(slash - di.dli_fname);
	snprintf(la, sizeof(la), "%.*s/libshardpipe.la", len - 6, di.dli_fname);
	if (access(la, F_OK) != 0)
		return SHARDPIPE_PLUGIN_DIR;
	snprintf(dir, sizeof(dir), "%.*s", len, di.dli_fname);
	return dir;
}

struct entry {
	const char *name;
	const struct backend_ops *ops; /* linked in, or once loaded */
	int tried;                     /* plugin load attempted */
	char why[256];                 /* why the plugin did not load */
};

/* In the order "auto" tries them. */
static struct entry entries[] = {
	{ .name = "cuda" },
	{ .name = "opencl" },
	{ .name = "cpu", .ops = &sp_backend_cpu, .tried = 1 },
	{ .name = "reference", .ops = &sp_backend_reference, .tried = 1 },
};
#define N_ENTRIES ((int)(sizeof(entries) / sizeof(entries[0])))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Whether the ELF file at path is cut short: a loadable segment reaching
 * past its end.  dlopen maps such a file without complaint, and the
 * first touch of the missing pages kills the process with SIGBUS, so a
 * truncated plugin (a full disk during install, a copy cut short) is
 * refused here, by name, first.  Anything else dlopen judges itself.
 */
static int truncated(const char *path, char *why, size_t n)
{
	ElfW(Ehdr) eh;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), cut = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 &&
	    pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    eh.e_phentsize == sizeof(ElfW(Phdr))) {
		uint64_t size = (uint64_t)st.st_size;

		for (unsigned i = 0; i < eh.e_phnum && !cut; i++) {
			ElfW(Phdr) ph;
			uint64_t end;

			if (pread(fd, &ph, sizeof(ph),
				  (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph)))
			    != (ssize_t)sizeof(ph)) {
				snprintf(why, n, "%.180s: truncated (%llu "
					 "bytes, the program headers run past "
					 "the end)", path,
					 (unsigned long long)size);
				cut = 1;
			} else if (ph.p_type == PT_LOAD &&
				   (!sp_add_ok(ph.p_offset, ph.p_filesz, &end) ||
				    end > size)) {
				snprintf(why, n, "%.180s: truncated (%llu "
					 "bytes, a segment ends at byte %llu)",
					 path, (unsigned long long)size,
					 (unsigned long long)end);
				cut = 1;
			}
		}
	}
	close(fd);
	return cut;
}

static int try_load(struct entry *e, const char *dir)
{
	char path[4096];
	void *h;
	backend_plugin_fn fn;
	const struct backend_plugin *pl;

	snprintf(path, sizeof(path), "%s/backend-%s.so", dir, e->name);
	if (truncated(path, e->why, sizeof(e->why)))
		return 0;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *msg = dlerror();

		/* A plugin that is simply not there is reported once all
		 * directories are searched; one that is there but fails to
		 * load (a missing libOpenCL.so.1) is reported with dlerror. */
		if (access(path, F_OK) == 0)
			snprintf(e->why, sizeof(e->why), "%.120s: %.130s",
				 path, msg ? msg : "cannot be loaded");
		return 0;
	}
	fn = (backend_plugin_fn)(uintptr_t)dlsym(h, SHARDPIPE_PLUGIN_ENTRY);
	if (fn == NULL) {
		snprintf(e->why, sizeof(e->why), "%.200s: no entry point %s", path,
			 SHARDPIPE_PLUGIN_ENTRY);
		dlclose(h);
		return 0;
	}
	pl = fn();
	if (pl == NULL || pl->abi != SHARDPIPE_BACKEND_ABI || pl->ops == NULL) {
		snprintf(e->why, sizeof(e->why),
			 "%.200s: built for backend ABI %u, this library has ABI %u",
			 path, pl ? pl->abi : 0u, SHARDPIPE_BACKEND_ABI);
		dlclose(h);
		return 0;
	}
	/* Plugins stay loaded for the life of the process. */
	e->ops = pl->ops;
	return 1;
}

/*
 * SHARDPIPE_PLUGIN_PATH, when set, replaces the installed directory, so
 * that a build tree's tests never load an installed copy; an empty entry
 * ("dir:") stands for the installed directory.
 */
static void load_plugin(struct entry *e)
{
	/* Not in a set-uid program: the environment is the caller's. */
	const char *env = secure_getenv("SHARDPIPE_PLUGIN_PATH");
	const char *home = plugin_dir();

	if (e->tried)
		return;
	e->tried = 1;
	if (env == NULL || *env == '\0') {
		try_load(e, home);
	} else {
		const char *p = env;

		for (;;) {
			size_t len = strcspn(p, ":");
			char dir[4096];

			if (len == 0)
				snprintf(dir, sizeof(dir), "%s", home);
			else
				snprintf(dir, sizeof(dir), "%.*s", (int)len, p);
			if (try_load(e, dir) || p[len] == '\0')
				break;
			p += len + 1;
		}
	}
	if (e->ops == NULL && e->why[0] == '\0')
		snprintf(e->why, sizeof(e->why),
			 "plugin backend-%s.so not found in %.150s", e->name,
			 env && *env ? "SHARDPIPE_PLUGIN_PATH" : home);
}

static int probe_entry(struct entry *e, struct backend_probe *info)
{
	int rc = SHARDPIPE_OK;

	memset(info, 0, sizeof(*info));
	info->name = e->name;
	/* Probes take turns too: streams opened on several threads at once
	 * (a Dask worker's tasks, backend auto) asked PoCL about its devices
	 * at the same moment, and PoCL crashed in clGetDeviceInfo. */
	pthread_mutex_lock(&lock);
	load_plugin(e);
	if (e->ops == NULL)
		snprintf(info->detail, sizeof(info->detail), "%s", e->why);
	else
		rc = e->ops->probe(info);
	pthread_mutex_unlock(&lock);
	return rc;
}

int shardpipe_backend_count(void)
{
	return N_ENTRIES;
}

int shardpipe_backend_probe_sized(int i, shardpipe_backend_info *out,
				  size_t size)
{
	struct backend_probe p;
	shardpipe_backend_info info;
	int rc;

	if (i < 0 || i >= N_ENTRIES || out == NULL || size < sizeof(size_t))
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	rc = probe_entry(&entries[i], &p);
	memset(&info, 0, sizeof(info));
	info.name = p.name;
	info.usable = p.usable;
	info.gpu = p.gpu;
	memcpy(info.detail, p.detail, sizeof(info.detail));
	sp_struct_copy(out, size, &info, sizeof(info));
	return rc;
}

int backend_find(const char *name, const struct backend_ops **out,
		 struct sp_err *err)
{
	struct backend_probe info;
	int want_auto = name == NULL || *name == '\0' ||
			strcmp(name, "auto") == 0;

	for (int i = 0; i < N_ENTRIES; i++) {
		struct entry *e = &entries[i];

		if (!want_auto && strcmp(name, e->name) != 0)
			continue;
		SP_FORWARD(probe_entry(e, &info));
		if (info.usable &&
		    (!want_auto || info.gpu || strcmp(e->name, "cpu") == 0)) {
			*out = e->ops;
			return SHARDPIPE_OK;
		}
		SP_RETURN_IF(!want_auto, err, SHARDPIPE_ERR_BACKEND,
			     "backend %s is not usable here: %s", name,
			     info.detail);
	}
	return sp_err_set(err, SHARDPIPE_ERR_BACKEND,
			  "unknown backend \"%s\" (cpu, reference, opencl, "
			  "cuda or auto)", name);
}
