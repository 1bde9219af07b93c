#!/bin/sh
# mpi_scaling.sh - strong scaling of the MPI writer (doc/design.md §31.4):
# 1 and 2 ranks writing one array, GB/s, and the share of the time the
# redistribution takes (packing, MPI_Alltoallv, unpacking, and the waits
# in the step's collectives) for an uneven decomposition, next to one
# ordinary stream with one thread (the bound of one core).  Run from a
# build directory with libshardpipe-mpi built:
#
#   ../bench/mpi_scaling.sh [FLAVOR [T Z Y X]]     FLAVOR: openmpi | mpich
#
# The pattern of t/mpi-write.c (a cheap, deterministic fill, timed apart
# and taken out of the figures); zstd level 1, cpu backend, one thread
# per rank.  A shared machine gives indicative figures only.
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(pwd)
f=${1:-openmpi}
T=${2:-32} Z=${3:-64} Y=${4:-256} X=${5:-256}
[ -f "$builddir/.libs/libshardpipe.so" ] || { echo "run from a build directory" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-mpibench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"mpicc.$f" -O2 -I"$srcdir/include" -o "$tmp/mpi-write" "$srcdir/t/mpi-write.c" \
	"$srcdir/src/mpi.c" -L"$builddir/.libs" -lshardpipe -Wl,-rpath,"$builddir/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HYDRA_LAUNCHER=fork
run() { # N PY PX SPLIT
	case $f in
	openmpi) set -- --allow-run-as-root --oversubscribe -n "$1" "$tmp/mpi-write" write "$tmp/o" 1 $T $Z $Y $X "$2" "$3" "$4" 0 ;;
	*) set -- -n "$1" "$tmp/mpi-write" write "$tmp/o" 1 $T $Z $Y $X "$2" "$3" "$4" 0 ;;
	esac
	rm -rf "$tmp/o"
	"mpiexec.$f" "$@"
}
# Shards of 4 steps x 64 x 128 x 128 (8 a step of the default array):
# MPI_WRITE_CHUNKS_PER_SHARD=2,2,2,2 gives t/mpi.sh's 32^3 (128 a step),
# where one region stream per shard costs most of the time (design §31.1).
export MPI_WRITE_CHUNKS_PER_SHARD=${MPI_WRITE_CHUNKS_PER_SHARD:-2,4,8,8}
echo "# $f, $T steps of ${Z}x${Y}x$X float32, chunks per shard $MPI_WRITE_CHUNKS_PER_SHARD"
start=$(date +%s.%N)
"$tmp/mpi-write" ref "$tmp/o" 1 $T $Z $Y $X 0
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "one ordinary stream, one thread (with its fill): %.3f s\n", e - s }'
run 1 1 1 even
run 2 2 1 even
run 2 2 1 uneven
run 2 1 2 uneven
