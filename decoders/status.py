"""Why a message's decode stopped, as a kind: the typed half of a message's status.

A :class:`~decoders.api.DecodedMessage` carries both: ``status_kind`` (one of :class:`StatusKind`) for code to
decide on, and ``status``, the text a person reads (``"ok"``, or the reason with the field path and offset),
which is what the events' ``decode_status`` column keeps. Code tests the kind, never the text.
"""

from __future__ import annotations

from enum import IntEnum


class StatusKind(IntEnum):
    """How a decode ended."""

    OK = 0
    TRUNCATED = 1  # the frame ends before the layout does
    TRAILING_BYTES = 2  # decoded, with bytes left after the body
    LIMIT = 3  # stopped at the message's array element budget (--max-elements)
    UNKNOWN_API = 4  # an api key no Kafka version has
    UNKNOWN_VERSION = 5  # a version of a known api that no Kafka version has
    INVALID = 6  # a value no valid message has (negative length, overlong varint, ...)
