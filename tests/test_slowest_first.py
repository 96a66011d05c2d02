"""``tests/conftest.py``'s order hint names test files that exist (a renamed file would silently lose its place)."""

from __future__ import annotations

from tests.conftest import REPO, SLOWEST_FIRST


def test_every_file_run_first_exists_once() -> None:
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)
    assert [name for name in SLOWEST_FIRST if not (REPO / "tests" / name).is_file()] == []
