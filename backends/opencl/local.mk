# The `opencl` backend, a plugin dlopen'ed at first use: the core library
# has no link dependency on OpenCL.  The kernel text is embedded at build
# time (opencl-kernels.c, generated from backends/kernels/ by embed.awk).
OPENCL_KERNEL_INPUTS = \
	$(top_srcdir)/backends/kernels/kernels-opencl.cl \
	$(top_srcdir)/backends/kernels/prelude-opencl.h \
	$(top_srcdir)/backends/kernels/geometry.h \
	$(top_srcdir)/backends/kernels/collectives.h \
	$(top_srcdir)/backends/kernels/copy.h \
	$(top_srcdir)/backends/kernels/scatter.h \
	$(top_srcdir)/backends/kernels/codec_none.h \
	$(top_srcdir)/backends/kernels/crc32.h \
	$(top_srcdir)/backends/kernels/deflate-layout.h \
	$(top_srcdir)/backends/kernels/deflate.h \
	$(top_srcdir)/backends/kernels/aggregate.h \
	$(top_srcdir)/backends/kernels/zstd_layout.h \
	$(top_srcdir)/backends/kernels/zstd_bits.h \
	$(top_srcdir)/backends/kernels/zstd_huf.h \
	$(top_srcdir)/backends/kernels/zstd_match.h \
	$(top_srcdir)/backends/kernels/zstd_seq.h \
	$(top_srcdir)/backends/kernels/zstd_block.h \
	$(top_srcdir)/backends/kernels/zstd_units.h \
	$(top_srcdir)/backends/kernels/zstd_xxh64.h \
	$(top_srcdir)/backends/kernels/zstd_encode.h \
	$(top_srcdir)/backends/kernels/blosc_layout.h \
	$(top_srcdir)/backends/kernels/blosc_shuffle.h \
	$(top_srcdir)/backends/kernels/blosc_encode.h \
	$(top_srcdir)/backends/kernels/kernels.h

backends/opencl/opencl-kernels.c: $(OPENCL_KERNEL_INPUTS) \
		$(top_srcdir)/backends/kernels/embed.awk
	$(AM_V_GEN)$(MKDIR_P) backends/opencl && \
	$(AWK) -v name=sp_opencl_kernel_source \
		-f $(top_srcdir)/backends/kernels/embed.awk \
		$(top_srcdir)/backends/kernels/kernels-opencl.cl > $@.tmp && \
	mv $@.tmp $@

if HAVE_OPENCL
pkglib_LTLIBRARIES += backend-opencl.la
backend_opencl_la_SOURCES = backends/opencl/opencl.c \
	backends/kernels/driver.c backends/kernels/driver.h
nodist_backend_opencl_la_SOURCES = backends/opencl/opencl-kernels.c
backend_opencl_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/backends/kernels $(OPENCL_CFLAGS)
backend_opencl_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
backend_opencl_la_LIBADD = $(OPENCL_LIBS)
backend_opencl_la_LDFLAGS = -module -avoid-version -no-undefined
BUILT_SOURCES += backends/opencl/opencl-kernels.c
CLEANFILES += backends/opencl/opencl-kernels.c
endif
