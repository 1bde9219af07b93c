/*
 * kernels.h - every kernel of the pipeline, in the dialect of whichever
 * prelude was included first, each entered through SP_KERNEL_ENTRY with
 * the arguments kernel-list.h declares (each body file includes it, as
 * the tests include body files alone).  The OpenCL plugin embeds this file
 * with its includes expanded (embed.awk); the reference executor and the
 * CUDA plugin include it.
 */
#include "geometry.h"
#include "collectives.h"
#include "copy.h"
#include "scatter.h"
#include "codec_none.h"
#include "deflate.h"
#include "zstd_units.h"
#include "zstd_encode.h"
#include "blosc_encode.h"
#include "empty_chunks.h"
#include "aggregate.h"
