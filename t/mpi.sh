#!/bin/sh
# mpi.sh - the MPI writer (doc/design.md §31) under MPICH and Open MPI both:
# every decomposition of one time step's (y, x) over the ranks (2x2, 4x1,
# uneven, a rank with an empty box, 1 and 2 ranks) gives files
# byte-identical to one ordinary stream writing the same array
# (t/mpi-write ref), read back equal to the pattern by zarr-python; steps
# whose boxes overlap, leave a gap or lack data are refused on every rank.
# t/mpi-write.c and src/mpi.c are built here with each MPI's own compiler
# (mpicc.mpich, mpicc.openmpi) against the built libshardpipe, so that both
# MPIs really run, whichever one configure linked libshardpipe-mpi with.
. "${top_srcdir:-.}/t/lib.sh"
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
. "$top_srcdir/t/mpi-lib.sh"
mpi_need
scratch mpi
test_seed
python_ok=0
python_usable 8 numpy zarr && python_ok=1
[ $python_ok = 1 ] || diag "zarr-python checks skipped: $python_why"

# The array: 8 steps of 32 x 96 x 80 float32 (7.9 MB), shards of 4 steps
# by 32^3 (edge shards in y and x), each rank owning one box of them.
T=8 Z=32 Y=96 X=80
runs="4:2:2:even:0 4:2:2:uneven:0 4:4:1:uneven:0 4:1:4:uneven:1 1:1:1:even:0
2:2:1:uneven:0 2:1:2:uneven:1 3:3:1:empty:0 5:5:1:uneven:0"
nruns=$(echo $runs | wc -w)
flavor_count=$(echo $flavors | wc -w)
plan $((flavor_count * (1 + 2 * nruns + 3) + 2 + 1 + 1 + 2))

# The references, once: one ordinary stream, unbounded and bounded.
built=
for f in $flavors; do
	mkdir -p "$tmp/$f"
	if "mpicc.$f" -O2 -I"$top_srcdir/include" -o "$tmp/$f/mpi-write" \
		"$top_srcdir/t/mpi-write.c" "$top_srcdir/src/mpi.c" \
		-L"$top_builddir/.libs" -lshardpipe \
		-Wl,-rpath,"$(cd "$top_builddir/.libs" && pwd)" 2> "$tmp/$f/cc.err"; then
		ok 0 "$f: t/mpi-write.c and src/mpi.c build with mpicc.$f"
		built="$built $f"
	else
		ok 1 "$f: t/mpi-write.c and src/mpi.c build with mpicc.$f"
		sed 's/^/# /' "$tmp/$f/cc.err"
	fi
done
first=$(echo $built | cut -d' ' -f1)
ref_prog=${first:+$tmp/$first/mpi-write}
oldifs=$IFS
checked=
ok_ref=1
[ -n "$ref_prog" ] && "$ref_prog" ref "$tmp/ref0" "$seed" $T $Z $Y $X 0 2> "$tmp/ref.err" &&
	"$ref_prog" ref "$tmp/ref1" "$seed" $T $Z $Y $X 1 2>> "$tmp/ref.err" && ok_ref=0
ok $ok_ref "references: one ordinary stream, unbounded and bounded dim 0"
sed 's/^/# /' "$tmp/ref.err" 2> /dev/null
if [ $python_ok = 1 ] && [ $ok_ref = 0 ]; then
	ok_py=0
	"$PY" "$top_srcdir/t/python/mpi_check.py" "$tmp/ref0" "$seed" $T $Z $Y $X > "$tmp/py.err" 2>&1 || ok_py=1
	sed 's/^/# /' "$tmp/py.err"
	ok $ok_py "zarr-python reads the reference equal to the pattern"
else
	skip 1 "zarr-python reads the reference: ${python_why:-no reference}"
fi

for f in $flavors; do
	prog=$tmp/$f/mpi-write
	for r in $runs; do
		IFS=:
		set -- $r
		IFS=$oldifs
		n=$1 py=$2 px=$3 split=$4 bounded=$5
		what="$f: mpiexec -n $n, ${py}x$px $split, dim 0 $( [ "$bounded" = 1 ] && echo bounded || echo unbounded)"
		out=$tmp/$f-$n-$py-$px-$split-$bounded
		if [ ! -x "$prog" ] || [ $ok_ref != 0 ]; then
			skip 2 "$what: no program or no reference"
			continue
		fi
		mpirun_ "$f" "$n" "$prog" write "$out" "$seed" $T $Z $Y $X "$py" "$px" "$split" "$bounded" \
			> "$out.log" 2>&1
		rc=$?
		ok $rc "$what: writes (status $rc)"
		[ $rc = 0 ] || sed 's/^/# /' "$out.log"
		# diff -r also names any file only one side has: a temporary left.
		if diff -r "$tmp/ref$bounded" "$out" > "$out.diff" 2>&1; then
			ok 0 "$what: every file equals the reference's, no temporary left"
		else
			ok 1 "$what: every file equals the reference's, no temporary left"
			head -5 "$out.diff" | sed 's/^/# /'
		fi
		grep '^ranks' "$out.log" | sed 's/^/# /'
		[ "$f$n$split" = "${first}4uneven" ] && [ -z "$checked" ] && checked=$out
	done
	for how in overlap gap null; do
		if [ ! -x "$prog" ]; then
			skip 1 "$f: refuse $how: no program"
			continue
		fi
		mpirun_ "$f" 2 "$prog" refuse "$tmp/$f-refuse-$how" "$how" > "$tmp/refuse.log" 2>&1
		rc=$?
		case $how in
		overlap) why="whose boxes overlap" ;;
		gap) why="whose boxes leave a gap" ;;
		null) why="where rank 1 passes no data" ;;
		esac
		ok $rc "$f: a step $why is refused with INVALID_ARGUMENT on both ranks, the next steps go on"
		sed 's/^/# /' "$tmp/refuse.log"
	done
done
# Shards of a whole step (one box of one shard): 4 ranks, of which 3 own
# nothing and only send (design §31.1).
what="${first:-no MPI}: mpiexec -n 4, shards of the whole step"
if [ -n "$ref_prog" ]; then
	export MPI_WRITE_CHUNKS_PER_SHARD=2,2,6,5
	"$ref_prog" ref "$tmp/ref-one" "$seed" $T $Z $Y $X 0 > "$tmp/one.log" 2>&1 &&
		mpirun_ "$first" 4 "$ref_prog" write "$tmp/one" "$seed" $T $Z $Y $X 2 2 uneven 0 \
			>> "$tmp/one.log" 2>&1
	rc=$?
	unset MPI_WRITE_CHUNKS_PER_SHARD
	ok $rc "$what: writes (status $rc)"
	[ $rc = 0 ] || sed 's/^/# /' "$tmp/one.log"
	diff -r "$tmp/ref-one" "$tmp/one" > "$tmp/one.diff" 2>&1
	rc=$?
	ok $rc "$what: every file equals the reference's"
	head -5 "$tmp/one.diff" | sed 's/^/# /'
else
	skip 2 "$what: no program"
fi
if [ $python_ok = 1 ] && [ -n "${checked:-}" ]; then
	ok_py=0
	"$PY" "$top_srcdir/t/python/mpi_check.py" "$checked" "$seed" $T $Z $Y $X > "$tmp/py.err" 2>&1 || ok_py=1
	sed 's/^/# /' "$tmp/py.err"
	ok $ok_py "zarr-python reads an uneven 4-rank store ($checked) equal to the pattern"
else
	skip 1 "zarr-python reads an MPI store: ${python_why:-no 4-rank store written}"
fi
# examples/heat3d as make built it, under the MPI it was linked with.
heat=$top_builddir/examples/heat3d
case $(ldd "$top_builddir/examples/.libs/heat3d" 2> /dev/null) in
*libmpich*) heat_mpi=mpich ;;
*libmpi.so*) heat_mpi=openmpi ;;
*) heat_mpi= ;;
esac
if [ ! -x "$heat" ] || [ -z "$heat_mpi" ] || ! command -v "mpiexec.$heat_mpi" > /dev/null 2>&1; then
	skip 1 "examples/heat3d: not built, or its MPI's mpiexec not found"
elif [ $python_ok != 1 ]; then
	skip 1 "examples/heat3d against NumPy: $python_why"
else
	mpirun_ "$heat_mpi" 4 "$heat" "$tmp/heat.zarr" 12 24 64 48 > "$tmp/heat.log" 2>&1 &&
		"$PY" "$top_srcdir/t/python/heat3d_check.py" "$tmp/heat.zarr" 12 24 64 48 >> "$tmp/heat.log" 2>&1
	rc=$?
	ok $rc "examples/heat3d, 4 ranks of $heat_mpi: every step equals a serial NumPy stencil"
	sed 's/^/# /' "$tmp/heat.log"
fi
done_testing
