# Pyramids and OME-NGFF images (doc/design.md §28): stores on every
# backend against the cpu's and the reader's recomputation, the CLI's
# options and refusals, and the independent readers (NumPy model,
# ome-zarr, zarr-python, the OME-NGFF 0.5 schema); the refusal of a
# pyramid to an S3 store (t/s3-pyramid.sh, skipped as the t/s3-*.sh are).
PYRAMID_TESTS = t/pyramid-stores
check_PROGRAMS += $(PYRAMID_TESTS)
TESTS += $(PYRAMID_TESTS)
t_pyramid_stores_LDADD = $(TEST_LDADD) -lpthread
t_pyramid_stores_LDFLAGS = $(TEST_LINK_FLAGS)

# In TESTS first (Makefile.am).
if HAVE_OPENCL
check_PROGRAMS += t/pyramid-opencl
t_pyramid_opencl_LDADD = $(TEST_LDADD)
t_pyramid_opencl_LDFLAGS = $(TEST_LINK_FLAGS)
endif
EXTRA_DIST += t/pyramid-stores.c

PYRAMID_SH_TESTS = t/cli-pyramid.sh t/readers-pyramid.sh t/s3-pyramid.sh
TESTS += $(PYRAMID_SH_TESTS)
EXTRA_DIST += $(PYRAMID_SH_TESTS) t/pyramid-opencl.c \
	t/python/readers_pyramid.py
