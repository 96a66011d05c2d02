"""Envelope (KIP-590) requests and responses, written by kio around complete CreateTopics frames written by kio: the
inner request, its principal (built by hand, checked against kio's DefaultPrincipalData writer) and client address."""

from __future__ import annotations

import dataclasses
import io
import ipaddress

import pytest
from kio.schema.create_topics.v7.request import CreateTopicsRequest
from kio.schema.create_topics.v7.response import CreateTopicsResponse
from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from decoders import decode_request, decode_response
from tests.decoders import vectors_kio as VK
from tests.decoders.test_embedded import compact_string, i16, uvarint

# --------------------------------------------------------------------------------------------
# Envelope (KIP-590)
# --------------------------------------------------------------------------------------------


def principal(type_: str = "User", name: str = "alice", token: bool = True,
              tags: list[tuple[int, bytes]] | None = None) -> bytes:
    """int16 version 0 + flexible DefaultPrincipalData (compact strings, bool, tagged fields)."""
    tags = tags or []
    body = compact_string(type_) + compact_string(name) + (b"\x01" if token else b"\x00")
    body += uvarint(len(tags)) + b"".join(uvarint(t) + uvarint(len(d)) + d for t, d in tags)
    return i16(0) + body


def test_principal_layout_matches_kio() -> None:
    buf = io.BytesIO()
    entity_writer(DefaultPrincipalData)(buf, DefaultPrincipalData(type_="User", name="alice", token_authenticated=True))
    assert principal() == i16(0) + buf.getvalue()


CREATE_TOPICS = VK.kio_instance(CreateTopicsRequest)


INNER_REQUEST = VK.kio_frame(CREATE_TOPICS, correlation_id=555, client_id="forwarding-broker")


ADDRESSES = [bytes([10, 1, 2, 3]), ipaddress.IPv6Address("2001:db8::1").packed]


def envelope_request(data: bytes, principal_raw: bytes | None, address: bytes) -> bytes:
    return VK.kio_frame(EnvelopeRequest(request_data=data, request_principal=principal_raw,
                                       client_host_address=address), correlation_id=9, client_id="controller")


@pytest.mark.parametrize("address", ADDRESSES, ids=["ipv4", "ipv6"])
def test_envelope_request(address: bytes) -> None:
    msg = decode_request(envelope_request(INNER_REQUEST, principal(), address))
    assert msg.ok, msg.status
    assert msg.api_key == 58 and msg.client_id == "controller"
    body = msg.body
    assert body["RequestData"] == INNER_REQUEST and body["ClientHostAddress"] == address
    inner = body["RequestDataDecoded"]
    assert inner["apiKey"] == 19 and inner["apiName"] == "CreateTopics" and inner["apiVersion"] == 7
    assert inner["correlationId"] == 555 and inner["clientId"] == "forwarding-broker"
    assert inner["status"] == "ok"
    VK.kio_compare(CREATE_TOPICS, inner["body"], "RequestDataDecoded.body")
    assert msg.inner is not None and msg.inner.api_key == 19 and msg.inner.body is inner["body"]
    assert body["RequestPrincipalDecoded"] == {
        "schema": "DefaultPrincipalData", "version": 0, "status": "ok",
        "value": {"Type": "User", "Name": "alice", "TokenAuthenticated": True}}
    assert body["ClientHostAddressDecoded"] == str(ipaddress.ip_address(address))


def test_envelope_principal_unknown_tag_and_null() -> None:
    raw = principal("Group", "ops", False, tags=[(5, b"\x07\x08")])
    msg = decode_request(envelope_request(INNER_REQUEST, raw, ADDRESSES[0]))
    assert msg.body["RequestPrincipalDecoded"]["value"] == {
        "Type": "Group", "Name": "ops", "TokenAuthenticated": False,
        "_unknownTaggedFields": [{"tag": 5, "data": "0708"}]}
    msg = decode_request(envelope_request(INNER_REQUEST, None, ADDRESSES[0]))
    assert msg.ok and msg.body["RequestPrincipal"] is None and msg.body["RequestPrincipalDecoded"] is None


def test_envelope_bad_address_and_truncated_inner() -> None:
    msg = decode_request(envelope_request(INNER_REQUEST[:-5], principal(), b"\x01\x02\x03\x04\x05"))
    assert msg.ok, msg.status  # the envelope itself is well formed
    assert msg.body["ClientHostAddressDecoded"] == "invalid address of 5 bytes"
    assert msg.body["RequestDataDecoded"]["status"].startswith("truncated")
    assert msg.inner is not None and not msg.inner.ok


def _no_sensitive_config(response: CreateTopicsResponse) -> CreateTopicsResponse:
    """kio_instance's response with its configs marked not sensitive (a sensitive one is redacted, and with it
    the Envelope's raw ResponseData: test_redaction.py)."""
    topics = tuple(dataclasses.replace(t, configs=tuple(dataclasses.replace(c, is_sensitive=False)
                                                         for c in t.configs or ()) if t.configs else t.configs)
                   for t in response.topics)
    return dataclasses.replace(response, topics=topics)


CREATE_TOPICS_RESPONSE = _no_sensitive_config(VK.kio_instance(CreateTopicsResponse))


INNER_RESPONSE = VK.kio_frame(CREATE_TOPICS_RESPONSE, correlation_id=555)


def envelope_response(data: bytes | None, error: ErrorCode = ErrorCode.none) -> bytes:
    return VK.kio_frame(EnvelopeResponse(response_data=data, error_code=error), correlation_id=9)


def test_envelope_response_with_inner() -> None:
    msg = decode_response(envelope_response(INNER_RESPONSE), 58, 0, inner=(19, 7))
    assert msg.ok, msg.status
    assert msg.body["ResponseData"] == INNER_RESPONSE and msg.body["ErrorCode"] == 0
    inner = msg.body["ResponseDataDecoded"]
    assert inner["apiKey"] == 19 and inner["apiVersion"] == 7 and inner["correlationId"] == 555
    assert inner["status"] == "ok"
    VK.kio_compare(CREATE_TOPICS_RESPONSE, inner["body"], "ResponseDataDecoded.body")
    assert msg.inner is not None and msg.inner.kind == "response" and msg.inner.api_key == 19


def test_envelope_response_without_inner() -> None:
    msg = decode_response(envelope_response(INNER_RESPONSE), 58, 0)
    assert msg.ok
    assert msg.body["ResponseDataDecoded"] is None and msg.inner is None
    assert any("inner request unknown" in n for n in msg.notes)


def test_envelope_response_null_data() -> None:
    msg = decode_response(envelope_response(None, ErrorCode.not_controller), 58, 0, inner=(19, 7))
    assert msg.ok
    assert msg.body["ResponseData"] is None and msg.body["ErrorCode"] == ErrorCode.not_controller.value
    assert msg.inner is None
