"""Hostile captures: every limit holds, ``read`` finishes in seconds under 500 MB, damage is reported.

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
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
import pyarrow.parquet as pq
import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import PcapWriter, rdpcap

from decoders.records import crc32c
from inspector.cli import EXIT_CAPTURE, EXIT_OK, main
from tests.frames import api_versions_request_v0, api_versions_response_v0, frame, kstr, request_header

REPO = Path(__file__).parents[2]
PCAPS = REPO / "pcaps"
MAX_RSS_MB = 500
MAX_SECONDS = 10.0
GiB = 1 << 30

CLIENT = ("10.0.0.1", 40000)
BROKER = ("10.0.0.2", 9092)


# ----------------------------------------------------------------------------------------------------
# Capture crafting


def tcp(src: tuple[str, int], dst: tuple[str, int], flags: str, seq: int, ack: int, payload: bytes = b"") -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=src[0], dst=dst[0])
                 / TCP(sport=src[1], dport=dst[1], flags=flags, seq=seq, ack=ack) / payload)


def conversation(messages: list[tuple[str, bytes]], *, mss: int = 1448, handshake: bool = True,
                 client: tuple[str, int] = CLIENT) -> list[bytes]:
    """Frames of one TCP connection: ("c" | "b", bytes) in order, cut into ``mss`` segments."""
    seq = {"c": 1000, "b": 5000}
    out: list[bytes] = []

    def add(who: str, flags: str, payload: bytes = b"") -> None:
        src, dst = (client, BROKER) if who == "c" else (BROKER, client)
        out.append(tcp(src, dst, flags, seq[who], seq["b" if who == "c" else "c"], payload))
        seq[who] += len(payload) + (1 if "S" in flags or "F" in flags else 0)

    if handshake:
        add("c", "S")
        add("b", "SA")
        add("c", "A")
    for who, data in messages:
        for i in range(0, len(data), mss):
            add(who, "PA", data[i:i + mss])
    if handshake:
        add("c", "FA")
        add("b", "FA")
    return out


def write_pcap(path: Path, frames: list[bytes], start: float = 1_700_000_000.0, step: float = 1e-4) -> Path:
    with PcapWriter(str(path), linktype=1, sync=False) as writer:
        writer.write_header(None)
        for i, raw in enumerate(frames):
            ts = start + i * step
            writer.write_packet(raw, sec=int(ts), usec=int((ts % 1) * 1e6), caplen=len(raw), wirelen=len(raw))
    return path


HELLO = [("c", frame(api_versions_request_v0(1))), ("b", frame(api_versions_response_v0(1, [(18, 0, 3)])))]


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def gzip_bomb(size: int = GiB) -> bytes:
    """``size`` zero bytes as one gzip member (~1 MB): deflate blocks made with a streaming compressor,
    made independent with full flushes so one block can be repeated, then the real CRC and length."""
    mib = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size >> 20):
        crc = zlib.crc32(mib, crc)
    return head + block * ((size >> 20) - 1) + b"\x03\x00" + struct.pack("<II", crc, size & 0xFFFFFFFF)


def zstd_bomb(size: int = GiB) -> bytes:
    """``size`` zero bytes through a streaming zstd compressor (~32 KB)."""
    chunk = bytes(4 << 20)
    c = cramjam.zstd.Compressor(level=3)
    for _ in range(size // len(chunk)):
        c.compress(chunk)
    return bytes(c.finish())


def record_batch(codec: int, payload: bytes, count: int = 1) -> bytes:
    """A RecordBatch v2 whose (compressed) records are ``payload``, with a valid CRC."""
    tail = struct.pack(">hiqqqhii", codec, count - 1, 0, 0, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc32c(tail)) + tail


def produce_v3(corr: int, partitions: list[bytes]) -> bytes:
    body = kstr(None) + struct.pack(">hi", 1, 30000) + struct.pack(">i", 1) + kstr("bombs")
    body += struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">ii", i, len(r)) + r for i, r in enumerate(partitions))
    return frame(request_header(0, 3, corr, "bomber") + body)


# ----------------------------------------------------------------------------------------------------
# Running `read` in a child process


@dataclass
class Run:
    code: int
    rss_mb: float
    seconds: float
    out: Path
    stderr: str

    def summary(self) -> dict[str, Any]:
        return json.loads((self.out / "summary.json").read_text())

    def connections(self) -> list[dict[str, Any]]:
        return pq.read_table(self.out / "connections.parquet").to_pylist()

    def events(self) -> list[dict[str, Any]]:
        if not (self.out / "events").is_dir():
            return []
        return pq.read_table(self.out / "events").to_pylist()


TABLE: list[tuple[str, str, float, float]] = []


#: Runs the command given as arguments and prints its exit code, peak RSS (KiB) and wall time. A lean
#: intermediate process: a child's ru_maxrss starts at its parent's RSS at fork time (Linux records the
#: pre-exec size), so the big pytest process must not be the one that forks ``read``.
_MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
seconds = time.perf_counter() - started
print(json.dumps([code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, seconds]))
"""


def run_read(tmp_path: Path, capture: Path, *extra: str) -> Run:
    out = tmp_path / f"out-{capture.stem}-{len(list(tmp_path.glob('out-*')))}"
    cmd = [sys.executable, "-m", "inspector.cli", "read", str(capture), "--output", str(out), "--quiet", *extra]
    proc = subprocess.run([sys.executable, "-S", "-c", _MEASURE, *cmd], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    code, maxrss_kib, seconds = json.loads(proc.stdout)
    return Run(code, maxrss_kib / 1024, seconds, out, proc.stderr)


def check_bounds(case: str, run: Run, reported: str) -> None:
    TABLE.append((case, reported, run.rss_mb, run.seconds))
    print(f"\n{case:44} | {reported:70} | {run.rss_mb:6.0f} MB | {run.seconds:5.2f} s")
    assert run.code == EXIT_OK, run.stderr
    assert "Traceback" not in run.stderr
    assert run.rss_mb < MAX_RSS_MB, f"{case}: peak RSS {run.rss_mb:.0f} MB"
    assert run.seconds < MAX_SECONDS, f"{case}: {run.seconds:.1f} s"
    for row in run.connections():  # the byte accounting always adds up
        for who in ("client", "broker"):
            assert row[f"{who}_bytes_seen"] == sum(row[f"{who}_bytes_{p}"] for p in ("decoded", "gap", "undecodable"))


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


def envelope(inner: bytes, corr: int) -> bytes:
    """Envelope v0 request (header v2) carrying ``inner`` as its RequestData."""
    header = struct.pack(">hhi", 58, 0, corr) + kstr("controller") + b"\x00"
    principal = struct.pack(">h", 0) + b"\x05User\x06alice\x00\x00"
    body = uvarint(len(inner) + 1) + inner + uvarint(len(principal) + 1) + principal + uvarint(5) + b"\x0a\0\0\x01"
    return header + body + b"\x00"


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


# ----------------------------------------------------------------------------------------------------
# Connections


def syn_flood(path: Path, count: int) -> Path:
    """``count`` SYNs from distinct client ports/addresses to the broker, nothing else."""
    template = bytearray(tcp(("10.1.0.0", 1024), BROKER, "S", 1000, 0))
    ts = 1_700_000_000.0
    with PcapWriter(str(path), linktype=1, sync=False) as writer:
        writer.write_header(None)
        for i in range(count):
            struct.pack_into(">I", template, 26, 0x0A010000 + i // 50_000)  # IPv4 source address
            struct.pack_into(">H", template, 34, 1024 + i % 50_000)  # TCP source port
            t = ts + i * 1e-5
            writer.write_packet(bytes(template), sec=int(t), usec=int((t % 1) * 1e6), caplen=len(template),
                                wirelen=len(template))
    return path


@pytest.mark.parametrize("port", [False, True], ids=["detect", "port"])
def test_100k_half_open_connections(tmp_path: Path, port: bool) -> None:
    pcap = syn_flood(tmp_path / "syn-flood.pcap", 100_000)
    run = run_read(tmp_path, pcap, *(["--port", "9092"] if port else []))
    summary = run.summary()
    if port:
        reported = f"{summary['kafka_connections_without_data']:,} Kafka connections without data"
        assert summary["kafka_connections"] == summary["kafka_connections_without_data"] == 100_000
        assert run.connections() == []
    else:
        reported = f"{summary['non_kafka_connections']:,} other TCP connections, 0 bytes"
        assert summary["non_kafka_connections"] == 100_000 and summary["kafka_connections"] == 0
    check_bounds(f"100k SYNs only ({'--port' if port else 'detect'})", run, reported)
    assert summary["packets"] == 100_000


def test_max_connections_evicts_and_reports(tmp_path: Path) -> None:
    frames: list[bytes] = []
    for i in range(300):  # 300 connections open at once: handshakes first, then one request each
        frames += conversation([], client=("10.0.0.1", 20000 + i), handshake=True)[:3]
    run = run_read(tmp_path, write_pcap(tmp_path / "many.pcap", frames), "--max-connections", "100", "--port", "9092")
    hits = run.summary()["limits"]["--max-connections"]["hits"]
    check_bounds("300 connections, --max-connections 100", run, f"{hits} evicted (--max-connections)")
    assert hits == 200


# ----------------------------------------------------------------------------------------------------
# One direction only


def _one_direction(tmp_path: Path, keep: str) -> Path:
    packets = rdpcap(str(PCAPS / "mock-cluster-3-brokers-multi-client.pcap"))
    brokers = {p[TCP].sport for p in packets if TCP in p and p[TCP].flags & 0x12 == 0x12}
    kept = [p for p in packets if TCP in p and (p[TCP].sport in brokers) == (keep == "responses")]
    path = tmp_path / f"{keep}-only.pcap"
    with PcapWriter(str(path), linktype=1, sync=False) as writer:
        writer.write_header(None)
        for p in kept:
            raw = bytes(p)
            ts = float(p.time)
            writer.write_packet(raw, sec=int(ts), usec=int(round((ts % 1) * 1e6)), caplen=len(raw), wirelen=len(raw))
    return path


def test_responses_only(tmp_path: Path) -> None:
    run = run_read(tmp_path, _one_direction(tmp_path, "responses"))
    rows = run.events()
    assert rows and all(r["direction"] == "response" and r["request_missing"] for r in rows)
    guessed = sum(r["decode_status"] == "ok" for r in rows)
    missing = sum(c["requests_missing"] for c in run.connections())
    check_bounds("responses only (real capture)", run, f"{missing} requests_missing, {guessed}/{len(rows)} guessed")
    assert missing == len(rows) and guessed >= len(rows) * 0.8


def test_requests_only(tmp_path: Path) -> None:
    run = run_read(tmp_path, _one_direction(tmp_path, "requests"))
    rows = run.events()
    assert rows and all(r["direction"] == "request" and r["decode_status"] == "ok" for r in rows)
    missing = sum(c["responses_missing"] for c in run.connections())
    check_bounds("requests only (real capture)", run, f"{missing} responses_missing")
    assert missing == len(rows)


def test_pending_requests_are_capped(tmp_path: Path) -> None:
    requests = b"".join(frame(api_versions_request_v0(i, "c")) for i in range(30_000))
    pcap = write_pcap(tmp_path / "pending.pcap", conversation([("c", requests)], mss=8192))
    run = run_read(tmp_path, pcap, "--max-pending", "1000")
    (conn,) = run.connections()
    hits = run.summary()["limits"]["--max-pending"]["hits"]
    check_bounds("30k requests, no responses, --max-pending 1000", run, f"{hits} given up (--max-pending)")
    assert hits == 29_000 and conn["responses_missing"] == 30_000


# ----------------------------------------------------------------------------------------------------
# Streams that never frame


@pytest.mark.parametrize("port", [False, True], ids=["detect", "port"])
def test_random_bytes_never_frame(tmp_path: Path, port: bool) -> None:
    junk = random.Random(5).randbytes(2_000_000)
    pcap = write_pcap(tmp_path / "random.pcap", conversation([("c", junk[:1_000_000]), ("b", junk[1_000_000:])]))
    run = run_read(tmp_path, pcap, *(["--port", "9092"] if port else []))
    summary = run.summary()
    assert run.events() == []
    if port:
        (conn,) = run.connections()
        reported = f"{conn['bytes_undecodable']:,} B undecodable"
        assert conn["bytes_undecodable"] == conn["bytes_seen"] == 2_000_000
    else:
        reported = f"non-Kafka connection, {summary['non_kafka_bytes']:,} B ignored"
        assert summary["non_kafka_bytes"] == 2_000_000
    check_bounds(f"2 MB of random bytes ({'--port' if port else 'detect'})", run, reported)


def test_scan_for_a_frame_start_is_not_quadratic(tmp_path: Path) -> None:
    """Mid-stream, a plausible header claiming ~100 MB, then 8 MB that never complete it: the framer
    used to re-join and rescan its whole buffer for every segment (4 s), now it waits for the bytes."""
    claim = struct.pack(">i", 100 * 1024 * 1024 - 10) + request_header(0, 3, 7) + bytes(8 << 20)
    pcap = write_pcap(tmp_path / "claim.pcap", conversation([("c", claim)], handshake=False))
    run = run_read(tmp_path, pcap, "--port", "9092")
    (conn,) = run.connections()
    check_bounds("100 MB frame claimed mid-stream, 8 MB sent", run, f"{conn['bytes_undecodable']:,} B undecodable")
    assert run.seconds < 3  # 4-8 s before the fix (it grows with the square of the bytes)


# ----------------------------------------------------------------------------------------------------
# Damaged files: a one-line error or a partial result with a warning, never a traceback


def _pcapng_block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def _pcapng(frames: list[bytes], unknown_blocks: bool) -> bytes:
    out = _pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += _pcapng_block(1, struct.pack("<HHI", 1, 0, 0))
    for i, raw in enumerate(frames):
        if unknown_blocks:
            out += _pcapng_block(0x0BADBEEF, b"custom block nobody knows" * (i % 3))  # unknown type
            out += _pcapng_block(5, b"\0" * 20)  # interface statistics: known, skipped
        ticks = 1_700_000_000_000_000 + i
        out += _pcapng_block(6, struct.pack("<IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(raw), len(raw)) + raw)
    return out


def test_pcapng_with_unknown_blocks_decodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "unknown-blocks.pcapng"
    path.write_bytes(_pcapng(conversation(HELLO), unknown_blocks=True))
    out = tmp_path / "o"
    assert main(["read", str(path), "--output", str(out), "--quiet"]) == EXIT_OK
    rows = pq.read_table(out / "events").to_pylist()
    assert [(r["api_name"], r["decode_status"]) for r in rows] == [("ApiVersions", "ok")] * 2
    assert json.loads((out / "summary.json").read_text())["warnings"] == []


DAMAGED: dict[str, tuple[bytes, int, str]] = {}


def _damaged_files() -> dict[str, tuple[bytes, int, str]]:
    """name -> (content, exit code, text expected in the error or the warning)."""
    if DAMAGED:
        return DAMAGED
    ng = _pcapng(conversation(HELLO), unknown_blocks=False)
    first = 28 + 20  # section header block, interface description block
    second = first + struct.unpack_from("<I", ng, first + 4)[0]  # the second packet block
    pcap_header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    one = conversation(HELLO)[3]
    record = struct.pack("<IIII", 1, 0, len(one), len(one)) + one
    DAMAGED.update({
        "empty": (b"", EXIT_CAPTURE, "empty file"),
        "wrong magic": (b"\xde\xad\xbe\xef" + bytes(60), EXIT_CAPTURE, "unknown magic 0xdeadbeef"),
        "pcapng bad byte order": (ng[:8] + b"\x01\x02\x03\x04" + ng[12:], EXIT_CAPTURE, "byte-order magic"),
        "pcap header cut": (pcap_header[:10], EXIT_CAPTURE, "header is truncated"),
        "gzip of garbage": (gzip.compress(b"not a capture at all, sorry"), EXIT_CAPTURE, "not a pcap or pcapng"),
        "pcapng cut mid-block": (ng[:-7], EXIT_OK, "truncated"),
        "pcapng block length lies": (ng[:second] + struct.pack("<II", 6, 0x7FFFFFF0) + ng[second + 8:], EXIT_OK,
                                     "damaged"),
        "pcap record length lies": (pcap_header + record + struct.pack("<IIII", 2, 0, 0xFFFFFF00, 60) + bytes(80),
                                    EXIT_OK, "damaged"),
        "pcap cut mid-record": (pcap_header + record + record[:-9], EXIT_OK, "truncated"),
        "gzip cut": (gzip.compress(pcap_header + record * 50)[:-30], EXIT_OK, "compressed data"),
    })
    return DAMAGED


@pytest.mark.parametrize("name", list(_damaged_files()))
@pytest.mark.parametrize("command", ["read", "show"])
def test_damaged_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str) -> None:
    content, code, needle = _damaged_files()[name]
    path = tmp_path / "damaged.pcap"
    path.write_bytes(content)
    out = tmp_path / "o"
    argv = ["read", str(path), "--output", str(out), "--quiet"] if command == "read" else ["show", str(path)]
    assert main(argv) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    if code != EXIT_OK:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], captured.err
    elif command == "read":
        warnings = json.loads((out / "summary.json").read_text())["warnings"]
        assert len(warnings) == 1 and needle in warnings[0] and "\n" not in warnings[0], warnings
