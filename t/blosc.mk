# Tests of the blosc codec (issue 11): the cpu backend through c-blosc 1.x,
# the reader's decoder on hostile chunks, the refusals and the CLI.  Each
# test links c-blosc itself, as a decoder independent of the library, and
# reports a skip (or checks the refusal) when configure found none.  The
# Python readers' blosc configurations are in t/python/matrix.py and
# t/python/readers_read.py.
BLOSC_C_TESTS = t/blosc-roundtrip t/blosc-decode t/blosc-refusals
check_PROGRAMS += $(BLOSC_C_TESTS)
TESTS += $(BLOSC_C_TESTS) t/blosc-cli.sh
EXTRA_DIST += t/blosc-cli.sh

t_blosc_roundtrip_CFLAGS = $(AM_CFLAGS) $(BLOSC_CFLAGS)
t_blosc_roundtrip_LDADD = $(TEST_LDADD) $(BLOSC_LIBS)
t_blosc_roundtrip_LDFLAGS = $(TEST_LDFLAGS)
t_blosc_decode_CFLAGS = $(AM_CFLAGS) $(BLOSC_CFLAGS)
t_blosc_decode_LDADD = $(TEST_LDADD) $(BLOSC_LIBS)
t_blosc_decode_LDFLAGS = $(TEST_LDFLAGS)
t_blosc_refusals_LDADD = $(TEST_LDADD)
t_blosc_refusals_LDFLAGS = $(TEST_LDFLAGS)
