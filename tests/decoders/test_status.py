"""A message's status has a kind (decoders.status.StatusKind) beside its text: every kind, from real frames."""

from __future__ import annotations

import struct

import pytest

from decoders import decode_request, decode_response
from decoders.status import StatusKind
from tests.frames import api_versions_request_v0, metadata_request_v0, metadata_response_v0, request_header

METADATA_V0 = metadata_request_v0(1, ["orders", "payments"])


@pytest.mark.parametrize(("frame", "kind", "starts"), [
    (METADATA_V0, StatusKind.OK, "ok"),
    (METADATA_V0[:-3], StatusKind.TRUNCATED, "truncated"),
    (METADATA_V0[:5], StatusKind.TRUNCATED, "truncated: request header"),
    (METADATA_V0 + b"\x00\x01", StatusKind.TRAILING_BYTES, "trailing bytes: 2"),
    (request_header(32639, 0, 1), StatusKind.UNKNOWN_API, "unknown api key 32639"),
    (request_header(18, 999, 1), StatusKind.UNKNOWN_VERSION, "unknown version 999 of ApiVersions"),
    (request_header(3, 0, 1) + struct.pack(">i", 1) + struct.pack(">h", -5), StatusKind.INVALID, "invalid"),
    (request_header(3, 0, 1)[:8] + struct.pack(">h", -7), StatusKind.INVALID, "header invalid: negative length"),
])
def test_each_request_status_has_its_kind(frame: bytes, kind: StatusKind, starts: str) -> None:
    msg = decode_request(frame)
    assert msg.status_kind == kind, msg.status
    assert msg.status.startswith(starts), msg.status  # the text stays what the events keep
    assert msg.ok == (kind == StatusKind.OK)


def test_the_element_budget_is_a_limit() -> None:
    msg = decode_request(METADATA_V0, max_elements=1)
    assert msg.status_kind == StatusKind.LIMIT
    assert "(--max-elements)" in msg.status
    assert decode_request(METADATA_V0, max_elements=2).status_kind == StatusKind.OK


def test_response_kinds() -> None:
    frame = metadata_response_v0(1, [(1, "b1", 9092)], ["t"])
    assert decode_response(frame, 3, 0).status_kind == StatusKind.OK
    assert decode_response(frame[:-2], 3, 0).status_kind == StatusKind.TRUNCATED
    assert decode_response(frame + b"\x00", 3, 0).status_kind == StatusKind.TRAILING_BYTES
    assert decode_response(frame, 32639, 0).status_kind == StatusKind.UNKNOWN_API
    assert decode_response(frame, 3, 999).status_kind == StatusKind.UNKNOWN_VERSION
    assert decode_response(frame[:2], 3, 0).status_kind == StatusKind.TRUNCATED
    assert decode_response(api_versions_request_v0(1), 18, 0).status_kind != StatusKind.OK
