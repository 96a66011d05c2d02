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
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

__all__ = ["Budget", "Records", "decode_records", "crc32c", "xxh32"]

LEVELS: Final = ("size", "headers", "records")

MAX_DECOMPRESSED_DEFAULT: Final = 64 * 1024 * 1024
MAX_RECORDS_DEFAULT: Final = 100_000

KEY_PREVIEW: Final = 64  # bytes of a record key / header value reported as hex
HEADER_KEY_PREVIEW: Final = 256  # bytes of a header key decoded to str

COMPRESSION_NAMES: Final = ("none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(6)", "unknown(7)")
CONTROL_TYPES: Final = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

# RecordBatch v2 header: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
_V2_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_V2_HEADER_SIZE: Final = 61
_V2_ATTRIBUTES_POS: Final = 21  # CRC-32C covers attributes .. end of batch
_V2_MIN_LENGTH: Final = _V2_HEADER_SIZE - 12  # batchLength counts from partitionLeaderEpoch
_LOG_OVERHEAD: Final = 12  # offset int64 + length int32, common to every magic
_MAGIC_POS: Final = 16  # same position for magic 0, 1 and 2

# Legacy message: offset, messageSize, crc, magic, attributes, [timestamp], keyLength
_LEGACY_V0: Final = struct.Struct(">qiIbbi")
_LEGACY_V1: Final = struct.Struct(">qiIbbqi")
_LEGACY_CRC_POS: Final = 16  # CRC-32 covers magic .. end of message
_LEGACY_MIN_SIZE: Final = (14, 22)  # messageSize minimum for magic 0 / 1

_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_CONTROL_KEY: Final = struct.Struct(">hh")
_END_TXN_MARKER: Final = struct.Struct(">hi")

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE: Final = 16
_LZ4_FRAME_MAGIC: Final = b"\x04\x22\x4d\x18"

_MIN_OUTPUT_GUESS: Final = 64 * 1024
_GZIP_CHUNK: Final = 1024 * 1024
_WRITE_ZERO: Final = "failed to write whole buffer"  # cramjam's "output buffer full" error


# --------------------------------------------------------------------------- checksums


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C_TABLE: Final = _crc32c_table()


def _crc32c_pure(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C (Castagnoli), table-driven pure Python."""
    table = _CRC32C_TABLE
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_crc32c_impl: Callable[[bytes | bytearray | memoryview], int] | None = None


def _crc32c_choose() -> Callable[[bytes | bytearray | memoryview], int]:
    """The optional C implementation (the ``crc32c`` package; same results, much faster), else the pure
    one. Chosen on first use: importing ``crc32c`` costs ~20 ms, and only record-level decoding needs it."""
    global _crc32c_impl
    try:
        import crc32c as _crc32c_ext

        _crc32c_impl = _crc32c_ext.crc32c
    except ImportError:  # pragma: no cover - depends on the environment
        _crc32c_impl = _crc32c_pure
    return _crc32c_impl


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data`` (the RecordBatch v2 checksum)."""
    return (_crc32c_impl or _crc32c_choose())(data)


_XXH_P1: Final = 2654435761
_XXH_P2: Final = 2246822519
_XXH_P3: Final = 3266489917
_XXH_P4: Final = 668265263
_XXH_P5: Final = 374761393
_M32: Final = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 (used by the LZ4 frame header checksum); pure Python, meant for short inputs."""
    buf = bytes(data)
    n = len(buf)
    i = 0
    if n >= 16:
        v1 = (seed + _XXH_P1 + _XXH_P2) & _M32
        v2 = (seed + _XXH_P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _XXH_P1) & _M32
        while i <= n - 16:
            a, b, c, d = struct.unpack_from("<IIII", buf, i)
            v1 = (_rotl32((v1 + a * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            v2 = (_rotl32((v2 + b * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            v3 = (_rotl32((v3 + c * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            v4 = (_rotl32((v4 + d * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            i += 16
        h = (_rotl32(v1, 1) + _rotl32(v2, 7) + _rotl32(v3, 12) + _rotl32(v4, 18)) & _M32
    else:
        h = (seed + _XXH_P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (w,) = struct.unpack_from("<I", buf, i)
        h = (_rotl32((h + w * _XXH_P3) & _M32, 17) * _XXH_P4) & _M32
        i += 4
    while i < n:
        h = (_rotl32((h + buf[i] * _XXH_P5) & _M32, 11) * _XXH_P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _XXH_P2) & _M32
    h ^= h >> 13
    h = (h * _XXH_P3) & _M32
    h ^= h >> 16
    return h


# --------------------------------------------------------------------------- helpers


class _Bad(Exception):
    """Internal: malformed data at a position (never escapes this module)."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pos = pos


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


class _Ctx:
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


def _where(pos: int, zpos: int | None) -> str:
    """Describe a position: in the records field, or inside the decompressed batch at ``zpos``."""
    if zpos is None:
        return f"at byte {pos}"
    return f"at decompressed byte {pos} of batch at byte {zpos}"


def _varint(buf: memoryview, p: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Read a zigzag varint (max_bytes=5) / varlong (max_bytes=10) from buf[p:end]."""
    start = p
    result = 0
    shift = 0
    while True:
        if p >= end:
            raise _Bad("truncated varint", start)
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 7 * max_bytes:
            raise _Bad(f"varint longer than {max_bytes} bytes", start)
    if result >> (32 if max_bytes == 5 else 64):
        raise _Bad(f"varint overflows {32 if max_bytes == 5 else 64} bits", start)
    return (result >> 1) ^ -(result & 1), p


def _as_view(data: bytes | bytearray | memoryview) -> memoryview:
    mv = memoryview(data)
    if mv.ndim != 1 or mv.format != "B":
        try:
            mv = mv.cast("B")
        except (TypeError, ValueError):
            mv = memoryview(mv.tobytes())
    return mv


def _signed8(b: int) -> int:
    return b - 256 if b > 127 else b


# --------------------------------------------------------------------------- decompression


def _cramjam() -> ModuleType:
    """cramjam, imported on first use (a read that decompresses nothing never needs it: ~2 ms of every start)."""
    import cramjam

    return cramjam


def _decompress(codec: int, src: memoryview, ctx: _Ctx, legacy: bool) -> tuple[memoryview | None, str]:
    """Inflate ``src`` within ``ctx.budget``; returns (payload, "") or (None, reason)."""
    try:
        if codec == 1:
            return _gunzip(src, ctx)
        if codec == 2:
            return _unsnappy(src, ctx)
        if codec == 3:
            return _bounded(_cramjam().lz4.decompress_into, "lz4", _fix_lz4_header(src) if legacy else src, ctx)
        if codec == 4:
            return _bounded(_cramjam().zstd.decompress_into, "zstd", src, ctx)
    except Exception as exc:  # a codec must never take the caller down
        return None, f"{COMPRESSION_NAMES[codec]} decompression failed: {exc}"
    return None, f"unsupported compression codec {codec}"


def _gunzip(src: memoryview, ctx: _Ctx) -> tuple[memoryview | None, str]:
    limit = ctx.budget
    out = bytearray()
    d = zlib.decompressobj(47)  # gzip or zlib header, auto-detected
    buf: bytes | memoryview = src
    try:
        while True:
            chunk = d.decompress(buf, min(_GZIP_CHUNK, limit - len(out) + 1))
            out += chunk
            if len(out) > limit:
                ctx.budget = 0
                return None, ctx.limit_reason()
            if d.eof:
                rest = d.unused_data
                if not rest:
                    break
                d = zlib.decompressobj(47)  # concatenated gzip members (GZIPInputStream reads them)
                buf = rest
                continue
            tail = d.unconsumed_tail
            if not chunk and len(tail) >= len(buf):
                return None, "gzip decompression failed: truncated stream"
            buf = tail
    except zlib.error as exc:
        return None, f"gzip decompression failed: {exc}"
    ctx.budget -= len(out)
    return memoryview(out), ""


def _unsnappy(src: memoryview, ctx: _Ctx) -> tuple[memoryview | None, str]:
    """Raw snappy or the xerial (snappy-java) framing; sizes are known before inflating."""
    snappy = _cramjam().snappy
    n = len(src)
    blocks: list[tuple[memoryview, int]] = []
    total = 0
    if n >= _XERIAL_HEADER_SIZE and src[:8] == _XERIAL_MAGIC:
        p = _XERIAL_HEADER_SIZE
        while p < n:
            if n - p < 4:
                return None, f"snappy decompression failed: truncated xerial block header at compressed byte {p}"
            (blen,) = _I32.unpack_from(src, p)
            p += 4
            if blen < 0 or blen > n - p:
                return None, (
                    f"snappy decompression failed: xerial block length {blen} exceeds data at compressed byte {p - 4}"
                )
            block = src[p : p + blen]
            p += blen
            ulen = snappy.decompress_raw_len(block)
            total += ulen
            if total > ctx.budget:
                return None, ctx.limit_reason()
            blocks.append((block, ulen))
    else:
        total = snappy.decompress_raw_len(src)
        if total > ctx.budget:
            return None, ctx.limit_reason()
        blocks.append((src, total))
    out = bytearray(total)
    view = memoryview(out)
    o = 0
    for block, ulen in blocks:
        written = snappy.decompress_raw_into(block, view[o : o + ulen])
        if written != ulen:
            return None, f"snappy decompression failed: block inflated to {written} bytes, expected {ulen}"
        o += ulen
    ctx.budget -= total
    return view, ""


def _fix_lz4_header(src: memoryview) -> memoryview:
    """Accept the broken LZ4 header checksum of Kafka's magic 0/1 (KafkaLZ4BlockOutputStream).

    It hashed the frame magic as well as the descriptor; rewrite it to the correct value so a
    standard decoder accepts the frame.  Anything else is left alone for the decoder to judge.
    """
    if len(src) < 7 or src[:4] != _LZ4_FRAME_MAGIC:
        return src
    flg = src[4]
    hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(src) <= hc_pos:
        return src
    good = (xxh32(src[4:hc_pos]) >> 8) & 0xFF
    stored = src[hc_pos]
    if stored == good or stored != (xxh32(src[:hc_pos]) >> 8) & 0xFF:
        return src
    fixed = bytearray(src)
    fixed[hc_pos] = good
    return memoryview(fixed)


def _bounded(fn: Callable[[Any, Any], int], name: str, src: memoryview, ctx: _Ctx) -> tuple[memoryview | None, str]:
    """One-shot cramjam ``decompress_into`` with a bounded, geometrically grown output buffer.

    cramjam stops with "failed to write whole buffer" as soon as the output is full, so a bomb
    costs at most ~4/3 of the budget in work and the budget in memory.
    """
    budget = ctx.budget
    size = min(budget, max(_MIN_OUTPUT_GUESS, 4 * len(src)))
    while True:
        out = bytearray(size)
        try:
            written = fn(src, out)
        except Exception as exc:  # cramjam raises DecompressionError and friends
            if _WRITE_ZERO in str(exc):
                del out  # free before allocating the next, larger buffer
                if size >= budget:
                    ctx.budget = 0
                    return None, ctx.limit_reason()
                size = min(budget, size * 4)
                continue
            return None, f"{name} decompression failed: {exc}"
        if not 0 <= written <= size:
            return None, f"{name} decompression failed: decoder reported {written} bytes"
        del out[written:]
        ctx.budget -= written
        return memoryview(out), ""


# --------------------------------------------------------------------------- magic 2


def _v2_records(mv: memoryview, pos: int, end: int, batch: dict[str, Any], ctx: _Ctx) -> None:
    """Level "records" for the v2 batch mv[pos:end]: CRC, decompression, records."""
    batch["crcValid"] = crc32c(mv[pos + _V2_ATTRIBUTES_POS : end]) == batch["crc"]
    batch["records"] = None
    codec = batch["attributes"] & 0x07
    zpos: int | None = None
    count = batch["recordCount"]
    if count < 0:
        reason = f"negative recordCount {count} at byte {pos + _V2_HEADER_SIZE - 4}"
        batch["status"] = batch["recordsStatus"] = reason
        ctx.fail(reason)
        return
    if ctx.records_left <= 0 and count > 0:
        reason = ctx.record_limit_reason()
        batch["recordsStatus"] = reason
        ctx.fail(reason)
        return
    if codec == 0:
        body = mv[pos + _V2_HEADER_SIZE : end]
        origin = pos + _V2_HEADER_SIZE
    elif not ctx.decompress:
        batch["recordsStatus"] = "compressed (decompression disabled)"
        return
    else:
        out, err = _decompress(codec, mv[pos + _V2_HEADER_SIZE : end], ctx, legacy=False)
        if out is None:
            if err != ctx.limit_reason():
                err = f"{err} (batch at byte {pos})"
            batch["status"] = batch["recordsStatus"] = err
            ctx.fail(err)
            return
        body = out
        origin = 0
        zpos = pos
    records, status, malformed = _v2_parse(body, origin, zpos, batch, ctx)
    batch["records"] = records
    batch["recordsStatus"] = status
    if status != "ok":
        if malformed:
            batch["status"] = status
        ctx.fail(status)


def _v2_parse(
    body: memoryview, origin: int, zpos: int | None, batch: dict[str, Any], ctx: _Ctx
) -> tuple[list[dict[str, Any]], str, bool]:
    """Parse the records area; returns (records, status, status-is-a-malformation).

    A record that is malformed inside its own length is reported and skipped; a bad record
    length ends the batch (its framing can no longer be trusted).
    """
    records: list[dict[str, Any]] = []
    count = batch["recordCount"]
    base_offset = batch["baseOffset"]
    base_ts = batch["baseTimestamp"]
    control = batch["isControl"]
    status = "ok"
    n = len(body)
    p = 0
    i = 0
    while i < count:
        if p >= n:
            return records, (f"recordCount {count} but only {i} records present {_where(origin + p, zpos)}"), True
        if ctx.records_left <= 0:
            return records, ctx.record_limit_reason(), False
        try:
            length, q = _varint(body, p, n, 5)
        except _Bad as bad:
            return records, f"record length: {bad.reason} {_where(origin + bad.pos, zpos)}", True
        if length < 0 or length > n - q:
            return (
                records,
                (f"record length {length} overruns batch ({n - q} bytes left) {_where(origin + p, zpos)}"),
                True,
            )
        rec_end = q + length
        rec = _v2_record(body, q, rec_end, base_offset, base_ts, control, origin, zpos, ctx)
        records.append(rec)
        ctx.records_left -= 1
        if status == "ok" and rec["status"] != "ok":
            status = rec["status"]
        i += 1
        p = rec_end
    if p < n and status == "ok":
        status = f"{n - p} trailing bytes after {count} records {_where(origin + p, zpos)}"
    return records, status, status != "ok"


def _v2_record(
    body: memoryview,
    p: int,
    end: int,
    base_offset: int,
    base_ts: int,
    control: bool,
    origin: int,
    zpos: int | None,
    ctx: _Ctx,
) -> dict[str, Any]:
    """One record in body[p:end] (after its length varint)."""
    rec: dict[str, Any] = {
        "offset": None,
        "timestamp": None,
        "keySize": None,
        "key": None,
        "keyTruncated": False,
        "valueSize": None,
        "headerCount": None,
        "headers": [],
        "status": "ok",
    }
    try:
        if p >= end:
            raise _Bad("empty record", p)
        p += 1  # attributes (unused)
        ts_delta, p = _varint(body, p, end, 10)
        off_delta, p = _varint(body, p, end, 5)
        rec["offset"] = base_offset + off_delta
        rec["timestamp"] = base_ts + ts_delta
        kpos = p
        klen, p = _varint(body, p, end, 5)
        if klen < -1 or klen > end - p:
            raise _Bad(f"key length {klen} overruns record ({end - p} bytes left)", kpos)
        rec["keySize"] = klen
        kstart = p
        if klen >= 0:
            rec["key"] = body[p : p + min(klen, KEY_PREVIEW)].hex()
            rec["keyTruncated"] = klen > KEY_PREVIEW
            p += klen
        vpos = p
        vlen, p = _varint(body, p, end, 5)
        if vlen < -1 or vlen > end - p:
            raise _Bad(f"value length {vlen} overruns record ({end - p} bytes left)", vpos)
        rec["valueSize"] = vlen
        vstart = p
        p += max(vlen, 0)
        hpos = p
        hcount, p = _varint(body, p, end, 5)
        if hcount < 0 or hcount > (end - p) // 2:
            raise _Bad(f"header count {hcount} invalid for {end - p} remaining record bytes", hpos)
        rec["headerCount"] = hcount
        headers = rec["headers"]
        for _ in range(hcount):
            hkpos = p
            hklen, p = _varint(body, p, end, 5)
            if hklen < 0 or hklen > end - p:
                raise _Bad(f"header key length {hklen} invalid ({end - p} bytes left)", hkpos)
            hkey = bytes(body[p : p + min(hklen, HEADER_KEY_PREVIEW)]).decode("utf-8", "replace")
            p += hklen
            hvpos = p
            hvlen, p = _varint(body, p, end, 5)
            if hvlen < -1 or hvlen > end - p:
                raise _Bad(f"header value length {hvlen} overruns record ({end - p} bytes left)", hvpos)
            if ctx.headers_left > 0:
                ctx.headers_left -= 1
                headers.append(
                    {
                        "key": hkey,
                        "keySize": hklen,
                        "valueSize": hvlen,
                        "value": body[p : p + min(hvlen, KEY_PREVIEW)].hex() if hvlen >= 0 else None,
                    }
                )
            p += max(hvlen, 0)
        if p != end:
            raise _Bad(f"record has {end - p} unparsed bytes", p)
        if control:
            rec["control"] = _control(body, kstart, klen, vstart, vlen)
    except _Bad as bad:
        rec["status"] = f"{bad.reason} {_where(origin + bad.pos, zpos)}"
    return rec


def _control(body: memoryview, kstart: int, klen: int, vstart: int, vlen: int) -> dict[str, Any]:
    """Control record key (version, type) and, for ABORT/COMMIT, the EndTxnMarker value."""
    if klen < 4:
        raise _Bad(f"control record key too short ({klen} bytes)", kstart)
    version, ctype = _CONTROL_KEY.unpack_from(body, kstart)
    ctrl: dict[str, Any] = {"version": version, "type": ctype, "typeName": CONTROL_TYPES.get(ctype, "UNKNOWN")}
    if ctype in (0, 1):
        if vlen < 6:
            raise _Bad(f"EndTxnMarker value too short ({vlen} bytes)", vstart)
        marker_version, epoch = _END_TXN_MARKER.unpack_from(body, vstart)
        ctrl["markerVersion"] = marker_version
        ctrl["coordinatorEpoch"] = epoch
    return ctrl


# --------------------------------------------------------------------------- magic 0 / 1


def _legacy_fields(buf: memoryview, pos: int, end: int, zpos: int | None) -> tuple[dict[str, Any], int, int, int, int]:
    """Header of the legacy message buf[pos:end] (magic and size already checked).

    Returns (fields, key_start, key_length, value_start, value_length); problems go to
    ``fields["status"]`` and leave the lengths at -1.
    """
    magic = buf[pos + _MAGIC_POS]
    ts: int | None
    if magic == 0:
        offset, size, crc, _, attrs, klen = _LEGACY_V0.unpack_from(buf, pos)
        ts = None
        p = pos + _LEGACY_V0.size
        ts_type: str | None = None
    else:
        offset, size, crc, _, attrs, ts, klen = _LEGACY_V1.unpack_from(buf, pos)
        p = pos + _LEGACY_V1.size
        ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
    fields: dict[str, Any] = {
        "byteOffset": pos,
        "offset": offset,
        "messageSize": size,
        "crc": crc,
        "magic": magic,
        "attributes": attrs,
        "compression": COMPRESSION_NAMES[attrs & 0x07],
        "timestampType": ts_type,
        "timestamp": ts,
        "keySize": None,
        "valueSize": None,
        "status": "ok",
    }
    # the size minimum guarantees the key length and the value length field are inside the message
    if klen < -1 or klen > end - p - 4:
        fields["status"] = f"key length {klen} overruns message {_where(p - 4, zpos)}"
        return fields, p, -1, p, -1
    fields["keySize"] = klen
    kstart = p
    p += max(klen, 0)
    (vlen,) = _I32.unpack_from(buf, p)
    p += 4
    if vlen < -1 or p + max(vlen, 0) != end:
        fields["status"] = (
            f"value length {vlen} does not match messageSize {size} ({end - p} bytes left) {_where(p - 4, zpos)}"
        )
        return fields, kstart, klen, p, -1
    fields["valueSize"] = vlen
    return fields, kstart, klen, p, vlen


def _legacy_record(fields: dict[str, Any], buf: memoryview, kstart: int, klen: int) -> dict[str, Any]:
    return {
        "offset": fields["offset"],
        "timestamp": fields["timestamp"],
        "keySize": klen,
        "key": buf[kstart : kstart + min(klen, KEY_PREVIEW)].hex() if klen >= 0 else None,
        "keyTruncated": klen > KEY_PREVIEW,
        "valueSize": fields["valueSize"],
        "headerCount": 0,
        "headers": [],
        "status": fields["status"],
    }


def _legacy_batch(mv: memoryview, pos: int, end: int, ctx: _Ctx) -> dict[str, Any]:
    batch, kstart, klen, vstart, vlen = _legacy_fields(mv, pos, end, None)
    if batch["status"] != "ok":
        ctx.fail(batch["status"])
    if not ctx.records:
        return batch
    batch["crcValid"] = zlib.crc32(mv[pos + _LEGACY_CRC_POS : end]) == batch["crc"]
    batch["records"] = None
    if batch["status"] != "ok":
        batch["recordsStatus"] = batch["status"]
        return batch
    codec = batch["attributes"] & 0x07
    if codec == 0:
        if ctx.records_left <= 0:
            batch["recordsStatus"] = ctx.record_limit_reason()
            ctx.fail(batch["recordsStatus"])
        else:
            ctx.records_left -= 1
            batch["records"] = [_legacy_record(batch, mv, kstart, klen)]
            batch["recordsStatus"] = "ok"
        return batch
    if not ctx.decompress:
        batch["recordsStatus"] = "compressed (decompression disabled)"
        return batch
    if ctx.records_left <= 0:
        batch["recordsStatus"] = ctx.record_limit_reason()
        ctx.fail(batch["recordsStatus"])
        return batch
    if vlen < 0:
        reason = f"compressed wrapper message has a null value {_where(vstart - 4, None)}"
        batch["status"] = batch["recordsStatus"] = reason
        ctx.fail(reason)
        return batch
    out, err = _decompress(codec, mv[vstart : vstart + vlen], ctx, legacy=True)
    if out is None:
        if err != ctx.limit_reason():
            err = f"{err} (message at byte {pos})"
        batch["status"] = batch["recordsStatus"] = err
        ctx.fail(err)
        return batch
    records, status, malformed = _legacy_inner(out, batch["offset"], batch["magic"], pos, ctx)
    batch["records"] = records
    batch["recordsStatus"] = status
    if status != "ok":
        if malformed:
            batch["status"] = status
        ctx.fail(status)
    return batch


def _legacy_inner(
    buf: memoryview, wrapper_offset: int, wrapper_magic: int, zpos: int, ctx: _Ctx
) -> tuple[list[dict[str, Any]], str, bool]:
    """Inner message set of a compressed wrapper; returns (records, status, is-malformation)."""
    records: list[dict[str, Any]] = []
    status = "ok"
    malformed = False
    last_inner_offset: int | None = None
    n = len(buf)
    p = 0
    while p < n:
        rem = n - p
        if rem < _MAGIC_POS + 1:
            status, malformed = f"truncated inner message ({rem} bytes) {_where(p, zpos)}", True
            break
        magic = buf[p + _MAGIC_POS]
        if magic not in (0, 1):
            status = f"unexpected inner message magic {_signed8(magic)} {_where(p + _MAGIC_POS, zpos)}"
            malformed = True
            break
        (size,) = _I32.unpack_from(buf, p + 8)
        if size < _LEGACY_MIN_SIZE[magic] or size > rem - _LOG_OVERHEAD:
            status = f"inner messageSize {size} invalid ({rem - _LOG_OVERHEAD} bytes left) {_where(p + 8, zpos)}"
            malformed = True
            break
        e = p + _LOG_OVERHEAD + size
        (last_inner_offset,) = _I64.unpack_from(buf, p)
        if ctx.records_left <= 0:
            if status == "ok":
                status = ctx.record_limit_reason()
            p = e  # keep scanning the framing for the last inner offset
            continue
        fields, kstart, klen, _, _ = _legacy_fields(buf, p, e, zpos)
        if fields["status"] == "ok" and fields["attributes"] & 0x07:
            fields["status"] = f"nested compression not supported {_where(p + _MAGIC_POS + 1, zpos)}"
        rec = _legacy_record(fields, buf, kstart, klen)
        rec["magic"] = magic
        rec["crcValid"] = zlib.crc32(buf[p + _LEGACY_CRC_POS : e]) == fields["crc"]
        ctx.records_left -= 1
        records.append(rec)
        if rec["status"] != "ok" and status == "ok":
            status, malformed = rec["status"], True
        p = e
    if last_inner_offset is None and status == "ok":
        status, malformed = f"compressed message set has no inner messages {_where(0, zpos)}", True
    if wrapper_magic == 1 and wrapper_offset != 0 and last_inner_offset is not None:
        # magic 1 inner offsets are relative and the wrapper carries the absolute last offset; a
        # wrapper offset of 0 (produce data from some clients) leaves them as they are (as in Java)
        base = wrapper_offset - last_inner_offset
        for rec in records:
            rec["offset"] += base
    return records, status, malformed


# --------------------------------------------------------------------------- entry points


def _empty(size: int, status: str) -> dict[str, Any]:
    return {"size": size, "status": status, "batches": [], "partial_tail": 0}


def decode_records(
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
    ctx: _Ctx | None = None
    start = (0, 0, 0)
    if records_level:
        ctx = _Ctx(True, decompress, max_decompressed, max_records, budget)
        start = (ctx.budget, ctx.records_left, ctx.headers_left)
    status = "ok"
    batches: list[dict[str, Any]] = []
    append = batches.append
    unpack_v2 = _V2_HEADER.unpack_from
    names = COMPRESSION_NAMES
    partial = 0
    pos = 0
    try:
        while pos < n:
            rem = n - pos
            if rem >= _V2_HEADER_SIZE and mv[pos + _MAGIC_POS] == 2:
                (
                    base_offset,
                    length,
                    epoch,
                    magic,
                    crc,
                    attrs,
                    last_delta,
                    base_ts,
                    max_ts,
                    pid,
                    pepoch,
                    base_seq,
                    count,
                ) = unpack_v2(mv, pos)
                if length < _V2_MIN_LENGTH:
                    if ctx is None:
                        status = _bad_length(length, _V2_MIN_LENGTH, pos)
                    else:
                        ctx.fail(_bad_length(length, _V2_MIN_LENGTH, pos))
                    break
                end = pos + _LOG_OVERHEAD + length
                if end > n:
                    partial = rem
                    break
                batch = {
                    "byteOffset": pos,
                    "baseOffset": base_offset,
                    "batchLength": length,
                    "partitionLeaderEpoch": epoch,
                    "magic": magic,
                    "crc": crc,
                    "attributes": attrs,
                    "compression": names[attrs & 0x07],
                    "timestampType": "LogAppendTime" if attrs & 0x08 else "CreateTime",
                    "isTransactional": (attrs & 0x10) != 0,
                    "isControl": (attrs & 0x20) != 0,
                    "hasDeleteHorizon": (attrs & 0x40) != 0,
                    "lastOffsetDelta": last_delta,
                    "baseTimestamp": base_ts,
                    "maxTimestamp": max_ts,
                    "producerId": pid,
                    "producerEpoch": pepoch,
                    "baseSequence": base_seq,
                    "recordCount": count,
                    "status": "ok",
                }
                if records_level:
                    assert ctx is not None  # built up front at record level
                    _v2_records(mv, pos, end, batch, ctx)
                append(batch)
                pos = end
                continue
            # slow path: legacy messages, short remainders, garbage
            if ctx is None:
                ctx = _Ctx(False, decompress, max_decompressed, max_records, budget)
                start = (ctx.budget, ctx.records_left, ctx.headers_left)
            if rem < _LOG_OVERHEAD:
                partial = rem
                break
            (length,) = _I32.unpack_from(mv, pos + 8)
            if rem <= _MAGIC_POS:
                if length < 0:
                    ctx.fail(_bad_length(length, 0, pos))
                else:
                    partial = rem
                break
            magic = mv[pos + _MAGIC_POS]
            if magic == 2:  # fewer than 61 bytes left
                minimum = _V2_MIN_LENGTH
            elif magic in (0, 1):
                minimum = _LEGACY_MIN_SIZE[magic]
            else:
                ctx.fail(f"unknown magic {_signed8(magic)} at byte {pos + _MAGIC_POS}")
                break
            if length < minimum:
                ctx.fail(_bad_length(length, minimum, pos))
                break
            end = pos + _LOG_OVERHEAD + length
            if end > n:
                partial = rem
                break
            append(_legacy_batch(mv, pos, end, ctx))
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
    """Records(data) for the decoders' runtime, stored from C when compiled (a class call parses its argument:
    ~2.9k instructions a record set, measured)."""
    r = Records.__new__(Records)
    r._data = data
    return r
