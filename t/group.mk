# Groups (issue 20, doc/design.md §26): several arrays under one Zarr v3
# group, through the library (t/group, which links the independent checker
# of t/reliability.mk), the CLI (t/cli-group.sh; its edges and refusals,
# t/cli-group-edges.sh) and the Python readers (t/readers-group.sh, which
# runs t/group --keep).
check_PROGRAMS += t/group
TESTS += t/group t/cli-group.sh t/cli-group-edges.sh t/readers-group.sh
EXTRA_DIST += t/cli-group.sh t/cli-group-edges.sh t/readers-group.sh \
	t/python/readers_group.py
t_group_SOURCES = t/group.c $(REL_CHECK)
t_group_LDADD = $(REL_LDADD)
t_group_LDFLAGS = $(TEST_LINK_FLAGS)

# OME-NGFF 0.5 plates (issue 42, doc/design.md §28.8): the library
# (t/plate: fields in any order, two at once, every refusal), the CLI
# (t/cli-plate.sh) and the readers (t/readers-plate.sh: the 0.5 schemas,
# ome-zarr-models and ome-zarr, over the plate t/plate --keep leaves).
check_PROGRAMS += t/plate
TESTS += t/plate t/cli-plate.sh t/readers-plate.sh
EXTRA_DIST += t/cli-plate.sh t/readers-plate.sh t/python/readers_plate.py \
	t/python/ngff_schema.py
t_plate_SOURCES = t/plate.c
t_plate_LDADD = $(TEST_LDADD) -lpthread
t_plate_LDFLAGS = $(TEST_LINK_FLAGS)

# Per-frame metadata (issue 42 item 2, doc/design.md §28.9): the library
# (t/frame-meta: values decoded back, rows never ahead of the image's,
# skips, refusals), the CLI (t/cli-frame-meta.sh: --frame-meta FILE.csv
# read back by zarr-python) and, through Python,
# python/tests/test_frame_meta.py (zarr-python and xarray).
check_PROGRAMS += t/frame-meta
TESTS += t/frame-meta t/cli-frame-meta.sh
EXTRA_DIST += t/cli-frame-meta.sh
t_frame_meta_SOURCES = t/frame-meta.c
t_frame_meta_LDADD = $(TEST_LDADD)
t_frame_meta_LDFLAGS = $(TEST_LINK_FLAGS)
# Continuing an image with frame fields (§29): after a close at every k
# and after SIGKILL, the one run's files, field arrays included.
check_PROGRAMS += t/reopen-frame-meta
TESTS += t/reopen-frame-meta
t_reopen_frame_meta_SOURCES = t/reopen-frame-meta.c
t_reopen_frame_meta_LDADD = $(TEST_LDADD)
t_reopen_frame_meta_LDFLAGS = $(TEST_LINK_FLAGS)
