/*
 * reduce_layout.h - the reduction table: how one pyramid level's rows
 * reduce into the next level's (doc/design.md §28.2).  The plan computes
 * it (plan.c), the kernel driver uploads it once per stream and the reduce
 * kernel reads it; the cpu backend passes the plan's copy to the same
 * element code.  64-bit words, elements not bytes.  Read by the host and by
 * the kernels in all three dialects, so it holds only macros.
 */
#ifndef SP_KERNEL_REDUCE_LAYOUT_H
#define SP_KERNEL_REDUCE_LAYOUT_H

/* Methods, in the order of the public shardpipe_method. */
#define SP_RD_MEAN 0
#define SP_RD_MIN 1
#define SP_RD_MAX 2
#define SP_RD_MEDIAN 3
#define SP_RD_DECIMATE 4
#define SP_RD_SECOND_MAX 5
#define SP_RD_SECOND_MIN 6

/* How elements compare and average. */
#define SP_RD_UINT 0   /* unsigned integers and bool */
#define SP_RD_SINT 1   /* two's complement */
#define SP_RD_FLOAT 2  /* IEEE binary16, 32 or 64 by the element size */

/* Where the row after a call's last one comes from (its `tail`). */
#define SP_RD_TAIL_NONE 0      /* nowhere: an odd last row waits */
#define SP_RD_TAIL_REPEAT 1    /* the array ends: the last row again */
#define SP_RD_TAIL_FILL 2      /* a row of the fill value */

#define SP_RGEO_RANK 0
#define SP_RGEO_ESIZE 1        /* bytes per element: 1, 2, 4, 8 */
#define SP_RGEO_KIND 2         /* SP_RD_UINT, SP_RD_SINT, SP_RD_FLOAT */
#define SP_RGEO_METHOD 3       /* the block's method */
/* Along dim 0, when it halves: the method applied to the two rows'
 * results; equal to SP_RGEO_METHOD, the whole block is reduced at once. */
#define SP_RGEO_APPEND 4
#define SP_RGEO_F0 5           /* 2: dim 0 halves, 1: it does not */
#define SP_RGEO_IN_ROW 6       /* elements of one input row */
#define SP_RGEO_OUT_ROW 7      /* elements of one output row */
#define SP_RGEO_FILL 8         /* the fill value's bits, little-endian */
#define SP_RGEO_PER_ITEM 9     /* consecutive outputs one work-item takes */
#define SP_RGEO_KS 10          /* halving dims other than dim 0: 0..3 */
#define SP_RGEO_DIMS 16
#define SP_RGEO_MAX_RANK 16

/* Per dim d >= 1; dim 0 is the row. */
#define SP_RGEO_OUT_SIZE(d) (SP_RGEO_DIMS + 0 * SP_RGEO_MAX_RANK + (d))
#define SP_RGEO_IN_SIZE(d) (SP_RGEO_DIMS + 1 * SP_RGEO_MAX_RANK + (d))
#define SP_RGEO_IN_STRIDE(d) (SP_RGEO_DIMS + 2 * SP_RGEO_MAX_RANK + (d))
#define SP_RGEO_FACTOR(d) (SP_RGEO_DIMS + 3 * SP_RGEO_MAX_RANK + (d))
#define SP_RGEO_WORDS (SP_RGEO_DIMS + 4 * SP_RGEO_MAX_RANK)

/* A block holds at most this many elements: dim 0 and three more. */
#define SP_RD_MAX_BLOCK 16

#endif
