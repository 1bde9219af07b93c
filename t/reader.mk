# The store reader and its JSON parser, against stores built by hand in
# the tests (libzstd and zlib as independent encoders).
READER_TESTS = t/json t/reader
check_PROGRAMS += $(READER_TESTS)
TESTS += $(READER_TESTS)

t_json_LDADD = $(TEST_LDADD)
t_json_LDFLAGS = $(TEST_LINK_FLAGS)
t_reader_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) $(ZLIB_CFLAGS)
t_reader_LDADD = $(TEST_LDADD)
t_reader_LDFLAGS = $(TEST_LINK_FLAGS)

# Metadata in the forms other writers produce; also the seed corpus for
# fuzzing the reader.
EXTRA_DIST += t/data/reader/ok-zarr-python-sharded.json \
	t/data/reader/ok-uint8-bytes-noconfig.json \
	t/data/reader/ok-float64-bigendian-nan.json \
	t/data/reader/bad-format-shard-not-divisible.json \
	t/data/reader/bad-format-group.json \
	t/data/reader/bad-unsupported-transpose.json
