"""Fuzz-only: build the ``.pyx`` modules with libFuzzer's coverage instrumentation, for the fuzzers to see them.

    .venv/bin/python fuzz/build_native.py        # once, and after a .pyx changes (needs clang)

The compiled generated readers (``decoders/accel``: the one reader of each hot API's layouts and of every
header and embedded structure; the rare APIs' readers are plain Python, ``decoders/generated``) and the native modules
(``decoders/native``, ``inspector/native``) have no Python source for atheris to instrument. Built here by
clang with ``-fsanitize=fuzzer-no-link`` (edge counters, comparison tracing), they report their coverage to
libFuzzer, which is then a shared library of its own (``libfuzzer.so``, from clang's
``libclang_rt.fuzzer_no_main``) loaded before atheris, so that the instrumented extensions find its symbols
(atheris' own copy is loaded privately) and atheris uses it ("Using preloaded libfuzzer").

Everything goes to ``fuzz/build/`` (not committed): the shipped in-place build is untouched and the package
never sees these. ``fuzz/fuzz_one.py`` loads them (``fuzz/source_import.py``'s :class:`NativeFinder`) when
they are there and built from the sources as they are now (each folder has the build's manifest,
``decoders/_sources.py``); a stale build is refused with the command that rebuilds it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
REPO = FUZZ.parent
BUILD = FUZZ / "build"
NATIVE = BUILD / "native"  # the instrumented extensions, in their packages' folders
LIBFUZZER = BUILD / "libfuzzer.so"
#: The folders of .pyx-only modules (setup.py's accel and NATIVE_DIRS).
PYX_DIRS = ("decoders/accel", "decoders/native", "inspector/native")
#: clang's instrumentation for libFuzzer, without the fuzzer's main (atheris drives it).
CFLAGS = "-fsanitize=fuzzer-no-link -O1 -gline-tables-only -Wno-unreachable-code-fallthrough"

# The build's record of its sources, loaded by path as setup.py loads it: importing the package would load the
# extensions before the fuzzers' finders are in place.
_spec = importlib.util.spec_from_file_location("_sources", REPO / "decoders" / "_sources.py")
assert _spec is not None and _spec.loader is not None
_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sources)


def sources() -> list[Path]:
    return [path for folder in PYX_DIRS for path in sorted((REPO / folder).glob("*.pyx"))]


def stale() -> list[str]:
    """What is missing or not built from the sources as they are now ([] when the build is usable)."""
    if not LIBFUZZER.exists():
        return [LIBFUZZER.name]
    out = []
    for folder in PYX_DIRS:
        built = NATIVE / folder
        names = {p.name.split(".", 1)[0] for p in built.glob("*.so")}
        try:
            manifest: dict[str, str] = json.loads((built / _sources.MANIFEST).read_text())
        except (OSError, ValueError):
            manifest = {}
        for pyx in sorted((REPO / folder).glob("*.pyx")):
            if pyx.stem not in names or manifest.get(pyx.stem) != _sources.fingerprint(pyx):
                out.append(f"{folder}/{pyx.stem}")
    return out


def _libfuzzer(clang: str) -> None:
    resource = subprocess.run([clang, "-print-resource-dir"], capture_output=True, text=True, check=True).stdout
    archive = Path(resource.strip()) / "lib" / "linux" / "libclang_rt.fuzzer_no_main-x86_64.a"
    if not archive.exists():
        sys.exit(f"build_native.py: {archive} is missing: install clang with its runtime (Debian: clang)")
    BUILD.mkdir(parents=True, exist_ok=True)
    subprocess.run([clang + "++" if not clang.endswith("++") else clang, "-shared", "-fPIC", "-o", str(LIBFUZZER),
                    "-Wl,--whole-archive", str(archive), "-Wl,--no-whole-archive"], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz/build_native.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clang", default=shutil.which("clang") or "clang", help="the C compiler (clang)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if shutil.which(args.clang) is None:
        sys.exit("build_native.py: clang is needed (Debian: apt-get install clang)")
    _libfuzzer(args.clang)
    from Cython.Build import cythonize
    from setuptools import Extension
    from setuptools.dist import Distribution

    paths = sources()
    c_dir = BUILD / "c"
    modules = cythonize([Extension(".".join(p.relative_to(REPO).with_suffix("").parts), [str(p.relative_to(REPO))])
                         for p in paths], build_dir=str(c_dir), language_level=3, quiet=True,
                        nthreads=args.jobs)
    env_before = dict(os.environ)
    os.environ.update(CC=args.clang, LDSHARED=f"{args.clang} -shared",
                      CFLAGS=f"{sysconfig.get_config_var('CFLAGS') or ''} {CFLAGS}".strip())
    try:
        os.chdir(REPO)
        dist = Distribution({"ext_modules": modules, "script_name": "build_native.py"})
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib = str(NATIVE)
        cmd.build_temp = str(BUILD / "tmp")
        cmd.parallel = args.jobs
        dist.run_command("build_ext")
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    _sources.write_manifests(paths, NATIVE, REPO)
    left = stale()
    if left:
        sys.exit(f"build_native.py: not built: {', '.join(left)}")
    print(f"{len(paths)} instrumented modules in {NATIVE.relative_to(REPO)}, "
          f"libFuzzer in {LIBFUZZER.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
