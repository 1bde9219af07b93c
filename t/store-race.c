/*
 * store-race.c - two writers of one new array (doc/design.md §29): a
 * store checked while its directory was empty or absent, whose directory
 * another writer then fills with an array of its own and leaves (its
 * lock gone), is refused at create with SHARDPIPE_ERR_EXISTS, naming the
 * path, and the other writer's array reads back as its input; with
 * nothing in between, create succeeds.  This is the window that let two
 * of four `shardpipe write --array` processes both exit 0
 * (t/cli-group-edges.sh).  Random bytes from the seed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shardpipe.h"
#include "store.h"
#include "store_fs.h"
#include "tap.h"
#include "testutil.h"

enum { T = 4, Y = 16, X = 16 };

static void the_other_writes(const char *dir, const uint8_t *in, size_t n)
{
	const uint64_t shape[3] = { T, Y, X }, chunk[3] = { 2, 8, 8 };
	const uint64_t cps[3] = { 1, 2, 2 };
	shardpipe_desc d;

	test_desc3(&d, shape, chunk, cps);
	d.overwrite = 0;
	if (test_write_in(dir, &d, in, n, 0) != SHARDPIPE_OK)
		bail("the other writer could not write %s", dir);
}

static void raced(const char *tmp, const char *name, int make_empty,
		  const uint8_t *in, size_t n)
{
	char dir[600];
	struct store *st = NULL;
	struct sp_err err = { 0 };
	int rc;

	snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
	if (make_empty && mkdir(dir, 0777) != 0)
		bail("mkdir %s", dir);
	rc = store_fs_check(&st, dir, 0, 0, &err);
	if (rc != SHARDPIPE_OK)
		bail("store_fs_check %s: %s", dir, err.msg);
	the_other_writes(dir, in, n);
	rc = st->ops->create(st, &err);
	is_int(rc, SHARDPIPE_ERR_EXISTS,
	       "checked %s: another writer's array there since: create "
	       "refused", make_empty ? "empty" : "absent");
	ok(strstr(err.msg, dir) != NULL &&
		   strstr(err.msg, "made by another writer") != NULL,
	   "the message names the path: %s", err.msg);
	store_free(st);
	ok(test_reads_back(dir, T, in, n),
	   "the other writer's array is as it wrote it");
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("store-race"), dir[600];
	const size_t n = (size_t)T * Y * X * 2;
	uint8_t *in = test_xmalloc(n);
	struct store *st = NULL;
	struct sp_err err = { 0 };
	int rc;

	plan(7);
	test_fill(in, n, 0, &rng);
	raced(tmp, "empty.zarr", 1, in, n);
	raced(tmp, "absent.zarr", 0, in, n);

	snprintf(dir, sizeof(dir), "%s/alone.zarr", tmp);
	if (mkdir(dir, 0777) != 0)
		bail("mkdir %s", dir);
	rc = store_fs_check(&st, dir, 0, 0, &err);
	if (rc == SHARDPIPE_OK)
		rc = st->ops->create(st, &err);
	is_int(rc, SHARDPIPE_OK, "checked empty, nobody in between: create "
	       "succeeds");
	store_free(st);

	test_rmtree(tmp);
	free(tmp);
	free(in);
	return done_testing();
}
