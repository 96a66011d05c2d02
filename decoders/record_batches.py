"""The batches of record data: magic 2 RecordBatches and magic 0/1 messages, their records at level "records".

``decoders.records.decode_records`` walks the batch headers itself (the hot path); the functions here parse
what it hands over: :func:`v2_records` the records of a v2 batch (CRC, decompression, records, control
records), :func:`legacy_batch` a legacy message and the inner messages of a compressed wrapper. Problems
are reported in the batch (``status``, ``recordsStatus``) and the call's :class:`CallState`, never raised.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Final

from decoders.checksums import crc32c
from decoders.record_budget import CallState
from decoders.record_codecs import decompress
from decoders.record_header import COMPRESSION_NAMES, V2_HEADER

__all__ = [
    "I32",
    "LEGACY_MIN_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_POS",
    "V2_HEADER",
    "V2_HEADER_SIZE",
    "V2_MIN_LENGTH",
    "legacy_batch",
    "signed8",
    "v2_records",
]

KEY_PREVIEW: Final = 64  # bytes of a record key / header value reported as hex
HEADER_KEY_PREVIEW: Final = 256  # bytes of a header key decoded to str

CONTROL_TYPES: Final = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

V2_HEADER_SIZE: Final = V2_HEADER.size  # 61
_V2_ATTRIBUTES_POS: Final = 21  # CRC-32C covers attributes .. end of batch
V2_MIN_LENGTH: Final = V2_HEADER_SIZE - 12  # batchLength counts from partitionLeaderEpoch
LOG_OVERHEAD: Final = 12  # offset int64 + length int32, common to every magic
MAGIC_POS: Final = 16  # same position for magic 0, 1 and 2

# Legacy message: offset, messageSize, crc, magic, attributes, [timestamp], keyLength
_LEGACY_V0: Final = struct.Struct(">qiIbbi")
_LEGACY_V1: Final = struct.Struct(">qiIbbqi")
_LEGACY_CRC_POS: Final = 16  # CRC-32 covers magic .. end of message
LEGACY_MIN_SIZE: Final = (14, 22)  # messageSize minimum for magic 0 / 1

I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_CONTROL_KEY: Final = struct.Struct(">hh")
_END_TXN_MARKER: Final = struct.Struct(">hi")


class _Bad(Exception):
    """Internal: malformed data at a position (never escapes this module)."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pos = pos



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


def signed8(b: int) -> int:
    return b - 256 if b > 127 else b



# --------------------------------------------------------------------------- magic 2


def v2_records(mv: memoryview, pos: int, end: int, batch: dict[str, Any], ctx: CallState) -> None:
    """Level "records" for the v2 batch mv[pos:end]: CRC, decompression, records."""
    batch["crcValid"] = crc32c(mv[pos + _V2_ATTRIBUTES_POS : end]) == batch["crc"]
    batch["records"] = None
    codec = batch["attributes"] & 0x07
    zpos: int | None = None
    count = batch["recordCount"]
    if count < 0:
        reason = f"negative recordCount {count} at byte {pos + V2_HEADER_SIZE - 4}"
        batch["status"] = batch["recordsStatus"] = reason
        ctx.fail(reason)
        return
    if ctx.records_left <= 0 and count > 0:
        reason = ctx.record_limit_reason()
        batch["recordsStatus"] = reason
        ctx.fail(reason)
        return
    if codec == 0:
        body = mv[pos + V2_HEADER_SIZE : end]
        origin = pos + V2_HEADER_SIZE
    elif not ctx.decompress:
        batch["recordsStatus"] = "compressed (decompression disabled)"
        return
    else:
        out, err = decompress(codec, mv[pos + V2_HEADER_SIZE : end], ctx, legacy=False)
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
    body: memoryview, origin: int, zpos: int | None, batch: dict[str, Any], ctx: CallState
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
    ctx: CallState,
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
    magic = buf[pos + MAGIC_POS]
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
    (vlen,) = I32.unpack_from(buf, p)
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


def legacy_batch(mv: memoryview, pos: int, end: int, ctx: CallState) -> dict[str, Any]:
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
    out, err = decompress(codec, mv[vstart : vstart + vlen], ctx, legacy=True)
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
    buf: memoryview, wrapper_offset: int, wrapper_magic: int, zpos: int, ctx: CallState
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
        if rem < MAGIC_POS + 1:
            status, malformed = f"truncated inner message ({rem} bytes) {_where(p, zpos)}", True
            break
        magic = buf[p + MAGIC_POS]
        if magic not in (0, 1):
            status = f"unexpected inner message magic {signed8(magic)} {_where(p + MAGIC_POS, zpos)}"
            malformed = True
            break
        (size,) = I32.unpack_from(buf, p + 8)
        if size < LEGACY_MIN_SIZE[magic] or size > rem - LOG_OVERHEAD:
            status = f"inner messageSize {size} invalid ({rem - LOG_OVERHEAD} bytes left) {_where(p + 8, zpos)}"
            malformed = True
            break
        e = p + LOG_OVERHEAD + size
        (last_inner_offset,) = _I64.unpack_from(buf, p)
        if ctx.records_left <= 0:
            if status == "ok":
                status = ctx.record_limit_reason()
            p = e  # keep scanning the framing for the last inner offset
            continue
        fields, kstart, klen, _, _ = _legacy_fields(buf, p, e, zpos)
        if fields["status"] == "ok" and fields["attributes"] & 0x07:
            fields["status"] = f"nested compression not supported {_where(p + MAGIC_POS + 1, zpos)}"
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
