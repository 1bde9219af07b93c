# Tests of the blosc codec (issue 11): the cpu backend through c-blosc 1.x,
# the reader's decoder on hostile chunks, the refusals and the CLI.  Each
# test links c-blosc itself, as a decoder independent of the library, and
# reports a skip (or checks the refusal) when configure found none.  The
# Python readers' blosc configurations are in t/python/matrix.py and
# t/python/readers_read.py.
BLOSC_C_TESTS = t/blosc-roundtrip t/blosc-decode t/blosc-refusals
check_PROGRAMS += $(BLOSC_C_TESTS)
TESTS += $(BLOSC_C_TESTS) t/blosc-cli.sh
EXTRA_DIST += t/blosc-cli.sh

t_blosc_roundtrip_CFLAGS = $(AM_CFLAGS) $(BLOSC_CFLAGS)
t_blosc_roundtrip_LDADD = $(TEST_LDADD) $(BLOSC_LIBS)
t_blosc_roundtrip_LDFLAGS = $(TEST_LINK_FLAGS)
t_blosc_decode_CFLAGS = $(AM_CFLAGS) $(BLOSC_CFLAGS)
t_blosc_decode_LDADD = $(TEST_LDADD) $(BLOSC_LIBS)
t_blosc_decode_LDFLAGS = $(TEST_LINK_FLAGS)
t_blosc_refusals_LDADD = $(TEST_LDADD)
t_blosc_refusals_LDFLAGS = $(TEST_LINK_FLAGS)

# The kernel encoder (backends/kernels/blosc_encode.h) through the kernel driver:
# reference always, opencl (bytes equal to reference's at several local
# sizes) where an OpenCL platform is usable; every chunk decoded by c-blosc.
check_PROGRAMS += t/blosc-stages
TESTS += t/blosc-stages
BLOSC_KERNEL_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels \
	$(BLOSC_CFLAGS)
t_blosc_stages_CPPFLAGS = $(BLOSC_KERNEL_CPPFLAGS)
t_blosc_stages_LDADD = $(TEST_LDADD) $(BLOSC_LIBS)
t_blosc_stages_LDFLAGS = $(TEST_LINK_FLAGS)

if HAVE_OPENCL
check_PROGRAMS += t/blosc-opencl
TESTS += t/blosc-opencl
t_blosc_opencl_SOURCES = t/blosc-opencl.c backends/opencl/opencl.c \
	$(KERNEL_ADAPTER_SOURCES)
nodist_t_blosc_opencl_SOURCES = backends/opencl/opencl-kernels.c
t_blosc_opencl_CPPFLAGS = $(BLOSC_KERNEL_CPPFLAGS) $(OPENCL_CFLAGS)
t_blosc_opencl_LDADD = $(TEST_LDADD) $(BLOSC_LIBS) $(OPENCL_LIBS)
t_blosc_opencl_LDFLAGS = $(TEST_LINK_FLAGS)
endif
EXTRA_DIST += t/blosc-stages.c

# The kernel's ratio next to c-blosc's on bench's data (reported, not
# asserted; every kernel chunk must decode with c-blosc).
check_PROGRAMS += t/blosc-ratio
TESTS += t/blosc-ratio
t_blosc_ratio_SOURCES = t/blosc-ratio.c bench/fill.c bench/fill.h
t_blosc_ratio_CPPFLAGS = $(BLOSC_KERNEL_CPPFLAGS)
t_blosc_ratio_LDADD = $(TEST_LDADD) $(BLOSC_LIBS) -lm
t_blosc_ratio_LDFLAGS = $(TEST_LINK_FLAGS)
