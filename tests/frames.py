"""Hand-built Kafka frames for tests (independent of the decoders under test)."""

from __future__ import annotations

import struct


def kstr(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def frame(payload: bytes) -> bytes:
    """Length-prefix a request or response."""
    return struct.pack(">i", len(payload)) + payload


def request_header(api_key: int, version: int, corr: int, client_id: str | None = "test-client") -> bytes:
    return struct.pack(">hhi", api_key, version, corr) + kstr(client_id)


def valid_header(kind: str, api_key: int, version: int, header_version: int) -> bytes:
    """The shortest valid request or response header of ``header_version`` (correlation id 7, client id "id")."""
    if kind == "request":
        head = struct.pack(">hhi", api_key, version, 7)
        if header_version >= 1:
            head += kstr("id")
        if header_version >= 2:
            head += b"\x00"  # no tagged fields
        return head
    return struct.pack(">i", 7) + (b"\x00" if header_version >= 1 else b"")


def api_versions_request_v0(corr: int, client_id: str | None = "test-client") -> bytes:
    return request_header(18, 0, corr, client_id)


def api_versions_response_v0(corr: int, keys: list[tuple[int, int, int]], error: int = 0) -> bytes:
    body = struct.pack(">hi", error, len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)
    return struct.pack(">i", corr) + body


def metadata_request_v0(corr: int, topics: list[str], client_id: str = "test-client") -> bytes:
    return request_header(3, 0, corr, client_id) + struct.pack(">i", len(topics)) + b"".join(
        kstr(t) for t in topics)


def metadata_response_v0(corr: int, brokers: list[tuple[int, str, int]], topics: list[str]) -> bytes:
    out = struct.pack(">ii", corr, len(brokers))
    for node, host, port in brokers:
        out += struct.pack(">i", node) + kstr(host) + struct.pack(">i", port)
    out += struct.pack(">i", len(topics))
    for t in topics:
        out += struct.pack(">h", 0) + kstr(t) + struct.pack(">i", 0)  # error, name, no partitions
    return out


def produce_request_v3(corr: int, acks: int, topic: str = "t", client_id: str = "producer") -> bytes:
    """Produce v3 with one partition and no records (null record set)."""
    body = kstr(None) + struct.pack(">hi", acks, 1000) + struct.pack(">i", 1) + kstr(topic)
    body += struct.pack(">i", 1) + struct.pack(">ii", 0, -1)
    return request_header(0, 3, corr, client_id) + body


def produce_response_v3(corr: int, topic: str = "t") -> bytes:
    body = struct.pack(">i", 1) + kstr(topic) + struct.pack(">i", 1)
    body += struct.pack(">ihqq", 0, 0, 42, -1) + struct.pack(">i", 0)
    return struct.pack(">i", corr) + body
