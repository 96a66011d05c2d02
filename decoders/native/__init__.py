"""Hand-written typed Cython for hot spots outside the per-API decoders (which are generated).

Each ``*.pyx`` here is the fast twin of a pure-Python function and answers ``None`` for anything
it does not handle, so the caller's pure path (the reference) decides. ``setup.py`` builds them
and records the SHA-256 of each source it compiled in ``_built.json``; :func:`load` only returns a
module built from the source present (an edited ``.pyx`` with an old build is not used), and none
with ``KAFKA_INSPECTOR_PURE=1``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "_built.json"
#: Native modules present but built from another source (rebuild: `make setup`).
STALE: list[str] = []


def source_hash(name: str) -> str:
    return hashlib.sha256((HERE / f"{name}.pyx").read_bytes()).hexdigest()


def load(name: str) -> ModuleType | None:
    """The compiled module ``decoders.native.<name>``, when built from its current source."""
    if os.environ.get("KAFKA_INSPECTOR_PURE") == "1":
        return None
    try:
        built = json.loads(MANIFEST.read_text()).get(name)
        module = importlib.import_module(f"{__name__}.{name}")
        current = source_hash(name)
    except (OSError, ValueError, ImportError):
        return None
    if built != current:
        STALE.append(name)
        return None
    return module
