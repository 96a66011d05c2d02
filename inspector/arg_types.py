"""The command line's value types: each turns an option's text into its value, or raises
``argparse.ArgumentTypeError`` with one line naming the problem and what to write instead (argparse adds the
option's name; the parser prints that one line and exits with 2, see ``inspector.cli``)."""

from __future__ import annotations

import argparse
import re

_SIZE = re.compile(r"\s*(\d+)\s*([kKmMgG]?)i?[bB]?\s*")
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*")
_UNITS = {None: 1, "ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_size(text: str) -> int:
    """``65536``, ``64MB``, ``1GiB`` → bytes (powers of 1024)."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 65536, 64MB, 1GiB)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h``, ``1.5h``, ``500ms`` → seconds; ``0`` means never."""
    m = _DURATION.fullmatch(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 60s, 5m, 1h, 0 = never)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _integer(text: str, what: str, example: str) -> int:
    try:
        return int(text.strip().replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r} (example: {example})") from None


def parse_count(text: str) -> int:
    """``1000000``, ``1_000_000``, ``1,000,000`` → a count (not negative)."""
    value = _integer(text, "a count", "1_000_000")
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (must not be negative)")
    return value


def _at_least(text: str, least: int, hint: str) -> int:
    value = _integer(text, "a number", str(max(least, 1) * 10))
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r} is too small: at least {least}{hint}")
    return value


def parse_port(text: str) -> int:
    """A TCP port, 1 to 65535."""
    value = _integer(text, "a port", "9092")
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r} (a TCP port is 1 to 65535)")
    return value


def parse_jobs(text: str) -> int:
    """``--jobs``: processes, 0 for one per core."""
    return _at_least(text, 0, " (0 = one per core)")


def parse_limit(text: str) -> int:
    """``--limit``: messages shown, at least 1 (no ``--limit``: all of them)."""
    return _at_least(text, 1, " (leave --limit out to show every message)")


def parse_connections(text: str) -> int:
    """``--max-connections``: at least one tracked at a time."""
    return _at_least(text, 1, " (the oldest idle connections are evicted beyond it)")


def parse_pending(text: str) -> int:
    """``--max-pending``: at least one request waits for its response."""
    return _at_least(text, 1, " (a request waits for its response)")
