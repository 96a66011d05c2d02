"""HTML text of any value the report writes: the one escaping of the page and its charts."""

from __future__ import annotations

from html import escape as _escape

from contract.text import visible


def escape(value: object) -> str:
    """``value`` as HTML text: None as nothing, anything else as its ``str`` with every control, invisible or
    direction-changing character written as the terminal shows it (``\\u202e``: ``contract.text.visible``; a
    client id holding a right-to-left override cannot reverse the page's text), then ``& < > " '`` escaped (a
    finding's detail, a client id or a topic may hold markup, quotes or nothing at all)."""
    return "" if value is None else _escape(visible(str(value)))
