# Tests: TAP programs and scripts, run by Automake's TAP driver.
TAP_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
LOG_DRIVER = $(TAP_DRIVER)
TEST_EXTENSIONS = .sh
SH_LOG_DRIVER = $(TAP_DRIVER)
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	SHARDPIPE='$(abs_top_builddir)/shardpipe'; export SHARDPIPE; \
	SHARDPIPE_PLUGIN_PATH='$(abs_top_builddir)/.libs'; export SHARDPIPE_PLUGIN_PATH; \
	POCL_CACHE_DIR="$${POCL_CACHE_DIR:-$(abs_top_builddir)/t/pocl-cache}"; export POCL_CACHE_DIR; \
	$(POCL_ENVIRONMENT) \
	OMP_WAIT_POLICY=passive; export OMP_WAIT_POLICY; \
	SHARDPIPE_TEST_BACKENDS='$(TEST_BUILT_PLUGINS)'; \
	export SHARDPIPE_TEST_BACKENDS; \
	$(READERS_ENVIRONMENT) \
	unset SHARDPIPE_BACKEND;
# PoCL compiles a kernel once for every local size it runs at unless told
# not to specialise; the tests run the kernels at four local sizes, and one
# generic work-group function a kernel (dynamic local size, the same
# source and results) costs half the CPU of the four specialised ones,
# the largest share of the suite's time (doc/design.md §18.2).
# POCL_WORK_GROUP_SPECIALIZATION set by the caller wins.
POCL_ENVIRONMENT = \
	POCL_WORK_GROUP_SPECIALIZATION="$${POCL_WORK_GROUP_SPECIALIZATION-0}"; \
	export POCL_WORK_GROUP_SPECIALIZATION;
# The independent readers' Python: SHARDPIPE_PYTHON when set (empty: none),
# else the environment scripts/quickstart made at the top of the source
# tree, so that the README's test command runs the reader, Python package
# and S3 tests for a newcomer too.  A tarball has no such environment.
READERS_ENVIRONMENT = \
	if test -z "$${SHARDPIPE_PYTHON+set}" && \
	   test -x '$(abs_top_srcdir)/.venv-readers/bin/python'; then \
		SHARDPIPE_PYTHON='$(abs_top_srcdir)/.venv-readers/bin/python'; \
		export SHARDPIPE_PYTHON; \
	fi;
# The plugins configure built: a test may skip one of them only for the
# documented absence of its device (the skip policy, doc/design.md §18.1;
# backend_usable in t/lib.sh, test_may_skip in t/testutil.c).
TEST_BUILT_PLUGINS =
if HAVE_OPENCL
TEST_BUILT_PLUGINS += opencl
endif
if HAVE_CUDA
TEST_BUILT_PLUGINS += cuda
endif
EXTRA_DIST += build-aux/tap-driver.sh t/lib.sh

check_LTLIBRARIES += t/libtap.la
t_libtap_la_SOURCES = t/tap.c t/tap.h t/testutil.c t/testutil.h
t_libtap_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) $(DEFLATE_CFLAGS) $(ZLIB_CFLAGS)

TEST_LDADD = t/libtap.la libshardpipe_core.la $(ZSTD_LIBS) $(DEFLATE_LIBS) $(ZLIB_LIBS)
# Every test program links with OpenMP (the library's cpu backend uses it);
# not named *_LDFLAGS, which automake takes for a program's.
TEST_LINK_FLAGS = $(OPENMP_CFLAGS)

C_TESTS = t/crc32c t/plan-permutation t/zarr-meta t/shard-index t/refusals \
	t/roundtrip-cpu t/sink t/sink-objects t/codec-spec t/fill-empty t/max-memory \
	t/attributes t/trace t/pool-reuse t/direct-spans t/copy t/cpu-deal t/lanes t/store-race
check_PROGRAMS += $(C_TESTS)
TESTS += $(C_TESTS)

t_copy_LDADD = $(TEST_LDADD)
t_copy_LDFLAGS = $(TEST_LINK_FLAGS)
t_lanes_LDADD = $(TEST_LDADD) -lpthread
t_lanes_LDFLAGS = $(TEST_LINK_FLAGS)
t_store_race_LDADD = $(TEST_LDADD)
t_store_race_LDFLAGS = $(TEST_LINK_FLAGS)
t_cpu_deal_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/cpu
t_cpu_deal_LDADD = $(TEST_LDADD)
t_cpu_deal_LDFLAGS = $(TEST_LINK_FLAGS)
t_crc32c_LDADD = $(TEST_LDADD)
t_crc32c_LDFLAGS = $(TEST_LINK_FLAGS)
t_plan_permutation_LDADD = $(TEST_LDADD)
t_plan_permutation_LDFLAGS = $(TEST_LINK_FLAGS)
t_zarr_meta_LDADD = $(TEST_LDADD)
t_zarr_meta_LDFLAGS = $(TEST_LINK_FLAGS)
t_shard_index_LDADD = $(TEST_LDADD)
t_shard_index_LDFLAGS = $(TEST_LINK_FLAGS)
t_refusals_LDADD = $(TEST_LDADD)
t_refusals_LDFLAGS = $(TEST_LINK_FLAGS)
t_roundtrip_cpu_LDADD = $(TEST_LDADD)
t_roundtrip_cpu_LDFLAGS = $(TEST_LINK_FLAGS)
t_codec_spec_LDADD = $(TEST_LDADD)
t_codec_spec_LDFLAGS = $(TEST_LINK_FLAGS)
t_pool_reuse_LDADD = $(TEST_LDADD)
t_pool_reuse_LDFLAGS = $(TEST_LINK_FLAGS)
t_direct_spans_LDADD = $(TEST_LDADD)
t_direct_spans_LDFLAGS = $(TEST_LINK_FLAGS)

SH_TESTS = t/cli.sh t/cli-input.sh t/cli-attr.sh t/trace-cli.sh t/pkg-config.sh \
	t/cli-signals.sh t/bench-all.sh t/cpu-deal-clones.sh
TESTS += $(SH_TESTS)
EXTRA_DIST += $(SH_TESTS)
t_max_memory_LDADD = $(TEST_LDADD)
t_max_memory_LDFLAGS = $(TEST_LINK_FLAGS)
t_fill_empty_LDADD = $(TEST_LDADD)
t_fill_empty_LDFLAGS = $(TEST_LINK_FLAGS)
t_attributes_SOURCES = t/attributes.c t/fault-check.c t/fault-check.h
t_attributes_LDADD = $(TEST_LDADD) -lpthread
t_attributes_LDFLAGS = $(TEST_LINK_FLAGS)
t_sink_LDADD = $(TEST_LDADD)
t_sink_LDFLAGS = $(TEST_LINK_FLAGS)
t_sink_objects_LDADD = $(TEST_LDADD)
t_sink_objects_LDFLAGS = $(TEST_LINK_FLAGS)
t_trace_LDADD = $(TEST_LDADD)
t_trace_LDFLAGS = $(TEST_LINK_FLAGS)

# The threaded pipeline: the same bytes for any thread count, span size and
# flush pattern; flush/close semantics and failures through a sink.
check_PROGRAMS += t/pipeline-threads
TESTS += t/pipeline-threads
t_pipeline_threads_LDADD = $(TEST_LDADD)
t_pipeline_threads_LDFLAGS = $(TEST_LINK_FLAGS)

# The cpu backend's fused batch equals its stage entries, position by
# position.
check_PROGRAMS += t/cpu-fused
TESTS += t/cpu-fused
t_cpu_fused_LDADD = $(TEST_LDADD)
t_cpu_fused_LDFLAGS = $(TEST_LINK_FLAGS)

# Chunk-laid staging (doc/design.md §14.7): the reference backend's files
# from spans that cut rows, skips, a flush inside an epoch.
check_PROGRAMS += t/laid-staging
TESTS += t/laid-staging
t_laid_staging_LDADD = $(TEST_LDADD)
t_laid_staging_LDFLAGS = $(TEST_LINK_FLAGS)

# Reopening a store (doc/design.md §29): a resumed write gives the files
# of one uninterrupted write, on every backend and codec, after a close or
# a SIGKILL; what reopen refuses; the CLI's --append.
check_PROGRAMS += t/reopen
TESTS += t/reopen t/cli-append.sh
EXTRA_DIST += t/cli-append.sh
t_reopen_LDADD = $(TEST_LDADD)
t_reopen_LDFLAGS = $(TEST_LINK_FLAGS)

# Many writers of one array (doc/design.md §30): region writers' boxes,
# published, give the files of one ordinary stream; their refusals, locks
# and a killed writer's box written again.
check_PROGRAMS += t/region
TESTS += t/region
t_region_LDADD = $(TEST_LDADD)
t_region_LDFLAGS = $(TEST_LINK_FLAGS)
