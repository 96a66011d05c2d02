"""Durations and sizes as people write them on a command line (``--rotate 60s``, ``--trigger 10s``,
``--rotate-size 128MB``): parsed once here for every command (standard library only)."""

from __future__ import annotations

import argparse
import re

__all__ = ["parse_duration", "parse_size"]

_DURATION_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h``, ``1.5h``, ``500ms`` → seconds; ``0`` means never."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 60s, 5m, 1h, 0 = never)")
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


def parse_size(text: str) -> int:
    """``65536``, ``64KB``, ``128MB``, ``1GiB`` → bytes (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(?:i?[bB])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 65536, 64MB, 1GiB)")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
