#define _GNU_SOURCE
#include "store_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct store_fs {
	char *root;
	int overwrite;
	int durable;
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
	default:
		return SHARDPIPE_ERR_IO;
	}
}

/* The directory that holds path's last component, malloc'd ("." for a
 * bare name, "/" for a name in the root); NULL when out of memory. */
static char *parent_of(const char *path)
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
	char *parent = parent_of(root);
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

int store_fs_check(struct store_fs **out, const char *path, int overwrite,
		   struct sp_err *err)
{
	struct store_fs *s;
	struct stat st;
	char *meta = NULL;

	*out = NULL;
	SP_RETURN_IF(path == NULL || *path == '\0', err, SHARDPIPE_ERR_PATH,
		     "empty store path");
	if (lstat(path, &st) == 0) {
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
		int exists = access(meta, F_OK) == 0;
		free(meta);
		SP_RETURN_IF(exists && !overwrite, err, SHARDPIPE_ERR_EXISTS,
			     "%s: already holds a store (zarr.json); "
			     "choose another path or overwrite", path);
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
		parent = parent_of(path);
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
	s->overwrite = overwrite;
	*out = s;
	return SHARDPIPE_OK;
}

void store_fs_set_durable(struct store_fs *s, int durable)
{
	s->durable = durable;
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

/* A name the chunk key encoding writes below c/: decimal digits. */
static int is_key_part(const char *name)
{
	if (*name == '\0')
		return 0;
	for (; *name; name++)
		if (*name < '0' || *name > '9')
			return 0;
	return 1;
}

/* Remove what a store owns below dir: regular files and directories named
 * by chunk keys. Anything else (a foreign file, a link, a temporary of a
 * concurrent writer) stays, and so does every directory that still holds
 * it.  When durable, each directory is synced once its entries are gone,
 * before the new zarr.json can be written: an old shard that came back
 * after a power loss would be read where the new store stored nothing. */
static int remove_key_tree(const char *dir, int depth, int durable,
			   struct sp_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = SHARDPIPE_OK, removed = 0;

	SP_RETURN_IF(depth > SHARDPIPE_MAX_RANK, err, SHARDPIPE_ERR_IO,
		     "%s: deeper than any chunk key; left as it is", dir);
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? SHARDPIPE_OK
				       : sp_err_set(err,
						    store_fs_errno_code(errno),
						    "%s: %s", dir,
						    strerror(errno));
	while (rc == SHARDPIPE_OK && (e = readdir(d)) != NULL) {
		struct stat st;
		char *p;

		if (!is_key_part(e->d_name))
			continue;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			rc = remove_key_tree(p, depth + 1, durable, err);
			if (rc == SHARDPIPE_OK && rmdir(p) == 0)
				removed = 1;
			else if (rc == SHARDPIPE_OK && errno != ENOTEMPTY &&
				 errno != EEXIST && errno != ENOENT)
				rc = sp_err_set(err, store_fs_errno_code(errno),
						"%s: %s", p, strerror(errno));
		} else if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
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

int store_fs_create(struct store_fs *s, struct sp_err *err)
{
	char *p;
	int rc = SHARDPIPE_OK;

	if (mkdir(s->root, 0777) != 0 && errno != EEXIST)
		return root_refused(s->root, errno, err);
	if (s->durable) {
		/* The root's own name, in its parent. */
		char *parent = parent_of(s->root);

		if (parent == NULL)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		rc = sync_dir(parent, err);
		free(parent);
		SP_FORWARD(rc);
	}
	if (!s->overwrite)
		return SHARDPIPE_OK;
	/* Replace the old store: its metadata first, so that no reader
	 * pairs it with the new shards, then its shard tree. */
	if (asprintf(&p, "%s/zarr.json", s->root) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (unlink(p) != 0 && errno != ENOENT)
		rc = sp_err_set(err, store_fs_errno_code(errno), "%s: %s", p,
				strerror(errno));
	free(p);
	/* Durable: the old zarr.json must not come back after a power loss
	 * to advertise shards removed below. */
	if (rc == SHARDPIPE_OK && s->durable)
		rc = sync_dir(s->root, err);
	SP_FORWARD(rc);
	if (asprintf(&p, "%s/c", s->root) < 0)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = remove_key_tree(p, 0, s->durable, err);
	free(p);
	return rc;
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

/* Write the n parts, IOV_MAX at a time, resuming after short writes. */
static int write_all(int fd, const struct iovec *parts, size_t n)
{
	struct iovec v[64];
	size_t next = 0, cnt = 0, at = 0;

	for (;;) {
		ssize_t w;

		/* Refill from part `next`, skipping `at` bytes of it. */
		while (cnt < sizeof(v) / sizeof(v[0]) && next < n) {
			v[cnt].iov_base = (uint8_t *)parts[next].iov_base + at;
			v[cnt++].iov_len = parts[next++].iov_len - at;
			at = 0;
		}
		if (cnt == 0)
			return 0;
		w = writev(fd, v, (int)cnt);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		/* Drop what was written; a part written in part stays. */
		size_t k = 0;

		while (k < cnt && (size_t)w >= v[k].iov_len) {
			w -= (ssize_t)v[k].iov_len;
			k++;
		}
		if (k < cnt) {
			v[k].iov_base = (uint8_t *)v[k].iov_base + w;
			v[k].iov_len -= (size_t)w;
		}
		memmove(v, v + k, (cnt - k) * sizeof(*v));
		cnt -= k;
	}
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

int store_fs_write_shard(struct store_fs *s, const uint64_t *coords,
			 int rank, const struct iovec *parts, size_t n,
			 struct sp_err *err)
{
	/* root + "/c" + rank * "/<20 digits>" */
	size_t cap = strlen(s->root) + 3 + (size_t)rank * 21 + 1;
	char *dir = malloc(cap), *leaf;
	size_t at;
	int rc;

	SP_RETURN_IF(dir == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	at = (size_t)snprintf(dir, cap, "%s/c", s->root);
	for (int d = 0; d < rank; d++)
		at += (size_t)snprintf(dir + at, cap - at, "/%llu",
				       (unsigned long long)coords[d]);
	leaf = strrchr(dir, '/');
	*leaf++ = '\0';
	rc = make_dirs(s, dir, err);
	if (rc == SHARDPIPE_OK)
		rc = put_object(s, dir, leaf, parts, n, err);
	free(dir);
	return rc;
}

int store_fs_write_meta(struct store_fs *s, const char *json, size_t len,
			struct sp_err *err)
{
	struct iovec part = { (void *)json, len };

	return put_object(s, s->root, "zarr.json", &part, 1, err);
}

void store_fs_free(struct store_fs *s)
{
	if (s == NULL)
		return;
	free(s->root);
	free(s->made);
	free(s);
}
