# Reliability (issue 9): faults in the store and in sinks, crashes, hostile
# stores, API misuse and concurrent streams.  Every C test here links the
# independent checker t/fault-check.c (its own shard index parser, bitwise
# CRC32C, libzstd/zlib decoding, JSON parser).  t/fault-valgrind.sh runs
# the fault, misuse and hostile-store programs again under valgrind.  The
# fuzz targets (fuzz/, scripts/run-fuzz) and the sanitizer builds
# (scripts/run-sanitizers) are run by .ci/run, not by make check; make
# check replays each target's seed corpus (t/fuzz-replay.c).
REL_C_TESTS = t/fault-store t/fault-sink t/crash-kill t/hostile-store \
	t/misuse-api t/concurrent-streams t/live-readers
check_PROGRAMS += $(REL_C_TESTS)
TESTS += $(REL_C_TESTS)
# The two hostile tables run the program: stores through cat and verify,
# command lines with the directory checksummed around each.
REL_SH_TESTS = t/fault-valgrind.sh t/hostile-cli-stores.sh \
	t/hostile-cli-args.sh
TESTS += $(REL_SH_TESTS)
EXTRA_DIST += $(REL_SH_TESTS) scripts/run-fuzz scripts/run-sanitizers \
	fuzz/README fuzz/fuzz-common.h fuzz/json.c fuzz/zarr-meta.c \
	fuzz/shard.c fuzz/decode.c fuzz/store.c fuzz/corpus

REL_CHECK = t/fault-check.c t/fault-check.h
REL_LDADD = $(TEST_LDADD) -lpthread

t_fault_store_SOURCES = t/fault-store.c $(REL_CHECK)
t_fault_store_LDADD = $(REL_LDADD)
t_fault_store_LDFLAGS = $(TEST_LINK_FLAGS)
t_fault_sink_SOURCES = t/fault-sink.c $(REL_CHECK)
t_fault_sink_LDADD = $(REL_LDADD)
t_fault_sink_LDFLAGS = $(TEST_LINK_FLAGS)
t_crash_kill_SOURCES = t/crash-kill.c $(REL_CHECK)
t_crash_kill_LDADD = $(REL_LDADD)
t_crash_kill_LDFLAGS = $(TEST_LINK_FLAGS)
t_hostile_store_SOURCES = t/hostile-store.c $(REL_CHECK)
t_hostile_store_LDADD = $(REL_LDADD)
t_hostile_store_LDFLAGS = $(TEST_LINK_FLAGS)
t_misuse_api_SOURCES = t/misuse-api.c $(REL_CHECK)
t_misuse_api_LDADD = $(REL_LDADD)
t_misuse_api_LDFLAGS = $(TEST_LINK_FLAGS)
t_concurrent_streams_SOURCES = t/concurrent-streams.c $(REL_CHECK)
t_concurrent_streams_LDADD = $(REL_LDADD)
t_concurrent_streams_LDFLAGS = $(TEST_LINK_FLAGS)
t_live_readers_SOURCES = t/live-readers.c
t_live_readers_LDADD = $(REL_LDADD)
t_live_readers_LDFLAGS = $(TEST_LINK_FLAGS)

# Each fuzz target over its committed seeds, with the target's own checks.
FUZZ_REPLAY = t/fuzz-json t/fuzz-zarr-meta t/fuzz-shard t/fuzz-decode \
	t/fuzz-store
check_PROGRAMS += $(FUZZ_REPLAY)
TESTS += $(FUZZ_REPLAY)
EXTRA_DIST += t/fuzz-replay.c
t_fuzz_json_SOURCES = fuzz/json.c t/fuzz-replay.c
t_fuzz_json_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"json"'
t_fuzz_json_LDADD = $(TEST_LDADD)
t_fuzz_json_LDFLAGS = $(TEST_LINK_FLAGS)
t_fuzz_zarr_meta_SOURCES = fuzz/zarr-meta.c t/fuzz-replay.c
t_fuzz_zarr_meta_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"zarr-meta"'
t_fuzz_zarr_meta_LDADD = $(TEST_LDADD)
t_fuzz_zarr_meta_LDFLAGS = $(TEST_LINK_FLAGS)
t_fuzz_shard_SOURCES = fuzz/shard.c t/fuzz-replay.c
t_fuzz_shard_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"shard"'
t_fuzz_shard_LDADD = $(TEST_LDADD)
t_fuzz_shard_LDFLAGS = $(TEST_LINK_FLAGS)
t_fuzz_decode_SOURCES = fuzz/decode.c t/fuzz-replay.c
t_fuzz_decode_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"decode"'
t_fuzz_decode_LDADD = $(TEST_LDADD)
t_fuzz_decode_LDFLAGS = $(TEST_LINK_FLAGS)
t_fuzz_store_SOURCES = fuzz/store.c t/fuzz-replay.c
t_fuzz_store_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET='"store"'
t_fuzz_store_LDADD = $(TEST_LDADD)
t_fuzz_store_LDFLAGS = $(TEST_LINK_FLAGS)
