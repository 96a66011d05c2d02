"""UnregisterController (API key 94, Kafka 4.4, KAFKA-20395), from the additions folder of newer specs: request and
response decoded from frames encoded here by hand, and through ``read`` to events."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow.parquet as pq

from contract.apis import API_NAMES, REMOVED_APIS, REMOVED_VERSIONS
from contract.errors import ExitCode
from decoders.api import decode_request, decode_response
from decoders.generated import registry
from inspector.cli.main import main
from tests.frames import frame
from tests.pcapgen import conversation


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out += bytes([low | 0x80])
        else:
            return out + bytes([low])


def request_v0(corr: int, controller_id: int, client_id: str = "kraft-admin") -> bytes:
    """Request header v2 (flexible): key, version, correlation id, a non-compact client id, no tagged fields; then
    the body: ControllerId (int32) and no tagged fields."""
    raw = client_id.encode()
    header = struct.pack(">hhi", 94, 0, corr) + struct.pack(">h", len(raw)) + raw + b"\x00"
    return header + struct.pack(">i", controller_id) + b"\x00"


def response_v0(corr: int, error: int, message: str | None, throttle: int = 0) -> bytes:
    """Response header v1 (the spec's ``headerVersions``): correlation id, no tagged fields; then ThrottleTimeMs,
    ErrorCode, ErrorMessage as a compact nullable string (length + 1, 0 for null), no tagged fields."""
    text = b"\x00" if message is None else _uvarint(len(message.encode()) + 1) + message.encode()
    return struct.pack(">i", corr) + b"\x00" + struct.pack(">ih", throttle, error) + text + b"\x00"


def test_api_94_is_named_and_current() -> None:
    assert API_NAMES[94] == "UnregisterController"
    assert registry.VERSION_RANGES[94] == (0, 0)
    assert registry.REQUEST_HEADER_VERSION[(94, 0)] == 2  # flexible, no headerVersions in the request spec
    assert registry.RESPONSE_HEADER_VERSION[(94, 0)] == 1  # the response spec's headerVersions
    assert 94 not in REMOVED_VERSIONS and 94 not in REMOVED_APIS  # the additions are newer, not older


def test_request_decodes() -> None:
    msg = decode_request(request_v0(11, 3001))
    assert msg.ok, msg.status
    assert (msg.api_key, msg.api_version, msg.correlation_id, msg.client_id) == (94, 0, 11, "kraft-admin")
    assert msg.api_name == "UnregisterController"
    assert msg.header_version == 2
    assert msg.body == {"ControllerId": 3001}


def test_response_decodes_with_and_without_a_message() -> None:
    msg = decode_response(response_v0(11, 0, None, throttle=5), 94, 0)
    assert msg.ok, msg.status
    assert msg.header_version == 1
    assert msg.body == {"ThrottleTimeMs": 5, "ErrorCode": 0, "ErrorMessage": None}
    failed = decode_response(response_v0(12, 41, "Controller 3001 is in the voter set"), 94, 0)
    assert failed.ok, failed.status
    assert failed.body == {"ThrottleTimeMs": 0, "ErrorCode": 41, "ErrorMessage": "Controller 3001 is in the voter set"}


def test_a_response_cut_short_is_not_ok() -> None:
    whole = response_v0(12, 41, "no")
    assert not decode_response(whole[:-2], 94, 0).ok


def test_read_writes_both_as_events(tmp_path: Path) -> None:
    pcap = tmp_path / "unregister.pcap"
    conversation(pcap, [("c", frame(request_v0(7, 3002))), ("b", frame(response_v0(7, 0, None)))],
                 broker=("10.0.0.2", 9093))
    out = tmp_path / "out"
    assert main(["read", str(pcap), "--output", str(out), "--quiet"]) == ExitCode.OK
    rows = pq.read_table(out / "events").to_pylist()
    assert [(r["api_key"], r["api_name"], r["direction"], r["decode_status"], r["error_code"]) for r in rows] == [
        (94, "UnregisterController", "request", "ok", None), (94, "UnregisterController", "response", "ok", 0)]
    assert json.loads(rows[0]["body"]) == {"ControllerId": 3002}
    assert rows[1]["latency_ms"] is not None
