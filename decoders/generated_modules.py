"""The generated decoder modules, imported on first use: the plain readers (``decoders/generated``) and their
compiled twins (``decoders/accel``), by module name (``decoders.generated.registry``)."""

from __future__ import annotations

import importlib
from types import ModuleType

from decoders.generated import registry

__all__ = ["accel_module", "pure_module", "reader_module"]

_modules: dict[str, ModuleType] = {}


def pure_module(name: str) -> ModuleType:
    """The plain readers of generated module ``name`` (decoders/generated)."""
    mod = _modules.get(name)
    if mod is None:
        mod = importlib.import_module(f"decoders.generated.{name}")
        _modules[name] = mod
    return mod


_accel_modules: dict[str, ModuleType] = {}


def accel_module(name: str) -> ModuleType | None:
    """The compiled readers of generated module ``name`` (decoders/accel), failing as its plain readers fail
    (decoders/accel/_where.pyx); None for a module whose readers are not compiled (``registry.ACCEL_MODULES``:
    the rarely seen admin and inter-broker APIs). Both are rendered from one model by ``decoders.codegen``; the
    suite fails on a stale extension."""
    mod = _accel_modules.get(name)
    if mod is None:
        if name not in registry.ACCEL_MODULES:
            return None
        mod = _accel_modules[name] = importlib.import_module(f"decoders.accel.{name}")
    return mod


def reader_module(name: str) -> ModuleType:
    """The readers that decode generated module ``name``'s layouts: the compiled ones when built, else the plain
    ones (both fail alike, naming the field path and offset)."""
    return accel_module(name) or pure_module(name)
