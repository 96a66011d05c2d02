"""Run one fuzz target under atheris (libFuzzer): ``python fuzz/fuzz_one.py [--compiled] TARGET [libFuzzer args...]``.

``fuzz/run.py`` is the usual entry point; this script is what it starts, once per target. Modules of
``decoders`` and ``inspector`` are instrumented for coverage as they are imported. The plain modules
that ship compiled (``setup.py``'s ``COMPILED``) are loaded from their ``.py`` source so that atheris
sees them (``fuzz/source_import.py``; fuzz-only, the package itself always imports the extensions);
``--compiled`` imports the extensions instead, as shipped but not instrumented (coverage blind to them).
The ``.pyx``-only modules (``decoders/accel``, ``decoders/native``, ``inspector/native``: the generated fast
readers that decode every message first, the record loop, the body writer) have no Python source: when
``fuzz/build_native.py`` has built them with libFuzzer's instrumentation (``fuzz/build/native``), they are
loaded from there and their edges are coverage too (``--no-native``: the shipped ones, blind). The import hook
stays installed while fuzzing, so the generated decoders (imported lazily, one per API the input
names) are instrumented when the fuzzer first reaches them instead of all at start-up (instrumenting
all 100+ of them takes ~15 s).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz import build_native, source_import  # noqa: E402 - after the path set-up; import nothing of the package


def _native(args: list[str]) -> bool:
    """Whether the ``.pyx`` modules run instrumented (``fuzz/build_native.py``'s build): then its libFuzzer is
    loaded, its symbols global, before atheris (which takes it: "Using preloaded libfuzzer")."""
    if "--compiled" in args or "--no-native" in args or not build_native.NATIVE.exists():
        return False
    stale = build_native.stale()
    if stale:
        sys.exit(f"fuzz_one.py: the instrumented build is stale ({', '.join(stale[:5])}...): run "
                 "fuzz/build_native.py again, or pass --no-native")
    ctypes.CDLL(str(build_native.LIBFUZZER), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    return True


NATIVE = _native(sys.argv[1:])

import atheris  # noqa: E402 - after the libFuzzer it is to use

#: Packages whose code is instrumented.
PACKAGES = ["decoders", "inspector"]
#: Per target, code left uninstrumented: the pipeline guesses responses with every generated decoder
#: (instrumenting them all on the first guess would look like a hang; the request/response targets
#: cover them), the capture target never reaches the decoders.
EXCLUDE = {"pipeline": ["decoders.generated"], "capture": ["decoders"], "reassembler": ["decoders"]}


def _modules(package: str) -> list[str]:
    """Every module of a package by file name (atheris excludes exact module names only)."""
    root = REPO.joinpath(*package.split("."))
    names = [package]
    for path in root.rglob("*.py"):
        rel = path.relative_to(REPO).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.append(".".join(parts))
    return sorted(set(names))


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--no-native"]
    compiled = bool(args) and args[0] == "--compiled"
    if compiled:
        args = args[1:]
    if not args:
        sys.exit("usage: fuzz_one.py [--compiled] [--no-native] TARGET [libFuzzer args...]")
    name = args[0]
    exclude = [m for package in EXCLUDE.get(name, []) for m in _modules(package)]
    hook = atheris.instrument_imports(include=PACKAGES, exclude=exclude)
    hook.__enter__()  # never left: lazily imported modules are instrumented too
    modules = source_import.compiled_modules() if compiled else source_import.source_modules()
    if NATIVE:  # in front of everything: atheris leaves extensions alone
        native = source_import.install_native(source_import.native_modules(build_native.NATIVE))
    if not compiled:
        # Behind atheris' hook, which instruments what it finds; never left either (the targets import lazily).
        source_import.install(modules)
    import decoders.api  # noqa: F401 - the core, instrumented up front
    import decoders.embedded  # noqa: F401
    import decoders.records  # noqa: F401
    from fuzz.targets import TARGETS

    if name not in TARGETS:
        sys.exit(f"unknown target {name!r}; targets: {', '.join(TARGETS)}")
    wrong = source_import.check(modules, compiled=compiled)
    if wrong:
        sys.exit(f"fuzz_one.py: not {'compiled' if compiled else 'from source'}: {', '.join(wrong)}")
    print(f"INFO: the plain hot-path modules are {'compiled (not instrumented)' if compiled else 'from source'}",
          file=sys.stderr)
    if NATIVE:
        # All of them before the fuzzing starts (their edge counters registered with libFuzzer up front): the
        # generated fast readers are otherwise imported on the first message of their API.
        for module in sorted(native.modules):
            importlib.import_module(module)
        wrong = [m for m in native.modules if not str(sys.modules[m].__file__).startswith(str(build_native.NATIVE))]
        if wrong:
            sys.exit(f"fuzz_one.py: not from the instrumented build: {', '.join(wrong)}")
        print(f"INFO: the .pyx modules are instrumented ({len(native.modules)} in fuzz/build/native)",
              file=sys.stderr)
    else:
        print("INFO: the .pyx modules are not instrumented (fuzz/build_native.py builds them)", file=sys.stderr)
    target = TARGETS[name]
    atheris.Setup([sys.argv[0], *args[1:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
