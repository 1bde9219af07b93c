/* The stage-level checks of kernels-stages.c, on the opencl backend. */
#define SP_TEST_OPENCL 1
#include "kernels-stages.c"
