"""The command line's value types: each turns an option's text into its value, or raises
``argparse.ArgumentTypeError`` with one line naming the problem and what to write instead (argparse adds the
option's name; the parser prints that one line and exits with 2, see ``inspector.cli.main``)."""

from __future__ import annotations

import argparse

from contract.units import parse_duration, parse_size

__all__ = ["parse_connections", "parse_count", "parse_duration", "parse_jobs", "parse_limit", "parse_pending",
           "parse_port", "parse_size"]


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
