# The Python package (python/, issue 17): t/python-package.sh builds it
# with pip against this build's library and runs its pytest suite under
# $SHARDPIPE_PYTHON (scripts/setup-python-readers), one TAP line per
# pytest test; without that environment it reports a skip.
TESTS += t/python-package.sh
EXTRA_DIST += t/python-package.sh t/python/pytest_tap.py \
	python/pyproject.toml python/setup.py python/README.md \
	python/src/shardpipe/__init__.py \
	python/src/shardpipe/_shardpipe.c python/src/shardpipe/_shardpipe.pyi \
	python/src/shardpipe/py.typed python/tests/conftest.py \
	python/tests/test_shardpipe.py python/tests/test_group.py \
	python/tests/test_acquisition.py python/tests/test_pyramid.py \
	python/tests/test_append_shapes.py \
	bench/python_vs_acquire_zarr.py python/MANIFEST.in
EXTRA_DIST += python/tests/test_namespace.py python/tests/test_reopen.py \
	python/tests/test_progress.py python/tests/test_reader_numpy.py \
	python/tests/test_plate.py python/tests/test_dask.py \
	python/src/shardpipe/dask.py
