# The `cuda` backend, a plugin dlopen'ed at first use: the core library
# and the other plugins have no link dependency on CUDA.  kernels.cu is
# the portable kernel source compiled by nvcc into a libtool PIC object
# (through libtool itself, nvcc-pic adapting its flags); cuda.c is the
# host adapter, compiled by $(CC) against the static CUDA runtime.
CUDA_KERNEL_INPUTS = backends/cuda/kernels.cu \
	backends/kernels/prelude-cuda.h $(KERNEL_INCLUDES)
EXTRA_DIST += backends/cuda/kernels.cu backends/cuda/nvcc-pic \
	backends/cuda/cuda.c

# Warnings are errors for the kernels (nvcc and its host compiler); the
# host object needs no C++ runtime, so the plugin links with $(CC) alone.
# NVCCFLAGS, the user's, comes last: a distribution passes its host
# compiler flags (hardening, -ffile-prefix-map) through it.
NVCC_FLAGS = --Werror=all-warnings \
	-Xcompiler=-fvisibility=hidden,-fno-exceptions,-fno-threadsafe-statics \
	-I$(top_srcdir)/backends/kernels $(NVCC_GENCODE) $(NVCC_EXTRA_FLAGS) \
	$(NVCCFLAGS)

if HAVE_CUDA
pkglib_LTLIBRARIES += backend-cuda.la
backend_cuda_la_SOURCES = backends/cuda/cuda.c $(KERNEL_PLUGIN_SOURCES)
backend_cuda_la_CPPFLAGS = $(KERNEL_PLUGIN_CPPFLAGS) $(CUDA_CFLAGS)
backend_cuda_la_CFLAGS = $(KERNEL_PLUGIN_CFLAGS)
backend_cuda_la_LIBADD = backends/cuda/kernels.lo $(CUDA_LIBS)
backend_cuda_la_LDFLAGS = $(KERNEL_PLUGIN_LDFLAGS)

# The kernels are rebuilt when nvcc or its flags change (another
# --with-cuda-arch), not on every reconfigure: the stamp is rewritten only
# when its text differs.
backends/cuda/nvcc-flags.stamp: Makefile
	$(AM_V_GEN)$(MKDIR_P) backends/cuda && \
	echo '$(NVCC) $(NVCC_FLAGS)' > $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
CLEANFILES += backends/cuda/nvcc-flags.stamp

# -shared: only the PIC object, which is all a module needs (libtool
# records non_pic_object='none' and uses the PIC one for any archive).
backends/cuda/kernels.lo: $(CUDA_KERNEL_INPUTS) backends/cuda/nvcc-pic \
		backends/cuda/nvcc-flags.stamp
	$(AM_V_GEN)$(MKDIR_P) backends/cuda && \
	$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile \
		$(SHELL) $(top_srcdir)/backends/cuda/nvcc-pic $(NVCC) \
		$(NVCC_FLAGS) -shared -c -o $@ \
		$(top_srcdir)/backends/cuda/kernels.cu
endif
