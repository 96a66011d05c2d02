"""Hostile captures: floods of connections, one direction only, streams that never frame and damaged files.

See test_hostile.py for how each case is run and measured.
"""

from __future__ import annotations

import gzip
import json
import random
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from scapy.layers.inet import TCP
from scapy.utils import PcapWriter, rdpcap

from contract.errors import ExitCode
from inspector.cli.main import main
from tests.frames import api_versions_request_v0, frame, request_header
from tests.inspector.hostile_captures import (
    BROKER,
    HELLO,
    PCAPS,
    check_bounds,
    conversation,
    run_read,
    tcp,
    write_pcap,
)

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
    assert main(["read", str(path), "--output", str(out), "--quiet"]) == ExitCode.OK
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
        "empty": (b"", ExitCode.INPUT, "empty file"),
        "wrong magic": (b"\xde\xad\xbe\xef" + bytes(60), ExitCode.INPUT, "unknown magic 0xdeadbeef"),
        "pcapng bad byte order": (ng[:8] + b"\x01\x02\x03\x04" + ng[12:], ExitCode.INPUT, "byte-order magic"),
        "pcap header cut": (pcap_header[:10], ExitCode.INPUT, "header is truncated"),
        "gzip of garbage": (gzip.compress(b"not a capture at all, sorry"), ExitCode.INPUT, "not a pcap or pcapng"),
        "pcapng cut mid-block": (ng[:-7], ExitCode.OK, "truncated"),
        "pcapng block length lies": (ng[:second] + struct.pack("<II", 6, 0x7FFFFFF0) + ng[second + 8:], ExitCode.OK,
                                     "damaged"),
        "pcap record length lies": (pcap_header + record + struct.pack("<IIII", 2, 0, 0xFFFFFF00, 60) + bytes(80),
                                    ExitCode.OK, "damaged"),
        "pcap cut mid-record": (pcap_header + record + record[:-9], ExitCode.OK, "truncated"),
        "gzip cut": (gzip.compress(pcap_header + record * 50)[:-30], ExitCode.OK, "compressed data"),
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
    if code != ExitCode.OK:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], captured.err
    elif command == "read":
        warnings = json.loads((out / "summary.json").read_text())["warnings"]
        assert len(warnings) == 1 and needle in warnings[0] and "\n" not in warnings[0], warnings
