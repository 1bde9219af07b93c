# The host layer and every backend linked into the library are built once
# as a convenience library: libshardpipe.la exports only the public API,
# while the tests link the convenience library to reach internals.
noinst_LTLIBRARIES += libshardpipe_core.la
libshardpipe_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DSHARDPIPE_BUILDING_LIBRARY \
	-DSHARDPIPE_PLUGIN_DIR='"$(pkglibdir)"'
libshardpipe_core_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(OPENMP_CFLAGS) \
	$(ZSTD_CFLAGS) $(DEFLATE_CFLAGS) $(BLOSC_CFLAGS)
libshardpipe_core_la_LIBADD = $(ZSTD_LIBS) $(DEFLATE_LIBS) $(BLOSC_LIBS) -lm
libshardpipe_core_la_SOURCES = \
	src/common.h \
	src/plan.c src/plan.h \
	src/crc32c.c src/crc32c.h \
	src/shard_index.c src/shard_index.h src/pool.c src/pool.h \
	src/zarr_meta.c src/zarr_meta.h src/attrs.c src/attrs.h \
	src/ome.c src/ome.h \
	src/store.c src/store.h src/store_fs.c src/store_fs.h \
	src/store_sink.c \
	src/stream.c src/stream_impl.h src/stream_open.c src/stream_threads.c \
	src/region.c \
	src/group.c src/group.h src/plate.c src/frame_meta.c src/frame_meta.h src/zarr_node.c src/zarr_node.h \
	src/lanes.c src/lanes.h src/copy.c src/copy.h \
	src/struct_size.c src/trace.c src/trace.h \
	src/backend.c src/backend.h \
	src/codec.c src/codec.h src/codec_spec.c src/closest.c src/closest.h \
	src/version.c
libshardpipe_core_la_SOURCES += src/json.c src/json.h src/reader.c \
	src/reader_impl.h src/reader_meta.c src/reader_read.c src/reader_shard.c \
	src/reader_levels.c src/reader_levels.h src/half.h \
	src/reopen.c src/reopen.h src/reopen_image.c
# The S3 store and its client (doc/design.md §24), on libcurl.
if HAVE_S3
libshardpipe_core_la_SOURCES += src/s3.c src/s3.h src/s3_config.c \
	src/store_s3.c src/store_s3_read.c src/store_s3.h
libshardpipe_core_la_CFLAGS += $(CURL_CFLAGS)
libshardpipe_core_la_LIBADD += $(CURL_LIBS)
endif

# The -version-info policy: doc/design.md §25.1.
lib_LTLIBRARIES += libshardpipe.la
libshardpipe_la_SOURCES =
libshardpipe_la_LIBADD = libshardpipe_core.la
libshardpipe_la_LDFLAGS = -version-info $(SHARDPIPE_LT_VERSION) -no-undefined \
	$(OPENMP_CFLAGS)

# The program: the public API, and bench/'s library (bench/local.mk) for
# bench's measurement and the fill patterns of bench, demo and conform.
bin_PROGRAMS += shardpipe
shardpipe_SOURCES = src/cli/main.c src/cli/cli.h src/cli/options.c \
	src/cli/write.c src/cli/levels.c src/cli/read.c src/cli/group.c \
	src/cli/demo.c src/cli/frame_csv.c \
	src/cli/conform.c src/cli/bench.c src/closest.c src/closest.h
shardpipe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/cli -I$(top_srcdir)/bench
shardpipe_LDADD = bench/libbench.la libshardpipe.la -lm
shardpipe_LDFLAGS = $(OPENMP_CFLAGS)
