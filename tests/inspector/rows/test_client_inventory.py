"""The client inventory (inspector/rows/client_inventory.py, ``kafka-inspector clients``) on every real capture of
pcaps/: one row per client address, client id and principal, its software from ApiVersions v3+, the
(API, version) pairs it used with counts, its brokers and its errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.read.reader import iter_capture
from inspector.rows.client_inventory import COLUMNS, Client, inventory
from inspector.rows.event_table import EventTable
from inspector.rows.summary import Summary
from tests.conftest import PCAPS
from tests.frames import frame, metadata_request_v0, metadata_response_v0
from tests.pcapgen import conversation


def events(path: Path) -> pa.Table:
    table = EventTable(capture=path.name)
    for ev in iter_capture(str(path), Summary()):
        table.add(ev)
    return pa.Table.from_batches([table.take()]).select(list(COLUMNS))


def by_id(clients: list[Client]) -> dict[str | None, Client]:
    return {c.client_id: c for c in clients}


@pytest.mark.parametrize("path", sorted(PCAPS.glob("*.pcap")), ids=lambda p: p.name)
def test_every_request_belongs_to_one_client(path: Path) -> None:
    table = events(path)
    rows = table.to_pylist()
    clients = inventory(table)
    assert clients
    keys = [(c.client_ip, c.client_id, c.principal) for c in clients]
    assert len(keys) == len(set(keys))
    direct = [r for r in rows if r["envelope_correlation_id"] is None]
    requests = Counter((r["client_ip"], r["client_id"], r["principal"], r["api_name"] or f"key {r['api_key']}",
                        r["api_version"]) for r in direct if r["direction"] == "request")
    assert requests == Counter({(c.client_ip, c.client_id, c.principal, name, version): n
                                for c in clients for (name, version), n in c.apis.items()})
    brokers = {f"{r['broker_ip']}:{r['broker_port']}" for r in direct}
    for c in clients:
        assert c.brokers <= brokers and c.first_seen is not None and c.first_seen <= c.last_seen
        row = c.row()
        assert row["requests"] == sum(a["requests"] for a in row["apis"])
    errors = Counter()
    for r in direct:
        if r["direction"] == "response":
            for code in set(r["nested_error_codes"] or ()) | ({r["error_code"]} if r["error_code"] else set()):
                errors[r["client_ip"], r["client_id"], r["principal"], code] += 1
    assert errors == Counter({(c.client_ip, c.client_id, c.principal, code): n
                              for c in clients for code, n in c.errors.items()})


def test_software_from_api_versions_v3() -> None:
    clients = by_id(inventory(events(PCAPS / "tansu-produce-fetch-compression.pcap")))
    confluent = clients["confluent-fetcher"]
    assert confluent.software_name == "confluent-kafka-python"
    assert confluent.software_version is not None and "rdkafka" in confluent.software_version
    assert confluent.apis["ApiVersions", 3] >= 1
    aiokafka = clients["aiokafka-fetcher"]  # ApiVersions v0: names no software
    assert (aiokafka.software_name, aiokafka.software) == (None, "software unknown")


def test_errors_and_principals_of_the_sasl_capture() -> None:
    clients = inventory(events(PCAPS / "tansu-sasl-scram.pcap"))
    oauth = [c for c in clients if c.client_id == "kafka-python-heidi"]
    assert oauth and all(c.errors.get(58) for c in oauth)  # SASL_AUTHENTICATION_FAILED
    assert {c.row()["errors"][0]["error_name"] for c in oauth} == {"SASL_AUTHENTICATION_FAILED"}
    legacy = [c for c in clients if c.client_id == "kafka-python-carol"]
    assert legacy and legacy[0].apis["SaslHandshake", 0] >= 1 and legacy[0].apis["SaslToken", None] >= 1


def test_clients_command_on_a_capture_and_on_its_events(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one line a client: the cells are not folded
    pcap = tmp_path / "hostile.pcap"
    conversation(pcap, [("c", frame(metadata_request_v0(1, ["orders"], client_id="[/]\x1b[2Jevil"))),
                        ("b", frame(metadata_response_v0(1, [(1, "b1", 9092)], ["orders"])))])
    assert main(["clients", str(pcap)]) == ExitCode.OK
    from_capture = capsys.readouterr().out
    assert "1 client(s)" in from_capture and "\x1b" not in from_capture and "\\x1b[2Jevil" in from_capture
    assert "Metadata v0 ×1" in from_capture and "software unknown" in from_capture
    out = tmp_path / "out"
    assert main(["read", str(pcap), "--output", str(out), "--quiet"]) == ExitCode.OK
    assert main(["clients", str(out)]) == ExitCode.OK
    assert capsys.readouterr().out == from_capture


def test_clients_command_rejects_what_is_not_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clients", str(tmp_path / "missing.pcap")]) == 3
    assert main(["clients", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "no such file" in err and "holds no Parquet events" in err and err.count("\n") == 2


OLD_CLIENT = "tansu-kafka-python-0.10-removed-versions.pcap"


def _removed(client: Client) -> list[tuple[str, list[int], int | None]]:
    return [(r["api_name"], r["versions"], r["move_to"]) for r in client.removed()]


def test_kafka_4_readiness_of_a_client_pinned_to_kafka_0_10() -> None:
    """Real kafka-python pinned to api_version=(0, 10): CreateTopics v0, ListOffsets v0 and Produce v2 (with
    message format v1) are what Kafka 4.0 removed; each with the lowest version the client must move to."""
    clients = by_id(inventory(events(PCAPS / OLD_CLIENT)))
    assert _removed(clients["kafka-python-0.10-admin"]) == [("CreateTopics", [0], 2)]
    assert _removed(clients["kafka-python-0.10-consumer"]) == [("ListOffsets", [0], 1)]
    for codec in ("none", "gzip"):
        producer = clients[f"kafka-python-0.10-producer-{codec}"]
        assert _removed(producer) == [("Produce", [2], 3)]
        assert producer.row()["message_set_produced"] == 1 and producer.software == "software unknown"


@pytest.mark.parametrize("path", sorted(p for p in PCAPS.glob("*.pcap") if p.name != OLD_CLIENT), ids=lambda p: p.name)
def test_the_other_captures_clients_are_ready(path: Path) -> None:
    for client in inventory(events(path)):
        row = client.row()
        assert (row["removed_in_kafka_4"], row["message_set_produced"], row["message_set_fetched"]) == ([], 0, 0)


def test_clients_command_says_what_blocks_the_upgrade(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["clients", str(PCAPS / OLD_CLIENT)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "Produce v2 ×1 (needs v3+); MessageSet v0/v1 produced ×1" in out
    assert "CreateTopics v0 ×1 (needs v2+)" in out
