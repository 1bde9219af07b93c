#!/bin/sh
# cuda-kernels.sh - the cuda plugin's fat binary holds every kernel of
# backends/kernels/kernel-list.h for every target configure chose: an
# image (ELF) per sm_XX and PTX per compute_XX, so no GPU meets a plugin
# missing its code.  Reads the .nv_fatbin section (objcopy) and walks its
# entries; configure asks nvcc for uncompressed images, so the names can
# be read without cuobjdump.
# A plugin that configure built but whose fat binary is missing, empty or
# unreadable is a failure, not a skip.
. "${top_srcdir:-.}/t/lib.sh"
plugin="${top_builddir:-.}/.libs/backend-cuda.so"
backend_built cuda ||
	skip_all "the cuda backend is not built (configure found no cuda)"
[ -f "$plugin" ] || bail_out "cuda is built, but $plugin is missing"
[ -n "$SHARDPIPE_NVCC_GENCODE" ] ||
	skip_all "SHARDPIPE_NVCC_GENCODE not set (run through make check)"
command -v objcopy > /dev/null 2>&1 || skip_all "objcopy not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-cudak-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
objcopy -O binary --only-section=.nv_fatbin "$plugin" "$tmp/fatbin" \
	2> "$tmp/err" && [ -s "$tmp/fatbin" ] ||
	bail_out "no .nv_fatbin section in $plugin: $(cat "$tmp/err")"
kernels=$(sed -n 's/^[	 ]*X(\(sp_[a-z0-9_]*\),.*/\1/p' \
	"${top_srcdir:-.}/backends/kernels/kernel-list.h")
[ -n "$kernels" ] || bail_out "no kernels found in kernel-list.h"
want=$(echo "$SHARDPIPE_NVCC_GENCODE" | tr ' ' '\n' |
	sed -n 's/^arch=compute_[0-9]*,code=\(sm_[0-9]*\|compute_[0-9]*\)$/\1/p' |
	sort -u)

# One line per entry: "sm_XX NAME..." for an image, "compute_XX NAME..."
# for PTX, listing the kernels of the list found in it.  Fat binary
# layout: a header (magic 0xBA55ED50, u16 version, u16 header size, u64
# size of the entries), then entries (u16 kind 1 = PTX, 2 = ELF; u32
# header size at 4; u64 payload size at 8; u32 architecture at 28).
perl -e '
	my ($file, @names) = @ARGV;
	open(my $fh, "<:raw", $file) or die "$file: $!\n";
	local $/; my $d = <$fh>;
	my $pos = 0;
	while ($pos + 16 <= length($d)) {
		my ($magic, $ver, $hsz, $size) = unpack("V v v Q<", substr($d, $pos, 16));
		last unless $magic == 0xBA55ED50;
		my ($e, $end) = ($pos + $hsz, $pos + $hsz + $size);
		while ($e + 32 <= $end) {
			my ($kind, $ehs, $psz) = unpack("v x2 V Q<", substr($d, $e, 16));
			my $arch = unpack("V", substr($d, $e + 28, 4));
			my $p = substr($d, $e + $ehs, $psz);
			my @found;
			if ($kind == 1) {
				@found = grep { $p =~ /\.entry\s+\Q$_\E\s*\(/ } @names;
				print "compute_$arch @found\n";
			} elsif ($kind == 2) {
				print("compressed_$arch\n"), next
					unless substr($p, 0, 4) eq "\x7fELF";
				@found = grep { $p =~ /[\0.]\Q$_\E\0/ } @names;
				print "sm_$arch @found\n";
			}
			$e += $ehs + $psz;
		}
		$pos = ($end + 7) & ~7;
	}' "$tmp/fatbin" $kernels > "$tmp/entries" 2> "$tmp/err"
[ -s "$tmp/entries" ] ||
	bail_out "the fat binary holds no entry: $(cat "$tmp/err")"
grep -q '^compressed_' "$tmp/entries" &&
	bail_out "the images are compressed (nvcc without --no-compress)"

plan $(($(echo "$want" | wc -l) + 1))
sed 's/^/# /' "$tmp/entries"
kernels_line=$(echo $kernels)
for target in $want; do
	got=$(grep "^$target " "$tmp/entries" | head -1 | cut -d' ' -f2-)
	is "$got" "$kernels_line" "$target holds every kernel"
done
n=$(wc -l < "$tmp/entries")
is "$n" "$(echo "$want" | wc -l)" "the fat binary holds the configured targets and no other"
done_testing
