"""Build the extension against libshardpipe.

Where the library comes from, in this order:

1. SHARDPIPE_BUILD_DIR names an Autotools build directory of shardpipe
   (the one scripts/quickstart and scripts/build make is build/): the
   library is DIR/.libs/libshardpipe.so, the header comes from the source
   tree that DIR's Makefile names, and the extension gets an rpath to
   DIR/.libs, so nothing needs installing.
2. pkg-config finds an installed shardpipe (PKG_CONFIG_PATH as usual); the
   extension gets an rpath to its libdir.
3. ../build beside this directory, when it holds a built library: a fresh
   clone after scripts/quickstart needs no setting at all.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent


def from_build_dir(build):
    build = Path(build).resolve()
    libdir = build / ".libs"
    if not (libdir / "libshardpipe.so").exists():
        sys.exit("setup.py: %s has no built library (.libs/libshardpipe.so); "
                 "run scripts/build or make there first" % build)
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
        sys.exit("setup.py: cannot find include/shardpipe.h for %s" % build)
    return dict(include_dirs=[str(include)], library_dirs=[str(libdir)],
                libraries=["shardpipe"], runtime_library_dirs=[str(libdir)])


def from_pkg_config():
    pc = os.environ.get("PKG_CONFIG", "pkg-config")
    try:
        cflags = subprocess.run([pc, "--cflags", "shardpipe"], check=True,
                                capture_output=True, text=True).stdout
        libs = subprocess.run([pc, "--libs", "shardpipe"], check=True,
                              capture_output=True, text=True).stdout
        libdir = subprocess.run([pc, "--variable=libdir", "shardpipe"],
                                check=True, capture_output=True,
                                text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
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


def library():
    build = os.environ.get("SHARDPIPE_BUILD_DIR")
    if build:
        return from_build_dir(build)
    cfg = from_pkg_config()
    if cfg is not None:
        return cfg
    if (HERE.parent / "build" / ".libs" / "libshardpipe.so").exists():
        return from_build_dir(HERE.parent / "build")
    sys.exit("setup.py: libshardpipe not found: install it (make install, "
             "then pkg-config must find shardpipe.pc), or build it with "
             "scripts/quickstart, or set SHARDPIPE_BUILD_DIR to a build "
             "directory")


cfg = library()
cfg.setdefault("extra_compile_args", []).extend(["-Wall"])
setup(ext_modules=[Extension("shardpipe._shardpipe",
                             ["src/shardpipe/_shardpipe.c"], **cfg)])
