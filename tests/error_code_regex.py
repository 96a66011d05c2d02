"""A reference the body writer's error codes are held to: the non-zero ``"ErrorCode":N`` values found by a regex
in a body's JSON text (the writer collects them as it writes; ``inspector/native/_body.pyx``)."""

from __future__ import annotations

import re

from inspector.rows.event_table import nested_codes

_ERROR_CODE = re.compile(rb'"ErrorCode":(-?\d+)(?![\d.eE])')  # an integer, not a float's digits


def error_codes(body_text: bytes | None) -> list[int] | None:
    """The non-zero ``ErrorCode`` values in a body's JSON text (UTF-8), in order; None when there is none."""
    if body_text is None:
        return None
    return [code for match in _ERROR_CODE.finditer(body_text) if (code := int(match.group(1)))] or None


def nested_error_codes(body_text: bytes | None, top_level: int | None) -> list[int] | None:
    """Distinct non-zero error codes below the top level, found in the body's JSON text (UTF-8)."""
    return nested_codes(error_codes(body_text), top_level)
