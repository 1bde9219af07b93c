#!/bin/sh
# mpi-s3.sh - the MPI writer (doc/design.md §31) into an s3:// store,
# against a real S3-compatible server (moto on 127.0.0.1): 4 ranks, each
# owning an uneven box of every step's shards, write the objects of the
# same array as one ordinary stream writes to a directory (t/mpi-write
# ref), byte for byte and key for key (no claim or temporary left), and
# `shardpipe cat` of the store gives that directory's array.  One MPI, the
# first found (t/mpi.sh runs both against directories).
. "${top_srcdir:-.}/t/lib.sh"
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
. "$top_srcdir/t/mpi-lib.sh"
mpi_need
flavor=$(echo $flavors | cut -d' ' -f1)
. "$top_srcdir/t/s3-lib.sh"
s3_need
test_seed
s3_start bkt

plan 5

# 8 steps of 32 x 96 x 80 float32, shards of 4 steps by 32^3 (edge shards
# in y and x), as t/mpi.sh.
T=8 Z=32 Y=96 X=80
prog=$tmp/mpi-write
"mpicc.$flavor" -O2 -I"$top_srcdir/include" -o "$prog" \
	"$top_srcdir/t/mpi-write.c" "$top_srcdir/src/mpi.c" \
	-L"$top_builddir/.libs" -lshardpipe \
	-Wl,-rpath,"$(cd "$top_builddir/.libs" && pwd)" 2> "$tmp/cc.err"
ok_shown $? "$flavor: t/mpi-write.c and src/mpi.c build with mpicc.$flavor" "$tmp/cc.err"
"$prog" ref "$tmp/ref" "$seed" $T $Z $Y $X 0 2> "$tmp/ref.err"
ok_shown $? "the reference: one ordinary stream into a directory" "$tmp/ref.err"
mpirun_ "$flavor" 4 "$prog" write s3://bkt/mpi "$seed" $T $Z $Y $X 2 2 uneven 0 \
	> "$tmp/write.log" 2>&1
ok_shown $? "$flavor: mpiexec -n 4, 2x2 uneven, into s3://bkt/mpi" "$tmp/write.log"
is "$(s3_admin tree bkt mpi "$tmp/ref" 2>&1)" same \
	"every object is the reference's file, byte for byte, and there is no other"
"$SP" cat "$tmp/ref" > "$tmp/ref.raw" 2> "$tmp/cat.err" &&
	"$SP" cat s3://bkt/mpi 2>> "$tmp/cat.err" | cmp -s - "$tmp/ref.raw"
ok_shown $? "shardpipe cat of the store gives the reference's array" "$tmp/cat.err"
done_testing
