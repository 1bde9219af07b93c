/*
 * store_s3.h - a store as a bucket and key prefix on S3
 * (doc/design.md §24): one object per shard, uploaded in the background
 * on the store's own threads (one PUT, or a multipart upload when larger
 * than a part), zarr.json only once everything it advertises is stored;
 * and the same objects read back with ranged GETs.
 */
#ifndef SHARDPIPE_STORE_S3_H
#define SHARDPIPE_STORE_S3_H

#include "store.h"

/*
 * Check that url ("s3://BUCKET/PREFIX") can hold a new store, or with
 * overwrite replace the one there, by listing the prefix: nothing is
 * written.  Refuses a missing bucket, credentials the server refuses, a
 * store without overwrite, and a prefix holding objects but no zarr.json.
 */
SP_INTERNAL int store_s3_check(struct store **out, const char *url,
			       int overwrite, struct sp_err *err);

/*
 * Continue the array at url (doc/design.md §29): a writing store over the
 * prefix as it is, with no survey and nothing removed yet (drop_rows
 * does that, after the reader's checks).  S3 has no lock: nothing keeps
 * a second writer away.
 */
SP_INTERNAL int store_s3_reopen(struct store **out, const char *url,
				struct sp_err *err);

/*
 * A region writer's store (doc/design.md §30): the prefix at url, holding
 * nothing but an array's zarr.json and c/ (or nothing yet), every shard
 * written only where no object has its key (If-None-Match: *) and an
 * object found there compared with it (SHARDPIPE_ERR_BUSY when it
 * differs: another writer's).  publish: a store that writes zarr.json
 * only, unconditionally.  Nothing is removed; S3 has no lock.
 */
SP_INTERNAL int store_s3_region(struct store **out, const char *url,
				int publish, struct sp_err *err);

SP_INTERNAL int source_s3_open(struct source **out, const char *url,
			       struct sp_err *err);

#endif
