# Release, ABI and documentation checks (distribution readiness): the
# exported symbols, the public header in C and C++, plugin discovery and its
# refusals, sizes past 4 GiB, the public structs as older and newer callers
# see them (abi-structs), the man pages, and that every section of the
# design document cited in the sources exists (design-cites.sh).
DIST_SH_TESTS = t/header-compile.sh t/abi-symbols.sh t/abi-plugin.sh \
	t/man-render.sh t/man-help.sh t/man-example.sh t/design-cites.sh
TESTS += $(DIST_SH_TESTS)
EXTRA_DIST += $(DIST_SH_TESTS) scripts/cross-check-s390x

DIST_C_TESTS = t/abi-sizes t/abi-structs
check_PROGRAMS += $(DIST_C_TESTS)
TESTS += $(DIST_C_TESTS)
t_abi_sizes_LDADD = $(TEST_LDADD)
t_abi_sizes_LDFLAGS = $(TEST_LINK_FLAGS)
t_abi_structs_LDADD = $(TEST_LDADD)
t_abi_structs_LDFLAGS = $(TEST_LINK_FLAGS)

# The EXAMPLE of shardpipe(3), built as a user would: the public header and
# the shared library only.  t/man-example.sh runs it.
check_PROGRAMS += t/man-example
t_man_example_CPPFLAGS = -I$(top_srcdir)/include
t_man_example_LDADD = libshardpipe.la

# Fake backend plugins for t/abi-plugin.sh.  -rpath makes libtool build
# them shared although they are never installed.  plugin-broken.so needs a
# library whose soname, libshardpipe-test-absent.so.1, exists nowhere: the
# stub it links against is built outside libtool under another file name,
# so no runpath can lead the loader to it.
check_LTLIBRARIES += t/plugin-wrong-abi.la t/plugin-broken.la
PLUGIN_TEST_LDFLAGS = -module -avoid-version -no-undefined -rpath /nowhere
t_plugin_wrong_abi_la_SOURCES = t/plugin-wrong-abi.c
t_plugin_wrong_abi_la_LDFLAGS = $(PLUGIN_TEST_LDFLAGS)
t_plugin_broken_la_SOURCES = t/plugin-broken.c
# Through -Wl: libtool drops a bare non-libtool .so from a module.
t_plugin_broken_la_DEPENDENCIES = t/plugin-dep-stub.so
t_plugin_broken_la_LDFLAGS = $(PLUGIN_TEST_LDFLAGS) -Wl,t/plugin-dep-stub.so

t/plugin-dep-stub.so: $(top_srcdir)/t/plugin-dep.c
	$(AM_V_CCLD)$(MKDIR_P) t && $(CC) $(AM_CFLAGS) $(CFLAGS) -fPIC -shared \
		-Wl,-soname,libshardpipe-test-absent.so.1 $(LDFLAGS) \
		-o $@ $(top_srcdir)/t/plugin-dep.c
CLEANFILES += t/plugin-dep-stub.so
EXTRA_DIST += t/plugin-dep.c
