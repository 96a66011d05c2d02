"""End to end on the project's real captures (pcaps/): everything decodes, quirks are named."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from inspector.read.reader import ReadOptions, read_captures
from inspector.rows.summary import Summary
from tests.tshark_check import HAVE_TSHARK, cross_check

#: The real brokers' and clients' warts (documented in pcaps/README.md), as (capture regex,
#: direction, api key, status regex). Anything else that is not "ok" fails the test.
KNOWN_QUIRKS = [
    # Tansu truncates CreateAcls responses.
    (r"tansu-admin", "response", 30, r"^truncated at _tagged \(offset \d+\)$"),
    # librdkafka 2.16 sends 3 extra bytes after a Metadata v12 request body (kio agrees).
    (r"tansu", "request", 3, r"^trailing bytes: 3 after the body"),
    # The mock cluster answers ApiVersions v3/v4 (it supports up to v2) with a 13-byte body in no
    # published layout; v3 and the v0 fallback both leave bytes over.
    (r"mock-cluster", "response", 18, r"^trailing bytes: 5 after the body \(offset 12\)$"),
    # The mock cluster writes one byte too many after its Metadata v13 responses (kio agrees).
    (r"mock-cluster", "response", 3, r"^trailing bytes: 1 after the body"),
    # Tansu's ListOffsets v0 response lacks the v0 OldStyleOffsets array (kafka-python cannot decode it either).
    (r"tansu-kafka-python-0.10", "response", 2, r"^truncated: count \d+ cannot fit in the \d+ bytes left at "
                                                 r"Topics\[0\]\.Partitions"),
]


class _Collect:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, batch: pa.RecordBatch) -> None:
        self.rows.extend(batch.to_pylist())

    def close(self) -> list[Path]:
        return []


def _decode(pcap: Path) -> tuple[list[dict[str, Any]], Summary]:
    sink = _Collect()
    summary = read_captures([str(pcap)], sink, ReadOptions())
    return sink.rows, summary


def _quirk(pcap: Path, row: dict[str, Any]) -> bool:
    return any(re.search(cap, pcap.name) and row["direction"] == d and row["api_key"] == k
               and re.search(status, row["decode_status"]) for cap, d, k, status in KNOWN_QUIRKS)


def test_every_capture_decodes_completely(project_captures: list[Path]) -> None:
    for pcap in project_captures:
        rows, summary = _decode(pcap)
        assert rows, pcap.name
        unexpected = [(r["direction"], r["api_name"], r["api_version"], r["decode_status"])
                      for r in rows if r["decode_status"] != "ok" and not _quirk(pcap, r)]
        assert unexpected == [], pcap.name
        assert not any(r["request_missing"] for r in rows), pcap.name
        for conn in summary.connections:
            assert conn["bytes_gap"] == 0 and conn["bytes_undecodable"] == 0, (pcap.name, conn)
            assert conn["bytes_seen"] == conn["bytes_decoded"], (pcap.name, conn)
            assert conn["requests_missing"] == 0
        # Every response found its request; requests left unanswered (long polls cut off when
        # a client closed) are counted, not lost.
        requests = sum(1 for r in rows if r["direction"] == "request")
        responses = sum(1 for r in rows if r["direction"] == "response")
        unanswered = sum(c["responses_missing"] for c in summary.connections)
        assert requests - responses == unanswered, pcap.name
        clients = len({r["client_id"] for r in rows})  # each may leave a poll or two in flight as it closes
        assert unanswered <= max(10, 2 * clients), pcap.name


def test_consumer_group_of_three_members(project_captures: list[Path]) -> None:
    pcap = next(p for p in project_captures if "consumer-group-3-members" in p.name)
    rows, _ = _decode(pcap)
    joins = [r for r in rows if r["api_name"] == "JoinGroup" and r["direction"] == "request"]
    assert {r["protocol_type"] for r in joins} == {"consumer"}
    clients = {r["client_id"] for r in joins}
    assert len(clients) == 3
    for r in joins:
        for proto in json.loads(r["body"])["Protocols"]:
            decoded = proto["MetadataDecoded"]
            assert decoded["status"] == "ok" and not decoded["inferred"], decoded
            assert decoded["value"]["Topics"]
    leader_syncs = [json.loads(r["body"]) for r in rows if r["api_name"] == "SyncGroup"
                    and r["direction"] == "request" and json.loads(r["body"])["Assignments"]]
    assert leader_syncs
    for body in leader_syncs:
        for a in body["Assignments"]:
            assert a["AssignmentDecoded"]["status"] == "ok"
    generations = {r["generation_id"] for r in rows if r["api_name"] == "Heartbeat" and r["direction"] == "request"}
    assert generations and all(isinstance(g, int) and g >= 0 for g in generations)


def test_records_headers_are_decoded(project_captures: list[Path]) -> None:
    pcap = next(p for p in project_captures if "produce-fetch-compression" in p.name)
    rows, _ = _decode(pcap)
    codecs = set()
    for r in rows:
        if r["api_name"] == "Produce" and r["direction"] == "request":
            for topic in json.loads(r["body"])["TopicData"]:
                for part in topic["PartitionData"]:
                    for batch in part["Records"]["batches"]:
                        codecs.add(batch["compression"])
    assert {"none", "gzip", "snappy", "lz4", "zstd"} <= codecs


@pytest.mark.skipif(not HAVE_TSHARK, reason="tshark is not installed")
def test_project_captures_agree_with_tshark(project_captures: list[Path]) -> None:
    compared = 0
    for pcap in project_captures:
        rows, _ = _decode(pcap)
        result = cross_check(pcap, rows)
        compared += result["requests"] + result["responses"]
    assert compared > 1000
