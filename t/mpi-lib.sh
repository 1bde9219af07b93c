# mpi-lib.sh - sourced by t/mpi*.sh after t/lib.sh: what an MPI test needs
# before it runs anything.
#
#   mpi_need     skip the whole test, with the reason, unless configure
#                built libshardpipe-mpi, the library carries no sanitizer
#                (the programs, built by each MPI's mpicc, could not load
#                its runtime first) and at least one MPI is installed;
#                $flavors lists those found (mpich, openmpi: each with its
#                mpicc.F and mpiexec.F), and the environment lets both
#                run as root, oversubscribed, on this host alone
#   mpirun_ FLAVOR N ARGS...
#                ARGS under FLAVOR's mpiexec with N ranks, 60 s at most
mpi_need() {
	[ -f "${top_builddir:-.}/.libs/libshardpipe-mpi.so" ] ||
		skip_all "configure built no libshardpipe-mpi (--with-mpi=no, or no MPI found)"
	case "${SHARDPIPE_SANITIZER:-}" in
	?*) skip_all "built with $SHARDPIPE_SANITIZER, which the MPI programs (built by mpicc) cannot load" ;;
	esac
	flavors=
	for f in mpich openmpi; do
		command -v "mpicc.$f" > /dev/null 2>&1 &&
			command -v "mpiexec.$f" > /dev/null 2>&1 &&
			flavors="$flavors $f"
	done
	[ -n "$flavors" ] || skip_all "neither mpicc.mpich+mpiexec.mpich nor mpicc.openmpi+mpiexec.openmpi in PATH"
	# Open MPI refuses root and more ranks than cores without these.
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
	# MPICH: no network lookups, shared memory within the host.
	export HYDRA_LAUNCHER=fork
}

mpirun_() {
	_f=$1 _n=$2
	shift 2
	case $_f in
	openmpi) timeout 60 "mpiexec.$_f" --allow-run-as-root --oversubscribe -n "$_n" "$@" ;;
	*) timeout 60 "mpiexec.$_f" -n "$_n" "$@" ;;
	esac
}
