"""Legacy SASL tokens (decoders/sasl_tokens.py): decoded and redacted as SaslAuthenticate's AuthBytes, and told
apart from Kafka frames by content (tokens written by kafka-python's SCRAM client; Kafka frames from every real
capture)."""

from __future__ import annotations

import base64
import json

import pytest
from kafka.net.sasl.scram import ScramClient

from decoders.api import DecodedMessage
from decoders.sasl_tokens import SASL_TOKEN, decode_token, looks_like_token
from tests.inspector.capture_frames import capture_frames

PASSWORD = "t0ken-pa55"


def scram_round() -> list[tuple[str, bytes]]:
    client = ScramClient("ivan", PASSWORD, "SCRAM-SHA-512")
    first = client.first_message()
    server_first = b"r=" + client.nonce + b"abc,s=" + base64.b64encode(b"pepper") + b",i=8192"
    client.process_server_first_message(server_first)
    final = client.final_message()
    return [("request", first), ("response", server_first), ("request", final),
            ("response", b"v=" + base64.b64encode(client.server_signature)), ("response", b"e=invalid-proof")]


def _jwt() -> bytes:
    part = [base64.urlsafe_b64encode(json.dumps(x).encode()).rstrip(b"=") for x in ({"alg": "none"}, {"sub": "judy"})]
    return b"n,,\x01auth=Bearer " + b".".join([*part, b"c2lnbmF0dXJl"]) + b"\x01\x01"


def test_a_token_is_a_message_of_its_own() -> None:
    msg = decode_token("request", b"\0ivan\0" + PASSWORD.encode())
    assert isinstance(msg, DecodedMessage)
    assert (msg.kind, msg.api_key, msg.api_version, msg.correlation_id) == ("request", None, None, None)
    assert msg.status == "ok"
    assert msg.api_name == SASL_TOKEN == "SaslToken" and msg.size == 6 + len(PASSWORD)
    assert msg.body == {"AuthBytes": {"redacted": "sasl-auth-bytes", "bytes": 6 + len(PASSWORD)},
                        "AuthBytesDecoded": {"mechanism": "PLAIN", "user": "ivan",
                                             "password": {"redacted": "sasl-plain-password", "bytes": len(PASSWORD)}}}
    assert msg.notes == ("redacted: 1 secret(s) replaced by markers",)


def test_the_brokers_empty_answer() -> None:
    msg = decode_token("response", b"")
    assert msg.body == {"AuthBytes": b""} and msg.notes == () and msg.size == 0


SCRAM_ROUND = scram_round()


@pytest.mark.parametrize("kind,token", SCRAM_ROUND, ids=[f"{kind}-{i}" for i, (kind, _) in enumerate(SCRAM_ROUND)])
def test_scram_tokens_are_recognised_by_direction(kind: str, token: bytes) -> None:
    assert looks_like_token(token) == kind
    decoded = decode_token(kind, token).body
    assert decoded is not None and decoded["AuthBytesDecoded"]["mechanism"] == "SCRAM"
    assert PASSWORD not in repr(decoded)


def test_plain_and_oauthbearer_are_recognised() -> None:
    assert looks_like_token(b"\0ivan\0" + PASSWORD.encode()) == "request"
    assert looks_like_token("admin\0ivan\0pässwörd".encode()) == "request"
    assert looks_like_token(_jwt()) == "request"
    body = decode_token("request", _jwt()).body
    assert body is not None and body["AuthBytesDecoded"]["claims"] == {"sub": "judy"}
    assert body["AuthBytesDecoded"]["signature"]["redacted"] == "oauthbearer-signature"


@pytest.mark.parametrize("data", [b"", b"\0\0", b"\0ivan\0", b"\0iv\x01an\0pw", b"\x00\x03\x00\x0cxyz",
                                  b"n=ivan", b"r=abc", b"c=biws,r=x", bytes(range(256)), b"\xff" * 40])
def test_other_bytes_are_not_tokens(data: bytes) -> None:
    assert looks_like_token(data) is None


def test_no_kafka_frame_of_any_capture_looks_like_a_token() -> None:
    """What lets a mid-stream capture take its first frames for tokens: no real Kafka frame is taken for one."""
    seen = 0
    for kind, key, version, data in capture_frames():
        seen += 1
        assert looks_like_token(data) is None, (kind, key, version, data[:40])
    assert seen > 1000
