"""The generated decoder modules, imported on first use, by module name (``decoders.generated.registry``).

Each message layout has one reader, rendered from the one model by ``decoders.codegen``: compiled
(``decoders/accel``) for the APIs clients use on every connection and for every header and embedded
structure (``registry.ACCEL_MODULES``), plain Python (``decoders/generated``) for the admin, controller and
inter-broker APIs, rare on the wire. Both kinds fail alike: a DecodeError naming the field path and offset."""

from __future__ import annotations

import importlib
from types import ModuleType

from decoders.generated import registry

__all__ = ["accel_module", "reader_module"]

_modules: dict[str, ModuleType] = {}


def reader_module(name: str) -> ModuleType:
    """The readers of generated module ``name``: ``decoders.accel.NAME`` when compiled, else
    ``decoders.generated.NAME``."""
    mod = _modules.get(name)
    if mod is None:
        package = "accel" if name in registry.ACCEL_MODULES else "generated"
        mod = _modules[name] = importlib.import_module(f"decoders.{package}.{name}")
    return mod


def accel_module(name: str) -> ModuleType | None:
    """The compiled readers of generated module ``name`` (decoders/accel); None for a module whose readers are
    plain Python (``registry.ACCEL_MODULES``)."""
    return reader_module(name) if name in registry.ACCEL_MODULES else None
