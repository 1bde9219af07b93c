# Independent readers: zarr-python 3 and TensorStore read what shardpipe
# writes and write what shardpipe reads (issue 3).  The scripts run under
# $SHARDPIPE_PYTHON, a virtual environment made by
# scripts/setup-python-readers; without it they report a skip.
# readers-metadata.sh needs only the standard library (python3 will do).
READERS_TESTS = t/readers-metadata.sh t/readers-write.sh t/readers-read.sh \
	t/readers-fill.sh t/readers-live.sh \
	t/readers-stream.sh t/readers-attrs.sh t/readers-reopen.sh
TESTS += $(READERS_TESTS)
EXTRA_DIST += $(READERS_TESTS) scripts/setup-python-readers \
	t/python/run-python.sh t/python/sptap.py t/python/spdata.py \
	t/python/matrix.py t/python/readers_write.py t/python/readers_read.py \
	t/python/readers_metadata.py t/python/readers_stream.py \
	t/python/readers_fill.py t/python/readers_live.py \
	t/python/readers_attrs.py t/python/readers_reopen.py
