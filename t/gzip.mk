# Tests of the gzip kernel (backends/kernels/deflate.h): the kernel as C
# against zlib and libdeflate on edge cases (gzip-encode), through the
# kernel driver on the conformance matrix at every level (gzip-stages, and
# gzip-opencl: opencl bytes equal reference's at several local sizes, a
# skip with the reason where no OpenCL platform is usable), and the ratio
# table next to libdeflate (gzip-ratio: reported, not asserted); whole
# stores at every level through `shardpipe write`, `cat` and `conform`,
# opencl's files equal reference's, chunks decoded by Python's gzip
# (gzip-stores.sh).
GZIP_TESTS = t/gzip-encode t/gzip-stages t/gzip-ratio
check_PROGRAMS += $(GZIP_TESTS)
TESTS += $(GZIP_TESTS)
EXTRA_DIST += t/gzip-kernel.h

GZIP_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels \
	$(DEFLATE_CFLAGS) $(ZLIB_CFLAGS)
t_gzip_encode_CPPFLAGS = $(GZIP_TEST_CPPFLAGS)
t_gzip_encode_LDADD = $(TEST_LDADD)
t_gzip_encode_LDFLAGS = $(TEST_LINK_FLAGS)
t_gzip_stages_CPPFLAGS = $(GZIP_TEST_CPPFLAGS)
t_gzip_stages_LDADD = $(TEST_LDADD)
t_gzip_stages_LDFLAGS = $(TEST_LINK_FLAGS)
t_gzip_ratio_SOURCES = t/gzip-ratio.c bench/fill.c bench/fill.h
t_gzip_ratio_CPPFLAGS = $(GZIP_TEST_CPPFLAGS)
t_gzip_ratio_LDADD = $(TEST_LDADD) -lm
t_gzip_ratio_LDFLAGS = $(TEST_LINK_FLAGS)

if HAVE_OPENCL
check_PROGRAMS += t/gzip-opencl
TESTS += t/gzip-opencl
t_gzip_opencl_SOURCES = t/gzip-opencl.c backends/opencl/opencl.c \
	$(KERNEL_ADAPTER_SOURCES)
nodist_t_gzip_opencl_SOURCES = backends/opencl/opencl-kernels.c
t_gzip_opencl_CPPFLAGS = $(GZIP_TEST_CPPFLAGS) $(OPENCL_CFLAGS)
t_gzip_opencl_LDADD = $(TEST_LDADD) $(OPENCL_LIBS)
t_gzip_opencl_LDFLAGS = $(TEST_LINK_FLAGS)
endif
EXTRA_DIST += t/gzip-stages.c

GZIP_SH_TESTS = t/gzip-stores.sh
TESTS += $(GZIP_SH_TESTS)
EXTRA_DIST += $(GZIP_SH_TESTS) t/python/gzip_members.py
