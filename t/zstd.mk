# Tests of the zstd encoder in the portable kernels (issue 6).  The C
# build of the kernel runs in-process (as the reference executor runs it)
# and every frame is checked with libzstd and the zstd command; where an
# OpenCL platform is usable, the OpenCL build of the same source must
# write the same bytes at three local sizes (else a skip with the reason).
# t/zstd-ratio reports the ratio table next to libzstd's, asserting only
# that every frame decodes.  t/zstd-stores runs the conformance matrix of
# kernels-configs.h with zstd: opencl stores at three local sizes equal
# reference's byte for byte.  t/zstd-tables checks the repeat codes
# against its own reading of RFC 8878 and that inputs calling for
# predefined, RLE and fitted sequence tables get them, and that on labelled
# volumes, whose rows cycle through three offsets, levels 1 and 3 reach
# 0.97 of libzstd's ratio and level 5 at least 0.95, and on CT-like
# volumes, whose matches lie far back, level 3 0.97 and levels 5 and 9
# 0.95 (issue 22).
ZSTD_KERNEL_TESTS = t/zstd-encode t/zstd-ratio t/zstd-stores t/zstd-tables
check_PROGRAMS += $(ZSTD_KERNEL_TESTS)
TESTS += $(ZSTD_KERNEL_TESTS)
EXTRA_DIST += t/zstd-common.h
# The same encoder through the kernel driver, the reference and opencl
# backends and shardpipe conform (in TESTS first, Makefile.am).
EXTRA_DIST += t/zstd-conform.sh

t_zstd_encode_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels \
	$(ZSTD_CFLAGS)
t_zstd_encode_LDADD = $(TEST_LDADD) -lm
t_zstd_encode_LDFLAGS = $(TEST_LINK_FLAGS)
t_zstd_tables_CPPFLAGS = $(t_zstd_encode_CPPFLAGS)
t_zstd_tables_LDADD = $(TEST_LDADD) -lm
t_zstd_tables_LDFLAGS = $(TEST_LINK_FLAGS)
t_zstd_ratio_CPPFLAGS = $(t_zstd_encode_CPPFLAGS)
t_zstd_ratio_LDADD = $(TEST_LDADD) -lm
t_zstd_ratio_LDFLAGS = $(TEST_LINK_FLAGS)
# The conformance matrix through the public API: opencl at three local
# sizes against reference, byte for byte (a skip without OpenCL).
t_zstd_stores_LDADD = $(TEST_LDADD)
t_zstd_stores_LDFLAGS = $(TEST_LINK_FLAGS)

if HAVE_OPENCL
check_PROGRAMS += t/zstd-opencl
TESTS += t/zstd-opencl
# The backend's program text, so that PoCL's cache serves both.
t_zstd_opencl_SOURCES = t/zstd-opencl.c
nodist_t_zstd_opencl_SOURCES = backends/opencl/opencl-kernels.c
t_zstd_opencl_CPPFLAGS = $(t_zstd_encode_CPPFLAGS) $(OPENCL_CFLAGS)
t_zstd_opencl_LDADD = $(TEST_LDADD) $(OPENCL_LIBS) -lm
t_zstd_opencl_LDFLAGS = $(TEST_LINK_FLAGS)
endif
EXTRA_DIST += t/zstd-opencl.c
