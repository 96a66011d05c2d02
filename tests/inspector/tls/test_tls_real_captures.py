"""Real Kafka-over-TLS captures, when present (pcaps/tls/*.pcap, real clients against a real broker behind TLS,
each with the key log its client wrote beside it): with the key log every connection is decrypted and its
frames decode, with no byte undecodable; without it nothing is undecodable either, the bytes are encrypted.
Skipped when the captures are not there.

Each has a plaintext twin, ``NAME.plaintext.pcap``: stunnel's hop to the broker, recorded at the same time. stunnel
passes the decrypted bytes on as they are, so the twin holds the same Kafka traffic in plaintext, and the events
of the decrypted capture must be the twin's: the same connections, in each the same messages in the same order,
with the same API keys, versions, correlation ids, client ids and bodies."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.inspector.tls_captures import Read, check_accounting, read

TLS_DIR = Path(__file__).resolve().parents[3] / "pcaps" / "tls"
TWIN_SUFFIX = ".plaintext.pcap"


def twin(pcap: Path) -> Path:
    """The plaintext twin of a TLS capture: ``NAME.pcap`` -> ``NAME.plaintext.pcap``."""
    return pcap.with_name(pcap.stem + TWIN_SUFFIX)


TLS_CAPTURES = sorted(p for p in TLS_DIR.glob("*.pcap") if not p.name.endswith(TWIN_SUFFIX))
WITH_KEYS = [p for p in TLS_CAPTURES if p.with_suffix(".keylog").exists()]
TWINNED = [p for p in WITH_KEYS if twin(p).exists()]
#: librdkafka writes no key log: the twin is all there is to see of its Kafka messages.
TWINNED_NO_KEYS = [p for p in TLS_CAPTURES if p not in WITH_KEYS and twin(p).exists()]

#: Columns that tell where, when and how a message travelled, which differ between the client's TLS leg and
#: stunnel's plaintext hop by nature: the file, the times (the hop carries each message a little later), the
#: connection (other ports, another id), the TLS mark, and the principal (the client certificate is seen on the
#: TLS leg only). Every other column must be equal.
LEG = ("capture", "ts", "latency_ms", "conn_id", "client_ip", "client_port", "broker_ip", "broker_port", "tls",
       "principal")
#: The columns issue 19 names (and the client id): compared first, for a readable failure.
NAMED = ("direction", "api_key", "api_version", "correlation_id", "client_id", "body")
#: capture -> responses on the plaintext hop that never reached the client: kafka-python's group members close
#: while a Fetch waits (max_wait_ms 500) at the broker; stunnel has already closed the TLS side when the response
#: comes, so it is in the twin only (and its request is a TLS connection's `responses_missing`).
LATE_RESPONSES = {"tansu-tls13-kafka-python": 2}


@pytest.mark.skipif(not WITH_KEYS, reason="no TLS captures with key logs under pcaps/tls/")
@pytest.mark.parametrize("pcap", WITH_KEYS, ids=[p.stem for p in WITH_KEYS])
def test_with_its_key_log_every_connection_decrypts_and_decodes(pcap: Path, tmp_path: Path) -> None:
    got = read(tmp_path, pcap, "--tls-keylog", str(pcap.with_suffix(".keylog")))
    assert got.connections and got.events and got.summary["non_kafka_connections"] == 0
    for row in got.connections:
        assert row["tls"] is True and row["tls_decryption"] == "decrypted", row
        assert row["bytes_encrypted"] == row["bytes_undecodable"] == row["decode_failures"] == 0, row
    assert all(e["tls"] and e["decode_status"] == "ok" for e in got.events)
    if "mtls" in pcap.name:  # the client certificate's principal, as Kafka's SSL principal builder gives it
        assert {e["principal"] for e in got.events} == {"User:CN=alice,OU=payments,O=acme"}
    check_accounting(got)


@pytest.mark.skipif(not TLS_CAPTURES, reason="no TLS captures under pcaps/tls/")
@pytest.mark.parametrize("pcap", TLS_CAPTURES, ids=[p.stem for p in TLS_CAPTURES])
def test_without_keys_the_bytes_are_encrypted_not_undecodable(pcap: Path, tmp_path: Path) -> None:
    got = read(tmp_path, pcap)
    assert got.events == [] and got.connections and got.summary["non_kafka_connections"] == 0
    for row in got.connections:
        assert row["tls"] is True and row["tls_version"] in ("TLSv1.2", "TLSv1.3"), row
        assert row["bytes_undecodable"] == row["bytes_decoded"] == 0, row
        assert row["bytes_encrypted"] + row["bytes_tls_overhead"] == row["bytes_seen"], row
    check_accounting(got)


# --------------------------------------------------------------------------------------------
# the plaintext twins
# --------------------------------------------------------------------------------------------


def _per_connection(events: list[dict[str, Any]]) -> list[tuple[int, dict[str, list[dict[str, Any]]]]]:
    """(conn_id, {direction: its messages in stream order}) of each connection with messages, in the order of
    their first message: stunnel opens its hop to the broker when it has accepted a client, and passes each
    client's first request on as it decrypts it, so the i-th connection of one side is the i-th of the other."""
    conns: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        conns[e["conn_id"]].append(e)
    ordered = sorted(conns.items(), key=lambda item: min(e["ts"] for e in item[1]))
    return [(conn_id, {d: sorted((e for e in es if e["direction"] == d), key=lambda e: e["frame_offset"])
                       for d in ("request", "response")}) for conn_id, es in ordered]


def _named(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(e[k] for k in NAMED) for e in events]


def _same(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in LEG} for e in events]


def _check_twin_decodes(plain: Read) -> None:
    assert plain.events and plain.summary["non_kafka_connections"] == 0
    assert all(e["tls"] is False and e["decode_status"] == "ok" for e in plain.events)
    for row in plain.connections:
        assert row["tls"] is False and row["bytes_decoded"] == row["bytes_seen"] > 0, row
    check_accounting(plain)


@pytest.mark.skipif(not TWINNED, reason="no TLS captures with key logs and plaintext twins under pcaps/tls/")
@pytest.mark.parametrize("pcap", TWINNED, ids=[p.stem for p in TWINNED])
def test_decrypted_the_events_are_those_of_the_plaintext_twin(pcap: Path, tmp_path: Path) -> None:
    tls = read(tmp_path, pcap, "--tls-keylog", str(pcap.with_suffix(".keylog")), name="tls")
    plain = read(tmp_path, twin(pcap), name="plain")
    _check_twin_decodes(plain)
    tls_conns, plain_conns = _per_connection(tls.events), _per_connection(plain.events)
    # every hop stunnel opened carried Kafka; a TLS connection without any (mutual TLS refused) has no hop
    assert len(tls_conns) == len(plain_conns) == len(plain.connections)
    with_messages = {conn_id for conn_id, _ in tls_conns}
    rows = {row["conn_id"]: row for row in tls.connections}
    assert all(row["bytes_decoded"] == 0 for conn_id, row in rows.items() if conn_id not in with_messages)
    late = 0
    for (conn_id, got), (_, want) in zip(tls_conns, plain_conns, strict=True):
        assert _named(got["request"]) == _named(want["request"])
        assert _same(got["request"]) == _same(want["request"])
        answered = len(got["response"])
        assert _named(got["response"]) == _named(want["response"][:answered])
        assert _same(got["response"]) == _same(want["response"][:answered])
        # what the broker answered after the client had gone: the requests the TLS leg left unanswered
        unanswered = {e["correlation_id"] for e in got["request"]} - {e["correlation_id"] for e in got["response"]}
        extra = want["response"][answered:]
        assert {e["correlation_id"] for e in extra} <= unanswered and len(extra) == rows[conn_id]["responses_missing"]
        late += len(extra)
    assert late == LATE_RESPONSES.get(pcap.stem, 0)
    assert len(tls.events) + late == len(plain.events)


@pytest.mark.skipif(not TWINNED_NO_KEYS, reason="no TLS captures without key logs but with twins under pcaps/tls/")
@pytest.mark.parametrize("pcap", TWINNED_NO_KEYS, ids=[p.stem for p in TWINNED_NO_KEYS])
def test_without_a_key_log_the_twin_shows_what_is_encrypted(pcap: Path, tmp_path: Path) -> None:
    tls = read(tmp_path, pcap, name="tls")
    plain = read(tmp_path, twin(pcap), name="plain")
    _check_twin_decodes(plain)
    assert tls.events == [] and len(tls.connections) == len(plain.connections)
    for row in tls.connections:
        assert row["tls_decryption"] == "no keys", row
        assert row["client_bytes_encrypted"] > 0 and row["broker_bytes_encrypted"] > 0, row
