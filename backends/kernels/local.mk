# The portable kernel source (doc/design.md §7), the kernel driver shared
# by every kernel backend (§9), and the
# `reference` backend: the kernels compiled as C, linked into the library.
KERNEL_INCLUDES = \
	backends/kernels/geometry.h \
	backends/kernels/collectives.h \
	backends/kernels/copy.h \
	backends/kernels/scatter.h \
	backends/kernels/codec_none.h \
	backends/kernels/crc32.h \
	backends/kernels/deflate-layout.h \
	backends/kernels/deflate.h \
	backends/kernels/aggregate.h \
	backends/kernels/zstd_layout.h \
	backends/kernels/zstd_bits.h \
	backends/kernels/zstd_huf.h \
	backends/kernels/zstd_match.h \
	backends/kernels/zstd_seq.h \
	backends/kernels/zstd_block.h \
	backends/kernels/zstd_units.h \
	backends/kernels/zstd_xxh64.h \
	backends/kernels/zstd_encode.h \
	backends/kernels/blosc_layout.h \
	backends/kernels/blosc_shuffle.h \
	backends/kernels/blosc_encode.h \
	backends/kernels/empty_chunks.h \
	backends/kernels/kernels.h \
	backends/kernels/kernel-list.h

libshardpipe_core_la_SOURCES += \
	backends/kernels/driver.c backends/kernels/driver.h \
	backends/kernels/reference.c \
	backends/kernels/reference-kernels.c \
	backends/kernels/reference-kernels.h \
	backends/kernels/reference-calls.h \
	backends/kernels/reference-profile.c \
	backends/kernels/prelude-c.h $(KERNEL_INCLUDES)

# What every device adapter plugin (backends/opencl/, backends/cuda/)
# compiles beside its adapter file: the skeleton shared by the adapters
# (device choice, probe, open, the plugin entry; doc/design.md §10) and the
# driver.  The stage tests link an adapter file with the skeleton alone
# (the core library has the driver).
KERNEL_ADAPTER_SOURCES = backends/kernels/adapter.c backends/kernels/adapter.h
KERNEL_PLUGIN_SOURCES = $(KERNEL_ADAPTER_SOURCES) \
	backends/kernels/driver.c backends/kernels/driver.h
KERNEL_PLUGIN_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels
KERNEL_PLUGIN_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
KERNEL_PLUGIN_LDFLAGS = -module -avoid-version -no-undefined

# The other dialects' preludes and the OpenCL program's top file travel in
# the tarball whether or not this build uses them.
EXTRA_DIST += \
	backends/kernels/prelude-opencl.h \
	backends/kernels/prelude-cuda.h \
	backends/kernels/kernels-opencl.cl \
	backends/kernels/embed.awk
