/* The whole-store checks of kernels-stores.c, on the cuda backend. */
#define SP_TEST_CUDA 1
#include "kernels-stores.c"
