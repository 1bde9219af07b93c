/*
 * geometry.h - the layout of the geometry table the kernel driver uploads
 * once per stream and the scatter and empty-chunk kernels read: 64-bit
 * words holding the plan's values unchanged (elements, not bytes), and
 * the driver's choices of how scatter spreads its runs.  Read by the host
 * driver and by the kernels in all three dialects, so it holds only
 * macros.
 */
#ifndef SP_KERNEL_GEOMETRY_H
#define SP_KERNEL_GEOMETRY_H

#define SP_GEO_RANK 0
#define SP_GEO_ESIZE 1        /* bytes per element */
#define SP_GEO_UNIT 2         /* copy word (1, 2, 4, 8 bytes), see driver */
#define SP_GEO_M 3            /* chunks per epoch */
#define SP_GEO_EPOCH_ELEMS 4  /* elements of one epoch of input */
#define SP_GEO_RUNS_PER_CHUNK 5
#define SP_GEO_NRUNS 6        /* runs in a batch: K * M * runs per chunk */
#define SP_GEO_RUNS_PER_ITEM 7 /* consecutive runs one team copies */
/* The fill value's bytes as the store holds them, repeated to eight: the
 * host copies them into the word and uploads the table byte for byte, so
 * a kernel reads them back as memory (empty_chunks.h), in any byte
 * order. */
#define SP_GEO_FILL 8
#define SP_GEO_RUN_LANES 9    /* work-items copying one run together */
#define SP_GEO_DIV32 10       /* 1: the runs' coordinates fit 32 bits */
#define SP_GEO_DIMS 16        /* first per-dimension table */
#define SP_GEO_MAX_RANK 16

#define SP_GEO_SIZE(d) (SP_GEO_DIMS + 0 * SP_GEO_MAX_RANK + (d))
#define SP_GEO_CHUNK(d) (SP_GEO_DIMS + 1 * SP_GEO_MAX_RANK + (d))
#define SP_GEO_COUNT(d) (SP_GEO_DIMS + 2 * SP_GEO_MAX_RANK + (d))
#define SP_GEO_IN_STRIDE(d) (SP_GEO_DIMS + 3 * SP_GEO_MAX_RANK + (d))
#define SP_GEO_WORDS (SP_GEO_DIMS + 4 * SP_GEO_MAX_RANK)

/* The largest local size any kernel is launched with; it sizes the local
 * arrays of the work-group collectives. */
#define SP_WG_MAX 256

#endif
