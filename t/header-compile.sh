#!/bin/sh
# header-compile.sh - the installed header compiles on its own, cleanly,
# as C99, C11 and C++ (its extern "C" block), with every warning an error;
# and a C++ program can call the library through it.  So does
# shardpipe_mpi.h, with MPI's flags, where the build has MPI.
. "${top_srcdir:-.}/t/lib.sh"
mk_var() { sed -n "s/^$1 = //p" "${top_builddir:-.}/Makefile"; }
CC=$(mk_var CC)
CC=${CC:-cc}
CXX=${CXX:-c++}
header="${top_srcdir:-.}/include/shardpipe.h"
[ -f "$header" ] || skip_all "include/shardpipe.h not found"

scratch header
plan 12

# A translation unit that includes only the header and uses each type.
cat > "$tmp/use.c" <<'SRC'
#include <shardpipe.h>
int use_header(void);
int use_header(void)
{
	shardpipe_desc d;
	shardpipe_sink k;
	shardpipe_stats st;
	shardpipe_array_info ai;
	shardpipe_backend_info bi;

	/* The macros that pass sizeof, and the field test. */
	shardpipe_desc_init(&d);
	shardpipe_sink_init(&k);
	if (shardpipe_stream_stats((shardpipe_stream *)0, &st) == 0 ||
	    shardpipe_reader_info((shardpipe_reader *)0, &ai) == 0 ||
	    shardpipe_backend_probe(0, &bi) != 0)
		return -1;
	return d.rank + SHARDPIPE_MAX_RANK + SHARDPIPE_ERR_ABI +
	       (int)sizeof(shardpipe_dim) + SHARDPIPE_HAS_FIELD(&k, metadata) +
	       SHARDPIPE_HAS_FIELD(&bi, detail);
}
SRC
cp "$tmp/use.c" "$tmp/use.cc"
strict="-Wall -Wextra -pedantic -Werror -Wstrict-prototypes \
-Wmissing-prototypes -Wshadow -Wundef"

for std in c99 c11 c17; do
	$CC -std=$std $strict -I"${top_srcdir:-.}/include" -c "$tmp/use.c" \
		-o "$tmp/use-$std.o" 2> "$tmp/err"
	st=$?
	ok $st "the header compiles as $std with -Wall -Wextra -pedantic -Werror"
	[ $st -eq 0 ] || sed 's/^/# /' "$tmp/err"
done
$CC -std=c99 -Wall -Wextra -pedantic -Werror -I"${top_srcdir:-.}/include" \
	-DSHARDPIPE_BUILDING_LIBRARY -c "$tmp/use.c" -o "$tmp/use-lib.o" \
	2> "$tmp/err"
ok $? "and as the library sees it (SHARDPIPE_BUILDING_LIBRARY)"

# Included twice: the guard holds.
printf '#include <shardpipe.h>\n#include <shardpipe.h>\nint x_(void);\n' \
	> "$tmp/twice.c"
$CC -std=c99 $strict -I"${top_srcdir:-.}/include" -c "$tmp/twice.c" \
	-o "$tmp/twice.o" 2> "$tmp/err"
ok $? "including it twice is harmless"

if command -v "$CXX" > /dev/null 2>&1; then
	for std in c++11 c++17; do
		$CXX -std=$std -Wall -Wextra -pedantic -Werror \
			-I"${top_srcdir:-.}/include" -c "$tmp/use.cc" \
			-o "$tmp/use-$std.o" 2> "$tmp/err"
		st=$?
		ok $st "the header compiles as $std with -Wall -Wextra -pedantic -Werror"
		[ $st -eq 0 ] || sed 's/^/# /' "$tmp/err"
	done
	# C linkage: the mangled C++ name would not match the library's.
	nm "$tmp/use-c++11.o" 2> /dev/null | grep -q ' U shardpipe_desc_init_sized$'
	ok $? "C++ sees the functions with C linkage (extern \"C\")"
else
	skip 3 "no C++ compiler ($CXX)"
fi

# shardpipe_mpi.h, installed with libshardpipe-mpi: with MPI's own flags
# (configure's), as C and as C++, its functions of C linkage.  MPI's
# headers as system headers: Open MPI's C++ bindings warn under -Wextra
# themselves.
MPI_CFLAGS=$(mk_var MPI_CFLAGS | sed 's/-I */-isystem /g')
if [ ! -f "${top_builddir:-.}/libshardpipe-mpi.la" ]; then
	skip 4 "configure built no libshardpipe-mpi (--with-mpi=no, or no MPI found)"
elif ! command -v "$CXX" > /dev/null 2>&1; then
	skip 4 "no C++ compiler ($CXX)"
else
	cat > "$tmp/mpi.c" <<'SRC'
#include <shardpipe_mpi.h>
int use_mpi_header(void);
int use_mpi_header(void)
{
	double x, y;

	shardpipe_mpi_times((const shardpipe_mpi_array *)0, &x, &y);
	return shardpipe_mpi_close((shardpipe_mpi_array *)0) +
	       (shardpipe_mpi_message((const shardpipe_mpi_array *)0) != 0);
}
SRC
	cp "$tmp/mpi.c" "$tmp/mpi.cc"
	$CC -std=c99 $strict -I"${top_srcdir:-.}/include" $MPI_CFLAGS \
		-c "$tmp/mpi.c" -o "$tmp/mpi-c99.o" 2> "$tmp/err"
	ok_shown $? "shardpipe_mpi.h compiles as c99 with -Werror" "$tmp/err"
	for std in c++11 c++17; do
		$CXX -std=$std -Wall -Wextra -Werror -I"${top_srcdir:-.}/include" \
			$MPI_CFLAGS -c "$tmp/mpi.cc" -o "$tmp/mpi-$std.o" \
			2> "$tmp/err"
		ok_shown $? "shardpipe_mpi.h compiles as $std with -Werror" \
			"$tmp/err"
	done
	nm "$tmp/mpi-c++11.o" 2> /dev/null | grep -q ' U shardpipe_mpi_close$'
	ok $? "C++ sees shardpipe_mpi.h's functions with C linkage"
fi
done_testing
