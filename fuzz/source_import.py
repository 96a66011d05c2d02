"""Fuzz-only tooling: import the hot path's plain modules from their ``.py`` source, where atheris can see them.

The plain-Python modules of ``inspector`` and ``decoders`` listed in ``setup.py``'s ``COMPILED`` are shipped
compiled by Cython, and a compiled ``.so`` shadows its ``.py`` on import. atheris instruments Python bytecode
only, so a fuzzer importing the extensions is blind to them (libFuzzer sees a handful of edges). Their ``.py``
is their single source (the ``.pxd`` beside it only adds C types; from source the classes are plain slotted
dataclasses), so the fuzzers load that source instead and atheris instruments it as it is imported.

Only the fuzz process does this (``fuzz/fuzz_one.py`` installs :class:`SourceFinder` before it imports the
package); the package and its tests never do. The ``.pyx``-only modules (the generated fast readers of
``decoders/accel``, the native modules of ``decoders/native`` and ``inspector/native``) have no Python source
and stay compiled, uninstrumented.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ExtensionFileLoader, ModuleSpec, SourceFileLoader
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def compiled_modules(setup_py: Path = REPO / "setup.py") -> dict[str, Path]:
    """The plain modules ``setup.py`` compiles (its ``COMPILED`` dict, read from its text), by dotted name.

    Read, not imported: running ``setup.py`` would build. Each name maps to its ``.py`` source.
    """
    tree = ast.parse(setup_py.read_text(), str(setup_py))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "COMPILED" for t in targets):
            packages: dict[str, Sequence[str]] = ast.literal_eval(value)
            return {f"{package}.{name}": REPO.joinpath(*package.split("."), f"{name}.py")
                    for package, names in packages.items() for name in names}
    raise LookupError(f"no COMPILED = {{...}} assignment in {setup_py.name}")


def cimported_by_native(modules: dict[str, Path], repo: Path = REPO) -> set[str]:
    """The modules among ``modules`` that a ``.pyx``-only module cimports (``decoders.element_budget``,
    whose extension type the generated fast readers take as an argument).

    They must stay compiled: a ``.pyx`` module reads their C fields at fixed offsets, and from source the
    class would be a plain slotted one of the same size whose slots hold object pointers there.
    """
    found: set[str] = set()
    for pyx in repo.glob("*/**/*.pyx"):
        for match in re.finditer(r"^from ([\w.]+) cimport", pyx.read_text(), re.MULTILINE):
            if match.group(1) in modules:
                found.add(match.group(1))
    return found


def source_modules(modules: dict[str, Path] | None = None) -> dict[str, Path]:
    """What the fuzzers load from source: ``modules`` (default: ``setup.py``'s ``COMPILED``) but those
    :func:`cimported_by_native`."""
    modules = compiled_modules() if modules is None else modules
    shared = cimported_by_native(modules)
    return {name: path for name, path in modules.items() if name not in shared}


class SourceFinder(MetaPathFinder):
    """Finds the listed modules as their ``.py`` source (a plain ``SourceFileLoader``), never the extension.

    Placed right behind atheris' import hook in ``sys.meta_path``: atheris asks the finders behind it for a
    spec and wraps a ``SourceFileLoader`` in its instrumenting loader; a module atheris excludes falls through
    to this finder and is loaded from source uninstrumented (so the compiled and the source modules, whose
    ``.pxd`` types refer to each other, are never mixed).
    """

    def __init__(self, modules: dict[str, Path]) -> None:
        self.modules = modules
        self.loaded: list[str] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        source = self.modules.get(fullname)
        if source is None:
            return None
        spec = importlib.util.spec_from_file_location(fullname, source,
                                                      loader=SourceFileLoader(fullname, str(source)))
        if spec is not None and fullname not in self.loaded:
            self.loaded.append(fullname)
        return spec


def native_modules(build: Path) -> dict[str, Path]:
    """The instrumented extensions of ``fuzz/build_native.py`` under ``build`` (its ``native`` folder), by dotted
    name: the ``.pyx``-only modules, built with libFuzzer's coverage instrumentation."""
    found: dict[str, Path] = {}
    for so in build.rglob("*.so"):
        rel = so.relative_to(build)
        found[".".join((*rel.parts[:-1], so.name.split(".", 1)[0]))] = so
    return found


class NativeFinder(MetaPathFinder):
    """Finds the listed extension modules in the instrumented build (an ``ExtensionFileLoader``), never the
    shipped ones. In front of every other finder: atheris' hook leaves extensions alone."""

    def __init__(self, modules: dict[str, Path]) -> None:
        self.modules = modules
        self.loaded: list[str] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        built = self.modules.get(fullname)
        if built is None:
            return None
        self.loaded.append(fullname)
        return importlib.util.spec_from_file_location(fullname, built,
                                                      loader=ExtensionFileLoader(fullname, str(built)))


def install_native(modules: dict[str, Path]) -> NativeFinder:
    """Put a :class:`NativeFinder` first in ``sys.meta_path``; refuses when one of the modules was imported."""
    already = sorted(name for name in modules if name in sys.modules)
    if already:
        raise RuntimeError(f"imported before the native finder, so not instrumented: {', '.join(already)}")
    finder = NativeFinder(modules)
    sys.meta_path.insert(0, finder)
    return finder


def install(modules: dict[str, Path] | None = None) -> SourceFinder:
    """Put a :class:`SourceFinder` for ``modules`` (default: ``setup.py``'s ``COMPILED``) in ``sys.meta_path``.

    Right behind atheris' hook when it is installed (install that first), else in front of the path finder.
    Refuses when one of the modules was already imported (it would stay the extension).
    """
    modules = compiled_modules() if modules is None else modules
    already = sorted(name for name in modules if name in sys.modules)
    if already:
        raise RuntimeError(f"imported before the source finder, so compiled: {', '.join(already)}")
    finder = SourceFinder(modules)
    hooks = [i for i, meta in enumerate(sys.meta_path) if type(meta).__name__ == "AtherisMetaPathFinder"]
    if hooks:
        sys.meta_path.insert(hooks[0] + 1, finder)
    else:
        from importlib.machinery import PathFinder

        sys.meta_path.insert(sys.meta_path.index(PathFinder) if PathFinder in sys.meta_path else 0, finder)
    return finder


def check(modules: dict[str, Path], *, compiled: bool) -> list[str]:
    """The imported modules among ``modules`` not loaded the way asked: from source, or compiled."""
    wrong = []
    for name in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        from_source = str(getattr(module, "__file__", "")).endswith(".py")
        if from_source == compiled:
            wrong.append(f"{name} ({Path(str(module.__file__)).name})")
    return wrong
