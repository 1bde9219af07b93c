# The MPI writer (doc/design.md §31): t/mpi.sh builds t/mpi-write.c and
# src/mpi.c with each MPI's compiler it finds (MPICH's mpicc.mpich, Open
# MPI's mpicc.openmpi) and runs them under that MPI's mpiexec; it skips
# when configure built no libshardpipe-mpi.  t/mpi-s3.sh writes an s3://
# store with the first of them, against moto.
TESTS += t/mpi.sh t/mpi-s3.sh
EXTRA_DIST += t/mpi.sh t/mpi-s3.sh t/mpi-lib.sh t/mpi-write.c t/python/mpi_check.py \
	t/python/heat3d_check.py bench/mpi_scaling.sh
if HAVE_MPI
# The default MPI's build of the test program, so that `make check`
# compiles it against the installed-style library too.
check_PROGRAMS += t/mpi-write
t_mpi_write_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
t_mpi_write_LDADD = libshardpipe-mpi.la libshardpipe.la $(MPI_LIBS)
endif
