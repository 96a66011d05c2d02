"""The project's layout: no two modules share a file name, and ``inspector/`` is by hop.

A module's file name is what a reader sees in a traceback, a grep or an editor's tab: two ``events.py`` (or
``topics.py``) make every one of those ambiguous. The generated per-API decoders (``decoders/generated/api_*``,
their Cython twins ``decoders/accel/api_*``) are named by Kafka's API and version, once each, and are left out;
so are a package's ``__init__.py`` and ``__main__.py``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("inspector", "decoders", "pipelines", "contract")
#: The steps of the data's way, one subpackage each (the import-linter `layers` contract in pyproject.toml orders
#: them), with native/ (the typed native layer), and the helpers every step shares, the only modules at
#: inspector/'s top level.
HOPS = {"capture", "tcp", "tls", "kafka", "rows", "read", "tap", "cli", "native"}
SHARED = {"__init__.py", "frozen_init.py", "transitions.py"}


def modules() -> list[Path]:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if path.name in ("__init__.py", "__main__.py") or path.name.startswith("api_"):
                continue
            found.append(path)
    return found


def duplicates(paths: list[Path]) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        by_name[path.name].append(str(path.relative_to(REPO)))
    return {name: where for name, where in by_name.items() if len(where) > 1}


def test_no_two_modules_share_a_file_name() -> None:
    assert len(modules()) > 100  # the packages were found
    assert duplicates(modules()) == {}


def test_a_duplicate_is_found() -> None:
    one, other = REPO / "contract" / "events.py", REPO / "inspector" / "tcp" / "events.py"
    assert duplicates([one, other, REPO / "contract" / "kafka.py"]) == {
        "events.py": ["contract/events.py", "inspector/tcp/events.py"]}


def test_inspector_is_by_hop() -> None:
    top = REPO / "inspector"
    folders = {path.name for path in top.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders == HOPS
    assert {path.name for path in top.glob("*.py")} == SHARED
