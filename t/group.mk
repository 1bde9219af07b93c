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
t_group_LDFLAGS = $(TEST_LDFLAGS)
