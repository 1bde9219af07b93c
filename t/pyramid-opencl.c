/* The pyramid store checks of pyramid-stores.c, on the opencl backend. */
#define SP_TEST_OPENCL 1
#include "pyramid-stores.c"
