"""``python -m decoders.codegen [--check]``: regenerate ``decoders/generated`` (and ``contract/apis.py``,
``contract/body_schemas.py``) from ``decoders/schema``, and ``decoders/native/_records.pyx`` from
``decoders/record_header.py``.

With ``--check`` nothing is written: the command fails when the committed generated code differs
from what the generator makes of the committed schema (CI runs this).
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

from decoders.codegen.generate import ACCEL_DIR, CONTRACT_DIR, GENERATED_DIR, NATIVE_DIR, generate_all
from decoders.codegen.render_records import NATIVE_RECORDS
from decoders.spec.convert import SCHEMA_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoders.codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the generated code is out of date")
    args = parser.parse_args(argv)
    if not args.check:
        written = generate_all(SCHEMA_DIR)
        print(f"generated {len(written)} decoder modules")
        return 0
    stale: list[str] = []
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate_all(SCHEMA_DIR, Path(tmp) / "generated", Path(tmp) / "accel", Path(tmp) / "contract",
                             Path(tmp) / "native")
        for folder, pattern in ((GENERATED_DIR, "*.py"), (ACCEL_DIR, "*.pyx"), (CONTRACT_DIR, "apis.py"),
                                (CONTRACT_DIR, "body_schemas.py"), (NATIVE_DIR, NATIVE_RECORDS)):
            made = {p.name for p in fresh if p.parent.name == folder.name and p.match(pattern)}
            committed = {p.name for p in folder.glob(pattern) if p.name in made or not p.name.startswith("_")}
            count += len(made)
            stale += sorted(f"{folder.name}/{n}" for n in made ^ committed)
            stale += sorted(f"{folder.name}/{n}" for n in made & committed
                            if not filecmp.cmp(Path(tmp) / folder.name / n, folder / n, False))
    if stale:
        print("generated decoders are out of date; run `python -m decoders.codegen`: " + ", ".join(stale))
        return 1
    print(f"decoders/generated, decoders/accel, contract/apis.py, contract/body_schemas.py and "
          f"decoders/native/{NATIVE_RECORDS} are up to date ({count} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
