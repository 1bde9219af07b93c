/*
 * blosc.c - the blosc codec on the cpu backend, through c-blosc 1.x.
 *
 * Only the context API is used: blosc_compress_ctx() builds its own
 * context (and its own zstd/lz4 state) for the call and touches no global
 * state, so the OpenMP threads of cpu_compress() each encode their chunks
 * independently.  The global API (blosc_init, blosc_compress,
 * blosc_set_nthreads) shares one context behind a lock and reads
 * BLOSC_* environment variables: it is never called here.  c-blosc's own
 * threads are not used (numinternalthreads = 1); the parallelism is over
 * chunks, as for zstd and gzip.
 *
 * Choices the format leaves to the encoder: whether blocks are split into
 * byte streams is c-blosc's (it splits for blosclz and lz4, not zstd), and
 * so is the block size, except for zstd with the automatic size (a
 * description's blosc_blocksize of 0, recorded as 0 in zarr.json).  There
 * c-blosc picks 32 KiB at clevel 1, and every block is a separate zstd
 * frame started from cold tables: on 576 KiB chunks of uint16 frames
 * (bench's micro fill, one thread, compression only) byte shuffle with
 * 32 KiB blocks ran at 0.58-0.73 GB/s, with 256 KiB blocks 1.12-1.15,
 * with 512 KiB or the whole chunk 1.19-1.21, all at the same ratio (1.99
 * to 2.01) -- against 0.56 GB/s for plain zstd level 1.  So for zstd the
 * automatic block is the whole chunk up to CPU_BLOSC_AUTO_BLOCK (1 MiB),
 * which keeps a reader's temporaries and the unit of its threads small
 * for large chunks.  The context API builds a zstd context per call;
 * c-blosc's global API, which keeps one, was 5% faster on one thread
 * (1.24 against 1.18 GB/s, codecs alternating, best of 15 passes), not
 * worth a lock shared by every thread.  Readers need no knowledge of this:
 * every blosc1 header records its block size and its split flag.
 */
#include "config.h"
#include "cpu_blosc.h"

#include "codec.h"

#ifdef HAVE_BLOSC
#include <blosc.h>

#define CPU_BLOSC_AUTO_BLOCK ((uint64_t)1 << 20)

/* The block size handed to c-blosc; 0 leaves the choice to it. */
static size_t blosc_block(const struct plan *p)
{
	if (p->blosc_blocksize != 0 || p->blosc_cname != SHARDPIPE_BLOSC_ZSTD)
		return (size_t)p->blosc_blocksize;
	return (size_t)(p->chunk_bytes < CPU_BLOSC_AUTO_BLOCK
				? p->chunk_bytes
				: CPU_BLOSC_AUTO_BLOCK);
}

/* shardpipe_blosc_shuffle -> c-blosc's doshuffle argument. */
static int blosc_doshuffle(shardpipe_blosc_shuffle s)
{
	switch (s) {
	case SHARDPIPE_BLOSC_SHUFFLE:
		return BLOSC_SHUFFLE;
	case SHARDPIPE_BLOSC_BITSHUFFLE:
		return BLOSC_BITSHUFFLE;
	default:
		return BLOSC_NOSHUFFLE;
	}
}

int cpu_blosc_open(const struct plan *p, struct sp_err *err)
{
	/* plan_init() checked these already; a plan built some other way
	 * (tests, a later caller) must not reach c-blosc unchecked. */
	SP_FORWARD(codec_check_level(p->codec, p->level, err));
	SP_FORWARD(codec_check_blosc(p->blosc_cname, p->blosc_shuffle,
				     p->blosc_blocksize, err));
	SP_RETURN_IF(p->chunk_bytes > CODEC_BLOSC_MAX_BYTES, err,
		     SHARDPIPE_ERR_OVERFLOW,
		     "a chunk of %llu bytes exceeds blosc's limit",
		     (unsigned long long)p->chunk_bytes);
	/* c-blosc never writes more than BLOSC_MAX_OVERHEAD beyond the
	 * input; the slot is sized from codec.c's copy of that constant. */
	SP_RETURN_IF(p->slot_capacity < p->chunk_bytes + BLOSC_MAX_OVERHEAD,
		     err, SHARDPIPE_ERR_CODEC,
		     "blosc slots of %llu bytes cannot hold c-blosc's worst "
		     "case for %llu-byte chunks",
		     (unsigned long long)p->slot_capacity,
		     (unsigned long long)p->chunk_bytes);
	return SHARDPIPE_OK;
}

size_t cpu_blosc_compress(const struct plan *p, const void *src, void *dst)
{
	int r = blosc_compress_ctx(p->level, blosc_doshuffle(p->blosc_shuffle),
				   p->esize, (size_t)p->chunk_bytes, src, dst,
				   (size_t)p->slot_capacity,
				   codec_blosc_cname(p->blosc_cname),
				   blosc_block(p), 1);

	return r > 0 ? (size_t)r : 0;
}

#else /* !HAVE_BLOSC */

int cpu_blosc_open(const struct plan *p, struct sp_err *err)
{
	(void)p;
	return sp_err_set(err, SHARDPIPE_ERR_CODEC,
			  "the blosc codec is unavailable: this libshardpipe "
			  "was built without c-blosc");
}

size_t cpu_blosc_compress(const struct plan *p, const void *src, void *dst)
{
	(void)p;
	(void)src;
	(void)dst;
	return 0;
}

#endif
