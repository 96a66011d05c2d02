"""Kafka record data: the ``records`` wire type of Produce/Fetch/ShareFetch/FetchSnapshot.

Sans-I/O and pure: every function works on ``bytes``/``memoryview`` and never raises on bad
input.  Malformed data is reported as data: a ``status`` string with a precise reason and the
byte offset (relative to the start of the ``records`` field, or to the start of the decompressed
payload of a compressed batch, which the message then names).

Three detail levels:

``"size"``
    ``{"size": n}`` only.
``"headers"`` (default, the hot path)
    batch headers only: no record parsing, no CRC, no decompression.
``"records"``
    also the individual records, ``crcValid`` per batch, control records decoded.  Compressed
    batches are only inflated with ``decompress=True`` (bounded by ``max_decompressed`` bytes of
    output in total per call); otherwise their ``records`` is ``None`` with ``recordsStatus``
    ``"compressed (decompression disabled)"``.

Result layout (JSON-serialisable; bytes are lowercase hex)::

    {"size": n, "status": "ok" | <first problem>, "batches": [...], "partial_tail": k}

``partial_tail`` counts the trailing bytes of an incomplete final batch.  Brokers legally cut a
Fetch response in the middle of a batch, so this is not an error; for a Produce request a
non-zero ``partial_tail`` means truncated data and callers may flag it.

Magic 2 batches carry the RecordBatch header fields (camelCase, as in the Kafka protocol docs)
plus ``byteOffset`` (position in the records field), ``compression``, ``timestampType``,
``isTransactional``, ``isControl``, ``hasDeleteHorizon`` and ``status``.  Legacy MessageSet
entries (magic 0/1) are reported as one "batch" per top-level message, with ``offset``,
``messageSize``, ``crc``, ``magic``, ``attributes``, ``compression``, ``timestampType``,
``timestamp`` (``None`` for magic 0), ``keySize``, ``valueSize`` and ``status``; at level
``"records"`` their ``records`` are the message itself, or the inner messages of a compressed
wrapper (absolute offsets are derived from the wrapper offset for magic 1, as the Java client does).
Timestamps are reported as they are on the wire (v2: ``baseTimestamp + timestampDelta``); for
LogAppendTime batches the broker's time is in ``maxTimestamp`` (v2) / the wrapper ``timestamp``.

Problems: a framing error (negative or too small batchLength, unknown magic) ends decoding; a
problem inside a batch (malformed record, failed decompression, ``"decompression limit exceeded
(N bytes)"``) sets that batch's ``status`` and ``recordsStatus`` and decoding continues with the
next batch.  The top-level ``status`` is the first problem seen (or the ``max_records`` note).  A
CRC mismatch only shows as ``crcValid: False``.

Every record (at level ``"records"``) has the keys ``offset``, ``timestamp``, ``keySize`` (-1 =
null), ``key`` (hex of at most the first 64 bytes, ``None`` for null), ``keyTruncated``,
``valueSize`` (-1 = null), ``headerCount``, ``headers`` (list of ``{"key": str, "keySize": n,
"valueSize": n, "value": hex of at most 64 bytes or None}``) and ``status``; records of control
batches also have ``control``.  Inner legacy messages additionally carry ``magic`` and
``crcValid``.  The number of records, and separately of headers, materialised per call is capped
at ``max_records``.

The work is split by what it owns: ``decoders.record_batches`` parses batches and records,
``decoders.record_codecs`` decompresses, ``decoders.checksums`` checks, ``decoders.record_budget`` bounds
the work; this module walks the batch headers and holds the lazy view the decoders return.
"""

from __future__ import annotations

from typing import Any, Final

from decoders.checksums import crc32c, xxh32
from decoders.record_batches import (
    I32,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    MAGIC_POS,
    V2_HEADER,
    V2_HEADER_SIZE,
    V2_MIN_LENGTH,
    _as_view,
    legacy_batch,
    signed8,
    v2_records,
)
from decoders.record_budget import MAX_DECOMPRESSED_DEFAULT, MAX_RECORDS_DEFAULT, Budget, CallState
from decoders.record_header import v2_summary

__all__ = ["MAX_DECOMPRESSED_DEFAULT", "MAX_RECORDS_DEFAULT", "Budget", "Records", "crc32c", "decode_records", "xxh32"]

LEVELS: Final = ("size", "headers", "records")


# --------------------------------------------------------------------------- entry points


def _empty(size: int, status: str) -> dict[str, Any]:
    return {"size": size, "status": status, "batches": [], "partial_tail": 0}


def decode_records(  # noqa: C901 - not a dispatch: the compiled batch loop, one branch per batch format; not split here
    data: bytes | memoryview,
    level: str = "headers",
    *,
    decompress: bool = False,
    max_decompressed: int = MAX_DECOMPRESSED_DEFAULT,
    max_records: int = MAX_RECORDS_DEFAULT,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Decode one ``records`` field.  Never raises on bad input; see the module docstring.

    ``budget``, when given, is shared with other calls (see :class:`Budget`) and charged for this one.
    """
    try:
        mv = _as_view(data)
    except (TypeError, ValueError, BufferError) as exc:
        return _empty(0, f"unsupported input: {exc}")
    n = mv.nbytes
    if level == "size":
        return {"size": n}
    if level not in LEVELS:
        return _empty(n, f"unknown level {level!r}")
    # The context (budgets, first problem) is only built when something can use a budget: record
    # level, or a legacy/short batch; magic 2 batch headers alone use none (``status`` meanwhile).
    records_level = level == "records"
    ctx: CallState | None = None
    start = (0, 0, 0)
    if records_level:
        ctx = CallState(True, decompress, max_decompressed, max_records, budget)
        start = (ctx.budget, ctx.records_left, ctx.headers_left)
    status = "ok"
    batches: list[dict[str, Any]] = []
    append = batches.append
    unpack_v2 = V2_HEADER.unpack_from
    partial = 0
    pos = 0
    try:
        while pos < n:
            rem = n - pos
            if rem >= V2_HEADER_SIZE and mv[pos + MAGIC_POS] == 2:
                values = unpack_v2(mv, pos)
                length = values[1]
                if length < V2_MIN_LENGTH:
                    if ctx is None:
                        status = _bad_length(length, V2_MIN_LENGTH, pos)
                    else:
                        ctx.fail(_bad_length(length, V2_MIN_LENGTH, pos))
                    break
                end = pos + LOG_OVERHEAD + length
                if end > n:
                    partial = rem
                    break
                batch = v2_summary(pos, values)
                if records_level:
                    assert ctx is not None  # built up front at record level
                    v2_records(mv, pos, end, batch, ctx)
                append(batch)
                pos = end
                continue
            # slow path: legacy messages, short remainders, garbage
            if ctx is None:
                ctx = CallState(False, decompress, max_decompressed, max_records, budget)
                start = (ctx.budget, ctx.records_left, ctx.headers_left)
            if rem < LOG_OVERHEAD:
                partial = rem
                break
            (length,) = I32.unpack_from(mv, pos + 8)
            if rem <= MAGIC_POS:
                if length < 0:
                    ctx.fail(_bad_length(length, 0, pos))
                else:
                    partial = rem
                break
            magic = mv[pos + MAGIC_POS]
            if magic == 2:  # fewer than 61 bytes left
                minimum = V2_MIN_LENGTH
            elif magic in (0, 1):
                minimum = LEGACY_MIN_SIZE[magic]
            else:
                ctx.fail(f"unknown magic {signed8(magic)} at byte {pos + MAGIC_POS}")
                break
            if length < minimum:
                ctx.fail(_bad_length(length, minimum, pos))
                break
            end = pos + LOG_OVERHEAD + length
            if end > n:
                partial = rem
                break
            append(legacy_batch(mv, pos, end, ctx))
            pos = end
    except Exception as exc:  # last line of defence: a decoder bug must not kill a pipeline
        reason = f"internal decoder error at byte {pos}: {type(exc).__name__}: {exc}"
        if ctx is not None:
            ctx.fail(reason)
        elif status == "ok":
            status = reason
    if ctx is None:  # nothing used a budget
        return {"size": n, "status": status, "batches": batches, "partial_tail": partial}
    if budget is not None:
        ctx.settle(budget, start)
    return {"size": n, "status": ctx.status, "batches": batches, "partial_tail": partial}


def _bad_length(length: int, minimum: int, pos: int) -> str:
    if length < 0:
        return f"batchLength {length} is negative at byte {pos + 8}"
    return f"batchLength {length} is below the minimum {minimum} at byte {pos + 8}"


class Records:  # compiled, an extension type (records.pxd), its slot read-only to Python
    """Lazy view over one `records` field: holds the bytes, decodes on demand."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = data

    def __len__(self) -> int:
        data = self._data
        return data.nbytes if isinstance(data, memoryview) else len(data)

    def __repr__(self) -> str:
        return f"Records({len(self)} bytes)"

    @property
    def data(self) -> bytes | memoryview:
        """The raw bytes of the field, as given."""
        return self._data

    def summary(
        self,
        level: str = "headers",
        *,
        decompress: bool = False,
        max_decompressed: int = MAX_DECOMPRESSED_DEFAULT,
        max_records: int = MAX_RECORDS_DEFAULT,
        budget: Budget | None = None,
    ) -> dict[str, Any]:
        """Decode the field; same arguments and result as :func:`decode_records`."""
        return decode_records(
            self._data, level, decompress=decompress, max_decompressed=max_decompressed, max_records=max_records,
            budget=budget,
        )


def _new_records(data: bytes | memoryview) -> Records:
    """Records(data) for the decoders' runtime, stored from C when compiled (a class call parses its argument
    as a Python call: docs/performance.md)."""
    r = Records.__new__(Records)
    r._data = data
    return r
