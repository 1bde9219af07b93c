"""Build the extension against libshardpipe.

Where the library comes from, the first of these that is there
(python/README.md, "Installing"):

1. SHARDPIPE_BUILD_DIR names an Autotools build directory of shardpipe:
   the library is DIR/.libs/libshardpipe.so, the header comes from the
   source tree that DIR's Makefile names, and the extension gets an rpath
   to DIR/.libs, so nothing needs installing.  Given, it must hold a
   built library.
2. ../build beside this directory (what scripts/quickstart and
   scripts/build make), when it holds a built library.
3. An in-tree build: ../.libs/libshardpipe.so (./configure && make at the
   top of the source tree).
4. pkg-config finds an installed shardpipe (PKG_CONFIG_PATH as usual); the
   extension gets an rpath to its libdir.
5. Otherwise setup.py builds the library itself, with the project's own
   Autotools build (bootstrap when there is no configure, then configure
   and make of the library and the OpenCL plugin only) in a directory of
   setuptools' build tree, and installs libshardpipe.so.0 and the plugins
   inside the package, in shardpipe/_lib/, the extension finding them
   through an $ORIGIN rpath.  SHARDPIPE_BUNDLE=1 skips 1-4 (what
   scripts/build-wheel does); SHARDPIPE_CONFIGURE_ARGS adds configure
   arguments (shell words, e.g. "--without-s3").

The library's sources are the repository around this directory (..), or,
in an sdist, the copy of them the sdist carries in libsrc/ (made by the
sdist command below).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
VERBOSE = os.environ.get("SHARDPIPE_BUILD_VERBOSE", "") not in ("", "0")


def fail(message):
    sys.exit("setup.py: " + message)


def is_source_tree(d):
    return ((d / "configure.ac").is_file() and (d / "Makefile.am").is_file()
            and (d / "include" / "shardpipe.h").is_file())


def source_tree():
    """The library's sources: the repository (..) or an sdist's libsrc/."""
    for d in (HERE.parent, HERE / "libsrc"):
        if is_source_tree(d):
            return d
    return None


def source_version():
    src = source_tree()
    if src is None:
        return None
    m = re.search(r"^AC_INIT\(\[shardpipe\],\s*\[([^\]]+)\]",
                  (src / "configure.ac").read_text(), re.MULTILINE)
    return m.group(1) if m else None


# ------------------------------------------------------- an existing library

def from_build_dir(build):
    build = Path(build).resolve()
    libdir = build / ".libs"
    if not (libdir / "libshardpipe.so").exists():
        fail("%s has no built library (.libs/libshardpipe.so); run "
             "scripts/build or make there first" % build)
    src = None
    makefile = build / "Makefile"
    if makefile.exists():
        m = re.search(r"^abs_top_srcdir = (.*)$", makefile.read_text(),
                      re.MULTILINE)
        if m:
            src = Path(m.group(1).strip())
    if src is None or not (src / "include" / "shardpipe.h").exists():
        src = HERE.parent
    include = src / "include"
    if not (include / "shardpipe.h").exists():
        fail("cannot find include/shardpipe.h for %s" % build)
    return dict(include_dirs=[str(include)], library_dirs=[str(libdir)],
                libraries=["shardpipe"], runtime_library_dirs=[str(libdir)])


def pkg_config(*args):
    pc = os.environ.get("PKG_CONFIG", "pkg-config")
    try:
        return subprocess.run([pc, *args], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def from_pkg_config():
    cflags = pkg_config("--cflags", "shardpipe")
    libs = pkg_config("--libs", "shardpipe")
    libdir = pkg_config("--variable=libdir", "shardpipe")
    if cflags is None or libs is None:
        return None
    cfg = dict(include_dirs=[], library_dirs=[], libraries=[],
               extra_compile_args=[], extra_link_args=[],
               runtime_library_dirs=[libdir] if libdir else [])
    for f in shlex.split(cflags):
        if f.startswith("-I"):
            cfg["include_dirs"].append(f[2:])
        else:
            cfg["extra_compile_args"].append(f)
    for f in shlex.split(libs):
        if f.startswith("-L"):
            cfg["library_dirs"].append(f[2:])
        elif f.startswith("-l"):
            cfg["libraries"].append(f[2:])
        else:
            cfg["extra_link_args"].append(f)
    return cfg


def existing_library():
    """The configuration of an existing library, or None: build one."""
    if os.environ.get("SHARDPIPE_BUNDLE", "") not in ("", "0"):
        return None
    build = os.environ.get("SHARDPIPE_BUILD_DIR")
    if build:
        return from_build_dir(build)
    if is_source_tree(HERE.parent):
        for b in (HERE.parent / "build", HERE.parent):
            if (b / ".libs" / "libshardpipe.so").exists():
                return from_build_dir(b)
    return from_pkg_config()


# ------------------------------------------------------- building the library

def have_header(cc, header, cflags):
    """Whether the C compiler finds <header> (with the pkg-config flags)."""
    try:
        r = subprocess.run(shlex.split(cc) + ["-E", "-x", "c", "-", *cflags],
                           input="#include <%s>\n" % header, text=True,
                           capture_output=True)
    except OSError:
        return False
    return r.returncode == 0


def check_prerequisites(src):
    """Name, in one message, what the library's build lacks."""
    missing = []
    cc = os.environ.get("CC", "cc")
    if shutil.which(shlex.split(cc)[0]) is None:
        missing.append("C compiler %s not found (Debian: apt-get install "
                       "gcc)" % cc)
    if shutil.which("make") is None:
        missing.append("make not found (Debian: apt-get install make)")
    if not (src / "configure").is_file():
        for tool, pkg in (("autoreconf", "autoconf"), ("automake", "automake"),
                          ("libtoolize", "libtool")):
            if shutil.which(tool) is None:
                missing.append("%s not found, needed to generate configure "
                               "(Debian: apt-get install %s)" % (tool, pkg))
    if pkg_config("--version") is None:
        missing.append("pkg-config not found (Debian: apt-get install "
                       "pkg-config)")
    else:
        for module, header, deb in (("libzstd", "zstd.h", "libzstd-dev"),
                                    ("libdeflate", "libdeflate.h",
                                     "libdeflate-dev")):
            flags = pkg_config("--cflags", module)
            if flags is None or not have_header(cc, header,
                                                shlex.split(flags)):
                missing.append("%s not found (Debian: apt-get install %s)"
                               % (deb, deb))
    if missing:
        fail("cannot build libshardpipe from %s: %s.  Or point setup.py at "
             "a built or installed library (python/README.md, "
             "\"Installing\")." % (src, "; ".join(missing)))


def run(cmd, cwd, log):
    print("setup.py: " + " ".join(shlex.quote(str(c)) for c in cmd),
          flush=True)
    with open(log, "a") as f:
        out = dict() if VERBOSE else dict(stdout=f, stderr=subprocess.STDOUT)
        r = subprocess.run([str(c) for c in cmd], cwd=cwd, **out)
    if r.returncode != 0:
        tail = ""
        if not VERBOSE:
            tail = "".join(open(log).readlines()[-30:])
        fail("%s failed (status %d)%s; the whole log is %s\n%s"
             % (cmd[0], r.returncode, "" if VERBOSE else ", its end below",
                log, tail))


def settle_timestamps(src):
    """Keep make from regenerating an sdist's generated files (configure,
    Makefile.in, ...), whose order of mtimes an unpacker may not keep: each
    is made newer than every source, in the order Autotools makes them."""
    order = ["aclocal.m4", "configure", "config.h.in", "Makefile.in"]
    if not all((src / f).exists() for f in order):
        return
    t = max(p.stat().st_mtime for p in src.rglob("*")
            if p.is_file() and p.relative_to(src).as_posix() not in order)
    for i, f in enumerate(order):
        os.utime(src / f, (t + 1 + i, t + 1 + i))


def build_library(build):
    """configure and make libshardpipe and its plugins in build; returns
    the .libs directory."""
    src = source_tree()
    if src is None:
        fail("libshardpipe not found and no sources to build it from: "
             "neither %s nor %s is a shardpipe source tree.  Install the "
             "library (make install; pkg-config must find shardpipe.pc), "
             "or set SHARDPIPE_BUILD_DIR to a build directory"
             % (HERE.parent, HERE / "libsrc"))
    if (src / "config.status").exists():
        fail("%s is configured in place (config.status) but has no built "
             "library: run make there, or make distclean so that a "
             "separate build can be configured" % src)
    check_prerequisites(src)
    build.mkdir(parents=True, exist_ok=True)
    log = build / "build.log"
    if not (src / "configure").is_file():
        run(["sh", src / "bootstrap"], src, log)
    elif src == HERE / "libsrc":
        settle_timestamps(src)      # never a checkout's files
    args = ["--with-cuda=no", "--disable-dependency-tracking"]
    args += shlex.split(os.environ.get("SHARDPIPE_CONFIGURE_ARGS", ""))
    # A build left by an earlier run is reused (make redoes what changed)
    # when it was configured the same way, from the same sources.
    stamp = build / "setup-configure-args"
    want = "\n".join([str(src), *args])
    if not (build / "Makefile").exists() or not stamp.exists() or \
            stamp.read_text() != want:
        for p in build.iterdir():
            if p != log:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() \
                    else p.unlink()
        # No -g unless asked for: the package carries the library.
        if "CFLAGS" not in os.environ and not any(
                a.startswith("CFLAGS=") for a in args):
            args.append("CFLAGS=-O2")
        run(["sh", src / "configure", *args], build, log)
        stamp.write_text(want)
    # The plugins this configuration builds: make says, from the
    # Makefile's own variable.
    (build / "setup-plugins.mk").write_text(
        "setup-print-plugins:\n\t@echo $(pkglib_LTLIBRARIES)\n")
    r = subprocess.run(["make", "-s", "--no-print-directory", "-f",
                        "Makefile", "-f", "setup-plugins.mk",
                        "setup-print-plugins"], cwd=build,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("make cannot read %s/Makefile:\n%s" % (build, r.stderr))
    targets = ["libshardpipe.la"]
    targets += [t for t in r.stdout.split() if t.endswith(".la")]
    jobs = os.environ.get("SHARDPIPE_MAKE_JOBS") or str(
        min(os.cpu_count() or 1, 8))
    run(["make", "-j" + jobs, *targets], build, log)
    return build / ".libs", src


class BuildExt(build_ext):
    def run(self):
        cfg = existing_library()
        self.bundled = []
        if cfg is None:
            libdir, src = build_library(Path(self.build_temp).resolve()
                                        / "libshardpipe")
            cfg = dict(include_dirs=[str(src / "include")],
                       library_dirs=[str(libdir)], libraries=["shardpipe"],
                       runtime_library_dirs=["$ORIGIN/_lib"])
            soname = sorted(libdir.glob("libshardpipe.so.[0-9]*"),
                            key=lambda p: len(p.name))[0]
            self.bundled = [(libdir / soname.name, soname.name)]
            self.bundled += [(p, p.name) for p in
                             sorted(libdir.glob("backend-*.so"))]
        cfg.setdefault("extra_compile_args", []).append("-Wall")
        for ext in self.extensions:
            for k, v in cfg.items():
                getattr(ext, k).extend(v)
        super().run()
        dest = Path(self.get_ext_fullpath("shardpipe._shardpipe")).parent
        if self.bundled:
            lib = dest / "_lib"
            if lib.exists():
                shutil.rmtree(lib)
            lib.mkdir(parents=True)
            for path, name in self.bundled:
                # The real file under the soname: a wheel holds no links.
                shutil.copyfile(path.resolve(), lib / name)
                print("setup.py: bundled %s" % (lib / name), flush=True)

    def get_outputs(self):
        out = super().get_outputs()
        dest = Path(self.get_ext_fullpath("shardpipe._shardpipe")).parent
        return out + [str(dest / "_lib" / n)
                      for _, n in getattr(self, "bundled", [])]


# -------------------------------------------------------------- the sdist

# What the library's Autotools build reads, beside the fragments that
# Makefile.am includes (found in it) and the generated files.
LIBSRC = ["configure.ac", "Makefile.am", "bootstrap", "shardpipe.pc.in",
          "include", "src", "backends", "m4"]
GENERATED = ["configure", "aclocal.m4", "config.h.in", "Makefile.in",
             "build-aux"]


class Sdist(sdist):
    """Carry the library's sources in libsrc/, with a configure generated
    for them (so that a user needs no Autotools), the C build's tests,
    documents and benchmarks left out."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = HERE.parent
        if not is_source_tree(src):
            if is_source_tree(HERE / "libsrc"):
                return      # an sdist of an sdist: libsrc/ is in files
            fail("no library sources in %s to put in the sdist" % src)
        dest = Path(base_dir) / "libsrc"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir()
        makefile_am = (src / "Makefile.am").read_text()
        frags = re.findall(r"^include \$\(top_srcdir\)/(\S+)$", makefile_am,
                           re.MULTILINE)
        for rel in LIBSRC + frags:
            p = src / rel
            if p.is_dir():
                shutil.copytree(p, dest / rel, ignore=shutil.ignore_patterns(
                    "*.o", "*.lo", "*.la", ".libs", ".deps", ".dirstamp",
                    "opencl-kernels.c", "libtool.m4", "lt*.m4"))
            elif p.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dest / rel)
        print("setup.py: generating configure in the sdist's libsrc/",
              flush=True)
        r = subprocess.run(["sh", "bootstrap"], cwd=dest,
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("bootstrap of the sdist's libsrc/ failed:\n" + r.stdout
                 + r.stderr)
        shutil.rmtree(dest / "autom4te.cache", ignore_errors=True)
        for g in GENERATED:
            if not (dest / g).exists():
                fail("bootstrap made no %s" % g)


def build_dir_version():
    build = os.environ.get("SHARDPIPE_BUILD_DIR")
    makefile = Path(build) / "Makefile" if build else None
    if makefile is None or not makefile.is_file():
        return None
    m = re.search(r"^PACKAGE_VERSION = (\S+)$", makefile.read_text(),
                  re.MULTILINE)
    return m.group(1) if m else None


# The package's version is the library's (shardpipe.__version__ is
# library_version at import): configure.ac's AC_INIT, or the version of
# the build or installed library it is built against.
setup(version=(source_version() or build_dir_version()
               or pkg_config("--modversion", "shardpipe") or "0"),
      cmdclass={"build_ext": BuildExt, "sdist": Sdist},
      ext_modules=[Extension("shardpipe._shardpipe",
                             ["src/shardpipe/_shardpipe.c"])])
