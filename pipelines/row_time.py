"""Timestamps as PySpark's rows hold them, read as the instants they are.

PySpark gives a ``timestamp`` value collected from Spark as a *naive* ``datetime`` in the local time zone of the
Python process (``datetime.fromtimestamp``), whatever the session's time zone (the report's is UTC), and reads a
naive one handed to ``createDataFrame`` the same way. Python code that reads a row's time (the pages, ``--follow``'s
settling and its ``findings.jsonl``) goes through here, so that a host whose local time is not UTC gets the same
instants and labels them UTC truly (it did not: on a host at UTC+5:30 a follow's times were 5 h 30 min off).
An aware ``datetime`` (pyarrow gives those) is taken as it is.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (naive: in the local time zone, as PySpark makes them)."""
    return value.astimezone(UTC)


def utc_naive(value: datetime) -> datetime:
    """``value`` in UTC, without a zone (how the outputs write a UTC time)."""
    return utc(value).replace(tzinfo=None)


def micros(value: datetime) -> int:
    """Microseconds since the epoch of ``value`` (naive: local time), exactly (no float rounding)."""
    return int(value.replace(microsecond=0).timestamp()) * 1_000_000 + value.microsecond


def from_micros(us: int) -> datetime:
    """The datetime PySpark's rows give for ``us`` microseconds since the epoch (naive, local time)."""
    return datetime.fromtimestamp(us // 1_000_000).replace(microsecond=us % 1_000_000)
