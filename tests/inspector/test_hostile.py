"""Hostile captures (frame lengths, counts and nesting, compression bombs): every limit holds, ``read``
finishes in seconds under 500 MB, damage is reported.

Each case crafts a capture with scapy (packets built by scapy; for the 100k-connection flood one
scapy-built SYN is stamped with new addresses, scapy would take minutes), runs
``kafka-inspector read`` in a child process and measures the child's peak RSS (``os.wait4``: the
rusage of exactly that child, the per-child form of ``getrusage(RUSAGE_CHILDREN).ru_maxrss``) and
its wall time. Exit code 0, and the damage shows in ``decode_status`` / ``notes``,
``connections.parquet`` and ``summary.json``.

Run with ``-s`` to print the measured table (case, what was reported, peak RSS, seconds).
"""

from __future__ import annotations

import gzip
import json
import random
import struct
from pathlib import Path

import pytest

from tests.frames import api_versions_request_v0, api_versions_response_v0, frame, kstr, request_header
from tests.inspector.hostile_captures import (
    HELLO,
    check_bounds,
    conversation,
    envelope,
    gzip_bomb,
    produce_v3,
    record_batch,
    run_read,
    uvarint,
    write_pcap,
    zstd_bomb,
)

# ----------------------------------------------------------------------------------------------------
# Frame lengths


@pytest.mark.parametrize("prefix", [0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], ids=["2GiB", "min-int32", "minus-1"])
@pytest.mark.parametrize("port", [False, True], ids=["detect", "port"])
def test_frame_length_out_of_range(tmp_path: Path, prefix: int, port: bool) -> None:
    bogus = struct.pack(">I", prefix) + bytes(random.Random(prefix).randbytes(6000))
    after = [("c", frame(api_versions_request_v0(2))), ("b", frame(api_versions_response_v0(2, [(18, 0, 3)])))]
    pcap = write_pcap(tmp_path / "len.pcap", conversation([*HELLO, ("c", bogus), *after]))
    run = run_read(tmp_path, pcap, *(["--port", "9092"] if port else []))
    summary = run.summary()
    (conn,) = run.connections()
    check_bounds(f"frame length 0x{prefix:08x} ({'--port' if port else 'detect'})",
                 run, f"limits {summary['limits']['--max-frame']['hits']}x --max-frame, "
                      f"{conn['client_bytes_undecodable']} B undecodable")
    assert summary["limits"]["--max-frame"]["hits"] == 1
    assert summary["stream_issue_bytes"]["oversized"] == 4
    assert conn["client_bytes_undecodable"] >= len(bogus)
    rows = run.events()
    assert [(r["api_name"], r["decode_status"]) for r in rows[:2]] == [("ApiVersions", "ok")] * 2
    # The request behind the junk is found again (at the latest when the stream ends: plausible frame
    # starts inside the junk that wait for bytes that never come no longer hide it).
    assert any(r["direction"] == "request" and r["correlation_id"] == 2 and r["decode_status"] == "ok"
               for r in rows)


def test_frames_behind_a_false_frame_start_are_recovered(tmp_path: Path) -> None:
    """Junk after a bad length whose bytes 4.. read as a Produce v2 header claiming 1.2 MB: the framer waited
    for those bytes, which never came, and skipped the real request behind them with everything else."""
    junk = struct.pack(">I", 0x7FFFFFFF) + request_header(18, 0, 2) + b"x" * 3000
    after = [("c", frame(api_versions_request_v0(3))), ("b", frame(api_versions_response_v0(3, [(18, 0, 3)])))]
    pcap = write_pcap(tmp_path / "false-start.pcap", conversation([*HELLO, ("c", junk), *after]))
    run = run_read(tmp_path, pcap)
    rows = run.events()
    (conn,) = run.connections()
    check_bounds("real request behind a false frame start", run,
                 f"{conn['client_bytes_undecodable']} B undecodable, request 3 found")
    assert any(r["direction"] == "request" and r["correlation_id"] == 3 and r["decode_status"] == "ok" for r in rows)
    assert conn["client_bytes_undecodable"] == len(junk)


def test_frame_start_cut_by_a_segment_boundary_is_found(tmp_path: Path) -> None:
    """Mid-stream, the first real frame starts 6 bytes before the end of a segment: the scan judged that
    position with too few bytes (a start needs 12 to be plausible), skipped it and lost the request."""
    request = frame(api_versions_request_v0(7))
    tail_of_something = b"\x7f" * 100  # the end of a frame whose start the capture missed
    messages = [("c", tail_of_something + request[:6]), ("c", request[6:]),
                ("b", frame(api_versions_response_v0(7, [(18, 0, 3)])))]
    pcap = write_pcap(tmp_path / "cut-start.pcap", conversation(messages, handshake=False))
    run = run_read(tmp_path, pcap, "--port", "9092")
    rows = run.events()
    check_bounds("frame start cut by a segment boundary", run, f"{len(rows)} messages, request 7 found")
    assert [(r["direction"], r["correlation_id"], r["decode_status"]) for r in rows] == [
        ("request", 7, "ok"), ("response", 7, "ok")]
    assert rows[1]["latency_ms"] is not None


def test_max_frame_is_configurable(tmp_path: Path) -> None:
    big = frame(request_header(18, 0, 2) + b"\0" * 5000)
    pcap = write_pcap(tmp_path / "big.pcap", conversation([*HELLO, ("c", big)]))
    run = run_read(tmp_path, pcap, "--max-frame", "4096")
    check_bounds("5 KB frame with --max-frame 4096", run, "limits --max-frame")
    assert run.summary()["limits"]["--max-frame"]["hits"] == 1


def test_max_buffered_declares_the_hole_lost(tmp_path: Path) -> None:
    """A lost segment and no ACK that proves it: 250 KB wait behind the hole until --max-buffered."""
    requests = b"".join(frame(api_versions_request_v0(i)) for i in range(10_000))
    frames = conversation([("c", requests)], handshake=True)
    del frames[3 + 4]  # the fifth data segment
    run = run_read(tmp_path, write_pcap(tmp_path / "hole.pcap", frames), "--max-buffered", "64KB")
    summary = run.summary()
    (conn,) = run.connections()
    check_bounds("lost segment, 250 KB behind it, --max-buffered 64KB", run,
                 f"{summary['limits']['--max-buffered']['hits']}x --max-buffered, {conn['bytes_gap']} B gap")
    assert summary["limits"]["--max-buffered"]["hits"] == 1 and conn["bytes_gap"] == 1448
    decoded = {r["correlation_id"] for r in run.events() if r["decode_status"] == "ok"}
    assert len(decoded) > 9_900 and 9_999 in decoded  # the requests behind the hole are decoded


# ----------------------------------------------------------------------------------------------------
# Counts and nesting


def _counts_capture(tmp_path: Path) -> Path:
    frames = [
        request_header(3, 0, 10) + struct.pack(">i", 0x7FFFFFFF) + kstr("t"),  # array count 2^31-1
        request_header(36, 0, 11) + struct.pack(">i", 0x7FFFFFFF) + b"abc",  # bytes length 2^31-1
        request_header(18, 3, 12) + b"\x00" + uvarint(0x80000000) + b"abc",  # compact string 2^31-1
        request_header(18, 3, 13) + uvarint(0x7FFFFFFF) + bytes(10),  # header tagged fields: 2^31-1 of them
        request_header(18, 3, 14) + b"\x00\x02a\x02b" + uvarint(0x7FFFFFFF) + bytes(8),  # body tags 2^31-1
    ]
    messages = [*HELLO] + [("c", frame(f)) for f in frames]
    # ApiVersions v0 response claiming 2^31-1 ApiKeys (its request is the v0 request, corr 20)
    messages += [("c", frame(api_versions_request_v0(20))),
                 ("b", frame(struct.pack(">ihi", 20, 0, 0x7FFFFFFF) + bytes(12)))]
    return write_pcap(tmp_path / "counts.pcap", conversation(messages))


def test_counts_of_2_31_minus_1(tmp_path: Path) -> None:
    run = run_read(tmp_path, _counts_capture(tmp_path))
    rows = {(r["direction"], r["correlation_id"]): r for r in run.events()}
    statuses = [rows[("request", c)]["decode_status"] for c in (10, 11, 12, 13, 14)]
    statuses.append(rows[("response", 20)]["decode_status"])
    check_bounds("counts/lengths of 2^31-1 (6 fields)", run, statuses[0][:70])
    for status in statuses:
        assert "2147483647" in status and "truncated" in status, status
    assert "Topics" in statuses[0] and "AuthBytes" in statuses[1] and "ClientSoftwareName" in statuses[2]
    assert run.summary()["decode_failures"] == 6


def test_deeply_nested_and_many_tagged_fields(tmp_path: Path) -> None:
    # 50,000 unknown tagged fields in a request header (a 100 KB frame).
    many_tags = request_header(18, 3, 30) + uvarint(50_000) + (uvarint(7) + uvarint(0)) * 50_000
    many_tags += b"\x02a\x02b\x00"
    # Envelopes nested 500 deep: only the outermost is unwrapped.
    nested = api_versions_request_v0(99)
    for depth in range(500):
        nested = envelope(nested, 1000 + depth)
    # A known tagged field whose value declares more bytes than it holds, inside tagged fields.
    lying_tag = request_header(18, 3, 31) + b"\x00\x02a\x02b" + uvarint(1) + uvarint(0) + uvarint(100) + b"\x01"
    messages = [*HELLO, ("c", frame(many_tags)), ("c", frame(nested)), ("c", frame(lying_tag))]
    run = run_read(tmp_path, write_pcap(tmp_path / "tags.pcap", conversation(messages)))
    rows = {r["correlation_id"]: r for r in run.events() if r["direction"] == "request"}
    check_bounds("50k tagged fields, Envelope nested 500 deep", run,
                 f"ok; inner note: {(rows[1499 - 1] if 1498 in rows else {}).get('notes') or ''}"[:70])
    assert rows[30]["decode_status"] == "ok"
    assert len(json.loads(rows[30]["body"]) if rows[30]["body"] else []) >= 0
    outer = rows[1499]
    assert outer["api_name"] == "Envelope" and outer["decode_status"] == "ok"
    inner = rows[1498]  # the row unwrapped from the outer Envelope: an Envelope itself, not unwrapped further
    assert inner["api_name"] == "Envelope" and "not unwrapped further" in (inner["notes"] or "")
    assert rows[31]["decode_status"] != "ok"


# ----------------------------------------------------------------------------------------------------
# Compression bombs


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {"gzip": gzip_bomb(), "zstd": zstd_bomb()}


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_compression_bomb(tmp_path: Path, bombs: dict[str, bytes], codec: str) -> None:
    batch = record_batch({"gzip": 1, "zstd": 4}[codec], bombs[codec])
    pcap = write_pcap(tmp_path / f"{codec}-bomb.pcap", conversation([*HELLO, ("c", produce_v3(5, [batch]))]))
    run = run_read(tmp_path, pcap, "--records", "records", "--decompress")
    (produce,) = [r for r in run.events() if r["api_name"] == "Produce"]
    check_bounds(f"1 GiB of zeros, {codec} ({len(bombs[codec]):,} B)", run, produce["notes"])
    assert produce["decode_status"] == "ok"
    assert produce["notes"] == "records: decompression limit exceeded (67108864 bytes)"
    records = json.loads(produce["body"])["TopicData"][0]["PartitionData"][0]["Records"]
    assert records["batches"][0]["recordsStatus"] == "decompression limit exceeded (67108864 bytes)"
    assert run.summary()["limits"]["--max-decompressed"]["hits"] == 1


def test_many_small_bombs_in_one_message_share_one_budget(tmp_path: Path) -> None:
    """200 partitions, each a 2.6 KB zstd bomb of 80 MiB: the 64 MB budget is per message, not per
    partition (it was per records field: 200 x 64 MB of inflation)."""
    small = zstd_bomb(80 << 20)
    pcap = write_pcap(tmp_path / "bombs.pcap",
                      conversation([*HELLO, ("c", produce_v3(6, [record_batch(4, small)] * 200))]))
    run = run_read(tmp_path, pcap, "--records", "records", "--decompress")
    (produce,) = [r for r in run.events() if r["api_name"] == "Produce"]
    check_bounds("200 zstd bombs of 80 MiB in one Produce", run, produce["notes"])
    assert produce["notes"] == "records: decompression limit exceeded (67108864 bytes)"


def test_max_decompressed_is_configurable(tmp_path: Path) -> None:
    payload = gzip.compress(bytes(2 << 20))
    pcap = write_pcap(tmp_path / "two-mib.pcap",
                      conversation([*HELLO, ("c", produce_v3(7, [record_batch(1, payload)]))]))
    run = run_read(tmp_path, pcap, "--records", "records", "--decompress", "--max-decompressed", "1MB")
    (produce,) = [r for r in run.events() if r["api_name"] == "Produce"]
    check_bounds("2 MiB gzip with --max-decompressed 1MB", run, produce["notes"])
    assert produce["notes"] == "records: decompression limit exceeded (1048576 bytes)"
