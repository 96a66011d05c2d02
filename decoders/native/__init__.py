"""Hand-written typed Cython for hot spots outside the per-API decoders (which are generated).

Each ``*.pyx`` here is the fast twin of a pure-Python function and answers ``None`` for anything
it does not handle, so the caller's pure path (the reference) decides. ``setup.py`` builds them
and records the SHA-256 (and the files' sizes and times) of each source it compiled in the folder's
``_compiled.json`` (the manifest ``decoders._compiled`` reads for the compiled plain modules, see
``source_matches``); :func:`load` only returns a module built
from the source present (an edited ``.pyx`` with an old build is not used, and is listed in
``decoders._compiled.STALE``), and none with ``KAFKA_INSPECTOR_PURE=1``. ``inspector.native`` holds
the inspector's twins the same way.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from types import ModuleType

from decoders import _compiled


class NativeModules:
    """The typed twins of one package directory and the manifest of their build."""

    def __init__(self, package: str, directory: Path) -> None:
        self.package = package
        self.dir = directory

    def current(self, name: str, built: object) -> bool:
        """Whether manifest entry ``built`` is of the source of ``name`` now (``decoders._compiled.source_matches``)."""
        return _compiled.source_matches(self.dir / f"{name}.pyx", built)

    def load(self, name: str) -> ModuleType | None:
        """The compiled module ``<package>.<name>``, when built from its current source."""
        if os.environ.get("KAFKA_INSPECTOR_PURE") == "1":
            return None
        try:
            built = json.loads((self.dir / _compiled.MANIFEST).read_text()).get(name)
            module = importlib.import_module(f"{self.package}.{name}")
            current = self.current(name, built)
        except (OSError, ValueError, ImportError):
            return None
        if not current:
            _compiled.STALE.append(name)  # present, but built from another source (rebuild: `make setup`)
            return None
        return module


MODULES = NativeModules(__name__, Path(__file__).resolve().parent)
load = MODULES.load

