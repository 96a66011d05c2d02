"""Captures of Kafka over TLS for the tests of the TLS wiring (inspector/kafka/tls_stream.py, the pipeline, the CLI).

The TLS bytes are real: OpenSSL's, made in memory by ``pcaps/capture_kit/tls_memory.py`` (its key log written
as the client's ``keylog_filename``), carrying Kafka frames built by hand (``tests/frames.py``). The same
frames written as plaintext make the capture the decrypted one must equal. TCP segments are written by
``tests/pcapgen.py`` (scapy), one millisecond apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from scapy.utils import wrpcap

from contract.errors import ExitCode
from inspector.cli.main import main
from pcaps.capture_kit.tls_memory import Capture, Pki, contexts, converse
from tests.frames import (
    api_versions_request_v0,
    api_versions_response_v0,
    frame,
    metadata_request_v0,
    metadata_response_v0,
    produce_request_v3,
    produce_response_v3,
)
from tests.pcapgen import CLIENT, conversation

MSS = 1400
#: Columns that differ between a TLS capture and its plaintext twin by nature: the capture's name, times (the
#: TLS records and the handshake take other packets) and the TLS mark itself.
NATURE = ("capture", "ts", "latency_ms", "tls")
PARTS = ("decoded", "gap", "undecodable", "encrypted", "tls_overhead")


def kafka_frames() -> tuple[tuple[bool, bytes], ...]:
    """(from the client, frame) of a small Kafka conversation: ApiVersions, a Metadata response of ~45 KB (it
    spans several TLS records), a Produce, and one more Metadata round trip."""
    topics = [f"topic-{i:05d}" for i in range(2500)]
    return (
        (True, frame(api_versions_request_v0(1))),
        (False, frame(api_versions_response_v0(1, [(0, 0, 9), (3, 0, 12), (18, 0, 3)]))),
        (True, frame(metadata_request_v0(2, []))),
        (False, frame(metadata_response_v0(2, [(1, "broker-1.kafka.test", 9093)], topics))),
        (True, frame(produce_request_v3(3, 1, "orders"))),
        (False, frame(produce_response_v3(3, "orders"))),
        (True, frame(metadata_request_v0(4, ["orders"]))),
        (False, frame(metadata_response_v0(4, [(1, "broker-1.kafka.test", 9093)], ["orders"]))),
    )


def tls_conversation(pki: Pki, keylog: Path, **options: Any) -> Capture:
    """The Kafka frames over a real TLS connection (``options``: as ``tls_memory.contexts`` takes them)."""
    return converse(*contexts(pki, **options), keylog, messages=kafka_frames())


def chunks_as_messages(chunks: list[tuple[bool, bytes]]) -> list[tuple[str, bytes]]:
    return [("c" if from_client else "b", data) for from_client, data in chunks]


def write_capture(path: Path, chunks: list[tuple[bool, bytes]], *, handshake: bool = True,
                  drop: set[int] | None = None, client: tuple[str, int] = CLIENT,
                  start_ts: float = 1_700_000_000.0) -> list[Any]:
    """A pcap of one TCP connection carrying ``chunks`` (the TCP handshake and FINs too, unless
    ``handshake=False``); ``drop``: indexes of packets left out. Returns the packets written."""
    return conversation(path, chunks_as_messages(chunks), handshake=handshake, drop=drop, client=client,
                        mss=MSS, start_ts=start_ts)


def merge(path: Path, *packet_lists: list[Any]) -> Path:
    """One pcap of several connections' packets, in time order."""
    packets = sorted((p for packets in packet_lists for p in packets), key=lambda p: float(p.time))
    wrpcap(str(path), packets)
    return path


def segment_index(chunks: list[tuple[bool, bytes]], chunk: int, handshake: bool = True) -> int:
    """The index in :func:`write_capture`'s packets of the first segment of ``chunks[chunk]``."""
    index = 3 if handshake else 0
    for _, data in chunks[:chunk]:
        index += -(-len(data) // MSS)
    return index


@dataclass
class Read:
    """What ``read`` wrote: the events, the connections, summary.json."""

    events: list[dict[str, Any]]
    connections: list[dict[str, Any]]
    summary: dict[str, Any]


def read(tmp_path: Path, pcap: Path, *extra: str, name: str = "out") -> Read:
    out = tmp_path / name
    assert main(["read", str(pcap), "--output", str(out), "--quiet", "--overwrite", *extra]) == ExitCode.OK
    events_dir = out / "events"
    events = pq.read_table(events_dir).to_pylist() if any(events_dir.glob("*.parquet")) else []
    return Read(events, pq.read_table(out / "connections.parquet").to_pylist(),
                json.loads((out / "summary.json").read_text()))


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without the columns a TLS capture and its plaintext twin differ in by nature."""
    return [{k: v for k, v in e.items() if k not in NATURE} for e in events]


def check_accounting(result: Read) -> None:
    """Every stream byte counted once, per direction and in total, and summary.json agreeing."""
    for row in result.connections:
        for who in ("client", "broker"):
            assert row[f"{who}_bytes_seen"] == sum(row[f"{who}_bytes_{part}"] for part in PARTS), (who, row)
        for key in ("seen", *PARTS, "retransmitted"):
            assert row[f"bytes_{key}"] == sum(row[f"{who}_bytes_{key}"] for who in ("client", "broker")), key
    total = result.summary["accounting"].get("*")
    if total is not None:
        for key in ("seen", *PARTS):
            assert total[f"bytes_{key}"] == sum(r[f"bytes_{key}"] for r in result.connections), key


def corrupt_keys(keylog: str, client_random: str | None = None) -> str:
    """The key log with every secret (of one connection, or all) changed: wrong keys."""
    out = []
    for line in keylog.splitlines():
        fields = line.split()
        if len(fields) == 3 and (client_random is None or fields[1] == client_random):
            secret = bytes.fromhex(fields[2])
            fields[2] = bytes([secret[0] ^ 0xFF]).hex() + secret[1:].hex()
        out.append(" ".join(fields))
    return "\n".join(out) + "\n"
