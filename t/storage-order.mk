# Storage order (doc/design.md §3.3): stores written with a permutation of
# the dims on cpu, reference, opencl and cuda against the permuted array written
# directly, the reader's decode, and the refusals; the CLI's option.
STORAGE_ORDER_TESTS = t/storage-order
check_PROGRAMS += $(STORAGE_ORDER_TESTS)
TESTS += $(STORAGE_ORDER_TESTS)
t_storage_order_LDADD = $(TEST_LDADD)
t_storage_order_LDFLAGS = $(TEST_LINK_FLAGS)
EXTRA_DIST += t/storage-order.c

STORAGE_ORDER_SH_TESTS = t/cli-storage-order.sh
TESTS += $(STORAGE_ORDER_SH_TESTS)
EXTRA_DIST += $(STORAGE_ORDER_SH_TESTS)
