"""``python -m decoders.spec NEWEST_DIR [OLDER_DIR ...]``: convert Kafka's message specs into the schema.

This only writes ``decoders/schema``; ``python -m decoders.regen`` (the same arguments) converts and then
regenerates the decoders, the one command for updating to a newer Kafka.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from decoders.spec.convert import SCHEMA_DIR, SpecError, convert, write_schema


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec directories and ``--schema-dir`` (shared with ``python -m decoders.regen``)."""
    parser.add_argument("sources", nargs="+", type=Path,
                        help="Kafka clients/src/main/resources/common/message directories, newest first")
    parser.add_argument("--additions", type=Path, action="append", default=[], metavar="DIR",
                        help="a partial folder of specs newer than the newest full directory, read right after it "
                             "(repeatable)")
    parser.add_argument("--schema-dir", type=Path, default=SCHEMA_DIR)


def convert_specs(sources: list[Path], schema_dir: Path, additions: list[Path] | None = None) -> bool:
    """Convert ``sources`` (newest first, then ``additions`` after the first) into ``schema_dir``; False, with the
    error on stderr, if they cannot be."""
    try:
        documents = convert(sources, additions)
    except (SpecError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return False
    written = write_schema(documents, schema_dir)
    print(f"wrote {len(written)} schema files to {schema_dir}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoders.spec", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return 0 if convert_specs(args.sources, args.schema_dir, args.additions) else 1


if __name__ == "__main__":
    sys.exit(main())

