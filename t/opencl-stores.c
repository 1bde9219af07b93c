/* The whole-store checks of kernels-stores.c, on the opencl backend. */
#define SP_TEST_OPENCL 1
#include "kernels-stores.c"
