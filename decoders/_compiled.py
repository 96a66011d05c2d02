"""Which modules run compiled, and a guard against compiled modules older than their source.

``setup.py`` compiles the hot-path modules (packet to event row: most of ``inspector``, and the
decoders' entry points and runtime) with Cython (plain Python in, C extension out, beside the ``.py``)
and records the SHA-256 of each source it compiled in each package's ``_compiled.json``. Python
imports an extension module before a source file of the same name, so a source edited after the build
would silently not run; :func:`install` finds such modules (and, with ``KAFKA_INSPECTOR_PURE=1``, all
of them) and has them imported from their source instead.

A module may have a ``.pxd`` beside it (its classes compiled as extension types, their attributes and
some methods typed); its hash covers both files. A compiled module that cimports another one's
declarations needs that one compiled too (its extension type, not a class of the same name from the
source), so a module is also imported from source when one it cimports is, in its own package or in
another guarded package installed before it (``inspector`` cimports ``decoders.api``'s message class).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

MANIFEST = "_compiled.json"
#: Compiled modules not used because their source changed since the build (rebuild: `make setup`).
STALE: list[str] = []
#: Modules (full names) that guarded packages import compiled: a module cimporting one not in here runs
#: from source. Filled by :func:`install`, package by package.
COMPILED: set[str] = set()


def source_files(path: Path) -> list[Path]:
    """The files of a compiled source: a ``.py`` with its ``.pxd`` (when there is one), or a ``.pyx``; with
    the ``.pxd`` files of this project that either cimports (their inline code is compiled in)."""
    files = [path]
    declarations = path.with_suffix(".pxd")
    if path.suffix == ".py" and declarations.exists():
        files.append(declarations)
        text = declarations.read_text()
    else:
        text = path.read_bytes().decode(errors="replace")
    root = path.parent
    while (root / "__init__.py").exists():
        root = root.parent  # the folder holding the top-level package
    for module in sorted(set(_CIMPORT.findall(text))):
        shared = root.joinpath(*module.split(".")).with_suffix(".pxd")
        if shared.exists() and shared != declarations:
            files.append(shared)
    return files


def _sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``, imported on first use (a start whose sources match their stamps hashes nothing):
    the interpreter's own, as hashlib would load OpenSSL first (~4 ms, measured)."""
    try:
        from _sha256 import sha256
    except ImportError:  # an interpreter built without it
        from hashlib import sha256
    return sha256(data).hexdigest()


def source_hash(path: Path) -> str:
    """SHA-256 of a compiled source's files (:func:`source_files`)."""
    return _sha256(b"\0".join(f.read_bytes() for f in source_files(path)))


def source_stamp(path: Path) -> list[list[Any]]:
    """Name, size and modification time (ns) of each of a compiled source's files (:func:`source_files`)."""
    stamp: list[list[Any]] = []
    for f in source_files(path):
        st = f.stat()
        stamp.append([f.name, st.st_size, st.st_mtime_ns])
    return stamp


def source_record(path: Path) -> dict[str, Any]:
    """What the build records of a compiled source (its manifest entry): its hash and its files' stamp."""
    return {"sha256": source_hash(path), "stamp": source_stamp(path)}


def source_matches(path: Path, built: Any) -> bool:
    """Whether manifest entry ``built`` (:func:`source_record`'s, or the bare hash) is of the source now at
    ``path``: at once when its files' sizes and modification times are the recorded ones (nothing read; every
    start checks some 30 sources, and hashing them took ~3 ms of it), else by their hash (a file touched but
    not changed still matches)."""
    if isinstance(built, dict):
        if built.get("stamp") == source_stamp(path):
            return True
        built = built.get("sha256")
    return built == source_hash(path)


_CIMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+cimport\b", re.MULTILINE)


def cimported(package_dir: Path, name: str) -> list[str]:
    """Modules of the same package whose declarations ``name``'s ``.pxd`` cimports."""
    package = package_dir.name
    return [module.rsplit(".", 1)[1] for module in cimported_modules(package_dir, name)
            if module.startswith(f"{package}.") and module.count(".") == 1]


def cimported_modules(package_dir: Path, name: str) -> list[str]:
    """Full names of the project modules (a ``.py`` beside a ``.pxd``) ``name``'s ``.pxd`` cimports."""
    declarations = package_dir / f"{name}.pxd"
    if not declarations.exists():
        return []
    root = package_dir
    while (root / "__init__.py").exists():
        root = root.parent
    return [module for module in _CIMPORT.findall(declarations.read_text())
            if root.joinpath(*module.split(".")).with_suffix(".py").exists()]


def source_hash_text(text: str) -> str:
    return _sha256(text.encode())


def stale_modules(package_dir: Path, pure: bool, compiled_elsewhere: set[str] | None = None) -> list[str]:
    """Modules of ``package_dir`` that must be imported from source: compiled, but from another source, or
    cimporting one imported from source. A cimported module of another package counts as compiled when it is
    in ``compiled_elsewhere`` (default :data:`COMPILED`, what the packages guarded so far import compiled)."""
    elsewhere = COMPILED if compiled_elsewhere is None else compiled_elsewhere
    try:
        built: dict[str, Any] = json.loads((package_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        built = {}  # no record of a build: whatever extension is there is of unknown source
    names = {extension.name.split(".", 1)[0] for extension in package_dir.glob("*.so")}
    names = {name for name in names if (package_dir / f"{name}.py").exists()}
    stale = {name for name in names if pure or not source_matches(package_dir / f"{name}.py", built.get(name))}
    package = package_dir.name
    for name in names - stale:  # cimports of another package's modules: compiled there, or not at all
        if any(not dep.startswith(f"{package}.") and dep not in elsewhere
               for dep in cimported_modules(package_dir, name)):
            stale.add(name)
    changed = True
    while changed:  # what cimports a module imported from source (stale, or never built) is too
        changed = False
        for name in names - stale:
            if any(dep in stale or dep not in names for dep in cimported(package_dir, name)):
                stale.add(name)
                changed = True
    return sorted(stale)


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


class _CachedArgspecs:
    """Loader of a compiled module: runs its body with ``inspect.getfullargspec`` answering from a cache.

    Cython makes each field of a compiled dataclass by calling ``dataclasses.field`` through a helper that
    first asks ``inspect.getfullargspec`` which parameters it takes, once per field: ~200k instructions a
    field, ~190 fields in these packages, ~7% of a start. The answer for the same function cannot change
    while a module body runs; the original function is back once it has run.
    """

    _answers: dict[Any, Any] = {}

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        import inspect

        original = inspect.getfullargspec
        answers = self._answers

        def getfullargspec(func: Any) -> Any:
            try:
                return answers[func]
            except KeyError:
                answer = answers[func] = original(func)
                return answer
            except TypeError:  # unhashable: asked each time
                return original(func)

        inspect.getfullargspec = getfullargspec
        try:
            self.loader.exec_module(module)
        finally:
            inspect.getfullargspec = original


class _CompiledFirst:
    """Finds the compiled modules of the guarded packages (:data:`COMPILED`) and loads them through
    :class:`_CachedArgspecs`; anything else is left to the other finders."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return None
        spec.loader = _CachedArgspecs(spec.loader)  # type: ignore[assignment] # a Loader by its two methods
        return spec


def install(package: str, package_dir: Path) -> list[str]:
    """Guard ``package``: stale compiled modules (or all, with KAFKA_INSPECTOR_PURE=1) load from source."""
    pure = os.environ.get("KAFKA_INSPECTOR_PURE") == "1"
    names = stale_modules(package_dir, pure)
    built = {extension.name.split(".", 1)[0] for extension in package_dir.glob("*.so")}
    COMPILED.update(f"{package}.{name}" for name in built - set(names) if (package_dir / f"{name}.py").exists())
    if not any(isinstance(finder, _CompiledFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _CompiledFirst())
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
