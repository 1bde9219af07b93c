#define _GNU_SOURCE
#include "store_fs.h"
#include "json.h"
#include "zarr_node.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct store_fs {
	struct store base;
	char *root;
	int overwrite;
	int durable;
	int existed;    /* the root was there when checked */
	int reopened;   /* an existing array continued: nothing to create */
	int lock_fd;    /* the root, flock'ed while the store is written */
	/* A region writer (doc/design.md §30): the root's flock shared,
	 * zarr.json never written, each shard through a temporary named for
	 * it alone and flock'ed while it is written. */
	int region;
	/* Its box's claim (§30): ".box.L-H.L-H....lock" in the root, locked
	 * while it writes, removed when it is freed; -1 none.  It holds the
	 * rows below which every shard of the box is written (§30.3),
	 * claim_lo0 (the box's first row) until a shard row completes. */
	int claim_fd;
	char *claim;
	uint64_t claim_lo0;
	/* The box is written whole (store_fs_region_done): the claim stays,
	 * unlocked, until publish, so that a later writer of a box meeting
	 * it is refused (§30.3). */
	int claim_kept;
	/* The deepest shard directory known to exist, so that mkdir runs
	 * once per directory rather than once per shard. */
	char *made;
	size_t made_len;
	unsigned long tmp_seq;
};

int store_fs_errno_code(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return SHARDPIPE_ERR_NOSPACE;
	case EACCES:
	case EPERM:
	case EROFS:
		return SHARDPIPE_ERR_ACCESS;
	case ENOMEM:
		return SHARDPIPE_ERR_NOMEM;
	case ENAMETOOLONG:
	case ELOOP:
		/* The path as given can hold no store: the user's to
		 * change, not an input/output error. */
		return SHARDPIPE_ERR_PATH;
	default:
		return SHARDPIPE_ERR_IO;
	}
}

/* The directory that holds path's last component, malloc'd ("." for a
 * bare name, "/" for a name in the root); NULL when out of memory. */
char *store_fs_parent(const char *path)
{
	char *parent = strdup(path), *slash;

	if (parent == NULL)
		return NULL;
	while ((slash = strrchr(parent, '/')) != NULL && slash != parent &&
	       slash[1] == '\0')
		*slash = '\0';
	slash = strrchr(parent, '/');
	if (slash == parent)
		parent[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else
		strcpy(parent, ".");
	return parent;
}

/*
 * The store's own directory could not be made, for errno e: say where and
 * why.  ENOENT although the parent exists means its file system takes no
 * new directories (/proc, /sys): the path can never hold a store.
 */
static int root_refused(const char *root, int e, struct sp_err *err)
{
	char *parent = store_fs_parent(root);
	int code = e == ENOENT || e == ENOTDIR ? SHARDPIPE_ERR_PATH
					       : store_fs_errno_code(e);

	sp_err_set(err, code, "%s: cannot create the store's directory in "
		   "%s: %s%s", root, parent ? parent : "its parent",
		   strerror(e), e == ENOENT ? " (that file system makes no new "
		   "directories; choose another path)" : "");
	free(parent);
	return code;
}

static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int empty = 1;

	if (d == NULL)
		return 0;
	while (empty && (e = readdir(d)) != NULL)
		empty = strcmp(e->d_name, ".") == 0 ||
			strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty;
}

static const struct store_ops fs_ops;
/* What remove_key_tree does: remove the tree, only look for links in it
 * (dry), remove it and a killed writer's temporaries in it, or remove
 * only those. */
enum tree_mode { TREE_REMOVE, TREE_DRY, TREE_ORPHANS, TREE_TEMPS };

static int remove_key_tree(const char *dir, int depth, int durable,
			   enum tree_mode mode, struct sp_err *err);

/*
 * Overwrite empties the chunk tree at path/c and writes the new one there;
 * a c that is a link (or any non-directory) is not the store's: through a
 * link both would reach the directory it names, the user's files.
 */
static int check_chunk_root(const char *path, struct sp_err *err)
{
	struct stat st;
	char *c;
	int rc = SHARDPIPE_OK;

	if (asprintf(&c, "%s/c", path) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (lstat(c, &st) == 0 && !S_ISDIR(st.st_mode))
		rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
				"%s: is %s, not the store's chunk directory; "
				"nothing was touched", c,
				S_ISLNK(st.st_mode) ? "a symbolic link"
						    : "not a directory");
	/* A link deeper in the tree: found now, before the old zarr.json
	 * goes, so that the refusal leaves the store whole. */
	else if (remove_key_tree(c, 0, 0, TREE_DRY, err) != SHARDPIPE_OK)
		rc = err->code;
	free(c);
	return rc;
}

/* Whether another writer holds the lock on the directory at path. */
static int root_held(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), held;

	if (fd < 0)
		return 0;
	held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

int store_fs_check(struct store **out, const char *path, int overwrite,
		   int durable, struct sp_err *err)
{
	struct store_fs *s;
	struct stat st;
	char *meta = NULL;

	*out = NULL;
	SP_RETURN_IF(path == NULL || *path == '\0', err, SHARDPIPE_ERR_PATH,
		     "empty store path");
	int existed, rc_in = SHARDPIPE_OK;
	char *up = store_fs_parent(path);
	enum zarr_node up_node = ZARR_NODE_NONE;
	struct sp_err ignored;

	/* An array holds chunks, no other nodes: a store made in its
	 * directory would be foreign files to the array's overwrite and a
	 * hierarchy no Zarr reader walks.  A parent whose zarr.json cannot
	 * be read is no array we know of, and the checks below judge it. */
	SP_RETURN_IF(up == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (zarr_node_of(up, &up_node, &ignored) == SHARDPIPE_OK &&
	    up_node == ZARR_NODE_ARRAY)
		rc_in = sp_err_set(err, SHARDPIPE_ERR_PATH,
				   "%s: is inside the Zarr array %s, which "
				   "holds no other nodes (nothing was touched)",
				   path, up);
	/* An image's levels are written with it, each the reduction of the
	 * one below: one written alone would not be. */
	else if (up_node == ZARR_NODE_IMAGE)
		rc_in = sp_err_set(err, SHARDPIPE_ERR_PATH,
				   "%s: is inside the OME-NGFF image %s, whose "
				   "levels are written with it; write the image "
				   "(nothing was touched)", path, up);
	free(up);
	SP_FORWARD(rc_in);
	existed = lstat(path, &st) == 0;

	if (existed) {
		/* Overwriting through a link would empty a directory the
		 * user named by another path; ask for the real one. */
		SP_RETURN_IF(S_ISLNK(st.st_mode), err, SHARDPIPE_ERR_PATH,
			     "%s: is a symbolic link; give the store's own "
			     "path (nothing was touched)", path);
		SP_RETURN_IF(!S_ISDIR(st.st_mode), err, SHARDPIPE_ERR_PATH,
			     "%s: exists and is not a directory (nothing was "
			     "touched)", path);
		SP_RETURN_IF(access(path, W_OK | X_OK) != 0, err,
			     store_fs_errno_code(errno), "%s: %s", path,
			     strerror(errno));
		if (asprintf(&meta, "%s/zarr.json", path) < 0)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		struct stat mst;
		int exists = lstat(meta, &mst) == 0;

		free(meta);
		SP_RETURN_IF(exists && !overwrite, err, SHARDPIPE_ERR_EXISTS,
			     "%s: already holds a store (zarr.json); "
			     "choose another path or overwrite", path);
		/* Every zarr.json a store writes is a regular file: a link,
		 * FIFO or directory there is someone else's to remove. */
		SP_RETURN_IF(exists && !S_ISREG(mst.st_mode), err,
			     SHARDPIPE_ERR_EXISTS,
			     "%s/zarr.json: is not a regular file, so no store "
			     "of ours; nothing was touched", path);
		if (exists) {
			enum zarr_node node;

			/* Overwrite replaces an array; a group's arrays
			 * and the files beside them are not its to drop. */
			SP_FORWARD(zarr_node_of(path, &node, err));
			SP_RETURN_IF(node == ZARR_NODE_GROUP, err,
				     SHARDPIPE_ERR_EXISTS,
				     "%s: is a Zarr group, not an array; "
				     "write an array into it by name "
				     "(nothing was touched)", path);
			SP_FORWARD(check_chunk_root(path, err));
		}
		/* Region writers there, before they publish (§30): busy,
		 * not the user's. */
		SP_RETURN_IF(!exists && root_held(path), err,
			     SHARDPIPE_ERR_BUSY,
			     "%s: region writers are writing this array (they "
			     "hold its lock); nothing was touched", path);
		/* Without zarr.json the files there are the user's, not a
		 * store's: refuse with or without overwrite. */
		SP_RETURN_IF(!exists && !dir_is_empty(path), err,
			     SHARDPIPE_ERR_EXISTS,
			     "%s: directory holds files and no zarr.json, so it "
			     "is not a store; nothing was touched", path);
	} else {
		int e = errno, rc = SHARDPIPE_OK;
		char *parent;

		/* ENOTDIR: a component on the way is a file. */
		SP_RETURN_IF(e != ENOENT && e != ENOTDIR, err,
			     store_fs_errno_code(e), "%s: %s", path,
			     strerror(e));
		parent = store_fs_parent(path);
		SP_RETURN_IF(parent == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory");
		/* Only the last component is created: a missing parent is
		 * more likely a typo than a request. */
		if (stat(parent, &st) != 0)
			rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
					"%s: parent directory %s does not exist",
					path, parent);
		else if (!S_ISDIR(st.st_mode))
			rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
					"%s: %s is not a directory", path,
					parent);
		else if (access(parent, W_OK | X_OK) != 0)
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: cannot create it in %s: %s", path,
					parent, strerror(errno));
		free(parent);
		SP_FORWARD(rc);
	}
	s = calloc(1, sizeof(*s));
	SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	s->root = strdup(path);
	if (s->root == NULL) {
		free(s);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	s->base.ops = &fs_ops;
	s->overwrite = overwrite;
	s->durable = durable;
	s->existed = existed;
	*out = &s->base;
	return SHARDPIPE_OK;
}

/* fsync a directory, so that the names created in it survive a crash. */
static int sync_dir(const char *dir, struct sp_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) != 0)
		rc = sp_err_set(err, store_fs_errno_code(errno),
				"%s: fsync of the directory failed: %s", dir,
				strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Remove what a store owns below dir: regular files and directories named
 * by chunk keys. Anything else (a foreign file, a temporary of a
 * concurrent writer) stays, and so does every directory that still holds
 * it.  A link named like a key stops it with SHARDPIPE_ERR_EXISTS: the new
 * shard would be written through it.  dry: remove nothing, only look for
 * such links (store_fs_check, before the old zarr.json goes).  When
 * durable, each directory is synced once its entries are gone,
 * before the new zarr.json can be written: an old shard that came back
 * after a power loss would be read where the new store stored nothing. */
/* A temporary put_object names ".LEAF.PID.SEQ.tmp", LEAF a chunk key's
 * part (or zarr.json, in the root). */
static int is_our_temp(const char *name)
{
	const char *p = name + 1;

	if (name[0] != '.')
		return 0;
	if (strncmp(p, "zarr.json.", 10) == 0)
		p += 9;
	else
		while (*p >= '0' && *p <= '9')
			p++;
	for (int k = 0; k < 2; k++) {
		if (*p++ != '.' || *p < '0' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return strcmp(p, ".tmp") == 0 && p - name > 5;
}

static int remove_key_tree(const char *dir, int depth, int durable,
			   enum tree_mode mode, struct sp_err *err)
{
	const int dry = mode == TREE_DRY;
	DIR *d;
	struct dirent *e;
	int rc = SHARDPIPE_OK, removed = 0, fd;

	SP_RETURN_IF(depth > SHARDPIPE_MAX_RANK, err, SHARDPIPE_ERR_IO,
		     "%s: deeper than any chunk key; left as it is", dir);
	/* O_NOFOLLOW: a link put in place of a directory since it was
	 * checked leads out of the store. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL && fd >= 0)
		close(fd);
	if (d == NULL)
		return errno == ENOENT ? SHARDPIPE_OK
				       : sp_err_set(err,
						    store_fs_errno_code(errno),
						    "%s: %s", dir,
						    strerror(errno));
	while (rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		struct stat st;
		char *p;

		if (!store_is_key_part(e->d_name, strlen(e->d_name))) {
			/* A writer killed while writing it left it; the lock
			 * says no other writer is at work (§29). */
			if ((mode == TREE_ORPHANS || mode == TREE_TEMPS) &&
			    is_our_temp(e->d_name) &&
			    unlinkat(fd, e->d_name, 0) == 0)
				removed = 1;
			continue;
		}
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			rc = remove_key_tree(p, depth + 1, durable, mode, err);
			if (dry || mode == TREE_TEMPS)
				;
			else if (rc == SHARDPIPE_OK && rmdir(p) == 0)
				removed = 1;
			else if (rc == SHARDPIPE_OK && errno != ENOTEMPTY &&
				 errno != EEXIST && errno != ENOENT)
				rc = sp_err_set(err, store_fs_errno_code(errno),
						"%s: %s", p, strerror(errno));
		} else if (mode == TREE_TEMPS) {
			/* Shards stay, and links are for the writes to
			 * replace (rename replaces the link, not what it
			 * names). */
		} else if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
			/* Named like a key but not the store's: the new
			 * shard would be written through it, into what it
			 * names.  Left as it is; the overwrite stops. */
			rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
					"%s: is a symbolic link in the chunk "
					"tree, not the store's; %s", p,
					dry ? "nothing was touched"
					    : "left as it is");
		} else if (!dry && lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			if (unlink(p) == 0)
				removed = 1;
			else if (errno != ENOENT)
				rc = sp_err_set(err, store_fs_errno_code(errno),
						"%s: cannot remove the old "
						"shard: %s", p,
						strerror(errno));
		}
		free(p);
	}
	closedir(d);
	if (rc == SHARDPIPE_OK && removed && durable)
		rc = sync_dir(dir, err);
	return rc;
}

/* Remove an old array's objects at dir: its zarr.json first, so that no
 * reader pairs it with new shards, then its shard tree under c/. */
static int remove_array(const char *dir, int durable, struct sp_err *err)
{
	char *p;
	int rc = SHARDPIPE_OK;

	if (asprintf(&p, "%s/zarr.json", dir) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (unlink(p) != 0 && errno != ENOENT)
		rc = sp_err_set(err, store_fs_errno_code(errno), "%s: %s", p,
				strerror(errno));
	free(p);
	/* Durable: the old zarr.json must not come back after a power loss
	 * to advertise shards removed below. */
	if (rc == SHARDPIPE_OK && durable)
		rc = sync_dir(dir, err);
	SP_FORWARD(rc);
	if (asprintf(&p, "%s/c", dir) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = remove_key_tree(p, 0, durable, TREE_REMOVE, err);
	/* Emptied, it goes too; kept if anything else is in it.  Durable:
	 * its name leaves dir before a new zarr.json can be written. */
	if (rc == SHARDPIPE_OK && rmdir(p) == 0 && durable)
		rc = sync_dir(dir, err);
	free(p);
	return rc;
}

/*
 * root/name (n bytes of name), when it is a directory holding a
 * zarr.json: its objects removed as a single store's would be, and the
 * directory with them when nothing else is left in it.
 */
static int remove_child_array(const char *root, const char *name, size_t n,
			      int durable, struct sp_err *err)
{
	struct stat st;
	char *dir = NULL, *meta = NULL;
	int rc = SHARDPIPE_OK;

	if (asprintf(&dir, "%s/%.*s", root, (int)n, name) < 0 ||
	    asprintf(&meta, "%s/zarr.json", dir) < 0) {
		free(dir);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    lstat(meta, &st) == 0 && S_ISREG(st.st_mode)) {
		rc = remove_array(dir, durable, err);
		/* Kept when it holds more. */
		if (rc == SHARDPIPE_OK && rmdir(dir) == 0 && durable)
			rc = sync_dir(root, err);
	}
	free(meta);
	free(dir);
	return rc;
}

/*
 * The frame fields' arrays of an old image at root (design §28.9),
 * which its zarr.json lists in attributes.shardpipe.frame_meta:
 * each a name of A-Z a-z 0-9 _ and a directory holding a zarr.json, its
 * objects removed as a level's are.  Read before root's zarr.json goes.
 */
static int remove_frame_fields(const char *root, int durable,
			       struct sp_err *err)
{
	const struct json_value *f;
	struct json_doc *doc = NULL;
	char *text = NULL;
	int rc;

	SP_FORWARD(zarr_json_load(root, &text, &doc, err));
	f = doc == NULL ? NULL
	    : json_get(json_get(json_get(json_root(doc), "attributes"),
				"shardpipe"), "frame_meta");
	rc = SHARDPIPE_OK;
	for (f = f != NULL && f->type == JSON_OBJECT ? f->child : NULL;
	     f != NULL && rc == SHARDPIPE_OK; f = f->next) {
		int plain = f->key_len > 0 && f->key_len < 64 &&
			    strlen(f->key) == f->key_len;

		for (size_t k = 0; plain && k < f->key_len; k++) {
			unsigned char c = (unsigned char)f->key[k];

			plain = (c >= 'a' && c <= 'z') ||
				(c >= 'A' && c <= 'Z') ||
				(c >= '0' && c <= '9') || c == '_';
		}
		if (plain)
			rc = remove_child_array(root, f->key, f->key_len,
						durable, err);
	}
	json_free(doc);
	free(text);
	return rc;
}

/*
 * The arrays of an old pyramid below root (doc/design.md §28.5): the
 * directories named by a level's number that hold a zarr.json.
 */
static int remove_levels(const char *root, int durable, struct sp_err *err)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int rc = SHARDPIPE_OK;

	if (d == NULL)
		return SHARDPIPE_OK;
	while (rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);

		if (store_is_key_part(e->d_name, n))
			rc = remove_child_array(root, e->d_name, n, durable,
						err);
	}
	closedir(d);
	return rc;
}

/*
 * One writer a store (doc/design.md §29): an exclusive flock on the root
 * directory, held until the store is freed.  No file is made for it, so a
 * store's files are the same whether it was written in one run or more,
 * and a writer that dies releases it with its descriptors.
 */
static int lock_root(struct store_fs *s, struct sp_err *err)
{
	int fd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	SP_RETURN_IF(fd < 0, err, store_fs_errno_code(errno), "%s: %s",
		     s->root, strerror(errno));
	/* Region writers share the array (§30); an ordinary stream or a
	 * continuation excludes them all. */
	if (flock(fd, (s->region ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
		int e = errno;

		close(fd);
		SP_RETURN_IF(e == EWOULDBLOCK, err, SHARDPIPE_ERR_BUSY,
			     "%s: another stream is writing this store (it "
			     "holds its lock); nothing was touched", s->root);
		return sp_err_set(err, store_fs_errno_code(e),
				  "%s: cannot lock it: %s", s->root,
				  strerror(e));
	}
	s->lock_fd = fd;
	return SHARDPIPE_OK;
}

static int fs_create(struct store *base, struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;
	int rc = SHARDPIPE_OK;

	if (mkdir(s->root, 0777) != 0) {
		if (errno != EEXIST)
			return root_refused(s->root, errno, err);
		/* Absent when checked, so ours to make: another process
		 * made it meanwhile (two writes of one array of a group,
		 * say), and both writing there would mix their shards
		 * under one zarr.json. */
		SP_RETURN_IF(!s->existed, err, SHARDPIPE_ERR_EXISTS,
			     "%s: made by another writer after it was "
			     "checked; nothing of it was touched", s->root);
	}
	/* Before an old store is removed: not from under its writer. */
	SP_FORWARD(lock_root(s, err));
	/* An empty directory when checked: another writer may have made
	 * its store there since, and finished (its lock is gone). */
	SP_RETURN_IF(s->existed && !s->overwrite && !dir_is_empty(s->root),
		     err, SHARDPIPE_ERR_EXISTS,
		     "%s: made by another writer after it was checked; "
		     "nothing of it was touched", s->root);
	if (s->durable) {
		/* The root's own name, in its parent. */
		char *parent = store_fs_parent(s->root);

		if (parent == NULL)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		rc = sync_dir(parent, err);
		free(parent);
		SP_FORWARD(rc);
	}
	if (!s->overwrite)
		return SHARDPIPE_OK;
	/* Replace the old store, a single array or a pyramid's group. */
	SP_FORWARD(remove_frame_fields(s->root, s->durable, err));
	SP_FORWARD(remove_array(s->root, s->durable, err));
	return remove_levels(s->root, s->durable, err);
}

static void fs_free(struct store *base);

/* A pyramid level's store: the directory `name` below the group's, the
 * same durability, never overwriting (the group's creation removed the
 * old levels). */
static int fs_child(const struct store *base, const char *name,
		    struct store **out, struct sp_err *err)
{
	const struct store_fs *parent = (const struct store_fs *)base;
	struct store_fs *s = calloc(1, sizeof(*s));

	*out = NULL;
	SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (asprintf(&s->root, "%s/%s", parent->root, name) < 0) {
		free(s);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	s->base.ops = &fs_ops;
	s->durable = parent->durable;
	s->claim_fd = -1;
	/* A region writer's level (§30.5) writes its shards as the root's
	 * do; it makes its directory itself, there being no create, and
	 * goes through none that is not one (a link). */
	s->region = parent->region;
	if (s->region && mkdir(s->root, 0777) != 0 && errno != EEXIST) {
		int rc = sp_err_set(err, store_fs_errno_code(errno), "%s: %s",
				    s->root, strerror(errno));

		fs_free(&s->base);
		return rc;
	}
	/* As store_fs_check would have seen it: a level directory left
	 * there (the user's, holding no zarr.json) is no other writer's. */
	{
		struct stat st;

		s->existed = lstat(s->root, &st) == 0;
		if (s->region && (!s->existed || !S_ISDIR(st.st_mode))) {
			int rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
					    "%s: not a directory of the store "
					    "(a link?); nothing written there",
					    s->root);

			fs_free(&s->base);
			return rc;
		}
	}
	*out = &s->base;
	return SHARDPIPE_OK;
}

/* mkdir -p of dir, which lies below s->root. */
static int make_dirs(struct store_fs *s, char *dir, struct sp_err *err)
{
	size_t len = strlen(dir), root_len = strlen(s->root);

	if (s->made != NULL && s->made_len == len &&
	    memcmp(s->made, dir, len) == 0)
		return SHARDPIPE_OK;
	for (size_t i = root_len + 1; i <= len; i++) {
		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		char c = dir[i];
		dir[i] = '\0';
		int made = mkdir(dir, 0777) == 0;
		int bad = !made && errno != EEXIST;
		int e = errno;
		struct stat st;
		/* A region writer does not walk the whole tree at open (every
		 * writer would, §30): each directory it writes through is
		 * checked to be one, not a link to the user's. */
		if (!bad && !made && s->region &&
		    (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
			int rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
					    "%s: not a directory of the store "
					    "(a link?); nothing written there",
					    dir);
			dir[i] = c;
			return rc;
		}
		if (bad) {
			int rc = sp_err_set(err, store_fs_errno_code(e),
					    "%s: %s", dir, strerror(e));
			dir[i] = c;
			return rc;
		}
		if (made && s->durable) {
			/* The new name lives in the parent directory. */
			char *slash = strrchr(dir, '/');
			int rc;

			*slash = '\0';
			rc = sync_dir(dir, err);
			*slash = '/';
			if (rc != SHARDPIPE_OK) {
				dir[i] = c;
				return rc;
			}
		}
		dir[i] = c;
	}
	free(s->made);
	s->made = strdup(dir);
	s->made_len = s->made ? len : 0;
	return SHARDPIPE_OK;
}

/* Write the n parts, up to 64 a call, resuming after short writes. */
static int write_all(int fd, const struct iovec *parts, size_t n)
{
	struct iovec v[64];
	size_t next = 0, cnt = 0;

	for (;;) {
		size_t k = 0;
		ssize_t w;

		while (cnt < sizeof(v) / sizeof(v[0]) && next < n)
			v[cnt++] = parts[next++];
		if (cnt == 0)
			return 0;
		w = writev(fd, v, (int)cnt);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		/* Drop what was written; a part written in part stays,
		 * less its written bytes. */
		while (k < cnt && (size_t)w >= v[k].iov_len)
			w -= (ssize_t)v[k++].iov_len;
		if (k < cnt) {
			v[k].iov_base = (uint8_t *)v[k].iov_base + w;
			v[k].iov_len -= (size_t)w;
		}
		memmove(v, v + k, (cnt - k) * sizeof(*v));
		cnt -= k;
	}
}

/*
 * A region writer's shard (doc/design.md §30): its temporary is named for
 * the shard alone (".LEAF.0.0.tmp", a name drop_rows knows), created or
 * taken over, and flock'ed until it is renamed into place: a second writer
 * of the same shard meanwhile finds it locked (SHARDPIPE_ERR_BUSY), and
 * one left by a killed writer is taken over by its retry.  The lock is
 * taken on what the name pointed at when opened; a writer that renamed it
 * away meanwhile leaves a locked file that is no longer the temporary, so
 * the name is opened again.
 */
static int put_region_shard(struct store_fs *s, const char *dir,
			    const char *leaf, const struct iovec *parts,
			    size_t n, struct sp_err *err)
{
	char *tmp = NULL, *final = NULL;
	int fd = -1, rc = SHARDPIPE_OK;

	if (asprintf(&tmp, "%s/.%s.0.0.tmp", dir, leaf) < 0 ||
	    asprintf(&final, "%s/%s", dir, leaf) < 0) {
		free(tmp);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	for (;;) {
		struct stat a, b;

		fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0) {
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: %s", tmp, strerror(errno));
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int e = errno;

			rc = e == EWOULDBLOCK
				     ? sp_err_set(err, SHARDPIPE_ERR_BUSY,
						  "%s: another region writer "
						  "is writing this shard (the "
						  "regions overlap)", final)
				     : sp_err_set(err, store_fs_errno_code(e),
						  "%s: cannot lock it: %s",
						  tmp, strerror(e));
			break;
		}
		if (fstat(fd, &a) == 0 && stat(tmp, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			break;
		close(fd);
		fd = -1;
	}
	if (rc == SHARDPIPE_OK && ftruncate(fd, 0) != 0)
		rc = sp_err_set(err, store_fs_errno_code(errno), "%s: %s", tmp,
				strerror(errno));
	if (rc == SHARDPIPE_OK && write_all(fd, parts, n) != 0)
		rc = sp_err_set(err, store_fs_errno_code(errno),
				"%s: write failed: %s", final, strerror(errno));
	if (rc == SHARDPIPE_OK && s->durable && fsync(fd) != 0)
		rc = sp_err_set(err, store_fs_errno_code(errno),
				"%s: fsync failed: %s", final, strerror(errno));
	/* Renamed while still locked: nobody takes it over half written. */
	if (rc == SHARDPIPE_OK && rename(tmp, final) != 0)
		rc = sp_err_set(err, store_fs_errno_code(errno),
				"%s: rename failed: %s", final,
				strerror(errno));
	if (rc == SHARDPIPE_OK && s->durable)
		rc = sync_dir(dir, err);
	/* A failed write leaves its temporary (ours while locked) for the
	 * retry to take over; a busy one is the other writer's. */
	if (fd >= 0 && rc != SHARDPIPE_OK && rc != SHARDPIPE_ERR_BUSY)
		unlink(tmp);
	if (fd >= 0 && close(fd) != 0 && rc == SHARDPIPE_OK)
		rc = sp_err_set(err, store_fs_errno_code(errno),
				"%s: close failed: %s", final, strerror(errno));
	free(tmp);
	free(final);
	return rc;
}

/* Write dir/leaf through a hidden temporary in the same directory. */
static int put_object(struct store_fs *s, const char *dir, const char *leaf,
		      const struct iovec *parts, size_t n, struct sp_err *err)
{
	char *tmp = NULL, *final = NULL;
	int fd, rc = SHARDPIPE_OK;

	if (asprintf(&tmp, "%s/.%s.%ld.%lu.tmp", dir, leaf, (long)getpid(),
		     s->tmp_seq++) < 0 ||
	    asprintf(&final, "%s/%s", dir, leaf) < 0) {
		free(tmp);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = sp_err_set(err, store_fs_errno_code(errno), "%s: %s",
				final, strerror(errno));
	} else {
		if (write_all(fd, parts, n) != 0)
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: write failed: %s", final,
					strerror(errno));
		/* The data before the name: rename may reach the disk
		 * before the bytes do otherwise. */
		if (rc == SHARDPIPE_OK && s->durable && fsync(fd) != 0)
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: fsync failed: %s", final,
					strerror(errno));
		if (close(fd) != 0 && rc == SHARDPIPE_OK)
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: close failed: %s", final,
					strerror(errno));
		if (rc == SHARDPIPE_OK && rename(tmp, final) != 0)
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: rename failed: %s", final,
					strerror(errno));
		if (rc == SHARDPIPE_OK && s->durable)
			rc = sync_dir(dir, err);
		if (rc != SHARDPIPE_OK)
			unlink(tmp);
	}
	free(tmp);
	free(final);
	return rc;
}

/* key: "c/1/0/3", made in the directories it names. */
static int fs_write(struct store *base, const char *key,
		    const struct iovec *parts, size_t n, struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;
	char *dir = NULL, *leaf;
	int rc;

	SP_RETURN_IF(asprintf(&dir, "%s/%s", s->root, key) < 0, err,
		     SHARDPIPE_ERR_NOMEM, "out of memory");
	leaf = strrchr(dir, '/');
	*leaf++ = '\0';
	rc = make_dirs(s, dir, err);
	if (rc == SHARDPIPE_OK && s->region)
		rc = put_region_shard(s, dir, leaf, parts, n, err);
	else if (rc == SHARDPIPE_OK)
		rc = put_object(s, dir, leaf, parts, n, err);
	free(dir);
	return rc;
}

static int fs_write_meta(struct store *base, const char *json, size_t len,
			 struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;
	struct iovec part = { (void *)json, len };

	return put_object(s, s->root, "zarr.json", &part, 1, err);
}

static void fs_free(struct store *base)
{
	struct store_fs *s = (struct store_fs *)base;

	/* The claim goes before its lock: a writer finding the name locked
	 * meanwhile is refused, one finding it unlocked ignores it. */
	if (s->claim != NULL && !s->claim_kept)
		unlink(s->claim);
	if (s->claim_fd >= 0 && s->region)
		close(s->claim_fd);
	free(s->claim);

	if (s->lock_fd > 0)
		close(s->lock_fd);
	free(s->root);
	free(s->made);
	free(s);
}

/* An object the continued store no longer has (a shard of the rewritten
 * shard row left empty, doc/design.md §29): gone if it was there. */
static int fs_remove(struct store *base, const char *key, struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;
	struct stat st;
	char *p;
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(asprintf(&p, "%s/%s", s->root, key) < 0, err,
		     SHARDPIPE_ERR_NOMEM, "out of memory");
	if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && unlink(p) != 0 &&
	    errno != ENOENT)
		rc = sp_err_set(err, store_fs_errno_code(errno),
				"%s: cannot remove the old shard: %s", p,
				strerror(errno));
	if (rc == SHARDPIPE_OK && s->durable) {
		*strrchr(p, '/') = '\0';
		if (access(p, F_OK) == 0)
			rc = sync_dir(p, err);
	}
	free(p);
	return rc;
}


/* A store over the directory path, which exists and holds an array or
 * its shards, locked as a reopened stream (region 0) or a region writer
 * (region 1) locks it (§29, §30.3); freed when the lock is refused. */
static int store_existing(struct store_fs **out, const char *path,
			  int durable, int region, struct sp_err *err)
{
	struct store_fs *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	s->root = strdup(path);
	s->base.ops = &fs_ops;
	s->durable = durable;
	s->existed = 1;
	s->reopened = 1;
	s->region = region;
	s->claim_fd = -1;
	rc = s->root == NULL ? sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory")
			     : lock_root(s, err);
	if (rc != SHARDPIPE_OK) {
		fs_free(&s->base);
		return rc;
	}
	*out = s;
	return SHARDPIPE_OK;
}

/*
 * The level `depth` of the chunk tree at dir, on the way to the append
 * dim's level `dim` (doc/design.md §3.3: a storage order may store it as
 * any dim): above it every directory named like a key part is walked
 * down, a link left alone; at it, the temporaries a killed writer left
 * beside the shards go, and every entry whose coordinate is `shards` or
 * more, with only the temporaries in those from `temps` on.
 */
static int drop_level(const char *dir, int depth, int dim, uint64_t temps,
		      uint64_t shards, int durable, struct sp_err *err)
{
	DIR *d;
	struct dirent *e;
	char *p;
	int rc = SHARDPIPE_OK, removed = 0;

	d = opendir(dir);
	while (d != NULL && depth == dim && (e = readdir(d)) != NULL)
		if (is_our_temp(e->d_name) &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed = 1;
	if (d != NULL)
		rewinddir(d);
	while (d != NULL && rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		struct stat st;
		uint64_t i = 0;
		int big = 0;

		if (!store_is_key_part(e->d_name, n))
			continue;
		for (size_t k = 0; k < n; k++) {
			big |= i > (UINT64_MAX - 9) / 10;
			i = i * 10 + (uint64_t)(e->d_name[k] - '0');
		}
		if (depth == dim && !big && i < temps)
			continue;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		if (lstat(p, &st) != 0) {
			/* Gone meanwhile. */
		} else if (depth < dim) {
			if (S_ISDIR(st.st_mode))
				rc = drop_level(p, depth + 1, dim, temps,
						shards, durable, err);
		} else if (S_ISDIR(st.st_mode)) {
			rc = remove_key_tree(p, depth + 1, durable,
					     !big && i < shards ? TREE_TEMPS
								: TREE_ORPHANS,
					     err);
			if (rc == SHARDPIPE_OK && (big || i >= shards) &&
			    rmdir(p) == 0)
				removed = 1;
		} else if (big || i >= shards) {
			if (S_ISLNK(st.st_mode))
				rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
						"%s: is a symbolic link in the "
						"chunk tree, not the store's; "
						"left as it is", p);
			else if (S_ISREG(st.st_mode) && unlink(p) == 0)
				removed = 1;
		}
		free(p);
	}
	if (d != NULL)
		closedir(d);
	if (rc == SHARDPIPE_OK && removed && durable)
		rc = sync_dir(dir, err);
	return rc;
}

/*
 * What a writer that was killed left past what zarr.json advertises
 * (doc/design.md §29): every shard whose coordinate along storage dim
 * `dim` is `shards` or more, and its temporaries there, in the shard row
 * `temps` it may have been rewriting and in the root (zarr.json's).
 * Only names a chunk key or put_object can give are touched, and a link
 * named like a key stops it, as an overwrite's removal does.
 */
static int fs_drop_rows(struct store *base, int dim, uint64_t temps,
			uint64_t shards, struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;
	char *c;
	DIR *d;
	struct dirent *e;
	int rc = SHARDPIPE_OK, removed = 0;

	/* The root's own temporaries (zarr.json's). */
	d = opendir(s->root);
	while (d != NULL && (e = readdir(d)) != NULL)
		if (is_our_temp(e->d_name) &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed = 1;
	if (d != NULL)
		closedir(d);
	if (removed && s->durable)
		rc = sync_dir(s->root, err);
	if (rc != SHARDPIPE_OK)
		return rc;
	if (asprintf(&c, "%s/c", s->root) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = drop_level(c, 0, dim, temps, shards, s->durable, err);
	free(c);
	return rc;
}

static const struct store_ops fs_ops = {
	.create = fs_create,
	.write = fs_write,
	.write_meta = fs_write_meta,
	.child = fs_child,
	.remove = fs_remove,
	.drop_rows = fs_drop_rows,
	.free = fs_free,
};

int store_fs_reopen(struct store **out, const char *path, int durable,
		    struct sp_err *err)
{
	struct store_fs *s;
	int rc;

	*out = NULL;
	SP_RETURN_IF(access(path, W_OK | X_OK) != 0, err,
		     store_fs_errno_code(errno),
		     "%s: cannot be continued: %s; nothing was touched", path,
		     strerror(errno));
	SP_FORWARD(check_chunk_root(path, err));
	rc = store_existing(&s, path, durable, 0, err);
	if (rc == SHARDPIPE_OK)
		*out = &s->base;
	return rc;
}

/* A claim's box from its name: 0, or -1 when it is no claim of rank. */
static int claim_box(const char *name, int rank, uint64_t *lo, uint64_t *hi)
{
	const char *p = name;
	char *end;

	if (strncmp(p, ".box.", 5) != 0)
		return -1;
	p += 5;
	for (int d = 0; d < rank; d++) {
		lo[d] = strtoull(p, &end, 10);
		if (end == p || *end != '-')
			return -1;
		p = end + 1;
		hi[d] = strtoull(p, &end, 10);
		if (end == p || *end != (d + 1 < rank ? '.' : '.'))
			return -1;
		p = end + 1;
	}
	return strcmp(p, "lock") == 0 ? 0 : -1;
}

/* Whether two boxes meet: every dim's ranges overlap (hi 0 on dim 0 is
 * to the end). */
static int boxes_meet(int rank, const uint64_t *alo, const uint64_t *ahi,
		      const uint64_t *blo, const uint64_t *bhi)
{
	for (int d = 0; d < rank; d++) {
		uint64_t ah = d == 0 && ahi[0] == 0 ? UINT64_MAX : ahi[d];
		uint64_t bh = d == 0 && bhi[0] == 0 ? UINT64_MAX : bhi[d];

		if (alo[d] >= bh || blo[d] >= ah)
			return 0;
	}
	return 1;
}

/* The claim's record: the rows written, a fixed-width decimal so that a
 * rewrite in place never leaves a longer old one's tail, then '\n' while
 * its writer writes and CLAIM_DONE once the box is written whole. */
#define CLAIM_DIGITS 20
#define CLAIM_DONE 'w'

static int put_record(struct store_fs *s, uint64_t rows, char end,
		      struct sp_err *err)
{
	char rec[CLAIM_DIGITS + 2];

	snprintf(rec, sizeof(rec), "%0*llu%c", CLAIM_DIGITS,
		 (unsigned long long)rows, end);
	SP_RETURN_IF(pwrite(s->claim_fd, rec, CLAIM_DIGITS + 1, 0) !=
			     CLAIM_DIGITS + 1,
		     err, store_fs_errno_code(errno), "%s: %s", s->claim,
		     strerror(errno));
	return SHARDPIPE_OK;
}

int store_fs_region_progress(struct store *base, uint64_t rows,
			     struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;

	if (base == NULL || base->ops != &fs_ops || s->claim_fd < 0)
		return SHARDPIPE_OK;
	return put_record(s, s->claim_lo0 + rows, '\n', err);
}

/* Whether a claim no writer holds records its box written whole. */
static int claim_done(int fd)
{
	char end;

	return pread(fd, &end, 1, CLAIM_DIGITS) == 1 && end == CLAIM_DONE;
}

/* The rows a live claim records as written, read until two reads agree
 * (its writer rewrites it in place meanwhile); 0 when unreadable. */
static uint64_t claim_rows(int fd)
{
	char a[CLAIM_DIGITS + 1], b[CLAIM_DIGITS + 1];

	for (int tries = 0; tries < 8; tries++) {
		if (pread(fd, a, CLAIM_DIGITS, 0) != CLAIM_DIGITS ||
		    pread(fd, b, CLAIM_DIGITS, 0) != CLAIM_DIGITS)
			return 0;
		if (memcmp(a, b, CLAIM_DIGITS) == 0) {
			a[CLAIM_DIGITS] = '\0';
			return strtoull(a, NULL, 10);
		}
	}
	return 0;
}

/* Whether box lo..hi meets the rows a claim written whole records: hi[0]
 * 0 (a writer to the end, its extent not known before it closes) counts
 * its first row alone, the claim's hi[0] 0 the rows it wrote. */
static int written_meets(int rank, const uint64_t *lo, const uint64_t *hi,
			 const uint64_t *olo, uint64_t *ohi, int fd)
{
	uint64_t h[SHARDPIPE_MAX_RANK];

	memcpy(h, hi, sizeof(uint64_t) * (size_t)rank);
	if (h[0] == 0)
		h[0] = lo[0] + 1;
	if (ohi[0] == 0)
		ohi[0] = claim_rows(fd);
	return ohi[0] > olo[0] && boxes_meet(rank, lo, h, olo, ohi);
}

/*
 * The claims of other writers in the root (§30): one that meets lo..hi
 * and is locked is a writer still writing: SHARDPIPE_ERR_BUSY naming its
 * box; one unlocked and written whole is a box written since the last
 * publish: SHARDPIPE_ERR_EXISTS; another unlocked one is a killed
 * writer's, ignored by a writer.  When lo is
 * NULL (publish of rows), a locked claim is refused unless its box starts
 * at or past rows or it records every shard of its box below rows as
 * written; unlocked ones are removed.
 */
static int check_claims(struct store_fs *s, int rank, const uint64_t *lo,
			const uint64_t *hi, uint64_t rows, int closing,
			struct sp_err *err)
{
	uint64_t olo[SHARDPIPE_MAX_RANK], ohi[SHARDPIPE_MAX_RANK];
	DIR *d = opendir(s->root);
	struct dirent *e;
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(d == NULL, err, store_fs_errno_code(errno), "%s: %s",
		     s->root, strerror(errno));
	while (rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		char *full;
		int fd;

		if (claim_box(e->d_name, rank, olo, ohi) != 0 ||
		    (s->claim != NULL &&
		     strcmp(strrchr(s->claim, '/') + 1, e->d_name) == 0) ||
		    (lo != NULL && !boxes_meet(rank, lo, hi, olo, ohi)))
			continue;
		if (asprintf(&full, "%s/%s", s->root, e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		fd = open(full, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && closing) {
			/* Only boxes written whole, below. */
		} else if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
			uint64_t need = ohi[0] != 0 && ohi[0] < rows ? ohi[0]
								     : rows;
			uint64_t done = lo == NULL ? claim_rows(fd) : 0;
			/* The box without ".lock". */
			int box_len = (int)strlen(e->d_name + 5) - 5;

			if (lo != NULL)
				rc = sp_err_set(err, SHARDPIPE_ERR_BUSY,
						"%s: another region writer is "
						"writing the box %.*s, which "
						"overlaps this one; nothing was "
						"written", s->root, box_len,
						e->d_name + 5);
			else if (olo[0] < rows && done <= olo[0])
				rc = sp_err_set(err, SHARDPIPE_ERR_BUSY,
						"%s: the region writer of the "
						"box %.*s has written none of "
						"its shards, which the %llu "
						"rows to publish need; nothing "
						"was written", s->root,
						box_len, e->d_name + 5,
						(unsigned long long)rows);
			else if (olo[0] < rows && done < need)
				rc = sp_err_set(err, SHARDPIPE_ERR_BUSY,
						"%s: the region writer of the "
						"box %.*s has written its shards "
						"of rows below %llu, not of "
						"the %llu to publish; nothing "
						"was written", s->root,
						box_len, e->d_name + 5,
						(unsigned long long)done,
						(unsigned long long)rows);
		} else if (fd >= 0 && lo == NULL) {
			unlink(full);
		}
		if (rc == SHARDPIPE_OK && fd >= 0 && lo != NULL &&
		    (closing || flock(fd, LOCK_EX | LOCK_NB) == 0) &&
		    claim_done(fd) && written_meets(rank, lo, hi, olo, ohi, fd)) {
			/* Written whole by a writer closed before this one
			 * opened: two boxes meeting in one job would leave
			 * the later one's shards of both. */
			int box_len = (int)strlen(e->d_name + 5) - 5;

			rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
					"%s: the box %.*s, written by another "
					"region writer since the array was "
					"last published, overlaps %s; %s",
					s->root, box_len, e->d_name + 5,
					closing ? "the rows this one wrote"
						: "this one",
					closing ? "the shards they share hold "
						  "this one's data now"
						: "nothing was written");
		}
		if (fd >= 0)
			close(fd);
		free(full);
	}
	closedir(d);
	return rc;
}

/* After the box is written whole: refused when a box written whole since
 * the last publish meets the rows this one wrote (an unbounded box is
 * known only now), else the claim stays for later writers to see. */
int store_fs_region_done(struct store *base, int rank, uint64_t rows,
			 struct sp_err *err)
{
	struct store_fs *s = (struct store_fs *)base;
	uint64_t lo[SHARDPIPE_MAX_RANK], hi[SHARDPIPE_MAX_RANK];

	if (base == NULL || base->ops != &fs_ops || s->claim_fd < 0)
		return SHARDPIPE_OK;
	if (claim_box(strrchr(s->claim, '/') + 1, rank, lo, hi) == 0) {
		if (hi[0] == 0)
			hi[0] = s->claim_lo0 + rows;
		if (hi[0] > lo[0])
			SP_FORWARD(check_claims(s, rank, lo, hi, 0, 1, err));
	}
	SP_FORWARD(put_record(s, s->claim_lo0 + rows, CLAIM_DONE, err));
	s->claim_kept = 1;
	return SHARDPIPE_OK;
}

/* Claim the box lo..hi: its name made (or a killed writer's taken over)
 * and locked, then the other claims checked. */
static int claim(struct store_fs *s, int rank, const uint64_t *lo,
		 const uint64_t *hi, struct sp_err *err)
{
	char name[64 * SHARDPIPE_MAX_RANK];
	size_t n = (size_t)snprintf(name, sizeof(name), "%s/.box.", s->root);

	if (n >= sizeof(name) - 64 * (size_t)rank)
		return sp_err_set(err, SHARDPIPE_ERR_PATH, "%s: path too long",
				  s->root);
	for (int d = 0; d < rank; d++)
		n += (size_t)snprintf(name + n, sizeof(name) - n, "%llu-%llu.",
				      (unsigned long long)lo[d],
				      (unsigned long long)hi[d]);
	snprintf(name + n, sizeof(name) - n, "lock");
	for (;;) {
		struct stat a, b;
		int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0666);

		SP_RETURN_IF(fd < 0, err, store_fs_errno_code(errno), "%s: %s",
			     name, strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			close(fd);
			return sp_err_set(err, SHARDPIPE_ERR_BUSY,
					  "%s: another region writer is "
					  "writing the same box %s; nothing "
					  "was written", s->root,
					  strrchr(name, '/') + 6);
		}
		/* Removed (its writer closed, or publish) since it was
		 * opened: claim the name anew. */
		if (fstat(fd, &a) == 0 && stat(name, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			s->claim_fd = fd;
			break;
		}
		close(fd);
	}
	s->claim = strdup(name);
	SP_RETURN_IF(s->claim == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	s->claim_lo0 = lo[0];
	SP_FORWARD(store_fs_region_progress(&s->base, 0, err));
	return check_claims(s, rank, lo, hi, 0, 0, err);
}


/* Whether name is one of an image's level directories 0 .. levels-1. */
static int level_name(const char *name, int levels)
{
	char *end;
	long L = strtol(name, &end, 10);

	return name[0] >= '0' && name[0] <= '9' && *end == '\0' &&
	       (name[0] != '0' || name[1] == '\0') && L < levels;
}

/* A region writer's directory holds nothing but an array's zarr.json and
 * c/ tree (and hidden names), or an image's and its levels'. */
static int only_array_files(const char *path, int levels, struct sp_err *err)
{
	struct dirent *e;
	DIR *d = opendir(path);
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(d == NULL, err, store_fs_errno_code(errno), "%s: %s",
		     path, strerror(errno));
	while (rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		char *sub;

		if (e->d_name[0] == '.' ||
		    strcmp(e->d_name, "zarr.json") == 0 ||
		    (levels == 0 && strcmp(e->d_name, "c") == 0))
			continue;
		if (levels == 0 || !level_name(e->d_name, levels)) {
			rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
					"%s: holds %s, not %s file; nothing "
					"was touched", path, e->d_name,
					levels ? "an image's" : "an array's");
			continue;
		}
		if (asprintf(&sub, "%s/%s", path, e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			continue;
		}
		rc = only_array_files(sub, 0, err);
		free(sub);
	}
	closedir(d);
	return rc;
}

/*
 * A region writer's store (doc/design.md §30): a directory that exists
 * and holds nothing but an array's files (an image's, levels > 0),
 * shared-locked; the caller has compared its zarr.json.
 */
int store_fs_region(struct store **out, const char *path, int durable,
		    int rank, const uint64_t *lo, const uint64_t *hi,
		    uint64_t rows, int levels, struct sp_err *err)
{
	struct store_fs *s;
	struct stat st;
	int rc;

	*out = NULL;
	SP_RETURN_IF(path == NULL || *path == '\0', err, SHARDPIPE_ERR_PATH,
		     "empty store path");
	SP_RETURN_IF(stat(path, &st) != 0 || !S_ISDIR(st.st_mode), err,
		     SHARDPIPE_ERR_PATH,
		     "%s: a region writer needs the array's directory to "
		     "exist (made by the caller or its client)", path);
	SP_FORWARD(only_array_files(path, levels, err));
	SP_FORWARD(store_existing(&s, path, durable, 1, err));
	rc = lo != NULL ? claim(s, rank, lo, hi, err)
				: check_claims(s, rank, NULL, NULL, rows, 0, err);
	if (rc != SHARDPIPE_OK) {
		fs_free(&s->base);
		return rc;
	}
	*out = &s->base;
	return SHARDPIPE_OK;
}

/* ------------------------------------------------------------- reading */

/* Each store defines its own open object; the reader holds only the
 * pointer. */
struct source_obj {
	int fd;
};

struct source_fs {
	struct source base;
	char *path;
	int root_fd;
};

/*
 * O_NONBLOCK keeps a FIFO planted in the store from blocking the open;
 * only regular files are read.  A missing object, or one below a name
 * that is a file ("c/0" a file: c/0/1 is absent), is no error.
 */
static int src_open(struct source *base, const char *key,
		    struct source_obj **obj, uint64_t *size,
		    struct sp_err *err)
{
	struct source_fs *src = (struct source_fs *)base;
	struct source_obj *o;
	struct stat st;
	int fd;

	*obj = NULL;
	fd = openat(src->root_fd, key, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? SHARDPIPE_OK
			       : sp_err_set(err, store_fs_errno_code(errno),
					    "%s", strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				  "not a regular file");
	}
	o = malloc(sizeof(*o));
	if (o == NULL) {
		close(fd);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	o->fd = fd;
	*size = (uint64_t)st.st_size;
	*obj = o;
	return SHARDPIPE_OK;
}

/* A short read means the file shrank since it was opened: an I/O fault,
 * not a format one. */
static int src_read(struct source *base, struct source_obj *o, void *buf,
		    size_t n, uint64_t off, struct sp_err *err)
{
	uint8_t *p = buf;

	(void)base;
	while (n > 0) {
		ssize_t got = pread(o->fd, p, n, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		SP_RETURN_IF(got < 0, err, store_fs_errno_code(errno), "%s",
			     strerror(errno));
		SP_RETURN_IF(got == 0, err, SHARDPIPE_ERR_IO,
			     "the file ended %zu bytes early (it shrank while "
			     "being read)", n);
		p += got;
		n -= (size_t)got;
		off += (uint64_t)got;
	}
	return SHARDPIPE_OK;
}

#ifndef IOV_MAX
#define IOV_MAX 16 /* POSIX's least */
#endif

static int src_readv(struct source *base, struct source_obj *o,
		     struct iovec *iov, size_t cnt, uint64_t off,
		     struct sp_err *err)
{
	(void)base;
	while (cnt > 0) {
		ssize_t got = preadv(o->fd, iov,
				     cnt > IOV_MAX ? IOV_MAX : (int)cnt,
				     (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		SP_RETURN_IF(got < 0, err, store_fs_errno_code(errno), "%s",
			     strerror(errno));
		SP_RETURN_IF(got == 0, err, SHARDPIPE_ERR_IO,
			     "the file ended early (it shrank while being "
			     "read)");
		off += (uint64_t)got;
		/* Past the buffers filled, into the one cut short. */
		for (; cnt > 0 && (size_t)got >= iov->iov_len; iov++, cnt--)
			got -= (ssize_t)iov->iov_len;
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + got;
			iov->iov_len -= (size_t)got;
		}
	}
	return SHARDPIPE_OK;
}

static void src_close(struct source *base, struct source_obj *o)
{
	(void)base;
	if (o != NULL) {
		close(o->fd);
		free(o);
	}
}

/*
 * List below the directory open at fd, whose key is prefix.  Links are
 * not followed: links between key directories could otherwise multiply
 * the paths to visit without bound.
 */
static int walk(struct source_fs *src, int fd, const char *prefix, int depth,
		int (*each)(void *, const char *), void *user,
		struct sp_err *err)
{
	DIR *dir = fdopendir(fd);
	struct dirent *e;
	int rc = SHARDPIPE_OK;

	if (dir == NULL) {
		int eno = errno;

		close(fd);
		return sp_err_set(err, store_fs_errno_code(eno),
				  "%s: cannot list %s: %s", src->path,
				  *prefix ? prefix : ".", strerror(eno));
	}
	while (rc == SHARDPIPE_OK && (e = readdir(dir)) != NULL) {
		char *key = NULL;
		int sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (depth > 1 &&
		    !store_is_key_part(e->d_name, strlen(e->d_name)))
			continue;
		if (asprintf(&key, "%s%s%s", prefix, *prefix ? "/" : "",
			     e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		if (depth == 1) {
			rc = each(user, key);
		} else {
			sub = openat(dirfd(dir), e->d_name, O_RDONLY |
				     O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				rc = walk(src, sub, key, depth - 1, each, user,
					  err);
			else if (errno == ELOOP)
				rc = sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
						"%s: %s is a symbolic link; "
						"check does not follow links in "
						"the key tree", src->path, key);
			else if (errno != ENOENT && errno != ENOTDIR)
				rc = sp_err_set(err, store_fs_errno_code(errno),
						"%s: cannot list %s: %s",
						src->path, key, strerror(errno));
		}
		free(key);
	}
	closedir(dir);
	return rc;
}

static int src_list(struct source *base, const char *dir, int depth,
		    int (*each)(void *, const char *), void *user,
		    struct sp_err *err)
{
	struct source_fs *src = (struct source_fs *)base;
	int fd = openat(src->root_fd, *dir ? dir : ".",
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return SHARDPIPE_OK;
		return sp_err_set(err, errno == ELOOP
					       ? SHARDPIPE_ERR_UNSUPPORTED
					       : store_fs_errno_code(errno),
				  "%s: cannot list %s: %s", src->path,
				  *dir ? dir : ".", errno == ELOOP
					? "it is a symbolic link; check does "
					  "not follow links in the key tree"
					: strerror(errno));
	}
	return walk(src, fd, dir, depth, each, user, err);
}

static void src_free(struct source *base)
{
	struct source_fs *src = (struct source_fs *)base;

	if (src->root_fd >= 0)
		close(src->root_fd);
	free(src->path);
	free(src);
}

static const struct source_ops fs_source_ops = {
	.open = src_open,
	.read = src_read,
	.close = src_close,
	.list = src_list,
	.free = src_free,
	.readv = src_readv,
	.concurrent_reads = 1, /* pread */
};

int source_fs_open(struct source **out, const char *path, struct sp_err *err)
{
	struct source_fs *src = calloc(1, sizeof(*src));

	*out = NULL;
	SP_RETURN_IF(src == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	src->base.ops = &fs_source_ops;
	src->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	src->path = strdup(path);
	if (src->root_fd < 0 || src->path == NULL) {
		int e = src->path == NULL ? ENOMEM : errno;

		src_free(&src->base);
		SP_RETURN_IF(e == ENOMEM, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory");
		return sp_err_set(err, e == ENOENT || e == ENOTDIR
					       ? SHARDPIPE_ERR_PATH
					       : store_fs_errno_code(e),
				  "%s: cannot open the store: %s", path,
				  strerror(e));
	}
	*out = &src->base;
	return SHARDPIPE_OK;
}

/* The nodes of a hierarchy shardpipe lays out around its stores (a
 * plate's rows and wells, doc/design.md §28.8): a directory made when
 * absent, its parent synced, and a zarr.json written durably in place. */
int store_fs_mkdir(const char *dir, int *made, struct sp_err *err)
{
	char *parent;
	int rc;

	*made = 0;
	if (mkdir(dir, 0777) != 0) {
		SP_RETURN_IF(errno != EEXIST, err, store_fs_errno_code(errno),
			     "%s: cannot make the directory: %s", dir,
			     strerror(errno));
		return SHARDPIPE_OK;
	}
	*made = 1;
	parent = store_fs_parent(dir);
	SP_RETURN_IF(parent == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	rc = sync_dir(parent, err);
	free(parent);
	return rc;
}

int store_fs_put_meta(const char *dir, const char *json, size_t len,
		      struct sp_err *err)
{
	struct store_fs s = { .durable = 1 };
	struct iovec part = { (void *)json, len };

	return put_object(&s, dir, "zarr.json", &part, 1, err);
}
