/*
 * zarr_node.c - what a directory holds as a Zarr node: the node type its
 * zarr.json declares, read without trusting it (doc/design.md §26).  The
 * directory store asks before it creates or overwrites, the group before
 * it writes an array, the CLI before it reads.
 */
#define _GNU_SOURCE
#include "zarr_node.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "store_fs.h"

/* A zarr.json of a node is a few KiB; this only stops a hostile one. */
#define NODE_META_MAX (1u << 20)

static int key_is(const struct json_value *m, const char *key)
{
	return m->key_len == strlen(key) &&
	       memcmp(m->key, key, m->key_len) == 0;
}

/*
 * Whether a group's metadata holds only what the core spec lets a group
 * hold: zarr_format, node_type, an attributes object, and extensions that
 * say "must_understand": false.  Anything else (an array's "shape" under
 * "node_type": "group", say) makes it no group we know.
 */
static int group_members_known(const struct json_value *root)
{
	for (const struct json_value *m = root->child; m != NULL;
	     m = m->next) {
		const struct json_value *mu;

		/* Keys may hold NUL ("\u0000"): compare by length. */
		if (key_is(m, "zarr_format") || key_is(m, "node_type"))
			continue;
		if (key_is(m, "attributes") && m->type == JSON_OBJECT)
			continue;
		mu = json_get(m, "must_understand");
		if (mu == NULL || mu->type != JSON_FALSE)
			return 0;
	}
	return 1;
}

int zarr_json_load(const char *dir, char **text, struct json_doc **doc,
		   struct sp_err *err)
{
	char *p;
	struct stat st;
	ssize_t got;
	int fd;

	*text = NULL;
	*doc = NULL;
	if (asprintf(&p, "%s/zarr.json", dir) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	/* O_NONBLOCK: a FIFO put there would block the open for as long as
	 * no one writes it; fstat below sees it is no regular file. */
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;

		free(p);
		/* ENOTDIR: dir is a file, which holds no node; the caller's
		 * store check names it, not an I/O error here. */
		if (e == ENOENT || e == ENOTDIR)
			return SHARDPIPE_OK;
		return sp_err_set(err, store_fs_errno_code(e),
				  "%s/zarr.json: %s", dir, strerror(e));
	}
	free(p);
	*text = malloc(1);
	if (*text == NULL) {
		close(fd);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	**text = '\0';
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > NODE_META_MAX) {
		close(fd);
		return SHARDPIPE_OK;
	}
	free(*text);
	*text = malloc((size_t)st.st_size + 1);
	if (*text == NULL) {
		close(fd);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	got = read(fd, *text, (size_t)st.st_size);
	close(fd);
	if (got == st.st_size) {
		(*text)[got] = '\0';
		*doc = json_parse(*text, (size_t)got, NULL, NULL);
	}
	return SHARDPIPE_OK;
}

int zarr_node_of(const char *dir, enum zarr_node *out, struct sp_err *err)
{
	struct json_doc *doc;
	const struct json_value *root;
	char *text;

	*out = ZARR_NODE_NONE;
	SP_FORWARD(zarr_json_load(dir, &text, &doc, err));
	if (text == NULL)
		return SHARDPIPE_OK;
	*out = ZARR_NODE_OTHER;
	root = doc != NULL ? json_root(doc) : NULL;
	if (root != NULL && json_get(root, "zarr_format") != NULL &&
	    json_get(root, "zarr_format")->type == JSON_NUMBER &&
	    json_get(root, "zarr_format")->u == 3) {
		if (json_is_str(json_get(root, "node_type"), "array"))
			*out = ZARR_NODE_ARRAY;
		else if (json_is_str(json_get(root, "node_type"), "group") &&
			 group_members_known(root))
			*out = json_get(json_get(json_get(root, "attributes"),
						 "ome"), "multiscales") != NULL
				       ? ZARR_NODE_IMAGE : ZARR_NODE_GROUP;
	}
	json_free(doc);
	free(text);
	return SHARDPIPE_OK;
}
