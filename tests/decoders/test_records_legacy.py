"""decoders.records: magic 0/1 message sets, and framing errors that never raise (builders in record_builders.py).
"""

from __future__ import annotations

import gzip
import struct
from types import SimpleNamespace
from typing import Any

import lz4.frame
import pytest
import zstandard
from kafka import codec as kafka_codec
from kafka.record import legacy_records

from decoders.records import decode_records
from tests.decoders.record_builders import (
    LEGACY_MSGS,
    SAMPLE,
    all_inputs,
    expected_records,
    legacy_set,
    only_batch,
    reference_xxh32,
    uncompressed_body,
    v2_batch,
    v2_raw,
)


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
    """kafka-python needs the xxhash package for magic-0 LZ4; provide it from reference_xxh32."""

    def xxh32(data: bytes) -> Any:
        return SimpleNamespace(digest=lambda: reference_xxh32(bytes(data)).to_bytes(4, "big"))

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
    assert frame[hc_pos] != (reference_xxh32(frame[4:hc_pos]) >> 8) & 0xFF  # the old, broken checksum
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


@pytest.mark.parametrize("index", range(4))
def test_truncated_at_every_cut_point_never_raises(index: int) -> None:
    raw = all_inputs()[index]
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
