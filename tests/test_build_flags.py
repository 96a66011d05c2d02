"""The compiled modules are built with Python's own optimisation, by every recipe that builds them.

setuptools takes a ``CFLAGS`` from the environment *instead of* Python's compiler flags (``-DNDEBUG -g -fwrapv
-O3``), not after them: the image was once built with ``CFLAGS=-g0`` (meant to drop the debugging information
only) and its compiled readers ran unoptimised, ``read`` 2.6x as slow. setup.py adds ``-g0`` after Python's flags
itself; no recipe sets ``CFLAGS``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from setuptools._distutils import ccompiler, sysconfig

ROOT = Path(__file__).resolve().parent.parent
RECIPES = [ROOT / "Dockerfile", ROOT / "Makefile", ROOT / ".ci" / "run", *sorted((ROOT / "docker").glob("*.sh"))]


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_recipe_replaces_pythons_compiler_flags(recipe: Path) -> None:
    assignments = [line.strip() for line in recipe.read_text().splitlines()
                   if re.search(r"(^|[\s;&(])(export\s+)?CFLAGS\s*[?:+]?=", line) and not line.lstrip().startswith("#")]
    assert not assignments, (f"{recipe.name} sets CFLAGS, which replaces Python's -O3 -DNDEBUG -fwrapv (setuptools): "
                             f"put a flag in setup.py's COMPILE_ARGS instead: {assignments}")


def test_setup_adds_its_flags_after_pythons(monkeypatch: pytest.MonkeyPatch) -> None:
    """What gcc is given for a module: Python's flags, ``-O3`` among them, then setup.py's ``-g0`` (gcc takes the
    last of ``-g``/``-g0``), as setuptools composes them with no ``CFLAGS`` set."""
    monkeypatch.delenv("CFLAGS", raising=False)
    compiler = ccompiler.new_compiler()
    sysconfig.customize_compiler(compiler)
    command = compiler.compiler_so  # type: ignore[attr-defined]
    assert "-O3" in command and "-DNDEBUG" in command and "-fwrapv" in command
    source = (ROOT / "setup.py").read_text()
    assert re.search(r'^COMPILE_ARGS = \[\] if "CFLAGS" in os.environ else \["-g0"\]$', source, re.MULTILINE)
    assert "extension.extra_compile_args = [*extension.extra_compile_args, *COMPILE_ARGS]" in source
