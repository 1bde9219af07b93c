/*
 * sink-objects.c - a sink with the object callback receives every object a
 * directory store holds, by the same key, byte for byte: one array, a
 * pyramid, and an OME-NGFF image with frame fields and a skipped frame,
 * index first and last.  Its callbacks never run two at once, though each
 * level writes from a thread of its own.  A refusal of one level's shard
 * fails the stream naming that key; a sink without the object callback is
 * refused an image before anything is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define NY 40
#define NX 36
#define ROWS 13

/* What the sink does with each object: writes it under root by its key,
 * so that the tree can be compared with the directory store's. */
struct mirror {
	const char *root;         /* NULL: keep nothing */
	const char *fail_prefix;  /* refuse the first key starting so */
	int objects, inside, overlapped, bad_parts, failed;
	pthread_t thread[8];      /* the threads that called, the first 8 */
	int threads;
};

static int mkdirs(char *path)
{
	for (char *c = path + 1; *c != '\0'; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return -1;
		*c = '/';
	}
	return 0;
}

static int on_object(void *user, const char *key, const shardpipe_part *parts,
		     size_t nparts)
{
	struct mirror *m = user;
	char path[1024];
	int fd, rc = 0;

	if (__atomic_add_fetch(&m->inside, 1, __ATOMIC_SEQ_CST) > 1)
		m->overlapped++;
	/* Long enough for another level's writer to come in, were the
	 * callbacks not one at a time. */
	usleep(100);
	m->objects++;
	{
		int seen = 0;

		for (int i = 0; i < m->threads; i++)
			seen |= pthread_equal(m->thread[i], pthread_self());
		if (!seen && m->threads < 8)
			m->thread[m->threads++] = pthread_self();
	}
	if (nparts == 0)
		m->bad_parts++;
	if (m->fail_prefix != NULL && !m->failed &&
	    strncmp(key, m->fail_prefix, strlen(m->fail_prefix)) == 0) {
		m->failed = 1;
		rc = -1;
		goto out;
	}
	if (m->root == NULL)
		goto out;
	snprintf(path, sizeof(path), "%s/%s", m->root, key);
	if (mkdirs(path) != 0 ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666)) < 0) {
		diag("%s: %s", path, strerror(errno));
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < nparts; i++)
		if (write(fd, parts[i].data, parts[i].bytes) !=
		    (ssize_t)parts[i].bytes)
			rc = -1;
	close(fd);
out:
	__atomic_sub_fetch(&m->inside, 1, __ATOMIC_SEQ_CST);
	return rc;
}

static int no_parts(void *user, const uint64_t *coords, int rank,
		    const shardpipe_part *parts, size_t nparts,
		    const void *index, size_t index_bytes)
{
	(void)user;
	(void)coords;
	(void)rank;
	(void)parts;
	(void)nparts;
	(void)index;
	(void)index_bytes;
	return 0;
}

static const shardpipe_frame_field fields[] = {
	{ "time", SHARDPIPE_DTYPE_FLOAT64 },
	{ "n", SHARDPIPE_DTYPE_INT64 },
};

enum kind { ONE_ARRAY, PYRAMID, IMAGE_FIELDS };
static const char *const kind_name[] = { "one array", "a pyramid",
					 "an image with frame fields" };

static void describe(shardpipe_desc *d, enum kind k, int loc)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->threads = 2;
	d->codec = k == IMAGE_FIELDS ? SHARDPIPE_CODEC_NONE
				     : SHARDPIPE_CODEC_ZSTD;
	d->index_location = (shardpipe_index_location)loc;
	d->dims[0] = (shardpipe_dim){ .size = 0, .chunk = 2,
				      .chunks_per_shard = 2, .name = "t" };
	d->dims[1] = (shardpipe_dim){ .size = NY, .chunk = 8,
				      .chunks_per_shard = 2, .name = "y" };
	d->dims[2] = (shardpipe_dim){ .size = NX, .chunk = 6,
				      .chunks_per_shard = 3, .name = "x" };
	if (k != ONE_ARRAY) {
		d->downsample = 6;
		d->max_levels = 3;
	}
	if (k == IMAGE_FIELDS) {
		d->frame_fields = fields;
		d->n_frame_fields = 2;
	}
}

/* Every row, frame by frame; frame 5 skipped when there are fields.
 * Past ROWS, the frames repeat. */
static int feed(shardpipe_stream *s, enum kind k, const uint8_t *input,
		int frames)
{
	const size_t fb = (size_t)NY * NX * 2;
	int rc = SHARDPIPE_OK;

	for (int f = 0; f < frames && rc == SHARDPIPE_OK; f++) {
		const uint8_t *frame = input + (size_t)(f % ROWS) * fb;
		shardpipe_frame_value v[2];

		v[0].f64 = 0.25 * f;
		v[1].i64 = 1000 - f;
		if (k != IMAGE_FIELDS)
			rc = shardpipe_stream_append(s, frame, fb);
		else if (f == 5)
			rc = shardpipe_stream_skip(s, fb);
		else
			rc = shardpipe_stream_append_meta(s, frame, fb, v);
		/* A flush midway: zarr.json is given again, and its last
		 * version is the one that counts. */
		if (rc == SHARDPIPE_OK && f == 6)
			rc = shardpipe_stream_flush(s);
	}
	return rc;
}

static int write_dir(const char *root, enum kind k, int loc,
		     const uint8_t *input)
{
	shardpipe_desc d;
	shardpipe_stream *s;
	int rc;

	describe(&d, k, loc);
	rc = shardpipe_stream_open(&s, root, &d);
	if (rc != SHARDPIPE_OK)
		bail("%s: %s", root, shardpipe_last_error_message());
	rc = feed(s, k, input, ROWS);
	return rc == SHARDPIPE_OK ? shardpipe_stream_close(s)
				  : (shardpipe_stream_close(s), rc);
}

static shardpipe_sink object_sink(struct mirror *m)
{
	shardpipe_sink sink;

	shardpipe_sink_init(&sink);
	sink.user = m;
	sink.object = on_object;
	return sink;
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("sink-objects");
	const size_t total = (size_t)ROWS * NY * NX * 2;
	uint8_t *input = test_xmalloc(total), *skipped = test_xmalloc(total);

	plan(3 * 2 * 4 + 2 + 2 + 2 + 2);
	test_fill(input, total, 3, &rng);
	/* What the image reads back: the skipped frame as fill. */
	memcpy(skipped, input, total);
	memset(skipped + 5 * (size_t)NY * NX * 2, 0, (size_t)NY * NX * 2);
	for (int k = ONE_ARRAY; k <= IMAGE_FIELDS; k++) {
		for (int loc = 0; loc < 2; loc++) {
			char dir[512], got[512], level0[600];
			struct mirror m = { .root = got };
			shardpipe_sink sink = object_sink(&m);
			shardpipe_desc d;
			shardpipe_stream *s;
			int rc, same, files = 0;

			snprintf(dir, sizeof(dir), "%s/dir-%d-%d.zarr", tmp, k,
				 loc);
			snprintf(got, sizeof(got), "%s/sink-%d-%d.zarr", tmp,
				 k, loc);
			if (write_dir(dir, k, loc, input) != SHARDPIPE_OK)
				bail("%s: %s", dir,
				     shardpipe_last_error_message());
			describe(&d, k, loc);
			rc = shardpipe_stream_open_sink(&s, &sink, &d);
			if (rc == SHARDPIPE_OK) {
				rc = feed(s, k, input, ROWS);
				if (shardpipe_stream_close(s) != SHARDPIPE_OK &&
				    rc == SHARDPIPE_OK)
					rc = SHARDPIPE_ERR_SINK;
			}
			is_int(rc, SHARDPIPE_OK, "%s, index %s: written to an "
			       "object sink (%s)", kind_name[k],
			       loc ? "start" : "end",
			       rc ? shardpipe_last_error_message() : "");
			same = test_same_tree(dir, got, &files);
			ok(same && files > 0,
			   "%s, index %s: the sink's last object at every key "
			   "is the directory's file, and the other way round "
			   "(%d files)", kind_name[k], loc ? "start" : "end",
			   files);
			ok(m.bad_parts == 0, "%s, index %s: %d objects, each "
			   "of one part or more", kind_name[k],
			   loc ? "start" : "end", m.objects);
			/* Level 0 (or the array) decodes to the input. */
			snprintf(level0, sizeof(level0), "%s%s", got,
				 k == ONE_ARRAY ? "" : "/0");
			ok(test_reads_back(level0, ROWS,
					   k == IMAGE_FIELDS ? skipped : input,
					   total),
			   "%s, index %s: what the sink took reads back as "
			   "the input", kind_name[k], loc ? "start" : "end");
		}
	}
	{
		/* Enough frames that every level's writer writes shards
		 * before close (a few frames reach the coarser levels only
		 * at close, from one thread). */
		struct mirror m = { .root = NULL };
		shardpipe_sink sink = object_sink(&m);
		shardpipe_desc d;
		shardpipe_stream *s;
		int rc;

		describe(&d, PYRAMID, 0);
		if (shardpipe_stream_open_sink(&s, &sink, &d) != SHARDPIPE_OK)
			bail("%s", shardpipe_last_error_message());
		rc = feed(s, PYRAMID, input, 200);
		if (shardpipe_stream_close(s) != SHARDPIPE_OK)
			rc = SHARDPIPE_ERR_SINK;
		is_int(rc, SHARDPIPE_OK, "a pyramid of 200 frames to an object "
		       "sink");
		ok(m.overlapped == 0 && m.threads > 1, "%d objects from %d "
		   "threads, never two callbacks at once (%d overlaps)",
		   m.objects, m.threads, m.overlapped);
	}
	{
		char got[512];
		struct mirror m = { .root = got, .fail_prefix = "1/c/" };
		shardpipe_sink sink = object_sink(&m);
		shardpipe_desc d;
		shardpipe_stream *s;
		char *msg;
		int rc, crc;

		snprintf(got, sizeof(got), "%s/refusing.zarr", tmp);
		describe(&d, PYRAMID, 0);
		if (shardpipe_stream_open_sink(&s, &sink, &d) != SHARDPIPE_OK)
			bail("%s", shardpipe_last_error_message());
		rc = feed(s, PYRAMID, input, ROWS);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(s);
		msg = strdup(shardpipe_stream_message(s));
		crc = shardpipe_stream_close(s);
		ok(rc == SHARDPIPE_ERR_SINK && crc == SHARDPIPE_ERR_SINK,
		   "a sink refusing level 1's first shard fails the stream "
		   "(%d, then %d at close)", rc, crc);
		ok(strstr(msg, "1/c/") != NULL, "naming the key (%s)", msg);
		free(msg);
	}
	for (int k = PYRAMID; k <= IMAGE_FIELDS; k++) {
		shardpipe_desc d;
		shardpipe_stream *s = (shardpipe_stream *)1;
		shardpipe_sink sink = test_sink(NULL, NULL, NULL);
		int rc;

		sink.shard_parts = no_parts;
		describe(&d, k, 0);
		rc = shardpipe_stream_open_sink(&s, &sink, &d);
		ok(rc == SHARDPIPE_ERR_INVALID_ARGUMENT && s == NULL,
		   "%s to a sink without the object callback is refused",
		   kind_name[k]);
		ok(strstr(shardpipe_last_error_message(), "object callback") != NULL,
		   "saying what it needs (%s)",
		   shardpipe_last_error_message());
	}
	free(input);
	free(skipped);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
