"""``python -m decoders.codegen``: regenerate ``decoders/generated`` from ``decoders/schema``."""

from __future__ import annotations

import sys

from decoders.codegen.render import generate_all
from decoders.spec.convert import SCHEMA_DIR


def main() -> int:
    written = generate_all(SCHEMA_DIR)
    print(f"generated {len(written)} decoder modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
