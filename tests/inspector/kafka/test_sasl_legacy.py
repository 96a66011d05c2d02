"""The legacy SASL exchange (KIP-152): after a SaslHandshake v0 response, bare token frames with no Kafka header,
each an event ``SaslToken`` (decoded, redacted), then Kafka frames as usual; also from a capture that starts in
the middle of the exchange. Frames written by kio (handshake) and kafka-python's SCRAM client (tokens)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from kafka.net.sasl.scram import ScramClient
from kio.schema.errors import ErrorCode
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v0.response import SaslHandshakeResponse

from contract.errors import ExitCode
from inspector.kafka.connection import Endpoint, KafkaConnection, KafkaMessage, StreamIssue
from tests.capture_secrets import assert_no_secret, secret_forms
from tests.frames import frame
from tests.inspector.kafka.test_sasl import PASSWORD, _kio, metadata, plain, read

GARBAGE = b"\xff\xfe\x00\x01garbage"


def handshake_v0(mechanism: str, corr: int, error: ErrorCode = ErrorCode.none) -> list[tuple[str, bytes]]:
    return [("c", _kio(SaslHandshakeRequest(mechanism=mechanism), corr)),
            ("b", _kio(SaslHandshakeResponse(error_code=error, mechanisms=(mechanism,)), corr))]


def scram_tokens(user: str) -> list[tuple[str, bytes]]:
    client = ScramClient(user, PASSWORD, "SCRAM-SHA-256")
    first = client.first_message()
    server_first = b"r=" + client.nonce + b"srv,s=" + base64.b64encode(b"salt-bytes") + b",i=4096"
    client.process_server_first_message(server_first)
    final = client.final_message()
    server_final = b"v=" + base64.b64encode(client.server_signature)
    return [("c", frame(first)), ("b", frame(server_first)), ("c", frame(final)), ("b", frame(server_final))]


def _rows(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["api_name"], e["direction"], e["api_key"], e["correlation_id"], e["principal"]) for e in events]


def _no_secret(events: list[dict[str, Any]], *secrets: bytes) -> None:
    assert_no_secret(json.dumps(events, default=str), "events", secret_forms(secrets))


def test_plain_tokens_then_kafka_frames(tmp_path: Path) -> None:
    events, conns = read(tmp_path, handshake_v0("PLAIN", 1) + [("c", frame(plain("alice"))), ("b", frame(b""))]
                         + metadata(2))
    assert _rows(events) == [
        ("SaslHandshake", "request", 17, 1, None), ("SaslHandshake", "response", 17, 1, None),
        ("SaslToken", "request", None, None, None), ("SaslToken", "response", None, None, "User:alice"),
        ("Metadata", "request", 3, 2, "User:alice"), ("Metadata", "response", 3, 2, "User:alice"),
    ]
    token = events[2]
    assert token["decode_status"] == "ok" and token["client_id"] == events[0]["client_id"]
    body = json.loads(token["body"])
    assert body["AuthBytes"] == {"redacted": "sasl-auth-bytes", "bytes": len(plain("alice"))}
    assert body["AuthBytesDecoded"]["user"] == "alice"
    assert body["AuthBytesDecoded"]["password"] == {"redacted": "sasl-plain-password", "bytes": len(PASSWORD)}
    assert events[3]["latency_ms"] == pytest.approx(1.0)  # after the client's token (pcapgen: 1 ms a packet)
    conn = conns[0]
    assert (conn["principal"], conn["sasl_mechanism"], conn["sasl_outcome"]) == ("User:alice", "PLAIN", "ok")
    assert conns[0]["bytes_undecodable"] == 0 and conns[0]["decode_failures"] == 0
    _no_secret(events, PASSWORD.encode())


def test_scram_tokens_name_the_user_after_server_final(tmp_path: Path) -> None:
    events, conns = read(tmp_path, handshake_v0("SCRAM-SHA-256", 1) + scram_tokens("carol") + metadata(2))
    assert [e["api_name"] for e in events] == ["SaslHandshake"] * 2 + ["SaslToken"] * 4 + ["Metadata"] * 2
    assert [e["principal"] for e in events] == [None] * 5 + ["User:carol"] * 3
    messages = [json.loads(e["body"])["AuthBytesDecoded"]["message"] for e in events[2:6]]
    assert messages == ["client-first", "server-first", "client-final", "server-final"]
    assert conns[0]["sasl_outcome"] == "ok" and conns[0]["sasl_claimed"] == "User:carol"
    _no_secret(events, PASSWORD.encode())


def test_a_scram_error_fails_the_exchange(tmp_path: Path) -> None:
    tokens = scram_tokens("mallory")[:3] + [("b", frame(b"e=unknown-user"))]
    events, conns = read(tmp_path, handshake_v0("SCRAM-SHA-256", 1) + tokens)
    assert {e["principal"] for e in events} == {None}
    assert (conns[0]["sasl_outcome"], conns[0]["sasl_claimed"]) == ("failed: SCRAM unknown-user", "User:mallory")


def test_a_refused_handshake_is_followed_by_kafka_frames(tmp_path: Path) -> None:
    events, _ = read(tmp_path, handshake_v0("PLAIN", 1, ErrorCode.unsupported_sasl_mechanism) + metadata(2))
    assert [e["api_name"] for e in events] == ["SaslHandshake"] * 2 + ["Metadata"] * 2


def test_gssapi_tokens_end_at_the_first_kafka_request(tmp_path: Path) -> None:
    kerberos = [("c", frame(b"\x60\x82\x02\x10kerberos-ap-req")), ("b", frame(b"\x60\x81\x90ap-rep")),
                ("c", frame(b"\x05\x04wrap")), ("b", frame(b"\x05\x04wrap-answer"))]
    events, conns = read(tmp_path, handshake_v0("GSSAPI", 1) + kerberos + metadata(2))
    assert [e["api_name"] for e in events] == ["SaslHandshake"] * 2 + ["SaslToken"] * 4 + ["Metadata"] * 2
    assert all(json.loads(e["body"])["AuthBytes"]["redacted"] == "sasl-auth-bytes" for e in events[2:6])
    assert conns[0]["sasl_mechanism"] == "GSSAPI" and conns[0]["decode_failures"] == 0


def _connection(synced: bool) -> KafkaConnection:
    return KafkaConnection(1, Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092), synced=synced,
                           client_side=0 if synced else None)


def _feed(conn: KafkaConnection, messages: list[tuple[str, bytes]], how: str) -> list[Any]:
    out: list[Any] = []
    ts = 1.0
    for who, data in messages:
        side = 0 if who == "c" else 1
        if how == "bytes":
            for i in range(len(data)):
                out += conn.data(side, ts, data[i:i + 1])
        else:
            out += conn.data(side, ts, data)
        ts += 0.001
    if how == "garbage":
        out += conn.data(0, ts, GARBAGE)
    return out + conn.finish(ts)


@pytest.mark.parametrize("how", ["whole", "bytes", "garbage"])
def test_legacy_exchange_fed_whole_byte_by_byte_and_with_trailing_garbage(how: str) -> None:
    conn = _connection(synced=True)
    out = _feed(conn, handshake_v0("SCRAM-SHA-256", 1) + scram_tokens("dan") + metadata(2), how)
    messages = [e for e in out if isinstance(e, KafkaMessage)]
    assert [m.message.api_name for m in messages] == ["SaslHandshake"] * 2 + ["SaslToken"] * 4 + ["Metadata"] * 2
    assert messages[-1].principal == "User:dan"
    skipped = [e for e in out if isinstance(e, StreamIssue) and e.kind == "skipped"]
    assert sum(i.length for i in skipped) == (len(GARBAGE) if how == "garbage" else 0)
    stats = conn.stats
    assert stats.bytes_skipped == [len(GARBAGE) if how == "garbage" else 0, 0]
    assert stats.bytes_seen == [framed + skipped for framed, skipped in zip(stats.bytes_framed, stats.bytes_skipped,
                                                                            strict=True)]


def test_a_capture_starting_in_the_middle_of_the_exchange(tmp_path: Path) -> None:
    """No SYN, no handshake: the first frames are SCRAM's last round, then Kafka frames."""
    events, conns = read_mid_stream(tmp_path, scram_tokens("erin")[2:] + metadata(7))
    assert [e["api_name"] for e in events] == ["SaslToken", "SaslToken", "Metadata", "Metadata"]
    assert [e["direction"] for e in events] == ["request", "response", "request", "response"]
    assert conns[0]["bytes_undecodable"] == 0 and conns[0]["sasl_outcome"] == "ok"


def test_mid_stream_plain_token_then_kafka(tmp_path: Path) -> None:
    events, conns = read_mid_stream(tmp_path, [("c", frame(plain("frank")))] + metadata(3))
    assert [e["api_name"] for e in events][:1] == ["SaslToken"]
    assert [e["api_name"] for e in events][-2:] == ["Metadata", "Metadata"]
    _no_secret(events, PASSWORD.encode())


def test_mid_stream_kafka_frames_are_not_taken_for_tokens(tmp_path: Path) -> None:
    events, _ = read_mid_stream(tmp_path, metadata(5) + [("c", frame(plain("grace")))])
    assert [e["api_name"] for e in events][:2] == ["Metadata", "Metadata"]
    assert "SaslToken" not in [e["api_name"] for e in events]  # a token after Kafka frames with no handshake: not one


def read_mid_stream(tmp_path: Path, messages: list[tuple[str, bytes]]) -> tuple[list[dict[str, Any]],
                                                                             list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    from inspector.cli.main import main
    from tests.pcapgen import conversation

    pcap = tmp_path / "mid.pcap"
    conversation(pcap, messages, handshake=False)
    out = tmp_path / "out"
    assert main(["read", str(pcap), "--output", str(out), "--quiet"]) == ExitCode.OK
    return pq.read_table(out / "events").to_pylist(), pq.read_table(out / "connections.parquet").to_pylist()


def test_a_hostile_user_name_in_a_token_prints_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspector.cli.main import main
    from tests.pcapgen import conversation

    pcap = tmp_path / "hostile.pcap"
    conversation(pcap, handshake_v0("PLAIN", 1) + [("c", frame(plain("[/]\x1b[31mroot"))), ("b", frame(b""))]
                 + metadata(2))
    for argv in (["show", str(pcap)], ["show", str(pcap), "-v"]):
        assert main(argv) == ExitCode.OK
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\\x1b[31mroot" in out and "principal=User:[/]" in out
        assert PASSWORD not in out
