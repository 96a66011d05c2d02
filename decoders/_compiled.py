"""Which modules run compiled, and a guard against compiled modules older than their source.

``setup.py`` compiles the hot-path modules (packet to event row: most of ``inspector``, and the
decoders' entry points and runtime) with Cython (plain Python in, C extension out, beside the ``.py``)
and records the SHA-256 of each source it compiled in each package's ``_compiled.json``. Python
imports an extension module before a source file of the same name, so a source edited after the build
would silently not run; :func:`install` finds such modules (and, with ``KAFKA_INSPECTOR_PURE=1``, all
of them) and has them imported from their source instead.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

MANIFEST = "_compiled.json"
#: Compiled modules not used because their source changed since the build (rebuild: `make setup`).
STALE: list[str] = []


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_hash_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stale_modules(package_dir: Path, pure: bool) -> list[str]:
    """Modules of ``package_dir`` that must be imported from source: compiled, but from another source."""
    try:
        built: dict[str, str] = json.loads((package_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        built = {}  # no record of a build: whatever extension is there is of unknown source
    out = []
    for extension in sorted(package_dir.glob("*.so")):
        name = extension.name.split(".", 1)[0]
        source = package_dir / f"{name}.py"
        if source.exists() and (pure or built.get(name) != source_hash(source)):
            out.append(name)
    return out


class _SourceFirst:
    """Imports the named modules of one package from their ``.py``, whatever else is beside it."""

    def __init__(self, package: str, package_dir: Path, names: list[str]) -> None:
        self.package, self.dir, self.names = package, package_dir, set(names)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != self.package or name not in self.names:
            return None
        source = str(self.dir / f"{name}.py")
        spec = importlib.machinery.ModuleSpec(fullname, importlib.machinery.SourceFileLoader(fullname, source),
                                              origin=source)
        spec.has_location = True  # the module's __file__ is its source (as for any module loaded from one)
        spec.cached = importlib.util.cache_from_source(source)  # and its bytecode is read/written as usual
        return spec


def install(package: str, package_dir: Path) -> list[str]:
    """Guard ``package``: stale compiled modules (or all, with KAFKA_INSPECTOR_PURE=1) load from source."""
    pure = os.environ.get("KAFKA_INSPECTOR_PURE") == "1"
    names = stale_modules(package_dir, pure)
    if names:
        # Quietly: the results are the same, only slower (the CLI's stderr carries one-line errors only).
        # STALE says which; the benchmarks print it and the suite fails on it after `make setup`.
        if not pure:
            STALE.extend(names)
        sys.meta_path.insert(0, _SourceFirst(package, package_dir, names))
    return names


def compiled(module: ModuleType) -> bool:
    """Whether ``module`` was imported from a compiled extension."""
    return str(getattr(module, "__file__", "")).endswith(".so")
