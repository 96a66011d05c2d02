"""The limits of record data decoding: a :class:`Budget` shared by calls, and one call's :class:`CallState`."""

from __future__ import annotations

from typing import Final

from contract.limits import DEFAULT_LIMITS

__all__ = ["MAX_DECOMPRESSED_DEFAULT", "MAX_RECORDS_DEFAULT", "Budget", "CallState"]

MAX_DECOMPRESSED_DEFAULT: Final = DEFAULT_LIMITS.max_decompressed
MAX_RECORDS_DEFAULT: Final = DEFAULT_LIMITS.max_records


class Budget:
    """Limits shared by several ``records`` fields, e.g. all those of one message.

    Pass the same object to each :func:`decode_records` call: decompressed bytes and materialised
    records/headers are then capped for the calls together (each call is still capped by its own
    ``max_decompressed`` / ``max_records``). Without it, a message carrying a thousand partitions,
    each with a small compression bomb, would inflate a thousand times ``max_decompressed``.
    """

    __slots__ = ("decompressed", "headers", "records")

    def __init__(self, decompressed: int = MAX_DECOMPRESSED_DEFAULT, records: int = MAX_RECORDS_DEFAULT) -> None:
        self.decompressed = decompressed
        self.records = records
        self.headers = records

    def __repr__(self) -> str:
        return f"Budget(decompressed={self.decompressed}, records={self.records}, headers={self.headers})"


class CallState:
    """Per-call state: options, remaining budgets and the first problem seen."""

    __slots__ = ("records", "decompress", "cap", "budget", "max_records", "records_left", "headers_left", "status")

    def __init__(self, records: bool, decompress: bool, max_decompressed: int, max_records: int,
                 shared: Budget | None = None) -> None:
        self.records = records
        self.decompress = decompress
        self.cap = max_decompressed
        self.budget = max(0, max_decompressed)
        self.max_records = max_records
        self.records_left = max(0, max_records)
        self.headers_left = max(0, max_records)
        if shared is not None:
            self.budget = min(self.budget, max(0, shared.decompressed))
            self.records_left = min(self.records_left, max(0, shared.records))
            self.headers_left = min(self.headers_left, max(0, shared.headers))
        self.status = "ok"

    def settle(self, shared: Budget, start: tuple[int, int, int]) -> None:
        """Charge what this call used to the shared budget."""
        shared.decompressed -= start[0] - self.budget
        shared.records -= start[1] - self.records_left
        shared.headers -= start[2] - self.headers_left

    def fail(self, reason: str) -> None:
        if self.status == "ok":
            self.status = reason

    def limit_reason(self) -> str:
        return f"decompression limit exceeded ({self.cap} bytes)"

    def record_limit_reason(self) -> str:
        return f"record limit reached (max_records={self.max_records})"
