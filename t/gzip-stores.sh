#!/bin/sh
# gzip-stores.sh - whole gzip stores from the kernel backends, every level:
# `shardpipe write` on reference, and on opencl at local sizes 1, 7, 64
# and 256 where it is usable; each store reads back through `shardpipe
# cat` equal to the input; the opencl stores equal reference's file by
# file; Python's gzip module decodes every chunk to what the cpu backend's
# (libdeflate's) chunk decodes to; `shardpipe conform --codec gzip:6`
# passes on every usable backend.  Chunks of 403200 bytes: 99 segments, 13
# blocks before merging, the last partial; rows of smooth, noisy,
# run-length and random content, and a last shard epoch cut short.
. "${top_srcdir:-.}/t/lib.sh"
SP=${SHARDPIPE:-./shardpipe}
[ -x "$SP" ] || skip_all "shardpipe program not built"
command -v perl > /dev/null 2>&1 || skip_all "perl is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-gzip-stores-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
test_seed

rows=20
shape=0,96,700
desc="--shape $shape --chunk 6,96,350 --shard 2,1,2 --dtype uint16"

# Row r of 96 x 700 uint16: smooth with a little noise, 12-bit noise,
# runs of 1..20000 equal values (across segments and blocks), or random.
perl -e 'srand($ARGV[0]); my ($rows, $n) = ($ARGV[1], 96 * 700);
	for my $r (0 .. $rows - 1) {
		my @v; my $k = $r % 4;
		if ($k == 0) {
			@v = map { (($_ % 700) * 3 + int($_ / 700) * 5 +
				    int(rand(4))) & 0xFFFF } 0 .. $n - 1;
		} elsif ($k == 1) {
			@v = map { int(rand(4096)) } 1 .. $n;
		} elsif ($k == 2) {
			while (@v < $n) {
				my $len = 1 + int(rand(20000));
				my $x = int(rand(65536));
				push @v, ($x) x $len;
			}
			$#v = $n - 1;
		} else {
			@v = map { int(rand(65536)) } 1 .. $n;
		}
		print pack("v*", @v);
	}' "$seed" "$rows" > "$tmp/in.raw"

opencl=no
backend_usable opencl && opencl=yes
opencl_why=$backend_why
python=
python_usable 8 gzip && python=$PY
plan 43

# write BACKEND LEVEL DIR: the store of the input at that level.
write() {
	"$SP" write $desc --codec "gzip:$2" --backend "$1" --overwrite \
		--input "$tmp/in.raw" "$3" > "$tmp/write.log" 2>&1
}

# readback DIR: `shardpipe cat` gives the input back.
readback() {
	"$SP" cat "$1" -o "$tmp/back.raw" > "$tmp/cat.log" 2>&1 &&
		cmp -s "$tmp/back.raw" "$tmp/in.raw"
}

for level in 0 1 2 3 4 5 6 7 8 9; do
	ref=$tmp/ref-$level.zarr
	write reference $level "$ref"
	st=$?
	[ $st -eq 0 ] && readback "$ref"
	ok $? "gzip:$level: reference store reads back through shardpipe cat"
	[ $st -eq 0 ] || sed 's/^/# /' "$tmp/write.log"

	if [ $opencl = yes ]; then
		bad=
		for local in 1 7 64 256; do
			out=$tmp/ocl-$level-$local.zarr
			if ! SHARDPIPE_KERNEL_DEBUG=local=$local write opencl \
				$level "$out"; then
				bad="$bad local $local: write failed;"
				sed 's/^/# /' "$tmp/write.log"
			elif ! diff -r "$ref" "$out" > "$tmp/diff.log" 2>&1; then
				bad="$bad local $local: differs;"
				sed 's/^/# /' "$tmp/diff.log" | head -5
			elif ! readback "$out"; then
				bad="$bad local $local: cat differs;"
			fi
			rm -rf "$out"
		done
		[ -z "$bad" ]
		ok $? "gzip:$level: opencl stores at local sizes 1, 7, 64, 256 equal reference's, and read back"
		[ -z "$bad" ] || diag "$bad"
	else
		skip 1 "$opencl_why"
	fi

	if [ -n "$python" ]; then
		cpu=$tmp/cpu-$level.zarr
		write cpu $level "$cpu" &&
			"$python" "${top_srcdir:-.}/t/python/gzip_members.py" \
				"$ref" "$cpu" > "$tmp/py.log" 2>&1
		ok $? "gzip:$level: Python's gzip decodes every chunk as it decodes libdeflate's"
		sed 's/^/# /' "$tmp/py.log"
		rm -rf "$cpu"
	else
		skip 1 "$python_why"
	fi

	# The chunks really are gzip members of the kernel's make: level 0
	# stores, the others compress this input.
	size=$(du -sb "$ref" | cut -f1)
	insize=$(wc -c < "$tmp/in.raw")
	if [ $level -eq 0 ]; then
		[ "$size" -gt "$insize" ]
		ok $? "gzip:0 stores: $size bytes for $insize"
	else
		[ "$size" -lt "$insize" ]
		ok $? "gzip:$level compresses: $size bytes for $insize"
	fi
	rm -rf "$ref"
done

# conform: L1 decode on every usable backend, L2 between kernel backends.
for level in 1 9; do
	"$SP" conform --codec gzip:$level $desc --rows 13 > "$tmp/out" 2>&1
	ok $? "conform --codec gzip:$level passes on every usable backend"
	sed 's/^/# /' "$tmp/out"
done

# The smallest chunk: one byte, through the kernel and back.
head -c 1 "$tmp/in.raw" > "$tmp/one.raw"
"$SP" write --shape 0 --chunk 1 --dtype uint8 --codec gzip:6 \
	--backend reference --input "$tmp/one.raw" "$tmp/tiny.zarr" \
	> /dev/null 2>&1 &&
	"$SP" cat "$tmp/tiny.zarr" -o "$tmp/tiny.raw" &&
	cmp -s "$tmp/tiny.raw" "$tmp/one.raw"
ok $? "a one-byte chunk reads back"
done_testing
