#!/bin/sh
# pkg-config.sh - the build's shardpipe.pc says what a program needs to
# build against the library and, for a static link, everything the
# library links: the optional blosc codec and S3 store exactly when
# configure built them (config.h), so a distribution's static consumer
# does not fail on a missing -lblosc or -lcurl.
. "${top_srcdir:-.}/t/lib.sh"
command -v pkg-config > /dev/null 2>&1 || skip_all "pkg-config not installed"
pc=$top_builddir/shardpipe.pc
[ -f "$pc" ] || bail_out "$pc missing"
scratch pkgconf
export PKG_CONFIG_PATH="$top_builddir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

plan 7

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
is "$(pkg-config --modversion shardpipe 2> "$tmp/err")" "$version" \
	"pkg-config --modversion gives configure's version"
libs=$(pkg-config --libs shardpipe 2> "$tmp/err")
case " $libs " in
*" -lshardpipe "*) r=0 ;;
*) r=1 ;;
esac
ok $r "pkg-config --libs names -lshardpipe ($libs)"
requires=$(pkg-config --print-requires-private shardpipe 2> "$tmp/err" | awk '{ print $1 }' | tr '\n' ' ')
diag "Requires.private: $requires"

# has_module NAME: 0 when Requires.private lists NAME.
has_module() {
	case " $requires" in
	*" $1 "*) return 0 ;;
	esac
	return 1
}
has_module libzstd && has_module libdeflate
ok $? "Requires.private lists libzstd and libdeflate"
for pair in HAVE_BLOSC:blosc HAVE_S3:libcurl; do
	macro=${pair%%:*}
	module=${pair#*:}
	if grep -q "^#define $macro 1" "$top_builddir/config.h"; then
		has_module "$module"
		ok $? "configured with $macro: Requires.private lists $module"
	else
		! has_module "$module"
		ok $? "configured without $macro: Requires.private leaves $module out"
	fi
done
static=$(pkg-config --static --libs shardpipe 2> "$tmp/err")
ok $? "pkg-config --static --libs resolves every private module ($static)"
if grep -q '^#define HAVE_S3 1' "$top_builddir/config.h"; then
	case " $static " in *" -lcurl "*) r=0 ;; *) r=1 ;; esac
	ok $r "the static link line names -lcurl"
else
	skip 1 "S3 not configured: the static link line names no -lcurl"
fi
done_testing
