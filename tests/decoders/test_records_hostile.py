"""decoders.records on hostile input: random bytes and mutated batches never raise, decompression bombs stop at
the cap, and the headers level never touches the records (builders in record_builders.py).
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
from pathlib import Path
from typing import Any

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record import legacy_records
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from decoders import record_batches
from decoders import records as rec_mod
from decoders.records import decode_records
from tests.decoders.record_builders import (
    CODECS,
    LEGACY_MSGS,
    SAMPLE,
    GiB,
    MiB,
    all_inputs,
    expected_records,
    legacy_set,
    only_batch,
    v2_batch,
    v2_raw,
)

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


_SEEDS = all_inputs() + [legacy_set(1, "snappy", LEGACY_MSGS)]


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
        sys.path[:0] = {[str(Path(__file__).resolve().parents[2])]!r}
        from tests.decoders.record_builders import v2_raw
        from tests.decoders.test_records_hostile import gzip_zero_bomb, zstd_zero_bomb
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
