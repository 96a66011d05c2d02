"""Hand-written typed Cython for hot spots outside the per-API decoders (which are generated).

Each ``*.pyx`` here is the fast twin of a pure-Python function and answers ``None`` for anything
it does not handle, so the caller's pure path (the reference) decides. ``setup.py`` builds them
and records the SHA-256 of each source it compiled in the folder's ``_compiled.json`` (the manifest
``decoders._compiled`` reads for the compiled plain modules); :func:`load` only returns a module built
from the source present (an edited ``.pyx`` with an old build is not used, and is listed in
``decoders._compiled.STALE``), and none with ``KAFKA_INSPECTOR_PURE=1``. ``inspector.native`` holds
the inspector's twins the same way.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from decoders import _compiled

_T = TypeVar("_T")


class NativeModules:
    """The typed twins of one package directory and the manifest of their build."""

    def __init__(self, package: str, directory: Path) -> None:
        self.package = package
        self.dir = directory

    def source_hash(self, name: str) -> str:
        return _compiled.source_hash(self.dir / f"{name}.pyx")

    def load(self, name: str) -> ModuleType | None:
        """The compiled module ``<package>.<name>``, when built from its current source."""
        if os.environ.get("KAFKA_INSPECTOR_PURE") == "1":
            return None
        try:
            built = json.loads((self.dir / _compiled.MANIFEST).read_text()).get(name)
            module = importlib.import_module(f"{self.package}.{name}")
            current = self.source_hash(name)
        except (OSError, ValueError, ImportError):
            return None
        if built != current:
            _compiled.STALE.append(name)  # present, but built from another source (rebuild: `make setup`)
            return None
        return module


MODULES = NativeModules(__name__, Path(__file__).resolve().parent)
load = MODULES.load


_slots = load("_slots")
#: Py_TPFLAGS_HEAPTYPE: set on classes made by a class statement, not on compiled extension types.
_HEAP_TYPE = 1 << 9


def maker(cls: type[_T]) -> Callable[..., _T]:
    """A constructor of ``cls`` (a ``@dataclass(slots=True)``) taking every field positionally, in field
    order: the typed twin (``_slots.pyx``, stores the slots from C) when built and ``cls`` qualifies
    (plain fields only: no ``__post_init__``, no ``init=False``, no default factory), else ``cls`` itself.
    A class compiled as an extension type (a ``.pxd`` declares it) is its own constructor: its fields are
    not slots of the kind the twin stores."""
    if (_slots is None or not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__")
            or not cls.__flags__ & _HEAP_TYPE):
        return cls
    fields = dataclasses.fields(cls)
    if any(not f.init or f.default_factory is not dataclasses.MISSING for f in fields):
        return cls
    slots = cls.__dict__.get("__slots__", ())
    if tuple(slots) != tuple(f.name for f in fields):
        return cls
    made: Callable[..., Any] = _slots.Maker(cls, [f.name for f in fields])
    return made
