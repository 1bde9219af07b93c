#!/bin/sh
# cuda-conform.sh - conformance of the cuda backend (doc/design.md §18
# "Conformance levels"): for codecs none, gzip and zstd at several levels
# and local sizes, on a 3-d array with edge chunks and on the default
# geometry, `shardpipe conform` must find that every store decodes to the
# input (L1) and that the cuda store is byte-identical to reference's and,
# where an OpenCL device is usable, to opencl's (L2).  Without a CUDA
# device the whole test is a skip carrying the probe's reason; a built cuda
# (or opencl) backend unusable for another reason fails (backend_usable).
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
export SHARDPIPE_PLUGIN_PATH="${top_builddir:-.}/.libs"
backend_usable cuda || skip_all "$backend_why"
line=$("$SP" backends | grep '^cuda: ')

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-cudac-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
test_seed
diag "$line"
others=reference
backend_usable opencl && others=reference,opencl
opencl_why=$backend_why
codecs="none gzip:1 gzip:6 zstd:1 zstd:3 zstd:9"
locals="1 64 256"
plan $((3 * 6 * 3 + 3))

# same A B FILE: conform reported A and B byte-identical.
same() {
	grep -q "^$1 ~ $2  *identical" "$3" || grep -q "^$2 ~ $1  *identical" "$3"
}

for codec in $codecs; do
	for local in $locals; do
		SHARDPIPE_KERNEL_DEBUG=local=$local "$SP" conform \
			--backends "cuda,$others" --codec "$codec" \
			--seed "$seed" --shape 0,19,23 --chunk 4,5,7 \
			--shard 2,3,2 --dtype float32 --rows 17 \
			> "$tmp/out" 2>&1
		rc=$?
		ok $rc "$codec local $local: conform passes (every store decodes to the input)"
		[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/out"
		same cuda reference "$tmp/out"
		ok $? "$codec local $local: cuda = reference, byte for byte"
		if [ "$others" = reference,opencl ]; then
			same cuda opencl "$tmp/out"
			ok $? "$codec local $local: cuda = opencl, byte for byte"
		else
			skip 1 "$opencl_why"
		fi
	done
done

# The default geometry: several batches, both buffer sets of the driver.
for codec in none zstd:3 gzip:6; do
	"$SP" conform --backends "cuda,$others" --codec "$codec" \
		--seed "$seed" > "$tmp/out" 2>&1 && same cuda reference "$tmp/out"
	ok $? "$codec, default geometry: cuda decodes and equals reference"
done
done_testing
