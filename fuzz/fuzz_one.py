"""Run one fuzz target under atheris (libFuzzer): ``python fuzz/fuzz_one.py TARGET [libFuzzer args...]``.

``fuzz/run.py`` is the usual entry point; this script is what it starts, once per target. Modules of
``decoders`` and ``inspector`` are instrumented for coverage as they are imported. The import hook
stays installed while fuzzing, so the generated decoders (imported lazily, one per API the input
names) are instrumented when the fuzzer first reaches them instead of all at start-up (instrumenting
all 100+ of them takes ~15 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: Packages whose code is instrumented.
PACKAGES = ["decoders", "inspector"]
#: Per target, code left uninstrumented: the pipeline guesses responses with every generated decoder
#: (instrumenting them all on the first guess would look like a hang; the request/response targets
#: cover them), the capture target never reaches the decoders.
EXCLUDE = {"pipeline": ["decoders.generated"], "capture": ["decoders"], "reassembler": ["decoders"]}


def _modules(package: str) -> list[str]:
    """Every module of a package by file name (atheris excludes exact module names only)."""
    root = REPO.joinpath(*package.split("."))
    names = [package]
    for path in root.rglob("*.py"):
        rel = path.relative_to(REPO).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.append(".".join(parts))
    return sorted(set(names))


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: fuzz_one.py TARGET [libFuzzer args...]")
    name = sys.argv[1]
    exclude = [m for package in EXCLUDE.get(name, []) for m in _modules(package)]
    hook = atheris.instrument_imports(include=PACKAGES, exclude=exclude)
    hook.__enter__()  # never left: lazily imported modules are instrumented too
    import decoders.api  # noqa: F401 - the core, instrumented up front
    import decoders.embedded  # noqa: F401
    import decoders.records  # noqa: F401
    from fuzz.targets import TARGETS

    if name not in TARGETS:
        sys.exit(f"unknown target {name!r}; targets: {', '.join(TARGETS)}")
    target = TARGETS[name]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
