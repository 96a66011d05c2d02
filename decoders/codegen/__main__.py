"""``python -m decoders.codegen [--check]``: regenerate ``decoders/generated`` from ``decoders/schema``.

With ``--check`` nothing is written: the command fails when the committed generated code differs
from what the generator makes of the committed schema (CI runs this).
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

from decoders.codegen.render import GENERATED_DIR, generate_all
from decoders.spec.convert import SCHEMA_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoders.codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if decoders/generated is out of date")
    args = parser.parse_args(argv)
    if not args.check:
        written = generate_all(SCHEMA_DIR)
        print(f"generated {len(written)} decoder modules")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate_all(SCHEMA_DIR, Path(tmp))
        names = {p.name for p in fresh}
        committed = {p.name for p in GENERATED_DIR.glob("*.py")}
        stale = sorted(names ^ committed)
        stale += sorted(n for n in names & committed if not filecmp.cmp(Path(tmp) / n, GENERATED_DIR / n, False))
    if stale:
        print("decoders/generated is out of date; run `python -m decoders.codegen`: " + ", ".join(stale))
        return 1
    print(f"decoders/generated is up to date ({len(names)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
