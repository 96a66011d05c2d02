"""HTML text of any value the report writes: the one escaping of the page and its charts."""

from __future__ import annotations

from html import escape as _escape


def escape(value: object) -> str:
    """``value`` as HTML text: None as nothing, anything else as its ``str``, with ``& < > " '`` escaped (a
    finding's detail, a client id or a topic may hold markup, quotes or nothing at all)."""
    return "" if value is None else _escape(str(value))
