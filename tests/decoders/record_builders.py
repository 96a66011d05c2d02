"""Record sets for the tests of decoders.records, built with kafka-python's independent encoders
(DefaultRecordBatchBuilder, LegacyRecordBatchBuilder, kafka.codec) or by hand from the protocol layout, and what
decoding them must give (from what was put in, never from the code under test).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32c

MiB = 1 << 20


GiB = 1 << 30


CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


V2_HEADER = DefaultRecordBatchBuilder.HEADER_STRUCT  # kafka-python's own layout of the header


# --------------------------------------------------------------------------- builders


RecordSpec = tuple[int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]


def v2_batch(
    records: Sequence[RecordSpec],
    compression: str = "none",
    *,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
    leader_epoch: int = 0,
) -> bytes:
    """records: (offset_delta, timestamp, key, value, headers).  baseOffset / epoch are patched
    in like a broker does (they are outside the CRC)."""
    builder = DefaultRecordBatchBuilder(
        2, CODECS[compression], transactional, producer_id, producer_epoch, base_sequence, 1 << 24
    )
    for offset_delta, ts, key, value, headers in records:
        assert builder.append(offset_delta, ts, key, value, headers) is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    return bytes(buf)


def set_attributes(batch: bytes, attributes: int) -> bytes:
    """Rewrite a v2 batch's attributes and recompute its CRC with kafka-python's crc32c."""
    buf = bytearray(batch)
    struct.pack_into(">h", buf, 21, attributes)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def v2_raw(payload: bytes, codec: int, record_count: int, *, base_offset: int = 0) -> bytes:
    """A v2 batch with an arbitrary (e.g. hand-compressed) records section."""
    header = bytearray(V2_HEADER.size)
    V2_HEADER.pack_into(
        header,
        0,
        base_offset,
        V2_HEADER.size - 12 + len(payload),
        0,
        2,
        0,
        codec,
        max(record_count - 1, 0),
        1000,
        1000,
        -1,
        -1,
        -1,
        record_count,
    )
    buf = header + payload
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def legacy_set(magic: int, compression: str, msgs: list[tuple[int, int, bytes | None, bytes | None]]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, CODECS[compression], 1 << 24)
    for offset, ts, key, value in msgs:
        assert builder.append(offset, ts, key, value) is not None
    return bytes(builder.build())


def uncompressed_body(batch: bytes) -> bytes:
    return batch[V2_HEADER.size :]


def only_batch(result: dict[str, Any]) -> dict[str, Any]:
    assert result["status"] == "ok", result["status"]
    assert result["partial_tail"] == 0
    assert len(result["batches"]) == 1
    batch: dict[str, Any] = result["batches"][0]
    return batch


SAMPLE: list[RecordSpec] = [
    (0, 1_600_000_000_000, b"key-0", b"value-0" * 10, [("trace", b"abc"), ("empty", b""), ("null", None)]),
    (1, 1_600_000_000_005, None, b"v1", []),
    (2, 1_599_999_999_990, b"", None, [("h\u00e9", b"\x00\xff")]),
    (5, 1_600_000_000_100, b"\x00\x01\x02", b"x" * 3000, []),
]


def expected_records(records: Sequence[RecordSpec], base_offset: int) -> list[dict[str, Any]]:
    """What the decoder must report for SAMPLE-like input (computed from the input only)."""
    base_ts = records[0][1]
    out = []
    for offset_delta, ts, key, value, headers in records:
        out.append(
            {
                "offset": base_offset + offset_delta,
                "timestamp": base_ts + (ts - base_ts),
                "keySize": -1 if key is None else len(key),
                "key": None if key is None else key[:64].hex(),
                "keyTruncated": key is not None and len(key) > 64,
                "valueSize": -1 if value is None else len(value),
                "headerCount": len(headers),
                "headers": [
                    {
                        "key": hk,
                        "keySize": len(hk.encode()),
                        "valueSize": -1 if hv is None else len(hv),
                        "value": None if hv is None else hv[:64].hex(),
                    }
                    for hk, hv in headers
                ],
                "status": "ok",
            }
        )
    return out


def reference_xxh32(data: bytes, seed: int = 0) -> int:
    """Independent, straightforward XXH32 for the tests (spec: github.com/Cyan4973/xxHash)."""
    p1, p2, p3, p4, p5, m = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1, 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    def round_(acc: int, lane: int) -> int:
        return (rotl((acc + lane * p2) & m, 13) * p1) & m

    n, i = len(data), 0
    if n >= 16:
        acc = [(seed + p1 + p2) & m, (seed + p2) & m, seed, (seed - p1) & m]
        while n - i >= 16:
            acc = [round_(a, int.from_bytes(data[i + 4 * k : i + 4 * k + 4], "little")) for k, a in enumerate(acc)]
            i += 16
        h = (rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while n - i >= 4:
        h = (rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & m, 17) * p4) & m
        i += 4
    for b in data[i:]:
        h = (rotl((h + b * p5) & m, 11) * p1) & m
    h = ((h ^ (h >> 15)) * p2) & m
    h = ((h ^ (h >> 13)) * p3) & m
    return h ^ (h >> 16)


# --------------------------------------------------------------------------- magic 0 / 1


LEGACY_MSGS = [
    (0, 1_500_000_000_000, b"key", b"value" * 20),
    (1, 1_500_000_000_001, None, b"v"),
    (2, 1_500_000_000_002, b"k2", None),
    (3, 1_500_000_000_003, b"\x00" * 70, b""),
]


def all_inputs() -> list[bytes]:
    return [
        v2_batch(SAMPLE) + v2_batch(SAMPLE, "snappy"),
        v2_batch(SAMPLE, "lz4") + v2_batch(SAMPLE, "zstd"),
        legacy_set(0, "none", LEGACY_MSGS) + legacy_set(1, "gzip", LEGACY_MSGS),
        set_attributes(v2_batch([(0, 1, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 1), [])]), 0x30),
    ]
