# The `opencl` backend, a plugin dlopen'ed at first use: the core library
# has no link dependency on OpenCL.  The kernel text is embedded at build
# time (opencl-kernels.c, generated from backends/kernels/ by embed.awk).
OPENCL_KERNEL_INPUTS = backends/kernels/kernels-opencl.cl \
	backends/kernels/prelude-opencl.h $(KERNEL_INCLUDES)

backends/opencl/opencl-kernels.c: $(OPENCL_KERNEL_INPUTS) \
		$(top_srcdir)/backends/kernels/embed.awk
	$(AM_V_GEN)$(MKDIR_P) backends/opencl && \
	$(AWK) -v name=sp_opencl_kernel_source \
		-f $(top_srcdir)/backends/kernels/embed.awk \
		$(top_srcdir)/backends/kernels/kernels-opencl.cl > $@.tmp && \
	mv $@.tmp $@

if HAVE_OPENCL
pkglib_LTLIBRARIES += backend-opencl.la
backend_opencl_la_SOURCES = backends/opencl/opencl.c $(KERNEL_PLUGIN_SOURCES)
nodist_backend_opencl_la_SOURCES = backends/opencl/opencl-kernels.c
backend_opencl_la_CPPFLAGS = $(KERNEL_PLUGIN_CPPFLAGS) $(OPENCL_CFLAGS)
backend_opencl_la_CFLAGS = $(KERNEL_PLUGIN_CFLAGS)
backend_opencl_la_LIBADD = $(OPENCL_LIBS)
backend_opencl_la_LDFLAGS = $(KERNEL_PLUGIN_LDFLAGS)
BUILT_SOURCES += backends/opencl/opencl-kernels.c
CLEANFILES += backends/opencl/opencl-kernels.c
endif
