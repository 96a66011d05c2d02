"""Build the compiled modules when the package is installed: the decoders' Cython twins
(decoders/accel/*.pyx, generated) and the inspector's hot path (plain Python compiled by Cython).

Everything else is in pyproject.toml. The extensions are optional: without Cython or a C compiler
the install still succeeds and the pure-Python modules (same results, slower) do the work.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# Plain-Python modules compiled by Cython, by package (decoders._compiled guards them against edits).
COMPILED = {
    "inspector": ("packets", "capture_file", "reassembly", "framing", "connection", "pipeline", "events",
                  "summary", "reader"),
    "decoders": ("api", "_runtime", "records", "guess", "embedded"),
}
COMPILED_SOURCES: dict[str, dict[str, str]] = {}  # package -> module -> SHA-256 of the source compiled
NATIVE_DIRS = ("decoders/native", "inspector/native")  # hand-written typed twins
NATIVE_SOURCES: dict[str, dict[str, str]] = {}  # native dir -> module -> SHA-256 of the .pyx compiled


class OptionalBuildExt(build_ext):
    """Build the extensions in parallel; on a failure, warn and install the pure-Python package."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        target = ROOT if self.inplace else Path(self.build_lib)
        manifests = {package: target / package / "_compiled.json" for package in COMPILED}
        natives = {folder: target / folder / "_built.json" for folder in NATIVE_DIRS}
        for path in (*manifests.values(), *natives.values()):
            path.unlink(missing_ok=True)  # extensions without a record of their source are not used
        try:
            super().run()
        except Exception as err:  # noqa: BLE001 - any build failure leaves the pure-Python modules
            print(f"warning: compiled modules not built ({err}); using the pure-Python modules", file=sys.stderr)
            return
        for package, hashes in COMPILED_SOURCES.items():
            manifests[package].parent.mkdir(parents=True, exist_ok=True)
            manifests[package].write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        for folder, hashes in NATIVE_SOURCES.items():
            natives[folder].parent.mkdir(parents=True, exist_ok=True)
            natives[folder].write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


def extensions() -> list:
    if os.environ.get("KAFKA_INSPECTOR_PURE") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("warning: Cython not available; using the pure-Python decoders", file=sys.stderr)
        return []
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "decoders" / "accel").glob("*.pyx"))
    # Hand-written typed twins (*/native/*.pyx); decoders.native.NativeModules.load checks _built.json.
    for folder in NATIVE_DIRS:
        for path in sorted((ROOT / folder).glob("*.pyx")):
            sources.append(str(path.relative_to(ROOT)))
            NATIVE_SOURCES.setdefault(folder, {})[path.stem] = hashlib.sha256(path.read_bytes()).hexdigest()
    # The hot path, compiled as plain Python (the .py stays the source and runs without a build);
    # decoders/_compiled.py keeps an edited source from being shadowed by an old build.
    for package, names in COMPILED.items():
        for name in names:
            path = ROOT / package / f"{name}.py"
            sources.append(str(path.relative_to(ROOT)))
            COMPILED_SOURCES.setdefault(package, {})[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return cythonize(sources, language_level=3, quiet=True, nthreads=os.cpu_count() or 1)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
