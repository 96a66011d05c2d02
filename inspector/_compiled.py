"""The inspector's compiled hot-path modules and their guard (``decoders._compiled`` does the work).

``inspector/__init__.py`` installs the guard for this package, as ``decoders/__init__.py`` does for
``decoders``; both share :data:`STALE`.
"""

from __future__ import annotations

from pathlib import Path

from decoders._compiled import (
    COMPILED,
    MANIFEST,
    STALE,
    cimported,
    cimported_modules,
    compiled,
    install,
    source_hash,
    source_hash_text,
    source_matches,
    source_record,
    source_stamp,
    stale_modules,
)

PACKAGE = Path(__file__).resolve().parent

__all__ = ["COMPILED", "MANIFEST", "PACKAGE", "STALE", "cimported", "cimported_modules", "compiled", "install",
           "source_hash", "source_hash_text", "source_matches", "source_record", "source_stamp", "stale_modules"]
