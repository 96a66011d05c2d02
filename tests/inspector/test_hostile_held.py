"""Hostile capture: many connections each start a huge frame (``--max-held``, the cap on the bytes held in
incomplete frames and behind holes across all connections).

2,000 connections each send a length prefix claiming ~90 MB, then 200 KB of its body, round-robin (so all
of them are incomplete at once: 400 MB), then one real request. Without the global cap every connection
held its 200 KB (630 MB peak RSS); with it ``read`` releases the connections holding the most, reports the
released bytes as undecodable, counts the hits in ``summary.json`` and finds the real request behind the
junk on each released connection. Measured like ``test_hostile.py`` (child process peak RSS, wall time).
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.kafka.pipeline import MAX_HELD
from tests.frames import api_versions_request_v0, frame, request_header
from tests.inspector.hostile_captures import check_bounds, run_read

BROKER = (bytes([10, 0, 0, 2]), 9092)
ETHERNET = bytes.fromhex("020000000002" "020000000001" "0800")
CLAIM = 90_000_000
BODY = 200 * 1024


def _client(i: int) -> tuple[bytes, int]:
    return bytes([10, 1, i // 250, i % 250 + 1]), 20000 + i


def huge_frame_flood(path: Path, conns: int = 2000, claim: int = CLAIM, body: int = BODY,
                     mss: int = 1448) -> Path:
    """A gzip-compressed pcap (a few MB for 400 MB of stream): ``conns`` handshakes, then round-robin the
    segments of each connection's ``body`` bytes (a length prefix claiming ``claim``, a Produce header,
    zeros), then on each connection an ApiVersions request, and FINs. Packets are stamped with struct
    (scapy would take minutes for 300,000 of them); checksums are zero, which the reader does not check."""
    ts = [1_700_000_000_000_000]  # µs

    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

        def packet(src: tuple[bytes, int], dst: tuple[bytes, int], flags: int, seq: int, ack: int,
                   payload: bytes = b"") -> None:
            tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags,
                              65535, 0, 0)
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src[0], dst[0])
            size = len(ETHERNET) + len(ip) + len(tcp) + len(payload)
            us = ts[0]
            ts[0] += 10
            f.write(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, size, size) + ETHERNET + ip + tcp)
            f.write(payload)

        clients = [_client(i) for i in range(conns)]
        cseq = [1000] * conns
        for c in clients:
            packet(c, BROKER, 0x02, 999, 0)  # SYN
            packet(BROKER, c, 0x12, 4999, 1000)  # SYN-ACK
            packet(c, BROKER, 0x10, 1000, 5000)  # ACK
        head = struct.pack(">i", claim) + request_header(0, 3, 1, "hostile")
        stream = head + bytes(body - len(head))
        for start in range(0, len(stream), mss):
            piece = stream[start:start + mss]
            for i, c in enumerate(clients):
                packet(c, BROKER, 0x18, cseq[i], 5000, piece)
                cseq[i] += len(piece)
        request = frame(api_versions_request_v0(2))
        for i, c in enumerate(clients):
            packet(c, BROKER, 0x18, cseq[i], 5000, request)
            packet(c, BROKER, 0x11, cseq[i] + len(request), 5000)  # FIN
            packet(BROKER, c, 0x11, 5000, cseq[i] + len(request) + 1)  # FIN
    return path


@pytest.mark.parametrize("port", [False, True], ids=["detect", "port"])
def test_2000_connections_each_starting_a_90MB_frame(tmp_path: Path, port: bool) -> None:
    conns = 2000
    pcap = huge_frame_flood(tmp_path / "huge-frames.pcap.gz", conns)
    run = run_read(tmp_path, pcap, *(["--port", "9092"] if port else []))
    summary = run.summary()
    hits = summary["limits"]["--max-held"]["hits"]
    check_bounds(f"{conns:,} connections each starting a 90 MB frame ({'--port' if port else 'detect'})", run,
                 f"{hits} released (--max-held); {summary['stream_issue_bytes']['skipped']:,} B undecodable")
    # Released: at least what 400 MB needs to fall under the limit, at most one per connection.
    assert (conns * BODY - MAX_HELD) // BODY <= hits <= conns
    # Every byte is accounted for: nothing of the junk decoded, all of it undecodable (or, without --port,
    # on connections judged not Kafka: those that never decoded a frame).
    request = len(frame(api_versions_request_v0(2)))
    acc = summary["accounting"]["huge-frames.pcap.gz"]
    assert acc["bytes_gap"] == 0 and acc["bytes_seen"] == acc["bytes_decoded"] + acc["bytes_undecodable"]
    assert acc["bytes_seen"] + summary["non_kafka_bytes"] == conns * (BODY + request)
    assert acc["connections"] + summary["non_kafka_connections"] == conns
    # Released connections resynchronised and found their request; the others still wait for 90 MB.
    rows = run.events()
    assert rows and all(r["api_name"] == "ApiVersions" and r["decode_status"] == "ok" for r in rows)
    assert acc["bytes_decoded"] == len(rows) * request
    if port:
        assert acc["connections"] == conns and len(rows) == hits


def test_max_held_is_configurable_and_named(tmp_path: Path) -> None:
    """``--max-held`` sets the limit; summary.json names it; with it raised nothing is released."""
    pcap = huge_frame_flood(tmp_path / "few.pcap.gz", conns=20, body=100 * 1024)
    low, high = tmp_path / "low", tmp_path / "high"
    assert main(["read", str(pcap), "--output", str(low), "--quiet", "--port", "9092", "--max-held",
                 "1MB"]) == ExitCode.OK
    assert main(["read", str(pcap), "--output", str(high), "--quiet", "--port", "9092", "--max-held",
                 "4MB"]) == ExitCode.OK
    summary = json.loads((low / "summary.json").read_text())
    # 2,000 KiB would be held, 1 MiB is allowed: 10 of the 20 connections (100 KiB each at most) are released.
    assert summary["limits"]["--max-held"]["hits"] == 10
    assert "all connections together held more than the limit" in summary["limits"]["--max-held"]["meaning"]
    assert json.loads((high / "summary.json").read_text())["limits"] == {}
