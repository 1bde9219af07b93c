/* The gzip checks of gzip-stages.c, with the cuda backend's bytes
 * compared to reference's at several local sizes. */
#define SP_TEST_CUDA 1
#include "gzip-stages.c"
