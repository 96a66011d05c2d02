"""``python -m decoders.spec NEWEST_DIR [OLDER_DIR ...]``: convert specs, then regenerate decoders.

Updating to a newer Kafka is this one command with the new spec directory first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from decoders.spec.convert import SCHEMA_DIR, SpecError, convert, write_schema


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoders.spec", description=__doc__)
    parser.add_argument("sources", nargs="+", type=Path,
                        help="Kafka clients/src/main/resources/common/message directories, newest first")
    parser.add_argument("--schema-dir", type=Path, default=SCHEMA_DIR)
    parser.add_argument("--no-codegen", action="store_true", help="only write the schema")
    args = parser.parse_args(argv)
    try:
        documents = convert(args.sources)
    except (SpecError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    written = write_schema(documents, args.schema_dir)
    print(f"wrote {len(written)} schema files to {args.schema_dir}")
    if not args.no_codegen:
        from decoders.codegen.render import generate_all

        modules = generate_all(args.schema_dir)
        print(f"generated {len(modules)} decoder modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
