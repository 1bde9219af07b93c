#!/bin/sh
# man-example.sh - the EXAMPLE of shardpipe(3) is t/man-example.c, letter
# for letter once roff's escapes are undone, and that program (built by
# make check against the installed-to-be libshardpipe) runs and writes a
# store that verifies.
. "${top_srcdir:-.}/t/lib.sh"
SP=${SHARDPIPE:-./shardpipe}
man="${top_srcdir:-.}/doc/shardpipe.3"
prog="${top_builddir:-.}/t/man-example"
[ -f "$man" ] || skip_all "doc/shardpipe.3 not found"

scratch manex
plan 4

# From ".SS Program source" to the end of its .EX block; \e is a
# backslash and \- a hyphen in roff.
awk '/^\.SS Program source/ { on = 1; next }
     on && /^\.EX/ { inex = 1; next }
     inex && /^\.EE/ { exit }
     inex' "$man" | sed -e 's/\\-/-/g' -e 's/\\e/\\/g' > "$tmp/example.c"
[ -s "$tmp/example.c" ]
ok $? "shardpipe(3) has a program in its EXAMPLE section"
diff -u "${top_srcdir:-.}/t/man-example.c" "$tmp/example.c" > "$tmp/diff"
st=$?
ok $st "it is t/man-example.c, the program make check builds"
[ $st -eq 0 ] || sed 's/^/# /' "$tmp/diff"

if [ -x "$prog" ]; then
	"$prog" "$tmp/example.zarr" > "$tmp/out" 2>&1
	st=$?
	ok $st "the example runs"
	sed 's/^/# /' "$tmp/out"
	if [ -x "$SP" ]; then
		"$SP" verify "$tmp/example.zarr" > "$tmp/out" 2>&1
		ok $? "and writes a store that verifies"
		sed 's/^/# /' "$tmp/out"
	else
		skip 1 "shardpipe program not built"
	fi
else
	skip 2 "t/man-example not built"
fi
done_testing
