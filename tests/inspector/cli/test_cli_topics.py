"""``kafka-inspector topics``: the topic map of real captures (pyarrow only), the same from a capture and from its
events, batch by batch, and one line for an input that is neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.rows.parquet_file import read_events
from inspector.rows.topic_traffic import COLUMNS, TopicMap

REPO = Path(__file__).resolve().parents[3]
PCAPS = REPO / "pcaps"
GROUP = PCAPS / "tansu-consumer-group-3-members.pcap"
MOCK = PCAPS / "mock-cluster-3-brokers-multi-client.pcap"
MTLS = PCAPS / "tls" / "tansu-tls12-mtls.pcap"
TOPIC_MAP = PCAPS / "mock-cluster-topic-map.pcap"


def _topics(*argv: str) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "inspector.cli.main", "topics", *argv, "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == ExitCode.OK and proc.stderr == "", proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


def test_a_consumer_group_reads_what_was_preloaded() -> None:
    """The scenario preloads 60 records into ``orders`` and three members of ``inspector-group`` (kafka-python,
    aiokafka, confluent-kafka) consume them: every consumer row names the group, and between them they fetched the
    60 records."""
    rows = _topics(str(GROUP))
    consumers = [r for r in rows if r["role"] == "consumer"]
    assert sorted(r["client_id"] for r in consumers) == ["aiokafka-member", "confluent-member", "kafka-python-member"]
    assert {(r["topic"], r["group_id"]) for r in consumers} == {("orders", "inspector-group")}
    assert sum(r["records"] for r in consumers) == 60
    assert all(r["requests"] > 0 and r["record_bytes"] > 0 for r in consumers)
    software = {r["client_id"]: r["software_name"] for r in consumers}
    assert software["kafka-python-member"] == "kafka-python" and software["aiokafka-member"] is None


def test_topic_ids_are_named_and_what_was_produced_was_fetched() -> None:
    """librdkafka fetches at v16, naming topics by id: the map names them as the capture did (Metadata). Each
    library's five producers write 8 records each to its topic, and its fetcher reads the topic whole."""
    rows = _topics(str(MOCK))
    assert {r["topic"] for r in rows} >= {"mock-confluent", "mock-kafka-python", "mock-aiokafka", "mock-kcat"}
    assert all(r["topic"].startswith("mock-") for r in rows)  # no id left unnamed
    for topic in ("mock-confluent", "mock-kafka-python", "mock-aiokafka"):
        produced = [r for r in rows if r["topic"] == topic and r["role"] == "producer"]
        fetched = [r for r in rows if r["topic"] == topic and r["role"] == "consumer"]
        assert len(produced) == 5 and sum(r["records"] for r in produced) == 40
        assert sum(r["records"] for r in fetched) == 40
        assert all(len(r["brokers"]) >= 1 for r in produced + fetched)


def test_producers_topics_and_groups_of_the_topic_map_capture() -> None:
    """mock-cluster-topic-map (pcaps/capture_kit/topic_map.py): three producers on three topics, a classic group, a
    KIP-848 group and a kafka-python group; ``tm-worker`` is one client id on one address in two groups."""
    rows = _topics(str(TOPIC_MAP))
    produced = {(r["client_id"], r["topic"]) for r in rows if r["role"] == "producer"}
    assert produced == {("tm-orders-producer", "tm-orders"), ("tm-payments-producer", "tm-payments"),
                        ("tm-audit-producer", "tm-audit"), ("tm-audit-producer", "tm-orders")}
    consumed = {(r["client_id"], r["topic"]): r["group_id"] for r in rows if r["role"] == "consumer"}
    assert consumed == {
        ("tm-billing-1", "tm-orders"): "tm-billing", ("tm-billing-1", "tm-payments"): "tm-billing",
        ("tm-analytics-1", "tm-orders"): "tm-analytics", ("tm-analytics-1", "tm-audit"): "tm-analytics",
        ("tm-auditor", "tm-audit"): "tm-audit-readers",
        # one client in two groups: told apart by the topics each group's requests name, tm-orders by neither
        ("tm-worker", "tm-payments"): "tm-billing", ("tm-worker", "tm-audit"): "tm-analytics",
        ("tm-worker", "tm-orders"): None}
    software = {r["client_id"]: r["software_name"] for r in rows}
    assert software["tm-payments-producer"] is software["tm-auditor"] is None  # pinned to ApiVersions v2
    assert software["tm-worker"] == "confluent-kafka-python"
    # what the producers wrote to tm-payments is what its two consumers fetched between them, at least once
    payments = [r for r in rows if r["topic"] == "tm-payments"]
    written = sum(r["records"] for r in payments if r["role"] == "producer")
    assert written > 0 and sum(r["records"] for r in payments if r["role"] == "consumer") >= written


def test_the_principal_of_a_client_certificate() -> None:
    rows = _topics(str(MTLS), "--tls-keylog", str(MTLS.with_suffix(".keylog")))
    assert {(r["role"], r["principal"]) for r in rows} == {
        ("producer", "User:CN=alice,OU=payments,O=acme"), ("consumer", "User:CN=alice,OU=payments,O=acme")}
    assert {r["topic"] for r in rows} == {"payments"}


def test_a_capture_and_its_events_give_the_same_map(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["read", str(GROUP), str(MOCK), "--output", str(out), "--quiet"]) == ExitCode.OK
    assert _topics(str(out)) == _topics(str(GROUP), str(MOCK))


def test_batch_by_batch_is_the_same_as_all_at_once(tmp_path: Path) -> None:
    """The map keeps one entry per client, topic, role and broker: fed seven events at a time (a consumer's Fetch
    request in one batch, its response in another; a client's ApiVersions long before its Fetch), it says the
    same."""
    out = tmp_path / "out"
    assert main(["read", str(MOCK), "--output", str(out), "--quiet"]) == ExitCode.OK
    table = read_events(out, COLUMNS)
    whole = TopicMap()
    whole.add(table)
    pieces = TopicMap()
    for batch in table.to_batches(max_chunksize=7):
        pieces.add(pa.Table.from_batches([batch]))
    assert [r.row() for r in pieces.rows()] == [r.row() for r in whole.rows()] and whole.rows()


def test_an_input_that_is_neither_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("not a capture")
    assert main(["topics", str(bad)]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "notes.txt" in err
