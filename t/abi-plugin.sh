#!/bin/sh
# abi-plugin.sh - plugin discovery through SHARDPIPE_PLUGIN_PATH: a plugin
# built for another backend ABI is refused with both versions named, one
# whose dependency is missing is reported with the loader's (dlerror)
# message, one without the entry point is named as such, one cut short is
# refused as truncated (it would crash dlopen's caller), and in every case
# the cpu backend still works.  The fake plugins stand in for backend-cuda.so.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
fakes="${top_builddir:-.}/t"
for f in .libs/plugin-wrong-abi.so .libs/plugin-broken.so plugin-dep-stub.so; do
	[ -f "$fakes/$f" ] || skip_all "test plugin $f not built"
done
abi=$(sed -n 's/^#define SHARDPIPE_BACKEND_ABI \([0-9]*\).*/\1/p' \
	"${top_srcdir:-.}/src/backend.h")
[ -n "$abi" ] || skip_all "SHARDPIPE_BACKEND_ABI not found in src/backend.h"

scratch plugin
test_seed
plan 18
mkdir "$tmp/wrong" "$tmp/broken" "$tmp/noentry" "$tmp/empty"
cp "$fakes/.libs/plugin-wrong-abi.so" "$tmp/wrong/backend-cuda.so"
cp "$fakes/.libs/plugin-broken.so" "$tmp/broken/backend-cuda.so"
cp "$fakes/plugin-dep-stub.so" "$tmp/noentry/backend-cuda.so"
random_bytes $((6 * 20 * 2)) "$tmp/in.raw"

# cpu_works DIR LABEL: write and verify a small store with the cpu backend
# and with auto, the plugin directory set to DIR.
cpu_works() {
	rm -rf "$tmp/c.zarr" "$tmp/a.zarr"
	SHARDPIPE_PLUGIN_PATH=$1 "$SP" write --shape 6,20 --chunk 2,8 \
		--shard 2,2 --dtype uint16 --backend cpu --input "$tmp/in.raw" \
		"$tmp/c.zarr" 2> "$tmp/err" &&
	SHARDPIPE_PLUGIN_PATH=$1 "$SP" verify "$tmp/c.zarr" \
		--against "$tmp/in.raw" > /dev/null 2>> "$tmp/err"
	ok $? "$2: the cpu backend writes and verifies"
	[ -s "$tmp/err" ] && sed 's/^/# /' "$tmp/err"
	SHARDPIPE_PLUGIN_PATH=$1 "$SP" write --shape 6,20 --chunk 2,8 \
		--dtype uint16 --backend auto --input "$tmp/in.raw" \
		"$tmp/a.zarr" 2> "$tmp/err"
	ok $? "$2: auto still finds a backend"
	[ -s "$tmp/err" ] && sed 's/^/# /' "$tmp/err"
}

# A plugin built for another ABI.
SHARDPIPE_PLUGIN_PATH=$tmp/wrong "$SP" backends > "$tmp/out" 2>&1
ok $? "backends exits 0 beside a plugin of another ABI"
sed 's/^/# /' "$tmp/out"
want="built for backend ABI $((abi + 1000)), this library has ABI $abi"
grep -q "^cuda: unusable: .*$want" "$tmp/out"
ok $? "backends names both ABI versions ($want)"
grep -q "^cpu: [^u]" "$tmp/out"
ok $? "backends lists cpu as usable"
SHARDPIPE_PLUGIN_PATH=$tmp/wrong "$SP" write --shape 6,20 --chunk 2,8 \
	--dtype uint16 --backend cuda --input "$tmp/in.raw" "$tmp/x.zarr" \
	2> "$tmp/err"
is $? 2 "asking for the refused backend exits 2"
grep -q "$want" "$tmp/err"
ok $? "and the message names both ABI versions"
test ! -e "$tmp/x.zarr"
ok $? "and nothing was created"
cpu_works "$tmp/wrong" "wrong ABI"

# A plugin whose dependency cannot be found: dlerror's text is shown.
SHARDPIPE_PLUGIN_PATH=$tmp/broken "$SP" backends > "$tmp/out" 2>&1
ok $? "backends exits 0 beside a plugin that cannot load"
sed 's/^/# /' "$tmp/out"
grep -q "^cuda: unusable: .*libshardpipe-test-absent\.so\.1: cannot open shared object" \
	"$tmp/out"
ok $? "backends shows the loader's message naming the missing library"
cpu_works "$tmp/broken" "missing dependency"

# A shared object without the entry point.
SHARDPIPE_PLUGIN_PATH=$tmp/noentry "$SP" backends > "$tmp/out" 2>&1
grep -q "^cuda: unusable: .*no entry point shardpipe_backend_plugin" "$tmp/out"
ok $? "a library without the entry point is named as such"
sed 's/^/# /' "$tmp/out"

# A plugin cut short (a copy or install interrupted): dlopen would map it
# and die of SIGBUS on the missing pages; it is refused by name first.
mkdir "$tmp/cut"
head -c 4096 "$fakes/.libs/plugin-wrong-abi.so" > "$tmp/cut/backend-cuda.so"
SHARDPIPE_PLUGIN_PATH=$tmp/cut "$SP" backends > "$tmp/out" 2>&1
st=$?
grep -q "^cuda: unusable: $tmp/cut/backend-cuda.so: truncated (4096 bytes" \
	"$tmp/out" && [ $st -eq 0 ]
ok $? "a truncated plugin is named as truncated, and backends exits 0 (exit $st)"
sed 's/^/# /' "$tmp/out"

# Directories without the plugin, or missing altogether, are passed over.
SHARDPIPE_PLUGIN_PATH=$tmp/empty:$tmp/absent:$tmp/wrong "$SP" backends \
	> "$tmp/out" 2>&1
grep -q "^cuda: unusable: $tmp/wrong/backend-cuda.so: $want" "$tmp/out"
ok $? "SHARDPIPE_PLUGIN_PATH is searched past directories without the plugin"

# The build tree's own opencl plugin, where built, is found on the path
# (whether or not an OpenCL platform is usable here).  A build with opencl
# whose plugin file is missing fails here.
if backend_built opencl ||
	[ -f "${top_builddir:-.}/.libs/backend-opencl.so" ]; then
	SHARDPIPE_PLUGIN_PATH=$tmp/wrong:${top_builddir:-.}/.libs "$SP" backends \
		> "$tmp/out" 2>&1
	grep '^opencl:' "$tmp/out" | grep -q -v 'not found'
	ok $? "the build tree's opencl plugin loads from SHARDPIPE_PLUGIN_PATH"
	grep '^opencl:' "$tmp/out" | sed 's/^/# /'
else
	skip 1 "the opencl backend is not built (configure found no opencl)"
fi

# Unset, or as an empty entry, the uninstalled program's default directory
# is its build tree's .libs, found from where its library was loaded and
# not compiled in (doc/design.md §5.2).
if backend_built opencl ||
	[ -f "${top_builddir:-.}/.libs/backend-opencl.so" ]; then
	env -u SHARDPIPE_PLUGIN_PATH "$SP" backends > "$tmp/out" 2>&1
	grep '^opencl:' "$tmp/out" | grep -q -v 'not found'
	ok $? "unset, the build tree's opencl plugin is found"
	SHARDPIPE_PLUGIN_PATH=$tmp/empty: "$SP" backends > "$tmp/out" 2>&1
	grep '^opencl:' "$tmp/out" | grep -q -v 'not found'
	ok $? "an empty entry stands for the build tree's .libs"
else
	skip 2 "the opencl backend is not built (configure found no opencl)"
fi
done_testing
