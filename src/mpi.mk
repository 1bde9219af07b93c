# libshardpipe-mpi (doc/design.md §31): a library of its own, on
# libshardpipe and the MPI configure found, so that libshardpipe never
# depends on MPI; and examples/heat3d, which shows it.
EXTRA_DIST += include/shardpipe_mpi.h src/mpi.c examples/heat3d.c \
	shardpipe-mpi.pc.in doc/shardpipe_mpi.3
DISTCLEANFILES += shardpipe-mpi.pc
if HAVE_MPI
lib_LTLIBRARIES += libshardpipe-mpi.la
include_HEADERS += include/shardpipe_mpi.h
pkgconfig_DATA += shardpipe-mpi.pc
man_MANS = doc/shardpipe_mpi.3
libshardpipe_mpi_la_SOURCES = src/mpi.c
libshardpipe_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) -DSHARDPIPE_BUILDING_LIBRARY
libshardpipe_mpi_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(MPI_CFLAGS)
libshardpipe_mpi_la_LIBADD = libshardpipe.la $(MPI_LIBS)
libshardpipe_mpi_la_LDFLAGS = -version-info $(SHARDPIPE_LT_VERSION) -no-undefined

noinst_PROGRAMS += examples/heat3d
examples_heat3d_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
examples_heat3d_LDADD = libshardpipe-mpi.la libshardpipe.la $(MPI_LIBS) -lm
endif
