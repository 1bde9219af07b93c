/*
 * group.c - several arrays under one Zarr v3 group, written by streams
 * that share one set of worker threads (doc/design.md §26).  A group is a
 * directory with a group zarr.json; each array is a child directory named
 * by a Zarr node name, written by an ordinary stream.
 */
#define _GNU_SOURCE
#include "group.h"
#include "zarr_node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "lanes.h"
#include "store.h"
#include "store_fs.h"
#include "zarr_meta.h"

struct shardpipe_group {
	char *path;
	int threads;            /* resolved: >= 1 */
	struct lanes *lanes;    /* started by the first stream */
	char **arrays;          /* child arrays at open, sorted */
	size_t narrays;
};

/*
 * A child's name as the Zarr v3 core spec allows a node name (not empty,
 * no '/', not "." or "..", not starting "__") and as every file system
 * and object store takes it: the spec's recommended characters a-z, A-Z,
 * 0-9, '-', '_', '.', at most 255 bytes, and no leading '.', which would
 * hide it and whose "." and ".." the spec forbids.  "zarr.json" is the
 * group's own metadata key: an array there cannot be stored.
 */
static int check_name(const char *name, struct sp_err *err)
{
	size_t n;

	SP_RETURN_IF(name == NULL || *name == '\0', err, SHARDPIPE_ERR_NAME,
		     "array name is empty");
	n = strlen(name);
	SP_RETURN_IF(n > 255, err, SHARDPIPE_ERR_NAME,
		     "array name is %zu bytes long, above 255", n);
	SP_RETURN_IF(name[0] == '.', err, SHARDPIPE_ERR_NAME,
		     "array name \"%s\" starts with '.'", name);
	SP_RETURN_IF(strcmp(name, "zarr.json") == 0, err, SHARDPIPE_ERR_NAME,
		     "array name \"zarr.json\" is the group's own metadata");
	SP_RETURN_IF(strncmp(name, "__", 2) == 0, err, SHARDPIPE_ERR_NAME,
		     "array name \"%s\" starts with \"__\", which Zarr "
		     "reserves", name);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		SP_RETURN_IF(!((c >= 'a' && c <= 'z') ||
			       (c >= 'A' && c <= 'Z') ||
			       (c >= '0' && c <= '9') || c == '-' ||
			       c == '_' || c == '.'), err,
			     SHARDPIPE_ERR_NAME, "array name \"%s\": byte %zu "
			     "(0x%02x) is not one of a-z A-Z 0-9 - _ .",
			     name, i, c);
	}
	return SHARDPIPE_OK;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The children of the group that are arrays, sorted. */
static int list_arrays(struct shardpipe_group *g, struct sp_err *err)
{
	DIR *d = opendir(g->path);
	struct dirent *e;
	size_t cap = 0;
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(d == NULL, err, store_fs_errno_code(errno), "%s: %s",
		     g->path, strerror(errno));
	while (rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		enum zarr_node node;
		struct sp_err ignored;
		char *child;

		if (check_name(e->d_name, &ignored) != SHARDPIPE_OK)
			continue;
		if (asprintf(&child, "%s/%s", g->path, e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		/* A child that cannot be read is not listed; verify of
		 * that child says why.  An OME-NGFF image (a pyramid,
		 * doc/design.md §28.5) reads as an array at its level 0. */
		if (zarr_node_of(child, &node, &ignored) != SHARDPIPE_OK ||
		    (node != ZARR_NODE_ARRAY && node != ZARR_NODE_IMAGE)) {
			free(child);
			continue;
		}
		free(child);
		if (g->narrays == cap) {
			char **na = realloc(g->arrays, (cap ? 2 * cap : 8) *
							       sizeof(*na));

			if (na == NULL) {
				rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
						"out of memory");
				break;
			}
			g->arrays = na;
			cap = cap ? 2 * cap : 8;
		}
		g->arrays[g->narrays] = strdup(e->d_name);
		if (g->arrays[g->narrays] == NULL)
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
		else
			g->narrays++;
	}
	closedir(d);
	if (g->narrays > 1)
		qsort(g->arrays, g->narrays, sizeof(*g->arrays), cmp_names);
	return rc;
}

static void group_free(struct shardpipe_group *g)
{
	for (size_t i = 0; i < g->narrays; i++)
		free(g->arrays[i]);
	free(g->arrays);
	lanes_unref(g->lanes);
	free(g->path);
	free(g);
}

/* Write a new group's zarr.json, durably: its arrays' metadata will
 * assume it. */
static int group_write(const char *path, struct sp_err *err)
{
	struct store *st;
	char *json;
	size_t len;
	int rc;

	enum zarr_node node;

	SP_FORWARD(zarr_node_of(path, &node, err));
	SP_RETURN_IF(node != ZARR_NODE_NONE, err, SHARDPIPE_ERR_EXISTS,
		     "%s: already holds %s (zarr.json); nothing was touched",
		     path, node == ZARR_NODE_GROUP ? "a group"
			   : node == ZARR_NODE_ARRAY ? "an array"
						     : "a store");
	SP_FORWARD(store_check(&st, path, 0, 1, err));
	rc = zarr_meta_group(NULL, NULL, NULL, &json, &len, err);
	if (rc == SHARDPIPE_OK) {
		rc = st->ops->create(st, err);
		if (rc == SHARDPIPE_OK)
			rc = st->ops->write_meta(st, json, len, err);
		if (rc == SHARDPIPE_OK)
			rc = store_sync(st, err);
		free(json);
	}
	store_free(st);
	return rc;
}

/* Whether something other than a directory is at path: a group there
 * could not be made either, so the message says so rather than "no
 * zarr.json". */
static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int group_open(shardpipe_group **out, const char *path, int threads,
		      int create)
{
	struct shardpipe_group *g;
	struct sp_err err = { 0 };
	enum zarr_node node = ZARR_NODE_NONE;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || path == NULL) {
		sp_last_error_set("a required argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	if (threads < 0 || threads > SHARDPIPE_MAX_THREADS)
		rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				"thread count %d is outside 0..%d", threads,
				SHARDPIPE_MAX_THREADS);
	else if (store_is_s3(path))
		rc = sp_err_set(&err, SHARDPIPE_ERR_UNSUPPORTED,
				"%s: groups are written to directories only, "
				"not to S3", path);
	else if (create)
		rc = group_write(path, &err);
	else if ((rc = zarr_node_of(path, &node, &err)) != SHARDPIPE_OK)
		;
	else if (node == ZARR_NODE_NONE)
		rc = sp_err_set(&err, SHARDPIPE_ERR_PATH,
				"%s: %s, so it is no group", path,
				is_file(path) ? "not a directory"
					      : "no zarr.json there");
	else if (node != ZARR_NODE_GROUP)
		rc = sp_err_set(&err, SHARDPIPE_ERR_PATH,
				"%s: zarr.json is %s, not a Zarr v3 group", path,
				node == ZARR_NODE_ARRAY ? "an array"
							: "not Zarr v3 metadata");
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(err.msg);
		return rc;
	}
	g = calloc(1, sizeof(*g));
	if (g == NULL || (g->path = strdup(path)) == NULL) {
		free(g);
		sp_last_error_set("out of memory");
		return SHARDPIPE_ERR_NOMEM;
	}
	if (threads == 0)
		threads = sp_cores();
	g->threads = threads;
	rc = list_arrays(g, &err);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(err.msg);
		group_free(g);
		return rc;
	}
	*out = g;
	return SHARDPIPE_OK;
}

int shardpipe_group_create(shardpipe_group **out, const char *path,
			   int threads)
{
	return group_open(out, path, threads, 1);
}

int shardpipe_group_open(shardpipe_group **out, const char *path,
			 int threads)
{
	return group_open(out, path, threads, 0);
}

int shardpipe_group_stream(shardpipe_stream **out, shardpipe_group *g,
			   const char *name, const shardpipe_desc *desc)
{
	struct sp_err err = { 0 };
	shardpipe_desc d;
	enum zarr_node node;
	char *path;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || g == NULL || desc == NULL) {
		sp_last_error_set("a required argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	rc = check_name(name, &err);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(err.msg);
		return rc;
	}
	/* The group's threads replace the description's: the cpu backend
	 * shapes its work for as many lanes as run it. */
	shardpipe_desc_init(&d);
	if (sp_struct_copy(&d, sizeof(d), desc, desc->struct_size) !=
	    SHARDPIPE_OK) {
		sp_last_error_set("desc not initialised with "
				  "shardpipe_desc_init()");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	d.threads = g->threads;
	if (asprintf(&path, "%s/%s", g->path, name) < 0) {
		sp_last_error_set("out of memory");
		return SHARDPIPE_ERR_NOMEM;
	}
	/* Overwrite replaces an array, never a group and what it holds. */
	rc = zarr_node_of(path, &node, &err);
	if (rc == SHARDPIPE_OK && node == ZARR_NODE_GROUP)
		rc = sp_err_set(&err, SHARDPIPE_ERR_EXISTS,
				"%s: is a group, not an array; nothing was "
				"touched", path);
	if (rc == SHARDPIPE_OK && g->lanes == NULL)
		rc = lanes_create(&g->lanes, g->threads, &err);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(err.msg);
		free(path);
		return rc;
	}
	rc = stream_open_lanes(out, path, &d, g->lanes);
	free(path);
	return rc;
}

size_t shardpipe_group_array_count(const shardpipe_group *g)
{
	return g != NULL ? g->narrays : 0;
}

const char *shardpipe_group_array_name(const shardpipe_group *g, size_t i)
{
	return g != NULL && i < g->narrays ? g->arrays[i] : NULL;
}

void shardpipe_group_close(shardpipe_group *g)
{
	if (g != NULL)
		group_free(g);
}
