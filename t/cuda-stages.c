/* The stage-level checks of kernels-stages.c, on the cuda backend (a skip
 * with the probe's reason where no CUDA device is usable). */
#define SP_TEST_CUDA 1
#include "kernels-stages.c"
