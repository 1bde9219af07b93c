#!/bin/sh
# cuda-resources.sh - what the kernels cost a GPU, read from ptxas (issue
# 26): the kernel source is compiled for sm_90 with -Xptxas -v, and
#   - each encoder (every kernel entered through SP_ENCODER_ENTRY: the
#     gzip, zstd and blosc kernels) holds at most 128 registers per
#     work-item and no stack frame (an indexed private array or a spill is
#     local memory: slow, and per thread);
#   - sp_scatter has no stack frame;
#   - sp_reduce (the pyramid's, one output element per work-item on a GPU,
#     doc/design.md §28.2) has no stack frame and at most 128 registers;
#   - every kernel of kernel-list.h is reported.
# The figures of every kernel follow as comments.  Needs no GPU, only the
# nvcc configure found; skips without one.
. "${top_srcdir:-.}/t/lib.sh"
# ptxas's report depends on the kernel source and nvcc alone, not on the
# build tree's flags: the small size (a sanitizer or distcheck tree, after
# the full-size run of the same sources, doc/design.md §18.2) leaves it to
# that run rather than compile the kernels again.
[ "${SHARDPIPE_TEST_SIZE:-full}" != small ] ||
	skip_all "SHARDPIPE_TEST_SIZE=small: ptxas's report is the full-size run's"
[ -n "$SHARDPIPE_NVCC" ] ||
	skip_all "nvcc not configured (configure found no CUDA toolkit)"
[ -x "$SHARDPIPE_NVCC" ] ||
	bail_out "configured nvcc $SHARDPIPE_NVCC is not executable"
src=${top_srcdir:-.}/backends
kernels=$(sed -n 's/^[	 ]*X(\(sp_[a-z0-9_]*\),.*/\1/p' \
	"$src/kernels/kernel-list.h")
[ -n "$kernels" ] || bail_out "no kernels found in kernel-list.h"
encoders=$(sed -n 's/^SP_ENCODER_ENTRY(\(sp_[a-z0-9_]*\)).*/\1/p' \
	"$src"/kernels/*.h)
"$SHARDPIPE_NVCC" --list-gpu-code 2> /dev/null | grep -qx sm_90 ||
	skip_all "$SHARDPIPE_NVCC does not target sm_90"
scratch cudares

# A compile error is a failure, not a skip: the kernels must build.
if ! "$SHARDPIPE_NVCC" -I"$src/kernels" -gencode arch=compute_90,code=sm_90 \
	-Xptxas -v -c -o "$tmp/k.o" "$src/cuda/kernels.cu" \
	> "$tmp/log" 2>&1; then
	echo "Bail out! nvcc failed on the kernels for sm_90:"
	sed 's/^/# /' "$tmp/log"
	exit 1
fi

# One line per kernel: "NAME REGISTERS STACK SPILL_STORES SPILL_LOADS".
# ptxas prints the stack line, then the register line, after naming the
# entry function.
awk '
	/Compiling entry function/ {
		f = $0; sub(/^[^'\'']*'\''/, "", f); sub(/'\''.*/, "", f)
	}
	/bytes stack frame/ { st = $1; ss = $5; sl = $9 }
	/Used [0-9]+ registers/ {
		for (i = 1; i <= NF; i++) if ($i == "Used") r = $(i + 1)
		if (f != "") print f, r, st, ss, sl
		f = ""
	}' "$tmp/log" > "$tmp/res"

plan $(($(echo "$kernels" | wc -l) + 2 * $(echo "$encoders" | wc -l) + 3))
diag "kernel registers stack spill-stores spill-loads (sm_90)"
sed 's/^/#   /' "$tmp/res"
for k in $kernels; do
	grep -q "^$k " "$tmp/res"
	ok $? "ptxas reports $k"
done
field() { awk -v k="$1" -v i="$2" '$1 == k { print $i }' "$tmp/res"; }
for k in $encoders; do
	r=$(field $k 2)
	[ -n "$r" ] && [ "$r" -le 128 ]
	ok $? "$k: ${r:-no} registers, at most 128"
	is "$(field $k 3)" 0 "$k: no stack frame"
done
is "$(field sp_scatter 3)" 0 "sp_scatter: no stack frame"
r=$(field sp_reduce 2)
[ -n "$r" ] && [ "$r" -le 128 ]
ok $? "sp_reduce: ${r:-no} registers, at most 128"
is "$(field sp_reduce 3)" 0 "sp_reduce: no stack frame"
done_testing
