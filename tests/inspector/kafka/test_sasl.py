"""Who a connection authenticated as (inspector/kafka/sasl.py), on every event after authentication and in
connections.parquet: SASL exchanges written by kio (frames) and kafka-python's SCRAM client (its messages),
read from a pcap by the CLI as a user would."""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kafka.net.sasl.scram import ScramClient
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.static.primitive import i64Timedelta

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.kafka.sasl import SaslState
from tests.decoders import vectors_kio as VK
from tests.frames import frame, metadata_request_v0, metadata_response_v0
from tests.pcapgen import conversation

PASSWORD = "pa55-w0rd!"


def _kio(instance: Any, corr: int) -> bytes:
    return frame(VK.kio_frame(instance, correlation_id=corr))


def handshake(mechanism: str, corr: int) -> list[tuple[str, bytes]]:
    return [("c", _kio(SaslHandshakeRequest(mechanism=mechanism), corr)),
            ("b", _kio(SaslHandshakeResponse(error_code=ErrorCode.none, mechanisms=(mechanism,)), corr))]


def authenticate(auth: bytes, answer: bytes, corr: int, error: ErrorCode = ErrorCode.none,
                 lifetime_ms: int = 3_600_000) -> list[tuple[str, bytes]]:
    response = SaslAuthenticateResponse(error_code=error, error_message=None, auth_bytes=answer,
                                        session_lifetime=i64Timedelta(datetime.timedelta(milliseconds=lifetime_ms)))
    return [("c", _kio(SaslAuthenticateRequest(auth_bytes=auth), corr)), ("b", _kio(response, corr))]


def metadata(corr: int) -> list[tuple[str, bytes]]:
    return [("c", frame(metadata_request_v0(corr, ["orders"]))),
            ("b", frame(metadata_response_v0(corr, [(1, "b1", 9092)], ["orders"])))]


def plain(user: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{PASSWORD}".encode()


def read(tmp_path: Path, messages: list[tuple[str, bytes]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pcap = tmp_path / "sasl.pcap"
    conversation(pcap, messages)
    out = tmp_path / "out"
    assert main(["read", str(pcap), "--output", str(out), "--quiet"]) == ExitCode.OK
    events = pq.read_table(out / "events").to_pylist()
    return events, pq.read_table(out / "connections.parquet").to_pylist()


def _who(events: list[dict[str, Any]]) -> list[tuple[str | None, str, str | None, str | None]]:
    return [(e["api_name"], e["direction"], e["principal"], e["sasl_mechanism"]) for e in events]


def test_plain_then_every_later_event_names_the_principal(tmp_path: Path) -> None:
    events, conns = read(tmp_path, metadata(1) + handshake("PLAIN", 2) + authenticate(plain("alice"), b"", 3)
                         + metadata(4))
    assert _who(events) == [
        ("Metadata", "request", None, None), ("Metadata", "response", None, None),
        ("SaslHandshake", "request", None, "PLAIN"), ("SaslHandshake", "response", None, "PLAIN"),
        ("SaslAuthenticate", "request", None, "PLAIN"), ("SaslAuthenticate", "response", "User:alice", "PLAIN"),
        ("Metadata", "request", "User:alice", "PLAIN"), ("Metadata", "response", "User:alice", "PLAIN"),
    ]
    assert [(c["principal"], c["sasl_mechanism"], c["sasl_outcome"]) for c in conns] == [("User:alice", "PLAIN", "ok")]
    assert (conns[0]["sasl_session_lifetime_ms"], conns[0]["sasl_issuer"]) == (3_600_000, None)
    for e in events:  # the password is in no column and no body
        assert PASSWORD not in json.dumps(e, default=str) and PASSWORD.encode().hex() not in json.dumps(e, default=str)


def test_show_names_the_principal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pcap = tmp_path / "show.pcap"
    conversation(pcap, handshake("PLAIN", 1) + authenticate(plain("alice"), b"", 2) + metadata(3))
    assert main(["show", str(pcap)]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert sum("principal=User:alice" in line for line in lines) == 3  # the answer that authenticated, and after
    assert not any(PASSWORD in line for line in lines)


def test_plain_authorization_id_wins(tmp_path: Path) -> None:
    events, _ = read(tmp_path, handshake("PLAIN", 1) + authenticate(plain("alice", authzid="admin"), b"", 2)
                     + metadata(3))
    assert events[-1]["principal"] == "User:admin"


def test_scram_names_the_user_after_its_final_round(tmp_path: Path) -> None:
    client = ScramClient("bob", PASSWORD, "SCRAM-SHA-512")
    first = client.first_message()
    server_first = b"r=" + client.nonce + b"xyz,s=" + base64.b64encode(b"salt-bytes") + b",i=4096"
    client.process_server_first_message(server_first)
    final = client.final_message()
    server_final = b"v=" + base64.b64encode(client.server_signature)
    events, conns = read(tmp_path, handshake("SCRAM-SHA-512", 1) + authenticate(first, server_first, 2)
                         + authenticate(final, server_final, 3) + metadata(4))
    principals = [e["principal"] for e in events]
    assert principals == [None, None, None, None, None, "User:bob", "User:bob", "User:bob"]
    assert {e["sasl_mechanism"] for e in events} == {"SCRAM-SHA-512"}
    assert conns[0]["sasl_outcome"] == "ok"


def test_a_failed_authentication_names_nobody(tmp_path: Path) -> None:
    events, conns = read(tmp_path, handshake("PLAIN", 1)
                         + authenticate(plain("mallory"), b"", 2, error=ErrorCode.sasl_authentication_failed))
    assert {e["principal"] for e in events} == {None}
    assert conns[0]["sasl_outcome"] == "failed: SASL_AUTHENTICATION_FAILED (58)"


def test_reauthentication_changes_the_principal_from_then_on(tmp_path: Path) -> None:
    events, conns = read(tmp_path, handshake("PLAIN", 1) + authenticate(plain("alice"), b"", 2) + metadata(3)
                         + handshake("PLAIN", 4) + authenticate(plain("carol"), b"", 5) + metadata(6))
    assert [e["principal"] for e in events if e["api_name"] == "Metadata"] == ["User:alice"] * 2 + ["User:carol"] * 2
    assert conns[0]["principal"] == "User:carol"


def test_oauthbearer_principal_is_the_subject() -> None:
    state = SaslState()
    decoded = {"mechanism": "OAUTHBEARER", "claims": {"sub": "svc-orders", "iss": "idp"}, "header": {}}
    state.request(36, {"AuthBytesDecoded": decoded})
    state.response(36, 2, {"ErrorCode": 0, "AuthBytesDecoded": None, "SessionLifetimeMs": 60000})
    assert (state.principal, state.mechanism, state.outcome, state.session_lifetime_ms, state.issuer) == (
        "User:svc-orders", "OAUTHBEARER", "ok", 60000, "idp")
    opaque = SaslState()
    opaque.request(36, {"AuthBytesDecoded": {"mechanism": "OAUTHBEARER", "token": {"redacted": "x", "bytes": 9}}})
    opaque.response(36, 2, {"ErrorCode": 0})
    assert opaque.principal is None and opaque.outcome == "ok"
