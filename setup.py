"""Build the compiled modules when the package is installed: the decoders' Cython twins
(decoders/accel/*.pyx, generated) and the inspector's hot path (plain Python compiled by Cython).

Everything else is in pyproject.toml. The extensions are optional: without Cython or a C compiler
the install still succeeds and the pure-Python modules (same results, slower) do the work.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# The guard's own hash of a source (decoders/_compiled.py, standard library only: loaded without the package).
_spec = importlib.util.spec_from_file_location("_compiled_guard", ROOT / "decoders" / "_compiled.py")
assert _spec is not None and _spec.loader is not None
_guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_guard)
# Plain-Python modules compiled by Cython, by package (decoders._compiled guards them against edits).
COMPILED = {
    "inspector": ("packets", "capture_file", "reassembly", "framing", "connection", "pipeline", "events",
                  "summary", "reader"),
    "decoders": ("api", "_runtime", "records", "guess", "embedded"),
}
NATIVE_DIRS = ("decoders/native", "inspector/native")  # hand-written typed twins (*.pyx)
#: Folder -> module -> SHA-256 of the source compiled and its files' sizes and times, written as the folder's
#: _compiled.json (the one manifest decoders._compiled reads for the plain modules and decoders.native for
#: the twins).
BUILT_SOURCES: dict[str, dict[str, dict]] = {}


class OptionalBuildExt(build_ext):
    """Build the extensions in parallel; on a failure, warn and install the pure-Python package."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        target = ROOT if self.inplace else Path(self.build_lib)
        manifests = {folder: target / folder / "_compiled.json" for folder in (*COMPILED, *NATIVE_DIRS)}
        for path in manifests.values():
            path.unlink(missing_ok=True)  # extensions without a record of their source are not used
        try:
            super().run()
        except Exception as err:  # noqa: BLE001 - any build failure leaves the pure-Python modules
            print(f"warning: compiled modules not built ({err}); using the pure-Python modules", file=sys.stderr)
            return
        for folder, hashes in BUILT_SOURCES.items():
            manifests[folder].parent.mkdir(parents=True, exist_ok=True)
            manifests[folder].write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


def extensions() -> list:
    if os.environ.get("KAFKA_INSPECTOR_PURE") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("warning: Cython not available; using the pure-Python decoders", file=sys.stderr)
        return []
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "decoders" / "accel").glob("*.pyx"))
    # The hand-written typed twins (*/native/*.pyx), and the hot path compiled as plain Python (the .py
    # stays the source and runs without a build). Each folder's manifest keeps an edited source from
    # being shadowed by an old build (decoders._compiled, decoders.native).
    recorded = [path for folder in NATIVE_DIRS for path in sorted((ROOT / folder).glob("*.pyx"))]
    recorded += [ROOT / package / f"{name}.py" for package, names in COMPILED.items() for name in names]
    for path in recorded:
        sources.append(str(path.relative_to(ROOT)))
        folder = str(path.parent.relative_to(ROOT))
        BUILT_SOURCES.setdefault(folder, {})[path.stem] = _guard.source_record(path)
    # A plain module with a .pxd (its classes declared as extension types there) is compiled with its
    # annotations not taken as C types (the .pxd says which types matter; an `int` annotation would clash
    # with them); the others are compiled as before.
    declared = [path for path in sources if path.endswith(".py") and (ROOT / path).with_suffix(".pxd").exists()]
    options = {"language_level": 3, "quiet": True, "nthreads": os.cpu_count() or 1}
    return (cythonize([path for path in sources if path not in declared], **options)
            + cythonize(declared, compiler_directives={"annotation_typing": False}, **options))


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
