# shardpipe bench: the command's parts beyond bench/bench.c (listed with the
# program in src/local.mk).  The --bound measurement compresses with libzstd
# libdeflate and c-blosc directly, on OpenMP threads like the cpu backend.
shardpipe_SOURCES += bench/bench.h bench/fill.c bench/bound.c bench/profile.c
shardpipe_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(ZSTD_CFLAGS) $(DEFLATE_CFLAGS) \
	$(BLOSC_CFLAGS)
shardpipe_LDADD += $(ZSTD_LIBS) $(DEFLATE_LIBS) $(BLOSC_LIBS)
shardpipe_LDFLAGS = $(OPENMP_CFLAGS)
# The workloads and the measured figures (the man page points at it).
EXTRA_DIST += bench/README.md

# The threaded pipeline: the same bytes for any thread count, span size and
# flush pattern; flush/close semantics and failures through a sink.
check_PROGRAMS += t/pipeline-threads
TESTS += t/pipeline-threads
t_pipeline_threads_LDADD = $(TEST_LDADD)
t_pipeline_threads_LDFLAGS = $(TEST_LDFLAGS)

# The cpu backend's fused batch equals its stage entries, position by
# position.
check_PROGRAMS += t/cpu-fused
TESTS += t/cpu-fused
t_cpu_fused_LDADD = $(TEST_LDADD)
t_cpu_fused_LDFLAGS = $(TEST_LDFLAGS)
