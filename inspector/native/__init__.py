"""Typed Cython twins of inspector hot spots (see ``decoders.native``: same build, manifest and rules)."""

from __future__ import annotations

from pathlib import Path

from decoders.native import NativeModules

MODULES = NativeModules(__name__, Path(__file__).resolve().parent)
load = MODULES.load
