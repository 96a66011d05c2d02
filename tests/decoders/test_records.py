"""Tests for decoders.records.

Inputs are built with kafka-python's independent encoders (DefaultRecordBatchBuilder,
LegacyRecordBatchBuilder, kafka.codec) or by hand from the protocol layout; expectations come
from what was put in, never from the code under test.
"""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record import _crc32c as kafka_pure_crc32c
from kafka.record import default_records, legacy_records
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32c

from decoders import checksums, record_batches
from decoders import records as rec_mod
from decoders.records import Records, decode_records

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


# --------------------------------------------------------------------------- checksums


def test_crc32c_known_vector_and_pure_fallback() -> None:
    assert rec_mod.crc32c(b"123456789") == 0xE3069283
    assert checksums._crc32c_pure(b"123456789") == 0xE3069283
    data = bytes(range(256)) * 7 + b"kafka"
    assert checksums._crc32c_pure(data) == kafka_pure_crc32c.crc(data)
    assert checksums._crc32c_pure(memoryview(data)[3:]) == kafka_pure_crc32c.crc(data[3:])
    assert rec_mod.crc32c(memoryview(data)) == kafka_pure_crc32c.crc(data)


def test_records_level_with_pure_python_crc32c(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoder works without the optional crc32c package."""
    monkeypatch.setattr(checksums, "_crc32c_impl", checksums._crc32c_pure)
    good = v2_batch(SAMPLE, "zstd")
    bad = bytearray(good)
    bad[-1] ^= 0x01
    result = decode_records(good + bytes(bad), "records")
    assert [b["crcValid"] for b in result["batches"]] == [True, False]


def _lz4_header_checksums() -> list[tuple[bytes, int]]:
    """(frame descriptor, HC byte) pairs produced by the lz4 library itself."""
    out = []
    for block_size in (
        lz4.frame.BLOCKSIZE_MAX64KB,
        lz4.frame.BLOCKSIZE_MAX256KB,
        lz4.frame.BLOCKSIZE_MAX1MB,
        lz4.frame.BLOCKSIZE_MAX4MB,
    ):
        for linked in (False, True):
            for checksum in (False, True):
                for block_checksum in (False, True):
                    for source_size in (0, 1000, 123_456_789, 2**40 + 12345):
                        frame = lz4.frame.LZ4FrameCompressor(
                            block_size=block_size,
                            block_linked=linked,
                            content_checksum=checksum,
                            block_checksum=block_checksum,
                        ).begin(source_size=source_size)
                        hc_pos = 6 + (8 if frame[4] & 0x08 else 0)
                        assert len(frame) == hc_pos + 1
                        out.append((frame[4:hc_pos], frame[hc_pos]))
    return out


def test_xxh32_against_lz4_header_checksums_and_vectors() -> None:
    assert rec_mod.xxh32(b"") == 0x02CC5D05
    pairs = _lz4_header_checksums()
    assert len({d for d, _ in pairs}) >= 64
    for descriptor, hc in pairs:
        assert (rec_mod.xxh32(descriptor) >> 8) & 0xFF == hc
    for n in range(40):  # lanes (>= 16 bytes), 4-byte words and tail bytes
        data = bytes((i * 7 + 3) & 0xFF for i in range(n))
        assert rec_mod.xxh32(data) == _test_xxh32(data)


def _test_xxh32(data: bytes, seed: int = 0) -> int:
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


def test_test_xxh32_matches_lz4() -> None:
    for descriptor, hc in _lz4_header_checksums():
        assert (_test_xxh32(descriptor) >> 8) & 0xFF == hc


# --------------------------------------------------------------------------- magic 2


def test_v2_headers_level_fields() -> None:
    raw = v2_batch(
        SAMPLE,
        transactional=True,
        producer_id=4242,
        producer_epoch=3,
        base_sequence=17,
        base_offset=1000,
        leader_epoch=9,
    )
    batch = only_batch(decode_records(raw))
    assert batch == {
        "byteOffset": 0,
        "baseOffset": 1000,
        "batchLength": len(raw) - 12,
        "partitionLeaderEpoch": 9,
        "magic": 2,
        "crc": struct.unpack(">I", raw[17:21])[0],
        "attributes": 0x10,
        "compression": "none",
        "timestampType": "CreateTime",
        "isTransactional": True,
        "isControl": False,
        "hasDeleteHorizon": False,
        "lastOffsetDelta": 5,
        "baseTimestamp": 1_600_000_000_000,
        "maxTimestamp": 1_600_000_000_100,
        "producerId": 4242,
        "producerEpoch": 3,
        "baseSequence": 17,
        "recordCount": 4,
        "status": "ok",
    }
    # the header-level dict carries no per-record work
    assert "records" not in batch and "crcValid" not in batch


@pytest.mark.parametrize("compression", list(CODECS))
def test_v2_records_every_codec(compression: str) -> None:
    raw = v2_batch(SAMPLE, compression, base_offset=77)
    # kafka-python only keeps compression when it helps; SAMPLE compresses well
    assert raw[22] & 0x07 == CODECS[compression]
    batch = only_batch(decode_records(raw, "records", decompress=True))
    assert batch["compression"] == compression
    assert batch["crcValid"] is True
    assert batch["recordsStatus"] == "ok"
    assert batch["records"] == expected_records(SAMPLE, 77)
    # independent reader agrees on the basics
    theirs = list(DefaultRecordBatch(bytearray(raw)))
    assert [r.offset for r in theirs] == [r["offset"] for r in batch["records"]]


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_v2_compressed_without_decompress(compression: str) -> None:
    raw = v2_batch(SAMPLE, compression)
    result = decode_records(raw, "records")
    batch = only_batch(result)
    assert batch["records"] is None
    assert batch["recordsStatus"] == "compressed (decompression disabled)"
    assert batch["crcValid"] is True
    assert batch["recordCount"] == 4
    # headers level never decompresses, even when asked to
    assert "records" not in only_batch(decode_records(raw, "headers", decompress=True))


def test_v2_raw_snappy_and_multi_block_xerial(monkeypatch: pytest.MonkeyPatch) -> None:
    value = bytes(range(256)) * 200
    sample = [(0, 5, b"k", value, []), (1, 6, None, value[::-1], [("h", b"v")])]
    monkeypatch.setattr(default_records, "snappy_encode", lambda data: snappy.compress(data))
    raw_snappy = v2_batch(sample, "snappy")
    monkeypatch.setattr(default_records, "snappy_encode", lambda data: kafka_codec.snappy_encode(data, True, 4096))
    xerial = v2_batch(sample, "snappy")
    assert xerial[61:69] == b"\x82SNAPPY\x00" and raw_snappy[61:69] != b"\x82SNAPPY\x00"
    for raw in (raw_snappy, xerial):
        batch = only_batch(decode_records(raw, "records", decompress=True))
        assert batch["records"] == expected_records(sample, 0)


def test_v2_lz4_linked_blocks_and_gzip_members(monkeypatch: pytest.MonkeyPatch) -> None:
    value = bytes(range(256)) * 1000
    sample = [(0, 5, b"k", value, []), (1, 6, None, value[::-1], [("h", b"v")])]
    monkeypatch.setattr(
        default_records,
        "lz4_encode",
        lambda data: lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=True, content_checksum=True, store_size=True
        ),
    )
    monkeypatch.setattr(
        default_records,
        "gzip_encode",
        lambda data: kafka_codec.gzip_encode(data[:1000]) + kafka_codec.gzip_encode(data[1000:]),
    )
    for codec in ("lz4", "gzip"):
        batch = only_batch(decode_records(v2_batch(sample, codec), "records", decompress=True))
        assert batch["compression"] == codec
        assert batch["records"] == expected_records(sample, 0)


def test_v2_key_and_header_truncation() -> None:
    key = bytes(range(200))
    hval = b"\xab" * 100
    hkey = "k" * 300
    raw = v2_batch([(0, 1, key, b"v", [(hkey, hval)])])
    [record] = only_batch(decode_records(raw, "records"))["records"]
    assert record["keySize"] == 200 and record["key"] == key[:64].hex() and record["keyTruncated"] is True
    [header] = record["headers"]
    assert header == {"key": hkey[:256], "keySize": 300, "valueSize": 100, "value": hval[:64].hex()}


def test_v2_invalid_utf8_header_key_does_not_raise() -> None:
    # build a record whose header key is b"\xff\xfe", by hand: varints are zigzag
    body = bytes([0, 0, 0, 2]) + b"k" + bytes([2]) + b"v" + bytes([2, 4]) + b"\xff\xfe" + bytes([2]) + b"x"
    raw = v2_raw(bytes([len(body) * 2]) + body, 0, 1)
    [record] = only_batch(decode_records(raw, "records"))["records"]
    assert record["headers"][0]["key"] == "\ufffd\ufffd"
    assert record["headers"][0]["value"] == "78"


def test_v2_transactional_and_control_batches() -> None:
    data = v2_batch(
        [(0, 10, b"a", b"1", [])], transactional=True, producer_id=9, producer_epoch=1, base_sequence=0, base_offset=50
    )
    commit = v2_batch(
        [(0, 20, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 7), [])],
        transactional=True,
        producer_id=9,
        producer_epoch=1,
        base_sequence=0,
        base_offset=51,
    )
    commit = set_attributes(commit, 0x10 | 0x20)
    abort = v2_batch(
        [(0, 30, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 8), [])],
        transactional=True,
        producer_id=9,
        producer_epoch=2,
        base_sequence=0,
        base_offset=52,
    )
    abort = set_attributes(abort, 0x10 | 0x20)
    leader_change = set_attributes(v2_batch([(0, 40, struct.pack(">hh", 0, 2), b"\x00\x00", [])]), 0x20)
    # kafka-python's reader agrees these are control records
    for raw, kind in ((commit, "commit"), (abort, "abort")):
        [ctrl] = list(DefaultRecordBatch(bytearray(raw)))
        assert getattr(ctrl, kind)

    result = decode_records(data + commit + abort + leader_change, "records")
    assert result["status"] == "ok"
    b_data, b_commit, b_abort, b_leader = result["batches"]
    assert b_data["isTransactional"] is True and b_data["isControl"] is False
    assert "control" not in b_data["records"][0]
    assert b_commit["isControl"] is True and b_commit["isTransactional"] is True
    assert b_commit["crcValid"] is True
    assert b_commit["records"][0]["offset"] == 51
    assert b_commit["records"][0]["control"] == {
        "version": 0,
        "type": 1,
        "typeName": "COMMIT",
        "markerVersion": 0,
        "coordinatorEpoch": 7,
    }
    assert b_abort["records"][0]["control"] == {
        "version": 0,
        "type": 0,
        "typeName": "ABORT",
        "markerVersion": 0,
        "coordinatorEpoch": 8,
    }
    assert b_abort["producerEpoch"] == 2
    assert b_leader["records"][0]["control"] == {"version": 0, "type": 2, "typeName": "LEADER_CHANGE"}
    assert [b["byteOffset"] for b in result["batches"]] == [
        0,
        len(data),
        len(data) + len(commit),
        len(data) + len(commit) + len(abort),
    ]


def test_v2_control_record_too_short() -> None:
    raw = set_attributes(v2_batch([(0, 1, b"\x00", b"", [])]), 0x20)
    result = decode_records(raw, "records")
    assert result["status"].startswith("control record key too short (1 bytes) at byte ")
    assert result["batches"][0]["records"][0]["status"] == result["status"]


def test_timestamp_type_and_delete_horizon_bits() -> None:
    raw = set_attributes(v2_batch([(0, 1, None, b"v", [])]), 0x08 | 0x40)
    batch = only_batch(decode_records(raw))
    assert batch["timestampType"] == "LogAppendTime"
    assert batch["hasDeleteHorizon"] is True
    assert batch["isTransactional"] is False


def test_crc_mismatch_reported() -> None:
    raw = bytearray(v2_batch(SAMPLE))
    raw[-10] ^= 0x01  # inside the last record's value: structure intact, CRC broken
    batch = only_batch(decode_records(bytes(raw), "records"))
    assert batch["crcValid"] is False
    assert len(batch["records"]) == 4


def test_memoryview_input_positions_relative_to_field() -> None:
    raw = v2_batch(SAMPLE) + v2_batch(SAMPLE, "gzip", base_offset=10)
    packet = b"\xee" * 37 + raw + b"\xdd" * 5
    view = memoryview(packet)[37 : 37 + len(raw)]
    result = decode_records(view, "records", decompress=True)
    assert result["size"] == len(raw)
    assert [b["byteOffset"] for b in result["batches"]] == [0, len(v2_batch(SAMPLE))]
    assert result["batches"][1]["records"] == expected_records(SAMPLE, 10)


def test_records_class() -> None:
    raw = v2_batch(SAMPLE) + legacy_set(1, "none", [(0, 5, b"k", b"v")])
    r = Records(raw)
    assert len(r) == len(raw)
    assert len(Records(memoryview(raw)[5:])) == len(raw) - 5
    assert r.summary("size") == {"size": len(raw)}
    assert r.summary() == decode_records(raw)
    assert r.summary("records", decompress=True) == decode_records(raw, "records", decompress=True)
    assert not hasattr(r, "__dict__")
    assert "Records" in repr(r)


def test_size_level_and_unknown_level() -> None:
    assert decode_records(b"\x00" * 5, "size") == {"size": 5}
    result = decode_records(b"", "bogus")
    assert result["status"] == "unknown level 'bogus'"
    assert decode_records(b"") == {"size": 0, "status": "ok", "batches": [], "partial_tail": 0}


def test_non_byte_memoryview_formats() -> None:
    raw = v2_batch(SAMPLE)
    padded = raw + b"\x00" * (-len(raw) % 4)
    as_ints = memoryview(padded).cast("I")
    result = decode_records(as_ints, "records")
    assert result["batches"][0]["records"] == expected_records(SAMPLE, 0)
    assert decode_records(memoryview(padded)[::2])["size"] == (len(padded) + 1) // 2  # non-contiguous
    assert decode_records(None)["status"].startswith("unsupported input")  # type: ignore[arg-type]


def test_json_serialisable() -> None:
    raw = (
        v2_batch(SAMPLE, "zstd")
        + legacy_set(1, "gzip", [(0, 5, b"k", b"v"), (1, 6, None, b"w")])
        + v2_batch(SAMPLE)[:30]
    )
    for level in ("size", "headers", "records"):
        result = decode_records(raw, level, decompress=True)
        assert json.loads(json.dumps(result)) == result


# --------------------------------------------------------------------------- magic 0 / 1


LEGACY_MSGS = [
    (0, 1_500_000_000_000, b"key", b"value" * 20),
    (1, 1_500_000_000_001, None, b"v"),
    (2, 1_500_000_000_002, b"k2", None),
    (3, 1_500_000_000_003, b"\x00" * 70, b""),
]


def _legacy_expected(msgs: list[Any], magic: int, offsets: list[int]) -> list[dict[str, Any]]:
    return [
        {
            "offset": off,
            "timestamp": ts if magic == 1 else None,
            "keySize": -1 if key is None else len(key),
            "key": None if key is None else key[:64].hex(),
            "keyTruncated": key is not None and len(key) > 64,
            "valueSize": -1 if value is None else len(value),
            "headerCount": 0,
            "headers": [],
            "status": "ok",
        }
        for (_, ts, key, value), off in zip(msgs, offsets, strict=True)
    ]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_uncompressed(magic: int) -> None:
    raw = legacy_set(magic, "none", LEGACY_MSGS)
    result = decode_records(raw, "records")
    assert result["status"] == "ok" and result["partial_tail"] == 0
    assert len(result["batches"]) == len(LEGACY_MSGS)
    for batch, expected in zip(result["batches"], _legacy_expected(LEGACY_MSGS, magic, [0, 1, 2, 3]), strict=True):
        assert batch["magic"] == magic
        assert batch["compression"] == "none"
        assert batch["crcValid"] is True
        assert batch["timestampType"] == ("CreateTime" if magic == 1 else None)
        assert batch["timestamp"] == expected["timestamp"]
        assert batch["keySize"] == expected["keySize"] and batch["valueSize"] == expected["valueSize"]
        assert batch["records"] == [expected]
    headers_only = decode_records(raw)
    assert all("records" not in b for b in headers_only["batches"])
    assert headers_only["batches"][0]["messageSize"] == (14 if magic == 0 else 22) + 3 + 100


@pytest.fixture
def fake_xxhash(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python needs the xxhash package for magic-0 LZ4; provide it from _test_xxh32."""

    def xxh32(data: bytes) -> Any:
        return SimpleNamespace(digest=lambda: _test_xxh32(bytes(data)).to_bytes(4, "big"))

    monkeypatch.setattr(kafka_codec, "xxhash", SimpleNamespace(xxh32=xxh32))


@pytest.mark.usefixtures("fake_xxhash")
@pytest.mark.parametrize(
    "magic,compression", [(0, "gzip"), (0, "snappy"), (0, "lz4"), (1, "gzip"), (1, "snappy"), (1, "lz4")]
)
def test_legacy_compressed(magic: int, compression: str) -> None:
    raw = legacy_set(magic, compression, LEGACY_MSGS)
    batch = only_batch(decode_records(raw, "records", decompress=True))
    assert batch["magic"] == magic and batch["compression"] == compression
    assert batch["keySize"] == -1 and batch["crcValid"] is True
    assert batch["recordsStatus"] == "ok"
    records = batch["records"]
    for r in records:
        assert r.pop("magic") == magic and r.pop("crcValid") is True
    # kafka-python writes wrapper offset 0: inner offsets are kept as written (Java does the same)
    assert records == _legacy_expected(LEGACY_MSGS, magic, [0, 1, 2, 3])
    # without decompression the wrapper is reported but not opened
    batch = only_batch(decode_records(raw, "records"))
    assert batch["records"] is None and batch["recordsStatus"] == "compressed (decompression disabled)"


@pytest.mark.usefixtures("fake_xxhash")
def test_legacy_magic0_lz4_has_broken_header_checksum() -> None:
    raw = legacy_set(0, "lz4", LEGACY_MSGS)
    frame = raw[26:]  # offset, size, crc, magic, attributes, keyLength (null), valueLength
    assert frame[:4] == b"\x04\x22\x4d\x18"
    hc_pos = 6 + (8 if frame[4] & 0x08 else 0)
    assert frame[hc_pos] != (_test_xxh32(frame[4:hc_pos]) >> 8) & 0xFF  # the old, broken checksum
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(frame)  # a strict decoder rejects it; the decoder under test must not
    assert only_batch(decode_records(raw, "records", decompress=True))["recordsStatus"] == "ok"


def test_legacy_magic1_relative_inner_offsets() -> None:
    raw = bytearray(legacy_set(1, "gzip", LEGACY_MSGS))
    struct.pack_into(">q", raw, 0, 1003)  # broker-assigned: the wrapper carries the last offset
    batch = only_batch(decode_records(bytes(raw), "records", decompress=True))
    assert batch["offset"] == 1003
    assert [r["offset"] for r in batch["records"]] == [1000, 1001, 1002, 1003]


def test_mixed_magic_fetch_response() -> None:
    raw = (
        legacy_set(0, "none", LEGACY_MSGS[:1])
        + legacy_set(1, "snappy", LEGACY_MSGS)
        + v2_batch(SAMPLE, "zstd", base_offset=5)
    )
    result = decode_records(raw, "records", decompress=True)
    assert result["status"] == "ok"
    assert [b["magic"] for b in result["batches"]] == [0, 1, 2]
    assert result["batches"][2]["records"] == expected_records(SAMPLE, 5)


def test_legacy_malformed_lengths() -> None:
    good = legacy_set(1, "none", [(0, 1, b"key", b"value")])
    bad = bytearray(good)
    struct.pack_into(">i", bad, 26, 1000)  # keyLength beyond the message
    result = decode_records(bytes(bad) + good, "records")
    assert result["status"] == "key length 1000 overruns message at byte 26"
    assert result["batches"][0]["status"] == result["status"]
    assert result["batches"][1]["status"] == "ok"  # framing intact: decoding continued
    bad = bytearray(good)
    struct.pack_into(">i", bad, 33, 4)  # valueLength shorter than the message
    assert decode_records(bytes(bad))["status"] == (
        "value length 4 does not match messageSize 30 (5 bytes left) at byte 33"
    )


def test_legacy_nested_and_empty_wrappers(monkeypatch: pytest.MonkeyPatch) -> None:
    inner = legacy_set(1, "gzip", LEGACY_MSGS[:2])  # a compressed message used as inner message
    monkeypatch.setattr(legacy_records, "gzip_encode", lambda data: gzip.compress(inner))
    raw = legacy_set(1, "gzip", LEGACY_MSGS[:1])
    result = decode_records(raw, "records", decompress=True)
    assert result["status"].startswith("nested compression not supported at decompressed byte 17 of batch at")
    monkeypatch.setattr(legacy_records, "gzip_encode", lambda data: gzip.compress(b""))
    result = decode_records(legacy_set(1, "gzip", LEGACY_MSGS[:1]), "records", decompress=True)
    assert result["status"] == "compressed message set has no inner messages at decompressed byte 0 of batch at byte 0"


# --------------------------------------------------------------------------- framing errors


def test_partial_tail_every_length() -> None:
    complete = v2_batch(SAMPLE) + legacy_set(1, "none", LEGACY_MSGS[:1])
    last = v2_batch(SAMPLE, "gzip")
    for cut in range(1, len(last)):
        for level in ("headers", "records"):
            result = decode_records(complete + last[:cut], level, decompress=True)
            assert result["status"] == "ok", (cut, result["status"])
            assert result["partial_tail"] == cut
            assert len(result["batches"]) == 2
    legacy_last = legacy_set(0, "none", LEGACY_MSGS[:1])
    for cut in range(1, len(legacy_last)):
        result = decode_records(complete + legacy_last[:cut])
        assert (result["status"], result["partial_tail"]) == ("ok", cut)


def _all_inputs() -> list[bytes]:
    return [
        v2_batch(SAMPLE) + v2_batch(SAMPLE, "snappy"),
        v2_batch(SAMPLE, "lz4") + v2_batch(SAMPLE, "zstd"),
        legacy_set(0, "none", LEGACY_MSGS) + legacy_set(1, "gzip", LEGACY_MSGS),
        set_attributes(v2_batch([(0, 1, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 1), [])]), 0x30),
    ]


@pytest.mark.parametrize("index", range(4))
def test_truncated_at_every_cut_point_never_raises(index: int) -> None:
    raw = _all_inputs()[index]
    for cut in range(len(raw) + 1):
        for level in ("headers", "records"):
            result = decode_records(raw[:cut], level, decompress=True)
            assert result["size"] == cut
            assert result["status"] == "ok"  # a cut is always a legal partial tail
            complete = sum(12 + b.get("batchLength", b.get("messageSize", 0)) for b in result["batches"])
            assert complete + result["partial_tail"] == cut


def test_negative_batch_length() -> None:
    raw = bytearray(v2_batch(SAMPLE))
    struct.pack_into(">i", raw, 8, -5)
    result = decode_records(v2_batch(SAMPLE) + bytes(raw))
    assert result["status"] == f"batchLength -5 is negative at byte {len(raw) + 8}"
    assert len(result["batches"]) == 1 and result["partial_tail"] == 0
    assert decode_records(bytes(raw[:14]))["status"] == "batchLength -5 is negative at byte 8"


def test_batch_length_below_minimum_and_unknown_magic() -> None:
    raw = bytearray(v2_batch(SAMPLE))
    struct.pack_into(">i", raw, 8, 20)
    assert decode_records(bytes(raw))["status"] == "batchLength 20 is below the minimum 49 at byte 8"
    raw = bytearray(v2_batch(SAMPLE))
    raw[16] = 7
    assert decode_records(bytes(raw))["status"] == "unknown magic 7 at byte 16"
    raw[16] = 0xFF
    assert decode_records(bytes(raw[:20]))["status"] == "unknown magic -1 at byte 16"


def _records_section(records: bytes, count: int) -> bytes:
    return v2_raw(records, 0, count)


def test_record_overrunning_its_batch_and_decoding_continues() -> None:
    # record claiming 100 bytes (zigzag 200 = 0xc8 0x01) with only 3 present
    bad = _records_section(b"\xc8\x01\x00\x00\x00", 1)
    good = v2_batch(SAMPLE)
    result = decode_records(bad + good, "records")
    assert result["status"] == "record length 100 overruns batch (3 bytes left) at byte 61"
    assert result["batches"][0]["status"] == result["status"]
    assert result["batches"][1]["status"] == "ok"
    assert result["batches"][1]["records"] == expected_records(SAMPLE, 0)
    # headers level does no record work, so it sees nothing wrong
    assert decode_records(bad + good)["status"] == "ok"


def test_bad_varints() -> None:
    too_long = _records_section(b"\xff" * 6 + b"\x01", 1)
    assert decode_records(too_long, "records")["status"] == "record length: varint longer than 5 bytes at byte 61"
    truncated = _records_section(b"\x80", 1)
    assert decode_records(truncated, "records")["status"] == "record length: truncated varint at byte 61"
    overflow = _records_section(b"\xff\xff\xff\xff\x7f", 1)
    assert decode_records(overflow, "records")["status"] == "record length: varint overflows 32 bits at byte 61"
    # inside a record: key length varint runs off the record's end
    inner = bytes([0, 0, 0, 0x80])
    rec = bytes([len(inner) * 2]) + inner
    result = decode_records(_records_section(rec, 1), "records")
    assert result["status"] == "truncated varint at byte 65"


def test_record_count_mismatches() -> None:
    one = uncompressed_body(v2_batch([(0, 1, b"k", b"v", [])]))
    result = decode_records(_records_section(one, 2), "records")
    assert result["status"] == f"recordCount 2 but only 1 records present at byte {61 + len(one)}"
    result = decode_records(_records_section(one + b"\x00\x00", 1), "records")
    assert result["status"] == f"2 trailing bytes after 1 records at byte {61 + len(one)}"
    result = decode_records(_records_section(one, -3), "records")
    assert result["status"] == "negative recordCount -3 at byte 57"


def test_malformed_record_inside_compressed_batch() -> None:
    body = b"\xc8\x01\x00"
    raw = v2_raw(zstandard.ZstdCompressor().compress(body), 4, 1, base_offset=0)
    result = decode_records(v2_batch(SAMPLE) + raw, "records", decompress=True)
    where = len(v2_batch(SAMPLE))
    assert result["status"] == (
        f"record length 100 overruns batch (1 bytes left) at decompressed byte 0 of batch at byte {where}"
    )


def test_corrupt_compressed_payload_then_next_batch() -> None:
    bad = v2_raw(b"\x1f\x8b\x08\x00garbage-garbage", 1, 1)
    unknown = v2_raw(b"\x00" * 10, 6, 1)
    good = v2_batch(SAMPLE, "gzip")
    result = decode_records(bad + unknown + good, "records", decompress=True)
    assert result["status"].startswith("gzip decompression failed:")
    assert result["status"].endswith("(batch at byte 0)")
    assert result["batches"][1]["compression"] == "unknown(6)"
    assert result["batches"][1]["status"] == f"unsupported compression codec 6 (batch at byte {len(bad)})"
    assert result["batches"][2]["records"] == expected_records(SAMPLE, 0)
    for codec, payload in ((2, b"\xff\xff\xff\xff\xff\xff"), (3, b"\x04\x22\x4d\x18junk"), (4, b"junk")):
        result = decode_records(v2_raw(payload, codec, 1), "records", decompress=True)
        assert "decompression failed" in result["status"], result["status"]


def test_max_records_cap() -> None:
    raw = b"".join(
        v2_batch([(i, i, None, b"v", [("h", b"x")]) for i in range(5)], base_offset=10 * b) for b in range(10)
    )
    result = decode_records(raw, "records", max_records=12)
    assert result["status"] == "record limit reached (max_records=12)"
    decoded = [r for b in result["batches"] for r in (b["records"] or [])]
    assert len(decoded) == 12
    assert [r["offset"] for r in decoded] == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20, 21]
    assert len(result["batches"]) == 10  # headers keep coming
    assert all(b["status"] == "ok" for b in result["batches"])
    assert result["batches"][2]["recordsStatus"] == "record limit reached (max_records=12)"
    assert result["batches"][3]["records"] is None
    assert sum(len(r["headers"]) for r in decoded) == 12
    legacy = legacy_set(1, "gzip", LEGACY_MSGS)
    result = decode_records(legacy, "records", decompress=True, max_records=2)
    assert len(result["batches"][0]["records"]) == 2
    assert result["status"] == "record limit reached (max_records=2)"


# --------------------------------------------------------------------------- property tests

_header = st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=80)))
_record = st.tuples(
    st.integers(-(2**40), 2**40),
    st.one_of(st.none(), st.binary(max_size=100)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(_header, max_size=4),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_record, min_size=1, max_size=8),
    compression=st.sampled_from(list(CODECS)),
    base_offset=st.integers(0, 2**62),
    start_ts=st.integers(0, 2**45),
)
def test_roundtrip_property(records: list[Any], compression: str, base_offset: int, start_ts: int) -> None:
    sample = [(i, start_ts + d if i else start_ts, k, v, h) for i, (d, k, v, h) in enumerate(records)]
    raw = v2_batch(sample, compression, base_offset=base_offset)
    batch = only_batch(decode_records(raw, "records", decompress=True))
    assert batch["crcValid"] is True
    assert batch["recordCount"] == len(sample)
    assert batch["records"] == expected_records(sample, base_offset)


@settings(max_examples=1000, deadline=None)
@given(data=st.binary(max_size=400), level=st.sampled_from(["size", "headers", "records"]), decompress=st.booleans())
def test_random_bytes_never_raise(data: bytes, level: str, decompress: bool) -> None:
    result = decode_records(data, level, decompress=decompress)
    assert isinstance(result, dict) and result["size"] == len(data)
    json.dumps(result)


@settings(max_examples=1000, deadline=None)
@given(
    body=st.binary(max_size=300),
    codec=st.integers(0, 7),
    count=st.integers(-2, 40),
    control=st.booleans(),
    magic=st.sampled_from([0, 1]),
)
def test_random_bodies_in_valid_framing_never_raise(
    body: bytes, codec: int, count: int, control: bool, magic: int
) -> None:
    """Valid batch / message framing around random content reaches the record and codec parsers."""
    v2 = v2_raw(body, codec | (0x20 if control else 0), count)
    legacy = LegacyRecordBatchBuilder.HEADER_STRUCT_V1 if magic else LegacyRecordBatchBuilder.HEADER_STRUCT_V0
    msg = bytearray(legacy.size) + struct.pack(">i", -1) + struct.pack(">i", len(body)) + body
    fields: tuple[int, ...] = (7, len(msg) - 12, 0, magic, codec & 0x07) + ((5,) if magic else ())
    legacy.pack_into(msg, 0, *fields)
    for raw, n_batches in ((v2, 1), (bytes(msg), 1), (v2 + bytes(msg), 2)):
        for level in ("headers", "records"):
            result = decode_records(raw, level, decompress=True, max_decompressed=MiB)
            assert not result["status"].startswith("internal decoder error"), result["status"]
            assert len(result["batches"]) == n_batches  # framing was valid: every batch is reported
            assert result["partial_tail"] == 0
            json.dumps(result)


_SEEDS = _all_inputs() + [legacy_set(1, "snappy", LEGACY_MSGS)]


@settings(max_examples=1500, deadline=None)
@given(
    seed=st.sampled_from(range(len(_SEEDS))),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
)
def test_mutated_batches_never_raise(seed: int, flips: list[tuple[int, int]]) -> None:
    buf = bytearray(_SEEDS[seed])
    for pos, value in flips:
        buf[pos % len(buf)] = value
    result = decode_records(bytes(buf), "records", decompress=True, max_decompressed=MiB)
    assert isinstance(result, dict) and isinstance(result["status"], str)
    assert not result["status"].startswith("internal decoder error"), result["status"]
    json.dumps(result)


# --------------------------------------------------------------------------- decompression bombs


def gzip_zero_bomb(total: int) -> bytes:
    """A single-member gzip stream of `total` zero bytes, built without compressing all of it:
    after a full flush deflate restarts, so the compressed form of each further MiB is identical."""
    assert total % MiB == 0 and total >= 2 * MiB
    zeros = bytes(MiB)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    assert comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH) == block
    end = comp.flush(zlib.Z_FINISH)[:-8]
    crc = 0
    for _ in range(total // MiB):
        crc = zlib.crc32(zeros, crc)
    return head + block * (total // MiB - 1) + end + struct.pack("<II", crc, total & 0xFFFFFFFF)


def test_gzip_bomb_builder_is_valid() -> None:
    assert gzip.decompress(gzip_zero_bomb(8 * MiB)) == bytes(8 * MiB)


def zstd_zero_bomb(total: int) -> bytes:
    comp = zstandard.ZstdCompressor(level=1).compressobj()
    zeros = bytes(MiB)
    return b"".join([comp.compress(zeros) for _ in range(total // MiB)] + [comp.flush()])


def test_zstd_bomb_builder_is_valid() -> None:
    reader = zstandard.ZstdDecompressor().stream_reader(zstd_zero_bomb(8 * MiB))
    assert reader.read(16 * MiB) == bytes(8 * MiB)


@pytest.mark.parametrize("codec,builder", [(1, gzip_zero_bomb), (4, zstd_zero_bomb)])
def test_one_gib_bombs_stop_at_the_cap(codec: int, builder: Any) -> None:
    bomb = v2_raw(builder(GiB), codec, 1)
    assert len(bomb) < 2 * MiB
    good = v2_batch(SAMPLE, "gzip")
    t0 = time.perf_counter()
    result = decode_records(bomb + good, "records", decompress=True)  # default cap: 64 MiB
    elapsed = time.perf_counter() - t0
    assert elapsed < 3, elapsed
    assert result["status"] == f"decompression limit exceeded ({64 * MiB} bytes)"
    assert result["batches"][0]["status"] == result["status"]
    assert result["batches"][0]["records"] is None
    # the budget is per call and was spent on the bomb: the next compressed batch is refused too ...
    assert result["batches"][1]["status"] == result["status"]
    # ... but an uncompressed one is still decoded
    result = decode_records(bomb + v2_batch(SAMPLE), "records", decompress=True, max_decompressed=4 * MiB)
    assert result["status"] == f"decompression limit exceeded ({4 * MiB} bytes)"
    assert result["batches"][1]["records"] == expected_records(SAMPLE, 0)


def test_legacy_gzip_bomb(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = gzip_zero_bomb(256 * MiB)
    monkeypatch.setattr(legacy_records, "gzip_encode", lambda data: bomb)
    raw = legacy_set(1, "gzip", LEGACY_MSGS[:1])
    result = decode_records(raw, "records", decompress=True, max_decompressed=8 * MiB)
    assert result["status"] == f"decompression limit exceeded ({8 * MiB} bytes)"


def test_lz4_and_snappy_over_the_cap() -> None:
    comp = lz4.frame.LZ4FrameCompressor()
    zeros = bytes(MiB)
    lz4_bomb = comp.begin() + b"".join(comp.compress(zeros) for _ in range(64)) + comp.flush()
    snappy_bomb = kafka_codec.snappy_encode(bytes(16 * MiB))
    for codec, payload in ((3, lz4_bomb), (2, snappy_bomb), (2, snappy.compress(bytes(16 * MiB)))):
        t0 = time.perf_counter()
        result = decode_records(v2_raw(payload, codec, 1), "records", decompress=True, max_decompressed=MiB)
        assert result["status"] == f"decompression limit exceeded ({MiB} bytes)", (codec, result["status"])
        assert time.perf_counter() - t0 < 2


def test_budget_is_shared_across_batches() -> None:
    value = bytes(range(256)) * 400  # ~100 KiB per batch once decompressed
    batch = v2_batch([(0, 1, None, value, [])], "zstd")
    raw = batch * 5
    result = decode_records(raw, "records", decompress=True, max_decompressed=250_000)
    statuses = [b["status"] for b in result["batches"]]
    assert statuses[:2] == ["ok", "ok"]
    assert statuses[2:] == ["decompression limit exceeded (250000 bytes)"] * 3


def test_bomb_memory_stays_near_the_cap() -> None:
    """Peak RSS of a fresh interpreter decoding 1 GiB bombs with a 32 MiB cap."""
    code = textwrap.dedent(f"""
        import resource, sys
        sys.path[:0] = {[str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parent)]!r}
        from test_records import gzip_zero_bomb, zstd_zero_bomb, v2_raw
        from decoders.records import decode_records
        bombs = v2_raw(gzip_zero_bomb(1 << 30), 1, 1) + v2_raw(zstd_zero_bomb(1 << 30), 4, 1)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results = [decode_records(bombs, "records", decompress=True, max_decompressed=32 << 20)
                   for _ in range(2)]
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert all(b["status"].startswith("decompression limit exceeded")
                   for r in results for b in r["batches"]), results
        print((after - before) // 1024)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    grown_mib = int(proc.stdout.strip())
    assert grown_mib < 80, grown_mib  # 1 GiB of output would be far beyond this


# --------------------------------------------------------------------------- hot path


def test_headers_level_does_not_touch_records(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("record-level work on the headers path")

    monkeypatch.setattr(rec_mod, "v2_records", boom)
    for name in ("_legacy_inner", "decompress", "crc32c", "_varint"):
        monkeypatch.setattr(record_batches, name, boom)
    raw = b"".join(v2_batch(SAMPLE, c) for c in CODECS) * 20
    result = decode_records(raw, "headers", decompress=True)
    assert result["status"] == "ok" and len(result["batches"]) == 100
