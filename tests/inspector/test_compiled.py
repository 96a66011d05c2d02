"""The compiled inspector modules: in use when built, never shadowing an edited source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import decoders.api
import decoders.records
import inspector.framing
from inspector import _compiled

PACKAGE = Path(_compiled.__file__).resolve().parent
BUILT = (PACKAGE / _compiled.MANIFEST).exists()


@pytest.mark.skipif(os.environ.get("KAFKA_INSPECTOR_PURE") == "1", reason="KAFKA_INSPECTOR_PURE=1")
def test_hot_path_is_compiled_after_setup() -> None:
    assert BUILT, "inspector/_compiled.json missing: run `make setup` (needs Cython and a C compiler)"
    assert _compiled.compiled(inspector.framing)
    assert _compiled.compiled(decoders.api) and _compiled.compiled(decoders.records)
    assert (Path(decoders.api.__file__).parent / _compiled.MANIFEST).exists()
    assert not _compiled.STALE, f"compiled modules older than their source: {_compiled.STALE}; run `make setup`"


def _package(tmp: Path, source: str, manifest: dict[str, str] | None) -> Path:
    pkg = tmp / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(source)
    (pkg / "mod.cpython-311-x86_64-linux-gnu.so").write_bytes(b"not a real extension")
    if manifest is not None:
        (pkg / _compiled.MANIFEST).write_text(json.dumps(manifest))
    return pkg


def test_stale_and_unrecorded_extensions_are_found(tmp_path: Path) -> None:
    source = "VALUE = 1\n"
    current = _package(tmp_path / "a", source, {"mod": _compiled.source_hash_text(source)})
    assert _compiled.stale_modules(current, pure=False) == []
    assert _compiled.stale_modules(current, pure=True) == ["mod"]
    edited = _package(tmp_path / "b", source, {"mod": "0" * 64})
    assert _compiled.stale_modules(edited, pure=False) == ["mod"]
    unrecorded = _package(tmp_path / "c", source, None)
    assert _compiled.stale_modules(unrecorded, pure=False) == ["mod"]


def test_a_stale_extension_is_not_imported(tmp_path: Path) -> None:
    """A (broken) extension beside an edited source: the guard imports the source, quietly."""
    pkg = _package(tmp_path / "a", "VALUE = 2\n", {"mod": "0" * 64})
    code = ("import warnings, sys; from pathlib import Path; from inspector import _compiled\n"
            f"with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            f"    names = _compiled.install('pkg', Path({str(pkg)!r}))\n"
            "import pkg.mod\n"
            "print(names, pkg.mod.VALUE, len(w), Path(pkg.mod.__file__).name)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg.parent), str(PACKAGE.parent)])}
    env.pop("KAFKA_INSPECTOR_PURE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["['mod']", "2", "0", "mod.py"] and out.stderr == ""


def _module(pkg: Path, name: str, source: str, declarations: str | None = None) -> None:
    (pkg / f"{name}.py").write_text(source)
    if declarations is not None:
        (pkg / f"{name}.pxd").write_text(declarations)
    (pkg / f"{name}.cpython-311-x86_64-linux-gnu.so").write_bytes(b"not a real extension")


def test_declarations_count_and_cimports_follow(tmp_path: Path) -> None:
    """A .pxd is part of its module's source; what cimports a module imported from source is imported from
    source too (its extension types would be classes there)."""
    pkg = _package(tmp_path, "VALUE = 1\n", None)
    _module(pkg, "base", "class A:\n    pass\n", "cdef class A:\n    cdef public object x\n")
    _module(pkg, "user", "from pkg.base import A\n", "from pkg.base cimport A\ncdef class B:\n    pass\n")
    _module(pkg, "other", "VALUE = 3\n")
    hashes = {name: _compiled.source_hash(pkg / f"{name}.py") for name in ("mod", "base", "user", "other")}
    (pkg / _compiled.MANIFEST).write_text(json.dumps(hashes))
    assert _compiled.cimported(pkg, "user") == ["base"] and _compiled.cimported(pkg, "other") == []
    assert _compiled.stale_modules(pkg, pure=False) == []
    assert hashes["base"] != _compiled.source_hash_text((pkg / "base.py").read_text())  # the .pxd counts
    (pkg / "base.pxd").write_text("cdef class A:\n    cdef public object x, y\n")  # only the declarations
    assert _compiled.stale_modules(pkg, pure=False) == ["base", "user"]
    (pkg / "base.pxd").write_text("cdef class A:\n    cdef public object x\n")
    assert _compiled.stale_modules(pkg, pure=False) == []
    (pkg / "base.cpython-311-x86_64-linux-gnu.so").unlink()  # never built (or removed): base is its source
    assert _compiled.stale_modules(pkg, pure=False) == ["user"]


def test_shared_declarations_count_for_every_source_that_cimports_them(tmp_path: Path) -> None:
    """Inline code of a shared .pxd is compiled into each twin that cimports it: editing it changes their hash."""
    pkg = _package(tmp_path, "VALUE = 1\n", None)
    (pkg / "twin.pyx").write_text("from libc.string cimport memcpy\nfrom pkg.shared cimport f\n")
    (pkg / "shared.pxd").write_text("cdef inline int f() noexcept:\n    return 1\n")
    before = _compiled.source_hash(pkg / "twin.pyx")
    (pkg / "shared.pxd").write_text("cdef inline int f() noexcept:\n    return 2\n")
    assert _compiled.source_hash(pkg / "twin.pyx") != before
    assert _compiled.source_hash(pkg / "mod.py") == _compiled.source_hash_text("VALUE = 1\n")  # nothing else


def test_cimports_of_another_package_follow_what_that_package_runs(tmp_path: Path) -> None:
    """A module cimporting another guarded package's module (inspector's .pxd files cimport
    decoders.api's DecodedMessage) is imported from source unless that package imports it compiled."""
    base = _package(tmp_path, "VALUE = 1\n", None)
    _module(base, "types", "class A:\n    pass\n", "cdef class A:\n    cdef public object x\n")
    user = tmp_path / "user"
    user.mkdir()
    (user / "__init__.py").write_text("")
    _module(user, "reader", "from pkg.types import A\n", "from pkg.types cimport A\ncpdef f(A a)\n")
    _module(user, "writer", "from user.reader import f\n", "from user.reader cimport f\n")
    (user / _compiled.MANIFEST).write_text(json.dumps(
        {name: _compiled.source_hash(user / f"{name}.py") for name in ("reader", "writer")}))
    assert _compiled.cimported_modules(user, "reader") == ["pkg.types"]
    assert _compiled.stale_modules(user, pure=False, compiled_elsewhere={"pkg.types"}) == []
    # pkg.types edited (or never built) runs from source: its cimporters too, and theirs in turn
    assert _compiled.stale_modules(user, pure=False, compiled_elsewhere=set()) == ["reader", "writer"]


def test_the_guard_records_what_runs_compiled() -> None:
    if _compiled.compiled(decoders.api):
        assert "decoders.api" in _compiled.COMPILED and "inspector.events" in _compiled.COMPILED
    assert not set(_compiled.STALE) & {name.rsplit(".", 1)[1] for name in _compiled.COMPILED}


def test_compiled_modules_run_their_body_with_argspecs_cached() -> None:
    import inspect

    from decoders import _compiled as guard

    original = inspect.getfullargspec
    seen: list[object] = []

    def field(a: int, *, b: int = 0) -> None: ...

    class Loader:
        def create_module(self, spec: object) -> None:
            return None

        def exec_module(self, module: object) -> None:
            patched = inspect.getfullargspec
            assert patched is not original
            first = patched(field)
            assert patched(field) is first and first == original(field)  # the second answer from the cache
            assert patched(unhashable) == original(unhashable)
            seen.append(first)
            raise RuntimeError("the module body failed")

    unhashable = _Unhashable()
    with pytest.raises(RuntimeError, match="body failed"):
        guard._CachedArgspecs(Loader()).exec_module(object())  # type: ignore[arg-type]
    assert seen and inspect.getfullargspec is original  # restored, even after a failure


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, x: int) -> int:
        return x


@pytest.mark.skipif(os.environ.get("KAFKA_INSPECTOR_PURE") == "1", reason="KAFKA_INSPECTOR_PURE=1")
def test_compiled_modules_are_loaded_through_the_argspec_cache() -> None:
    import inspect

    assert inspect.getfullargspec.__module__ == "inspect"  # nothing left patched after the imports
    for module in (inspector.framing, decoders.api, decoders.records):
        assert _compiled.compiled(module)
        assert type(module.__loader__).__name__ == "_CachedArgspecs"


def test_a_source_matches_its_record_by_stamp_or_else_by_hash(tmp_path: Path) -> None:
    """The build records each source's hash and its files' sizes and times: a start whose files still have the
    recorded ones reads nothing; a file touched (or checked out again) unchanged still matches by its hash."""
    source = "VALUE = 1\n"
    pkg = _package(tmp_path, source, None)
    path = pkg / "mod.py"
    record = _compiled.source_record(path)
    assert record["sha256"] == _compiled.source_hash_text(source)
    assert record["stamp"] == [["mod.py", len(source), path.stat().st_mtime_ns]]
    (pkg / _compiled.MANIFEST).write_text(json.dumps({"mod": record}))
    assert _compiled.stale_modules(pkg, pure=False) == []
    # The stamp alone decides when it is the recorded one (the hash is not computed).
    assert _compiled.source_matches(path, {"sha256": "0" * 64, "stamp": record["stamp"]})
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # touched, not changed
    assert _compiled.source_matches(path, record) and _compiled.stale_modules(pkg, pure=False) == []
    path.write_text("VALUE = 2\n")  # changed: same size, a new time and hash
    assert not _compiled.source_matches(path, record) and _compiled.stale_modules(pkg, pure=False) == ["mod"]
    assert _compiled.source_matches(path, _compiled.source_hash(path))  # a bare hash (older manifests)


def test_the_build_records_hash_and_stamp() -> None:
    manifest = json.loads((PACKAGE / _compiled.MANIFEST).read_text()) if BUILT else {}
    assert manifest and all(set(entry) == {"sha256", "stamp"} for entry in manifest.values())
    assert all(_compiled.source_matches(PACKAGE / f"{name}.py", entry) for name, entry in manifest.items())
