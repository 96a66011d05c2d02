"""The compiled modules: built from the sources present (a stale build fails here, not at run time), imported
as extensions by Python's own import system (no finders, no patches), and recorded by the build."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from decoders import _sources

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("decoders", "decoders/accel", "decoders/native", "inspector/capture", "inspector/tcp", "inspector/tls",
           "inspector/kafka", "inspector/rows", "inspector/read", "inspector/native")


def _setup_compiled() -> dict[str, tuple[str, ...]]:
    """setup.py's COMPILED table, read from its text (running setup.py would build)."""
    text = (REPO / "setup.py").read_text()
    start = text.index("COMPILED = {")
    table: dict[str, tuple[str, ...]] = eval(text[start + len("COMPILED = "):text.index("}\n", start) + 1])  # noqa: S307
    return table


def _module_names() -> list[str]:
    names = [f"{package}.{name}" for package, modules in _setup_compiled().items() for name in modules]
    for folder in ("decoders/accel", "decoders/native", "inspector/native"):
        names += [f"{folder.replace('/', '.')}.{p.stem}" for p in sorted((REPO / folder).glob("*.pyx"))]
    return names


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_extension_is_stale(folder: str) -> None:
    """Every extension was built from the sources there now (their fingerprint is the build's manifest's)."""
    stale = _sources.stale(REPO / folder)
    assert not stale, f"{folder}: extensions built from other sources: {stale}; run `make setup`"


def test_every_compiled_module_is_built_and_imported_as_an_extension() -> None:
    for name in _module_names():
        module = importlib.import_module(name)
        assert str(module.__file__).endswith(".so"), f"{name} is not built: run `make setup` (needs a C compiler)"


def test_imports_go_through_pythons_own_finders() -> None:
    """No import hooks: the standard finders only, the standard loader for an extension, nothing patched."""
    code = ("import sys, inspect, importlib.machinery as m\n"
            "import inspector.cli.main, inspector.rows.event_table, decoders.api\n"
            "print(sorted({getattr(f, '__name__', type(f).__name__) for f in sys.meta_path}))\n"
            "print(type(sys.modules['inspector.rows.event_table'].__loader__).__name__,"
            " inspect.getfullargspec.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    finders, loader = out.splitlines()
    assert set(eval(finders)) <= {"BuiltinImporter", "FrozenImporter", "PathFinder",  # noqa: S307
                                  "_EditableFinder", "_SixMetaPathImporter", "DistutilsMetaFinder"}
    assert loader == "ExtensionFileLoader inspect"
    assert inspect.getfullargspec.__module__ == "inspect"


def test_the_manifest_fingerprints_every_source_file(tmp_path: Path) -> None:
    """A module's fingerprint covers its .py, its .pxd and the project .pxd files either cimports."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("X = 1\n")
    (pkg / "base.pxd").write_text("cdef class B:\n    pass\n")
    (pkg / "user.py").write_text("Y = 2\n")
    (pkg / "user.pxd").write_text("from pkg.base cimport B\n")
    (pkg / "twin.pyx").write_text("cimport pkg.base\n")
    assert [f.name for f in _sources.source_files(pkg / "user.py")] == ["user.py", "user.pxd", "base.pxd"]
    assert [f.name for f in _sources.source_files(pkg / "twin.pyx")] == ["twin.pyx", "base.pxd"]
    sources = [pkg / "base.py", pkg / "user.py", pkg / "twin.pyx"]
    for path in sources:
        (pkg / f"{path.stem}.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    _sources.write_manifests(sources, tmp_path, tmp_path)
    assert set(json.loads((pkg / _sources.MANIFEST).read_text())) == {"base", "user", "twin"}
    assert _sources.stale(pkg) == []
    (pkg / "base.pxd").write_text("cdef class B:\n    cdef int n\n")  # a declaration changed
    assert _sources.stale(pkg) == ["base", "twin", "user"]
    _sources.write_manifests(sources, tmp_path, tmp_path)
    (pkg / "extra.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")  # an extension of no recorded source
    assert _sources.stale(pkg) == ["extra"]


def test_make_setup_rebuilds_when_any_compiled_source_changes(tmp_path: Path) -> None:
    """``make setup`` (the stamp ``decoders/accel/.built``) rebuilds after a change to any file an extension is
    compiled from (every source and project .pxd the manifests fingerprint): the stale-build test above says
    "run `make setup`", which must then build. Asked of make with the stamp just written (``-n``: nothing is run;
    ``-W FILE``: FILE taken as changed; the virtualenv taken as current)."""
    stamp = tmp_path / "built"
    stamp.touch()

    def would_build(*changed: str) -> bool:
        cmd = ["make", "-n", "-C", str(REPO), f"ACCEL_STAMP={stamp}", "-o", ".venv/bin/kafka-inspector",
               *(f"-W{f}" for f in changed), str(stamp)]
        return "build_ext" in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    assert not would_build()
    assert not would_build("README.md", "pipelines/report_job.py")  # not compiled
    sources = [REPO.joinpath(*package.split("."), f"{name}.py") for package, names in _setup_compiled().items()
               for name in names]
    for folder in ("decoders/accel", "decoders/native", "inspector/native"):
        sources += sorted((REPO / folder).glob("*.pyx"))
    files = sorted({f for path in sources for f in _sources.source_files(path)})
    assert len(files) > 60
    missed = [str(f.relative_to(REPO)) for f in files if not would_build(str(f.relative_to(REPO)))]
    assert not missed, f"a change to these does not rebuild: {missed}"
