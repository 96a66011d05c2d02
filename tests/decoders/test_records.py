"""Tests for decoders.records.

Inputs are built with kafka-python's independent encoders (DefaultRecordBatchBuilder,
LegacyRecordBatchBuilder, kafka.codec) or by hand from the protocol layout; expectations come
from what was put in, never from the code under test.

This module: checksums and magic 2 record batches; magic 0/1 and framing errors are in test_records_legacy.py,
random inputs, decompression bombs and the hot path in test_records_hostile.py.
"""

from __future__ import annotations

import json
import struct

import lz4.frame
import pytest
import snappy
from kafka import codec as kafka_codec
from kafka.record import _crc32c as kafka_pure_crc32c
from kafka.record import default_records
from kafka.record.default_records import DefaultRecordBatch

from decoders import checksums
from decoders import records as rec_mod
from decoders.records import Records, decode_records
from tests.decoders.record_builders import (
    CODECS,
    SAMPLE,
    expected_records,
    legacy_set,
    only_batch,
    reference_xxh32,
    set_attributes,
    v2_batch,
    v2_raw,
)

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
        assert rec_mod.xxh32(data) == reference_xxh32(data)


def test_test_xxh32_matches_lz4() -> None:
    for descriptor, hc in _lz4_header_checksums():
        assert (reference_xxh32(descriptor) >> 8) & 0xFF == hc


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
