"""No secret in a decoded body (decoders/redaction.py): frames written by kio, SASL exchanges by kafka-python's own
SCRAM client, PLAIN's and OAUTHBEARER's layouts as kafka-python writes them. Every secret must be absent from the
body's JSON in every encoding (raw, hex, base64, JSON-escaped), its marker present, and what is safe kept."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pytest
from kafka.net.sasl.scram import ScramClient
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from kio.schema.create_delegation_token.v3.response import CreateDelegationTokenResponse
from kio.schema.describe_configs.v4.response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.expire_delegation_token.v2.request import ExpireDelegationTokenRequest
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse

from decoders import decode_request, decode_response
from decoders.redaction import REDACTED_NOTE, sensitive_config
from inspector.rows.event_table import body_json
from tests.decoders import vectors_kio as VK

PASSWORD = "hunter2-Sup3r$ecret"


def _encodings(secret: bytes) -> list[bytes]:
    """A secret as it could appear in a body's JSON text."""
    text = secret.decode("utf-8", "replace")
    return [secret, secret.hex().encode(), base64.b64encode(secret), base64.urlsafe_b64encode(secret).rstrip(b"="),
            json.dumps(text).encode()[1:-1]]


def _clean(body: Any, *secrets: bytes) -> dict[str, Any]:
    """The body's JSON text, checked to hold no secret in any encoding; parsed back."""
    text = body_json(body)
    assert text is not None
    for secret in secrets:
        for form in _encodings(secret):
            assert form not in text.encode(), (form, text)
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def _request(instance: Any) -> Any:
    msg = decode_request(VK.kio_frame(instance))
    assert msg.ok, msg.status
    return msg


def _response(instance: Any, api_key: int, version: int) -> Any:
    msg = decode_response(VK.kio_frame(instance), api_key, version)
    assert msg.ok, msg.status
    return msg


def _sasl_request(auth: bytes) -> Any:
    return _request(dataclasses.replace(VK.kio_instance(SaslAuthenticateRequest), auth_bytes=auth))


def _sasl_response(auth: bytes) -> Any:
    instance = dataclasses.replace(VK.kio_instance(SaslAuthenticateResponse), auth_bytes=auth)
    return _response(instance, 36, 2)


def test_sasl_plain_keeps_the_user_not_the_password() -> None:
    auth = "\0".join(["admin", "alice", PASSWORD]).encode()  # authzid, user, password (RFC 4616)
    msg = _sasl_request(auth)
    body = _clean(msg.body, PASSWORD.encode(), auth)
    assert body["AuthBytes"] == {"redacted": "sasl-auth-bytes", "bytes": len(auth)}
    assert body["AuthBytesDecoded"] == {"mechanism": "PLAIN", "user": "alice", "authzid": "admin",
                                        "password": {"redacted": "sasl-plain-password", "bytes": len(PASSWORD)}}
    assert msg.notes[-1].startswith(REDACTED_NOTE)


def test_a_whole_scram_exchange() -> None:
    client = ScramClient("alice", PASSWORD, "SCRAM-SHA-256")
    first = client.first_message()
    msg = _clean(_sasl_request(first).body)
    assert msg["AuthBytesDecoded"]["user"] == "alice" and msg["AuthBytesDecoded"]["message"] == "client-first"
    salt = b"NaCl-0123456789ab"
    server_first = b"r=" + client.nonce + b"srv,s=" + base64.b64encode(salt) + b",i=4096"
    client.process_server_first_message(server_first)
    decoded = _clean(_sasl_response(server_first).body, salt)["AuthBytesDecoded"]
    assert decoded["iterations"] == 4096 and decoded["salt"]["redacted"] == "scram-salt"
    final = client.final_message()
    proof = client.client_proof
    decoded = _clean(_sasl_request(final).body, proof)["AuthBytesDecoded"]
    assert decoded["message"] == "client-final" and decoded["proof"]["redacted"] == "scram-client-proof"
    server_final = b"v=" + base64.b64encode(client.server_signature)
    decoded = _clean(_sasl_response(server_final).body, client.server_signature)["AuthBytesDecoded"]
    assert decoded["signature"]["redacted"] == "scram-server-signature"
    assert _clean(_sasl_response(b"e=invalid-proof").body)["AuthBytesDecoded"]["error"] == "invalid-proof"


def _jwt(claims: dict[str, Any], signature: bytes) -> str:
    def part(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return ".".join([part(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()), part(json.dumps(claims).encode()),
                     part(signature)])


def test_oauthbearer_keeps_the_claims_not_the_signature() -> None:
    signature = b"\x8a\x11signature-bytes\xff" * 4
    token = _jwt({"sub": "svc-orders", "iss": "https://idp.example", "exp": 1_900_000_000}, signature)
    auth = f"n,,\x01auth=Bearer {token}\x01traceid=abc\x01\x01".encode()  # as kafka-python writes it
    decoded = _clean(_sasl_request(auth).body, signature, token.encode())["AuthBytesDecoded"]
    assert decoded["mechanism"] == "OAUTHBEARER" and decoded["scheme"] == "Bearer"
    assert decoded["claims"]["sub"] == "svc-orders" and decoded["claims"]["iss"] == "https://idp.example"
    assert decoded["signature"]["redacted"] == "oauthbearer-signature"
    opaque = f"n,,\x01auth=Bearer {PASSWORD}\x01\x01".encode()
    decoded = _clean(_sasl_request(opaque).body, PASSWORD.encode())["AuthBytesDecoded"]
    assert decoded["token"] == {"redacted": "oauthbearer-token", "bytes": len(PASSWORD)}


def test_other_sasl_tokens_are_redacted_whole() -> None:
    kerberos = bytes(range(0x60, 0xA0))  # a GSSAPI token: no principal in clear
    decoded = _clean(_sasl_request(kerberos).body, kerberos)["AuthBytesDecoded"]
    assert decoded == {"mechanism": None, "token": {"redacted": "sasl-token", "bytes": len(kerberos)}}
    assert "AuthBytesDecoded" not in _clean(_sasl_response(b"").body)  # an empty answer: nothing to hide


def test_scram_credentials_and_delegation_tokens() -> None:
    salt, salted = b"salt-of-alice-0001", b"\x01\x02salted-password\xfe" * 2
    upsert = dataclasses.replace(VK.kio_instance(ScramCredentialUpsertion), salt=salt, salted_password=salted)
    msg = _request(dataclasses.replace(VK.kio_instance(AlterUserScramCredentialsRequest), upsertions=(upsert,)))
    body = _clean(msg.body, salt, salted)
    assert body["Upsertions"][0]["Salt"] == {"redacted": "scram-salt", "bytes": len(salt)}
    assert body["Upsertions"][0]["SaltedPassword"]["redacted"] == "scram-salted-password"
    hmac = b"delegation-hmac-\x00\x99" * 2
    msg = _response(dataclasses.replace(VK.kio_instance(CreateDelegationTokenResponse), hmac=hmac), 38, 3)
    assert _clean(msg.body, hmac)["Hmac"]["redacted"] == "delegation-token-hmac"
    msg = _request(dataclasses.replace(VK.kio_instance(ExpireDelegationTokenRequest), hmac=hmac))
    assert _clean(msg.body, hmac)["Hmac"]["bytes"] == len(hmac)


@pytest.mark.parametrize(("name", "sensitive"), [
    ("ssl.keystore.password", True), ("listener.name.sasl_ssl.plain.sasl.jaas.config", True),
    ("ssl.key.password", True), ("ssl.keystore.key", True), ("sasl.oauthbearer.client.credentials.client.secret", True),
    ("retention.ms", False), ("cleanup.policy", False), ("ssl.endpoint.identification.algorithm", False),
])
def test_sensitive_config_names(name: str, sensitive: bool) -> None:
    assert sensitive_config(name) is sensitive


def test_config_values() -> None:
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required password="{PASSWORD}";'
    configs = (
        dataclasses.replace(VK.kio_instance(AlterableConfig), name="sasl.jaas.config", value=jaas),
        dataclasses.replace(VK.kio_instance(AlterableConfig), name="retention.ms", value="604800000"),
    )
    resource = dataclasses.replace(VK.kio_instance(AlterConfigsResource), configs=configs)
    msg = _request(dataclasses.replace(VK.kio_instance(IncrementalAlterConfigsRequest), resources=(resource,)))
    body = _clean(msg.body, PASSWORD.encode(), jaas.encode())
    assert body["Resources"][0]["Configs"][0]["Value"] == {"redacted": "config-value", "bytes": len(jaas)}
    assert body["Resources"][0]["Configs"][1]["Value"] == "604800000"
    synonym = dataclasses.replace(VK.kio_instance(DescribeConfigsSynonym), name="ssl.key.password", value=PASSWORD)
    marked = dataclasses.replace(VK.kio_instance(DescribeConfigsResourceResult), name="custom.token",
                                 value=PASSWORD + "2", is_sensitive=True, synonyms=(synonym,))
    result = dataclasses.replace(VK.kio_instance(DescribeConfigsResult), configs=(marked,))
    msg = _response(dataclasses.replace(VK.kio_instance(DescribeConfigsResponse), results=(result,)), 32, 4)
    config = _clean(msg.body, PASSWORD.encode())["Results"][0]["Configs"][0]
    assert config["Value"]["redacted"] == "config-value" and config["Synonyms"][0]["Value"]["redacted"]


def test_inside_an_envelope() -> None:
    auth = f"\0bob\0{PASSWORD}".encode()
    inner = VK.kio_frame(dataclasses.replace(VK.kio_instance(SaslAuthenticateRequest), auth_bytes=auth))
    envelope = dataclasses.replace(VK.kio_instance(EnvelopeRequest), request_data=inner, request_principal=None)
    msg = _request(envelope)
    body = _clean(msg.body, PASSWORD.encode(), auth, inner)
    assert body["RequestData"] == {"redacted": "envelope-data", "bytes": len(inner)}
    assert body["RequestDataDecoded"]["body"]["AuthBytesDecoded"]["user"] == "bob"
    assert msg.inner is not None and msg.inner.notes[-1].startswith(REDACTED_NOTE)
