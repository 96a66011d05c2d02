"""The limits a decode runs under: what one run may hold and decode, and each limit's default, written here only.

``read``, ``show``, ``clients``, ``tap`` and the decode job take a :class:`DecodeLimits` whole (the ``--max-*``
flags make it, their defaults and help text come from :data:`DEFAULT_LIMITS`); the inspector and the decoders
take their defaults from it. Every limit hit is reported (a status, a gap, a count), never silent.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "DecodeLimits"]


@dataclass(frozen=True)
class DecodeLimits:
    """The bounds on one run's memory and work; sizes in bytes."""

    #: Largest Kafka frame accepted (``--max-frame``): a larger length prefix is reported and skipped.
    max_frame: int = 100 * 1024 * 1024
    #: Out-of-order bytes buffered per TCP direction before a hole is declared a gap (``--max-buffered``).
    max_buffered: int = 8 * 1024 * 1024
    #: TCP connections tracked at once; beyond it the oldest idle ones are evicted (``--max-connections``).
    max_connections: int = 100_000
    #: Requests per connection kept waiting for their response; beyond it the oldest is given up and counted as
    #: a missing response (``--max-pending``).
    max_pending: int = 10_000
    #: Bytes held in incomplete frames and behind holes, all connections together; beyond it the connections
    #: holding the most are released and resync (``--max-held``).
    max_held: int = 256 * 1024 * 1024
    #: Elements one message may decode: array entries, tagged fields and record batches, of its embedded
    #: protocols and Envelope contents too, all together (``--max-elements``).
    max_elements: int = 1_000_000
    #: Decompressed record data per message, all its records fields together (``--max-decompressed``).
    max_decompressed: int = 64 * 1024 * 1024
    #: Records (and record headers) one message's record sets may materialise.
    max_records: int = 100_000

    def __post_init__(self) -> None:
        for name, least in _LEAST.items():
            if getattr(self, name) < least:
                raise ValueError(f"{name} must be >= {least}")


#: The smallest value of each limit (the others: 0).
_LEAST = {name: 0 for name in DecodeLimits.__dataclass_fields__} | {"max_connections": 1, "max_pending": 1}


#: The limits a run has unless told otherwise.
DEFAULT_LIMITS = DecodeLimits()
