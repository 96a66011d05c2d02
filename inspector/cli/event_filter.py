"""``show --filter``: ``COLUMN OP VALUE`` over an event row, the value spelt as JSON.

Operators: ``=`` and ``!=`` compare the column's value, ``~`` searches its text with a regular expression, ``<``,
``<=``, ``>`` and ``>=`` order numbers and times. The value is read as the column's type says
(``contract/events.py``): ``true``/``false`` for a boolean column, a number for a numeric one (compared as a
number: ``latency_ms>=2.5``, ``api_version=07``), an ISO 8601 time for ``ts`` (UTC unless it says otherwise),
text for a text column (a JSON string in double quotes for text that looks like something else:
``client_id="null"``). ``null`` is the missing value of any column: ``error_code=null`` matches the rows that
have none, ``error_code!=null`` those that have one. Every other comparison needs a value: ``error_code!=0``
does not match a row whose error_code is null (a request has none), nor does ``~``. On the list column
(``nested_error_codes``) ``=`` asks whether the list holds the value.

A filter that cannot work (unknown column, ``==``, a value of the wrong type, a regular expression that does not
compile) raises :class:`FilterError`, whose text is the one line to print.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from contract.errors import InspectorError
from contract.events import BOOL, EVENT_COLUMNS, FLOAT64, INT16, INT32, INT64, LIST_INT16, STRING, TIMESTAMP

Row = dict[str, Any]
Predicate = Callable[[Row], bool]

_EXPR = re.compile(r"\s*(\w+)\s*(==|!=|<=|>=|=|~|<|>)\s*(.*?)\s*", re.DOTALL)
_TYPES = {c.name: c.type for c in EVENT_COLUMNS}
_NUMBERS = (INT16, INT32, INT64, FLOAT64)
_ORDERED = (*_NUMBERS, TIMESTAMP)
_SYNTAX = "COLUMN=VALUE, COLUMN!=VALUE, COLUMN~REGEX or COLUMN<VALUE (<, <=, >, >=)"


class FilterError(InspectorError, ValueError):
    """A filter that cannot be used; its text names the filter, the problem and the fix."""


def compile_filter(expr: str) -> Predicate:
    """The predicate ``expr`` means over a row (a dict of the event columns)."""
    m = _EXPR.fullmatch(expr)
    if not m:
        raise FilterError(f"bad filter {expr!r}: write {_SYNTAX}")
    column, op, text = m.groups()
    if op == "==":
        raise FilterError(f"bad filter {expr!r}: '==' is not an operator here; write {column}={text} (one '=')")
    kind = _TYPES.get(column)
    if kind is None:
        raise FilterError(f"bad filter {expr!r}: no column {column!r} (columns: {', '.join(_TYPES)})")
    if op == "~":
        return _search(expr, column, kind, text)
    value = _value(expr, column, kind, text)
    if op in ("=", "!="):
        return _equal(column, kind, value, op == "!=")
    if kind not in _ORDERED:
        raise FilterError(f"bad filter {expr!r}: {op} orders numbers and times; {column} is {_a(kind)}: "
                          f"use = , != or ~")
    if value is None:
        raise FilterError(f"bad filter {expr!r}: null has no order; write {column}=null or {column}!=null")
    return _order(column, op, value)


def equal_values(exprs: list[str], column: str) -> list[Any]:
    """The values ``COLUMN=VALUE`` filters among ``exprs`` (valid ones: :func:`compile_filter` checked them) ask
    ``column`` to equal (``show`` numbers a capture's connections in the block a ``conn_id=N`` names)."""
    found = []
    for expr in exprs:
        m = _EXPR.fullmatch(expr)
        if m is not None and m.group(1) == column and m.group(2) == "=":
            value = _value(expr, column, _TYPES[column], m.group(3))
            if value is not None:
                found.append(value)
    return found


def _a(kind: str) -> str:
    return {BOOL: "true or false", STRING: "text", LIST_INT16: "a list of numbers", TIMESTAMP: "a time"}.get(
        kind, "a number")


def _value(expr: str, column: str, kind: str, text: str) -> Any:
    """``text`` as a value of the column's type (None for ``null``)."""
    if text == "null":
        return None
    if kind == BOOL:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise FilterError(f"bad filter {expr!r}: {column} is true or false (or null): write {column}=true")
    if kind in _NUMBERS or kind == LIST_INT16:
        for number in (int, float):
            try:
                return number(text)
            except ValueError:
                pass
        raise FilterError(f"bad filter {expr!r}: {column} is a number (or null): write {column}=0")
    if kind == TIMESTAMP:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise FilterError(f"bad filter {expr!r}: {column} is a time: write {column}>=2025-01-31T12:00:00 "
                              "(UTC unless it says otherwise)") from None
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    if text.startswith('"'):
        try:
            decoded = json.loads(text)
        except ValueError:
            raise FilterError(f"bad filter {expr!r}: {text} is not a JSON string; write {column}=TEXT or "
                              f'{column}="TEXT"') from None
        if isinstance(decoded, str):
            return decoded
    return text


def _equal(column: str, kind: str, value: Any, negated: bool) -> Predicate:
    if value is None:
        if negated:
            return lambda row: row.get(column) is not None
        return lambda row: row.get(column) is None
    if kind == LIST_INT16:
        if negated:
            return lambda row: row.get(column) is not None and value not in row[column]
        return lambda row: row.get(column) is not None and value in row[column]
    if negated:
        return lambda row: row.get(column) is not None and row[column] != value
    return lambda row: row.get(column) == value


def _order(column: str, op: str, value: Any) -> Predicate:
    compare: Callable[[Any, Any], bool] = {
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    }[op]
    return lambda row: row.get(column) is not None and compare(row[column], value)


def _search(expr: str, column: str, kind: str, text: str) -> Predicate:
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise FilterError(f"bad filter {expr!r}: the regular expression does not compile ({exc}); "
                          r"put a \ before a ( [ * + ? meant literally") from None
    as_text = _text_of(kind)
    return lambda row: row.get(column) is not None and pattern.search(as_text(row[column])) is not None


def _text_of(kind: str) -> Callable[[Any], str]:
    """How ``~`` sees a value: a boolean as JSON spells it, a time in ISO 8601, a list joined by commas."""
    if kind == BOOL:
        return lambda v: "true" if v else "false"
    if kind == TIMESTAMP:
        return lambda v: v.isoformat()
    if kind == LIST_INT16:
        return lambda v: ",".join(map(str, v))
    return str
