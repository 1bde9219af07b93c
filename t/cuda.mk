# Tests of the cuda backend (issue 7).  Where no CUDA device is usable
# (no GPU, or no driver, as on CI), each reports a TAP skip with the
# probe's reason; the logic they would test runs anyway in the kernel
# tests, on the reference executor built from the same kernel source.
# The scripts run in every build and skip when the plugin is not built.
#   cuda-backend.sh  the plugin loads, links no CUDA library dynamically,
#                    reports its device or why not; a write asking for it
#                    fails cleanly; auto falls through; bench on a device
#   cuda-kernels.sh  every kernel is in the fat binary for every target
#   cuda-resources.sh  ptxas's registers and stack of every kernel (sm_90):
#                    encoders within 128 registers and no stack, scatter
#                    no stack (issue 26); needs nvcc only, no device
#   cuda-conform.sh  cuda bytes = reference bytes = opencl bytes for codecs
#                    none, gzip and zstd at several local sizes (L1, L2)
#   cuda-stages, cuda-gzip, cuda-stores  the stage and store checks of the
#                    opencl tests, on cuda (linked with the adapter)
CUDA_SH_TESTS = t/cuda-backend.sh t/cuda-kernels.sh t/cuda-resources.sh \
	t/cuda-conform.sh
TESTS += $(CUDA_SH_TESTS)
EXTRA_DIST += $(CUDA_SH_TESTS) t/cuda-stages.c t/cuda-gzip.c t/cuda-stores.c
AM_TESTS_ENVIRONMENT += \
	SHARDPIPE_NVCC_GENCODE='$(NVCC_GENCODE)'; \
	export SHARDPIPE_NVCC_GENCODE; \
	SHARDPIPE_NVCC='$(NVCC)'; export SHARDPIPE_NVCC; \
	SHARDPIPE_CUDA_RUNTIME='$(CUDA_RUNTIME)'; export SHARDPIPE_CUDA_RUNTIME;

if HAVE_CUDA
CUDA_C_TESTS = t/cuda-stages t/cuda-gzip t/cuda-stores
check_PROGRAMS += $(CUDA_C_TESTS)
TESTS += $(CUDA_C_TESTS)
CUDA_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels \
	$(CUDA_CFLAGS)
CUDA_TEST_LDADD = backends/cuda/kernels.lo $(TEST_LDADD) $(CUDA_LIBS)
# The stage tests are linked with the adapter itself (not the plugin) to
# reach the driver's stage-level hooks.
t_cuda_stages_SOURCES = t/cuda-stages.c backends/cuda/cuda.c \
	$(KERNEL_ADAPTER_SOURCES)
t_cuda_stages_CPPFLAGS = $(CUDA_TEST_CPPFLAGS)
t_cuda_stages_LDADD = $(CUDA_TEST_LDADD)
t_cuda_stages_LDFLAGS = $(TEST_LINK_FLAGS)
t_cuda_gzip_SOURCES = t/cuda-gzip.c backends/cuda/cuda.c \
	$(KERNEL_ADAPTER_SOURCES)
t_cuda_gzip_CPPFLAGS = $(CUDA_TEST_CPPFLAGS) $(DEFLATE_CFLAGS) $(ZLIB_CFLAGS)
t_cuda_gzip_LDADD = $(CUDA_TEST_LDADD)
t_cuda_gzip_LDFLAGS = $(TEST_LINK_FLAGS)
# The stores test goes through the public API and the dlopen'ed plugin.
t_cuda_stores_LDADD = $(TEST_LDADD)
t_cuda_stores_LDFLAGS = $(TEST_LINK_FLAGS)
endif
