/* The gzip checks of gzip-stages.c, with the opencl backend's bytes
 * compared to reference's at several local sizes. */
#define SP_TEST_OPENCL 1
#include "gzip-stages.c"
