"""How a string taken from the traffic is shown on a terminal: every output that prints one uses this.

A client id, group id, topic, error message or software name can hold anything: terminal escape sequences,
control characters, bidirectional overrides, invisible characters. :func:`visible` writes each such character
as a visible escape (``\\x1b``, ``\\u202e``) and leaves everything else as it is; rich markup is escaped by the
caller, which knows its console (``[`` means nothing to a plain ``print``).
"""

from __future__ import annotations

import re

__all__ = ["visible"]

#: C0 and C1 controls, DEL, zero-width and bidirectional formatting characters, the byte order mark.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control, invisible or direction-changing character written as its escape."""
    return _HIDDEN.sub(_escape, text)
