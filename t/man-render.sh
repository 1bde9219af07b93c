#!/bin/sh
# man-render.sh - the man pages render without a single warning: with groff
# (-ww: every warning; -z: no output), and, where installed, through
# mandoc's linter, which also knows the man(7) conventions.
. "${top_srcdir:-.}/t/lib.sh"
pages="doc/shardpipe.1 doc/shardpipe.3 doc/shardpipe_mpi.3"
have_groff=0 have_mandoc=0
command -v groff > /dev/null 2>&1 && have_groff=1
command -v mandoc > /dev/null 2>&1 && have_mandoc=1
[ $have_groff = 1 ] || [ $have_mandoc = 1 ] ||
	skip_all "neither groff nor mandoc is installed (Debian: groff-base)"

scratch man
plan 9

for page in $pages; do
	src="${top_srcdir:-.}/$page"
	if [ $have_groff = 1 ]; then
		# -t: shardpipe.3 holds a table.  Warnings go to stderr.
		groff -ww -z -t -man "$src" > "$tmp/out" 2>&1
		st=$?
		[ $st -eq 0 ] && [ ! -s "$tmp/out" ]
		ok $? "groff renders $page without warnings"
		sed 's/^/# /' "$tmp/out"
	else
		skip 1 "groff is not installed"
	fi
	if [ $have_mandoc = 1 ]; then
		mandoc -T lint -W warning "$src" > "$tmp/out" 2>&1
		ok $? "mandoc -T lint finds nothing in $page"
		sed 's/^/# /' "$tmp/out"
	else
		skip 1 "mandoc is not installed"
	fi
	# The page names the version being built (configure's).
	version=$(sed -n 's/^VERSION = //p' "${top_builddir:-.}/Makefile")
	grep -q "^\.TH SHARDPIPE\(_MPI\)\{0,1\} [13] [0-9-]* \"shardpipe $version\"" "$src"
	ok $? "$page is marked shardpipe $version"
done
done_testing
