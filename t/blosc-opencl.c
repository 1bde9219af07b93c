/* The checks of blosc-stages.c, with the opencl backend's bytes compared
 * to reference's at local sizes 1, 7 and 64. */
#define SP_TEST_OPENCL 1
#include "blosc-stages.c"
