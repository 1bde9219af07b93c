# S3 stores (issue 19, doc/design.md §24).  t/s3-config needs no server:
# URL and environment refusals, an endpoint that refuses connections, and
# the refusal of a build without S3 support.  The t/s3-*.sh scripts start a
# real S3-compatible server on 127.0.0.1 (moto's, from the readers' venv
# that scripts/setup-python-readers makes) and a fault-injecting proxy in
# front of it where a test needs failures; without S3 support in the build,
# or without moto under $SHARDPIPE_PYTHON, they report a skip.
check_PROGRAMS += t/s3-config
TESTS += t/s3-config
t_s3_config_LDADD = $(TEST_LDADD)
t_s3_config_LDFLAGS = $(TEST_LINK_FLAGS)

S3_TESTS = t/s3-roundtrip.sh t/s3-refusals.sh t/s3-faults.sh t/s3-reopen.sh \
	t/s3-read.sh t/s3-region.sh
TESTS += $(S3_TESTS)
# Region writers on S3 (doc/design.md §30): t/s3-region.sh runs one call
# of the library a process with it, each box a writer of its own.
check_PROGRAMS += t/s3-region-box
t_s3_region_box_LDADD = $(TEST_LDADD)
t_s3_region_box_LDFLAGS = $(TEST_LINK_FLAGS)
EXTRA_DIST += $(S3_TESTS) t/s3-lib.sh t/python/s3_server.py \
	t/python/s3_proxy.py t/python/s3_admin.py t/python/s3_runs.py \
	bench/s3_vs_fs.py
