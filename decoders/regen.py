"""``python -m decoders.regen NEWEST_DIR [OLDER_DIR ...] [--additions DIR]``: convert the specs, then regenerate.

Updating to a newer Kafka is this one command with the new spec directory first: ``decoders.spec`` writes
the schema (``python -m decoders.spec`` alone stops there), then ``decoders.codegen`` renders the decoders
from it (``python -m decoders.codegen`` alone starts there). Only this module depends on both.
"""

from __future__ import annotations

import argparse
import sys

from decoders.codegen.generate import generate_all
from decoders.spec.__main__ import add_arguments, convert_specs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoders.regen", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if not convert_specs(args.sources, args.schema_dir, args.additions):
        return 1
    modules = generate_all(args.schema_dir)
    print(f"generated {len(modules)} decoder modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
