# bench/: the measurement behind `shardpipe bench` (runs, the compress-only
# bound, memory and latency, the report) and the fill patterns that bench,
# demo and the ratio tests share, built as a convenience library that the
# program links.  Nothing here includes a header of src/cli/: the program
# depends on bench/, never the other way.  The bound compresses with
# libzstd, libdeflate and c-blosc directly, on OpenMP threads like the cpu
# backend.
noinst_LTLIBRARIES += bench/libbench.la
bench_libbench_la_SOURCES = bench/bench.h bench/fill.h bench/fill.c \
	bench/run.c bench/bound.c bench/report.c bench/profile.c
bench_libbench_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) $(ZSTD_CFLAGS) \
	$(DEFLATE_CFLAGS) $(BLOSC_CFLAGS)
bench_libbench_la_LIBADD = $(ZSTD_LIBS) $(DEFLATE_LIBS) $(BLOSC_LIBS)
# The workloads and the measured figures (the man page points at it), and
# the SHARDPIPE_TRACE timeline script with the picture the README shows.
EXTRA_DIST += bench/README.md bench/trace-svg.py bench/trace-frames-opencl.svg \
	bench/zstd_corpus.py bench/zstd_treeless.py bench/read_vs_tensorstore.py \
	bench/dask_scaling.py bench/benchfill.py bench/camera_user.py

