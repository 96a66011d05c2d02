"""Byte accounting adds up: real captures damaged with scapy (loss, reordering, duplication, snap length).

For every Kafka connection and each direction, ``bytes_seen == bytes_decoded + bytes_gap +
bytes_undecodable + bytes_encrypted + bytes_tls_overhead`` (``connections.parquet``; the last two are TLS's,
zero here: tests/inspector/tls/test_tls_capture.py checks them on TLS captures); retransmitted duplicates are
counted apart in ``bytes_retransmitted``. The totals agree with what the TCP reassembler itself counted (highest stream
offset, gaps, retransmissions) and with ``summary.json`` (per capture and in total).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from scapy.layers.inet import TCP
from scapy.packet import Packet
from scapy.utils import PcapWriter, rdpcap

from contract.errors import ExitCode
from inspector.capture.file import open_capture
from inspector.capture.packets import Segment, parse_packet
from inspector.cli.main import main
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import ConnectionClosed

PCAPS = Path(__file__).parents[2] / "pcaps"
CAPTURES = ["tansu-produce-fetch-compression.pcap", "mock-cluster-3-brokers-multi-client.pcap",
            "tansu-consumer-group-3-members.pcap"]
DIRECTIONS = ("client", "broker")
PARTS = ("decoded", "gap", "undecodable", "encrypted", "tls_overhead")

Damage = Callable[[list[Packet], random.Random], list[Packet]]


def _has_data(pkt: Packet) -> bool:
    return TCP in pkt and len(pkt[TCP].payload) > 0


def lose(packets: list[Packet], rng: random.Random) -> list[Packet]:
    """Drop about one data segment in eight."""
    return [p for p in packets if not (_has_data(p) and rng.random() < 0.125)]


def _same_direction(a: Packet, b: Packet) -> bool:
    return bool(a[TCP].sport == b[TCP].sport and a[TCP].dport == b[TCP].dport)


def reorder(packets: list[Packet], rng: random.Random) -> list[Packet]:
    """Swap about half of the back-to-back data segments of one direction (network reordering; a
    segment never moves behind the ACK of the other side that acknowledged it, which a capture
    point cannot see)."""
    out = list(packets)
    for i in range(len(out) - 1):
        a, b = out[i], out[i + 1]
        if _has_data(a) and _has_data(b) and _same_direction(a, b) and rng.random() < 0.5:
            out[i], out[i + 1] = b, a
    return out


def duplicate(packets: list[Packet], rng: random.Random) -> list[Packet]:
    """Retransmit about one data segment in four, a little later."""
    out = list(packets)
    for i in reversed(range(len(out))):
        if _has_data(out[i]) and rng.random() < 0.25:
            out.insert(min(len(out), i + rng.randint(1, 3)), out[i])
    return out


def write(path: Path, packets: list[Packet], snaplen: int = 0) -> Path:
    """Write ``packets`` keeping their timestamps; with ``snaplen``, cut each frame (original length kept)."""
    with PcapWriter(str(path), linktype=1, snaplen=snaplen or 262144, sync=False) as writer:
        writer.write_header(None)
        for pkt in packets:
            raw = bytes(pkt)
            cut = raw[:snaplen] if snaplen else raw
            ts = float(pkt.time)
            sec = int(ts)
            writer.write_packet(cut, sec=sec, usec=int(round((ts - sec) * 1e6)), caplen=len(cut), wirelen=len(raw))
    return path


def reassembler_totals(path: Path) -> dict[str, int]:
    """What the reassembler alone counts over all connections: stream bytes, gaps, retransmissions."""
    r = Reassembler()
    closed: list[ConnectionClosed] = []
    last = 0.0
    with open_capture(str(path)) as reader:
        for pkt in reader:
            seg = parse_packet(pkt)
            if isinstance(seg, Segment):
                last = seg.ts
                closed.extend(e for e in r.feed(seg) if isinstance(e, ConnectionClosed))
    closed.extend(e for e in r.flush(last) if isinstance(e, ConnectionClosed))
    totals = {"seen": 0, "gap": 0, "retransmitted": 0, "delivered": 0}
    for ev in closed:
        assert ev.stats is not None
        for d in ev.stats.sides:
            assert d.bytes_delivered + d.bytes_gap == d.highest_offset
            totals["seen"] += d.highest_offset
            totals["gap"] += d.bytes_gap
            totals["delivered"] += d.bytes_delivered
            totals["retransmitted"] += d.retransmitted_bytes
    return totals


def read(tmp_path: Path, pcap: Path) -> tuple[list[dict], dict]:
    out = tmp_path / f"out-{pcap.stem}"
    assert main(["read", str(pcap), "--output", str(out), "--quiet"]) == ExitCode.OK
    rows = pq.read_table(out / "connections.parquet").to_pylist()
    return rows, json.loads((out / "summary.json").read_text())


def check_accounting(rows: list[dict], summary: dict, pcap: Path) -> dict[str, int]:
    """Every invariant of the report; returns the totals."""
    assert rows and summary["non_kafka_connections"] == 0
    for row in rows:
        for who in DIRECTIONS:
            parts = sum(row[f"{who}_bytes_{part}"] for part in PARTS)
            assert row[f"{who}_bytes_seen"] == parts, (who, row)
        for key in ("seen", *PARTS, "retransmitted"):
            assert row[f"bytes_{key}"] == sum(row[f"{who}_bytes_{key}"] for who in DIRECTIONS), (key, row)
    totals = {key: sum(r[f"bytes_{key}"] for r in rows) for key in ("seen", *PARTS, "retransmitted")}
    acc = summary["accounting"]
    for name in (pcap.name, "*"):
        assert acc[name]["connections"] == len(rows)
        assert {k: acc[name][f"bytes_{k}"] for k in totals} == totals
    assert summary["stream_issue_bytes"].get("gap", 0) == totals["gap"]
    # The same numbers as the reassembler's own counters.
    reasm = reassembler_totals(pcap)
    assert (totals["seen"], totals["gap"], totals["retransmitted"]) == (
        reasm["seen"], reasm["gap"], reasm["retransmitted"])
    delivered = totals["decoded"] + totals["undecodable"] + totals["encrypted"] + totals["tls_overhead"]
    assert delivered == reasm["delivered"]
    return totals


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, int]]:
    tmp = tmp_path_factory.mktemp("orig")
    out = {}
    for name in CAPTURES:
        rows, summary = read(tmp, PCAPS / name)
        out[name] = check_accounting(rows, summary, PCAPS / name)
        assert out[name]["gap"] == out[name]["undecodable"] == out[name]["retransmitted"] == 0
        assert out[name]["seen"] == out[name]["decoded"] > 0
    return out


@pytest.mark.parametrize("name", CAPTURES)
def test_loss_is_counted_as_gaps(tmp_path: Path, name: str, originals: dict[str, dict[str, int]]) -> None:
    packets = rdpcap(str(PCAPS / name))
    damaged = write(tmp_path / "lossy.pcap", lose(list(packets), random.Random(1)))
    totals = check_accounting(*read(tmp_path, damaged), damaged)
    assert totals["gap"] > 0
    assert totals["decoded"] < originals[name]["decoded"]
    # Lost bytes are never more than the stream had; what was not lost was decoded or reported undecodable.
    assert totals["seen"] <= originals[name]["seen"]


@pytest.mark.parametrize("name", CAPTURES)
def test_reordering_loses_nothing(tmp_path: Path, name: str, originals: dict[str, dict[str, int]]) -> None:
    packets = list(rdpcap(str(PCAPS / name)))
    shuffled = reorder(packets, random.Random(2))
    assert sum(a is not b for a, b in zip(packets, shuffled, strict=True)) >= 2
    damaged = write(tmp_path / "reordered.pcap", shuffled)
    totals = check_accounting(*read(tmp_path, damaged), damaged)
    assert totals["gap"] == totals["undecodable"] == 0
    assert totals["seen"] == totals["decoded"] == originals[name]["decoded"]


@pytest.mark.parametrize("name", CAPTURES)
def test_duplicates_are_counted_once_and_reported_as_retransmitted(
        tmp_path: Path, name: str, originals: dict[str, dict[str, int]]) -> None:
    packets = rdpcap(str(PCAPS / name))
    damaged = write(tmp_path / "duplicated.pcap", duplicate(list(packets), random.Random(3)))
    totals = check_accounting(*read(tmp_path, damaged), damaged)
    assert totals["retransmitted"] > 0
    assert totals["gap"] == totals["undecodable"] == 0
    assert totals["seen"] == totals["decoded"] == originals[name]["decoded"]


@pytest.mark.parametrize("name", CAPTURES)
def test_snap_length_truncation_is_counted_as_gaps(
        tmp_path: Path, name: str, originals: dict[str, dict[str, int]]) -> None:
    packets = rdpcap(str(PCAPS / name))
    damaged = write(tmp_path / "snaplen.pcap", list(packets), snaplen=200)
    rows, summary = read(tmp_path, damaged)
    totals = check_accounting(rows, summary, damaged)
    # Every stream byte is still accounted for: the cut ones as gaps.
    assert totals["seen"] == originals[name]["seen"]
    assert totals["gap"] > 0 and totals["decoded"] < originals[name]["decoded"]


def test_all_damage_at_once(tmp_path: Path) -> None:
    rng = random.Random(4)
    packets = list(rdpcap(str(PCAPS / CAPTURES[0])))
    damaged = write(tmp_path / "everything.pcap", duplicate(reorder(lose(packets, rng), rng), rng), snaplen=600)
    totals = check_accounting(*read(tmp_path, damaged), damaged)
    assert totals["gap"] > 0 and totals["retransmitted"] > 0
