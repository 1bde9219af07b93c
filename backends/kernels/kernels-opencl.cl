/* The OpenCL program: the prelude, then every kernel (see kernels.h). */
#include "prelude-opencl.h"
#include "kernels.h"
