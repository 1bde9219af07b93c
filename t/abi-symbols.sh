#!/bin/sh
# abi-symbols.sh - libshardpipe.so exports the public API and nothing else:
# every defined dynamic symbol starts with shardpipe_, and every function
# declared SHARDPIPE_API in include/shardpipe.h is among them.
. "${top_srcdir:-.}/t/lib.sh"
mk_var() { sed -n "s/^$1 = //p" "${top_builddir:-.}/Makefile"; }
lib="${top_builddir:-.}/.libs/libshardpipe.so"
[ -f "$lib" ] || skip_all "no shared library built (.libs/libshardpipe.so)"
# libtool's NM (a cross nm for a cross build), else nm.
NM=$(mk_var NM)
NM=${NM:-nm}
$NM -D --defined-only "$lib" > /dev/null 2>&1 ||
	skip_all "$NM cannot read the dynamic symbol table"

scratch abi
plan 4

# "ADDRESS TYPE NAME"; symbol versions (NAME@@VER) are not expected.
$NM -D --defined-only "$lib" | awk 'NF >= 3 { print $2, $3 }' |
	sort -u > "$tmp/defined"
awk '{ print $2 }' "$tmp/defined" | grep -v '^shardpipe_' > "$tmp/foreign"
# Linkers may define these in every shared object.
grep -v -x -e _init -e _fini -e __bss_start -e _edata -e _end \
	"$tmp/foreign" > "$tmp/stray"
ok_empty "$tmp/stray" "only shardpipe_* symbols are exported" \
	"exported without the shardpipe_ prefix:"

# Exported objects (D, B, R) would tie the ABI to their layout.
awk '$1 !~ /^[Ti]$/ && $2 ~ /^shardpipe_/' "$tmp/defined" > "$tmp/objects"
ok_empty "$tmp/objects" "only functions are exported"

# The header's SHARDPIPE_API functions: the name before the first '('.
sed -n '/^SHARDPIPE_API/,/;/p' "${top_srcdir:-.}/include/shardpipe.h" |
	tr '\n' ' ' | tr ';' '\n' |
	sed -n 's/.*[ *]\(shardpipe_[a-z0-9_]*\)[ ]*(.*/\1/p' |
	sort -u > "$tmp/declared"
count=$(wc -l < "$tmp/declared")
[ "$count" -ge 20 ]
ok $? "the header declares the API ($count functions)"
awk '{ print $2 }' "$tmp/defined" | sort -u > "$tmp/names"
comm -23 "$tmp/declared" "$tmp/names" > "$tmp/missing"
ok_empty "$tmp/missing" "every declared function is exported" "missing:"
done_testing
