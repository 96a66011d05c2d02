"""Properties of ``decode_request``/``decode_response`` on bad, cut, padded and hand-built input.

Valid frames come from the independent encoders in ``vectors`` (kio, kafka-python) and from the
real captures in ``shared/real-captures``; malformed ones are built by hand from the protocol
layout. Expected values never come from the decoder under test.

The real captures' frames are checked in test_properties_captures.py.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoders import decode_request, decode_response
from decoders.generated import registry
from tests.decoders import vectors as V
from tests.decoders import vectors_all as VA

VECTORS = VA.all_vectors()


KNOWN = sorted(registry.REQUEST_HEADER_VERSION)


SETTINGS = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------
# Wire helpers (hand-built frames)
# --------------------------------------------------------------------------------------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


def compact_string(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def tagged(fields: list[tuple[int, bytes]]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


def request_header_v1(api_key: int, version: int, corr: int, client_id: str | None = "props") -> bytes:
    return i16(api_key) + i16(version) + i32(corr) + string(client_id)


def request_header_v2(api_key: int, version: int, corr: int, client_id: str | None = "props",
                      tags: list[tuple[int, bytes]] | None = None) -> bytes:
    return request_header_v1(api_key, version, corr, client_id) + tagged(tags or [])


def decode(kind: str, frame: bytes, api_key: int, version: int) -> Any:
    return decode_request(frame) if kind == "request" else decode_response(frame, api_key, version)


def plain(obj: Any) -> Any:
    """A decoded body with ``Records`` objects replaced by their bytes (for equality)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if type(obj).__name__ == "Records":
        return ("records", V.records_view(obj), len(obj))
    return obj


# --------------------------------------------------------------------------------------------
# Random input never raises
# --------------------------------------------------------------------------------------------


def check_sane(msg: Any, size: int) -> None:
    assert isinstance(msg.status, str) and msg.status
    assert msg.size == size
    if msg.ok:
        assert isinstance(msg.body, dict)
    if msg.error_offset is not None:
        assert 0 <= msg.error_offset <= size, (msg.status, msg.error_offset, size)


@SETTINGS
@given(st.binary(max_size=512))
def test_random_bytes_request_never_raise(frame: bytes) -> None:
    check_sane(decode_request(frame), len(frame))


@SETTINGS
@given(key_version=st.sampled_from(KNOWN), corr=st.integers(-(2**31), 2**31 - 1),
       client=st.none() | st.text(max_size=8), tail=st.binary(max_size=400))
def test_random_body_after_valid_header_never_raise(key_version: tuple[int, int], corr: int,
                                                    client: str | None, tail: bytes) -> None:
    api_key, version = key_version
    frame = request_header_v1(api_key, version, corr, client) + tail
    msg = decode_request(frame)
    check_sane(msg, len(frame))
    assert msg.api_key == api_key and msg.api_version == version and msg.correlation_id == corr


@SETTINGS
@given(key_version=st.sampled_from(KNOWN), frame=st.binary(max_size=400))
def test_random_bytes_response_never_raise(key_version: tuple[int, int], frame: bytes) -> None:
    api_key, version = key_version
    check_sane(decode_response(frame, api_key, version), len(frame))
    # The Envelope response decodes its ResponseData as the inner response when told which.
    if api_key == 58:
        check_sane(decode_response(frame, 58, 0, inner=(19, 7)), len(frame))


# --------------------------------------------------------------------------------------------
# Truncation at every cut point, trailing garbage
# --------------------------------------------------------------------------------------------


def assert_truncated(vec_id: str, kind: str, frame: bytes, api_key: int, version: int) -> None:
    for cut in range(len(frame)):
        part = frame[:cut]
        msg = decode(kind, part, api_key, version)
        check_sane(msg, cut)
        if msg.ok:
            # Only the ApiVersions response may parse: a cut v1+ body can be a complete v0 body,
            # which the decoder (like Kafka's clients) then accepts through its v0 fallback.
            assert (kind, api_key, msg.body_version) == ("response", 18, 0), (
                f"{vec_id}: cut at {cut}/{len(frame)} decoded ok: {msg.body}")
            continue
        assert "truncated" in msg.status, f"{vec_id}: cut at {cut}/{len(frame)}: {msg.status!r}"
        assert msg.body is None


@pytest.mark.parametrize("vec", VECTORS, ids=[v.id for v in VECTORS])
def test_truncated_at_every_cut_point(vec: VA.Vector) -> None:
    full = decode(vec.kind, vec.frame, vec.api_key, vec.version)
    assert full.ok, full.status
    assert_truncated(vec.id, vec.kind, vec.frame, vec.api_key, vec.version)


TAILS = [b"\x00", b"\xff\xff\xff", bytes(range(7)), b"\x7f\xff\xff\xff" * 3]


@pytest.mark.parametrize("vec", VECTORS, ids=[v.id for v in VECTORS])
def test_trailing_garbage(vec: VA.Vector) -> None:
    clean = decode(vec.kind, vec.frame, vec.api_key, vec.version)
    assert clean.ok, clean.status
    for tail in TAILS:
        check_trailing(vec, clean, tail)


def check_trailing(vec: VA.Vector, clean: Any, tail: bytes) -> None:
    msg = decode(vec.kind, vec.frame + tail, vec.api_key, vec.version)
    n = len(vec.frame)
    assert msg.status == f"trailing bytes: {len(tail)} after the body (offset {n})", msg.status
    assert msg.error_offset == n
    assert msg.correlation_id == clean.correlation_id
    assert plain(msg.body) == plain(clean.body)


@SETTINGS
@given(vec=st.sampled_from(VECTORS), tail=st.binary(min_size=1, max_size=64))
def test_trailing_garbage_random(vec: VA.Vector, tail: bytes) -> None:
    clean = decode(vec.kind, vec.frame, vec.api_key, vec.version)
    check_trailing(vec, clean, tail)


# --------------------------------------------------------------------------------------------
# Huge and negative counts/lengths
# --------------------------------------------------------------------------------------------

H_META0 = request_header_v1(3, 0, 7, "c")  # 11 bytes


H_META9 = request_header_v2(3, 9, 7, "c")  # 12 bytes


PRODUCE3_PREFIX = (request_header_v1(0, 3, 7, "c") + string(None) + i16(1) + i32(1000)
                   + i32(1) + string("t") + i32(1) + i32(0))  # Records length at 34


META0_RESPONSE_PREFIX = (i32(5) + i32(0) + i32(1) + i16(0) + string("t") + i32(1)
                         + i16(0) + i32(0) + i32(1))  # ReplicaNodes count at 31


# (id, kind, api key, version, frame, path, offset of the length/count field, its width, reason)
HUGE: list[tuple[str, str, int, int, bytes, str, int, int, str]] = [
    ("array-int32-max", "request", 3, 0, H_META0 + i32(2**31 - 1), "Topics", 11, 4, "truncated"),
    ("array-negative", "request", 3, 0, H_META0 + i32(-2), "Topics", 11, 4, "invalid"),
    ("array-int32-min", "request", 3, 0, H_META0 + i32(-(2**31)), "Topics", 11, 4, "invalid"),
    ("string-int16-max", "request", 3, 0, H_META0 + i32(1) + i16(0x7FFF) + b"ab", "Topics[0].Name", 15, 2,
     "truncated"),
    ("string-negative", "request", 3, 0, H_META0 + i32(1) + i16(-2), "Topics[0].Name", 15, 2, "invalid"),
    ("compact-array-int32-max", "request", 3, 9, H_META9 + uvarint(2**31), "Topics", 12, 5, "truncated"),
    ("compact-array-uint32-max", "request", 3, 9, H_META9 + uvarint(2**32 - 1), "Topics", 12, 5, "truncated"),
    ("uvarint-too-long", "request", 3, 9, H_META9 + b"\xff" * 6 + b"\x01", "Topics", 12, 6, "invalid"),
    ("compact-string-huge", "request", 3, 9, H_META9 + uvarint(2) + uvarint(2**31) + b"x",
     "Topics[0].Name", 13, 5, "truncated"),
    ("records-int32-max", "request", 0, 3, PRODUCE3_PREFIX + i32(2**31 - 1) + b"xx",
     "TopicData[0].PartitionData[0].Records", 34, 4, "truncated"),
    ("records-negative", "request", 0, 3, PRODUCE3_PREFIX + i32(-7),
     "TopicData[0].PartitionData[0].Records", 34, 4, "invalid"),
    ("bytes-int32-max", "request", 36, 0, request_header_v1(36, 0, 7, "c") + i32(2**31 - 1), "AuthBytes", 11, 4,
     "truncated"),
    ("compact-bytes-huge", "request", 36, 2, request_header_v2(36, 2, 7, "c") + uvarint(2**31), "AuthBytes", 12, 5,
     "truncated"),
    ("response-array-int32-max", "response", 3, 0, i32(5) + i32(2**31 - 1), "Brokers", 4, 4, "truncated"),
    ("response-int32-array-max", "response", 3, 0, META0_RESPONSE_PREFIX + i32(2**31 - 1) + i32(0),
     "Topics[0].Partitions[0].ReplicaNodes", 31, 4, "truncated"),
    ("header-client-id-int16-max", "request", 3, 0, i16(3) + i16(0) + i32(7) + i16(0x7FFF), "ClientId", 8, 2,
     "header truncated"),
    ("header-client-id-negative", "request", 3, 0, i16(3) + i16(0) + i32(7) + i16(-3), "ClientId", 8, 2,
     "header invalid"),
    ("header-tag-count-huge", "request", 3, 9, request_header_v1(3, 9, 7, "c") + uvarint(2**31 - 1), "_tagged",
     11, 5, "header truncated"),
]


@pytest.mark.parametrize("case", HUGE, ids=[c[0] for c in HUGE])
def test_huge_counts_and_lengths(case: tuple[str, str, int, int, bytes, str, int, int, str]) -> None:
    _id, kind, api_key, version, frame, path, field_offset, width, reason = case
    decode(kind, frame, api_key, version)  # warm up: imports the generated module
    tracemalloc.start()
    start = time.perf_counter()
    try:
        msg = decode(kind, frame, api_key, version)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not msg.ok
    assert msg.status.startswith(reason), msg.status
    assert msg.error_path == path, (msg.error_path, msg.status)
    # The offset is where the length/count field is, or the first byte after it.
    assert field_offset <= msg.error_offset <= field_offset + width, (msg.error_offset, msg.status)
    assert f"at {path} (offset {msg.error_offset})" in msg.status, msg.status
    assert msg.body is None
    assert peak < 256 * 1024, f"decoding allocated {peak} bytes"
    assert elapsed < 0.05, f"decoding took {elapsed:.3f}s"


def nested_envelopes(depth: int) -> bytes:
    """An ApiVersions v0 request wrapped in ``depth`` EnvelopeRequests (each ~20 bytes)."""
    frame = request_header_v1(18, 0, 1, None)
    for level in range(1, depth + 1):
        frame = (request_header_v2(58, 0, level, "")
                 + uvarint(len(frame) + 1) + frame  # RequestData (compact bytes)
                 + uvarint(0)  # RequestPrincipal: null
                 + uvarint(5) + bytes([127, 0, 0, 1])  # ClientHostAddress
                 + tagged([]))
    return frame


@pytest.mark.parametrize("depth", [50, 400])
def test_nested_envelopes_never_raise(depth: int) -> None:
    """DECODER BUG at depth 400 (an 8 KB frame): decoders.embedded unwraps every Envelope's
    RequestData with decode_request, which postprocesses the inner Envelope, and so on; the
    recursion is unbounded and ~300 levels raise RecursionError out of decode_request instead of
    returning a status."""
    frame = nested_envelopes(depth)
    msg = decode_request(frame)
    check_sane(msg, len(frame))
    assert msg.ok, msg.status  # the outer Envelope is well formed whatever its payload
    assert msg.body["RequestDataDecoded"]["apiKey"] == (58 if depth > 1 else 18)


def test_null_array_minus_one_is_not_an_error() -> None:
    msg = decode_request(H_META0 + i32(-1))
    assert msg.ok and msg.body == {"Topics": None}


# --------------------------------------------------------------------------------------------
# Unknown api key / version
# --------------------------------------------------------------------------------------------


def test_unknown_api_key_request() -> None:
    frame = request_header_v1(1000, 0, 42, "who")
    msg = decode_request(frame)
    assert msg.status == "unknown api key 1000"
    assert (msg.api_key, msg.api_version, msg.correlation_id, msg.client_id) == (1000, 0, 42, "who")
    assert msg.body is None


def test_unknown_version_request() -> None:
    msg = decode_request(request_header_v1(3, 99, 42, "who") + b"\x00" * 8)
    lo, hi = registry.VERSION_RANGES[3]
    assert msg.status == f"unknown version 99 of Metadata (known {lo}-{hi})"
    assert (msg.api_key, msg.api_version, msg.correlation_id, msg.client_id) == (3, 99, 42, "who")
    msg = decode_request(request_header_v1(18, -1, 1))
    assert msg.status.startswith("unknown version -1 of ApiVersions")


def test_unknown_api_key_and_version_response() -> None:
    msg = decode_response(i32(9) + b"\x00" * 6, 1000, 0)
    assert msg.status == "unknown api key 1000" and msg.correlation_id == 9 and msg.body is None
    msg = decode_response(i32(9) + b"\x00" * 6, 0, 42)
    lo, hi = registry.VERSION_RANGES[0]
    assert msg.status == f"unknown version 42 of Produce (known {lo}-{hi})" and msg.body is None


def test_short_headers() -> None:
    assert decode_request(b"\x00\x03\x00").status == "truncated: request header needs 8 bytes, frame has 3"
    assert decode_response(b"\x00\x01", 3, 0).status == "truncated: response header needs 4 bytes, frame has 2"


# --------------------------------------------------------------------------------------------
# Tagged fields: unknown tags are kept, known ones decoded by name
# --------------------------------------------------------------------------------------------


def api_versions_request_v3(software: str = "kip-511", version: str = "1.0",
                            body_tags: list[tuple[int, bytes]] | None = None,
                            header_tags: list[tuple[int, bytes]] | None = None) -> bytes:
    return (request_header_v2(18, 3, 77, "tagger", header_tags) + compact_string(software)
            + compact_string(version) + tagged(body_tags or []))


def test_unknown_tags_in_api_versions_request() -> None:
    frame = api_versions_request_v3(body_tags=[(0, b"\x01"), (5, b""), (300, b"\xde\xad\xbe\xef")],
                                    header_tags=[(1, b"hdr")])
    msg = decode_request(frame)
    assert msg.ok, msg.status
    assert msg.body == {
        "ClientSoftwareName": "kip-511", "ClientSoftwareVersion": "1.0",
        "_unknownTaggedFields": [{"tag": 0, "data": "01"}, {"tag": 5, "data": ""},
                                 {"tag": 300, "data": "deadbeef"}],
    }
    # RequestHeader v2 declares no tagged field in Kafka's spec: tag 1 is unknown there too.
    assert msg.header["_unknownTaggedFields"] == [{"tag": 1, "data": b"hdr".hex()}]
    assert msg.client_id == "tagger" and msg.correlation_id == 77


@SETTINGS
@given(tags=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.binary(max_size=20)), max_size=5,
                     unique_by=lambda t: t[0]).map(sorted))
def test_unknown_tags_random(tags: list[tuple[int, bytes]]) -> None:
    msg = decode_request(api_versions_request_v3(body_tags=tags))
    assert msg.ok, msg.status
    expected = [{"tag": t, "data": d.hex()} for t, d in tags]
    assert msg.body.get("_unknownTaggedFields", []) == expected


def api_versions_response_v3(keys: list[tuple[int, int, int, list[tuple[int, bytes]]]], error: int = 0,
                             throttle: int = 0, tags: list[tuple[int, bytes]] | None = None) -> bytes:
    # ApiVersionsResponse always uses response header v0 (no tagged fields), even at v3.
    out = i32(78) + i16(error) + uvarint(len(keys) + 1)
    for key, lo, hi, key_tags in keys:
        out += i16(key) + i16(lo) + i16(hi) + tagged(key_tags)
    return out + i32(throttle) + tagged(tags or [])


def test_known_and_unknown_tags_in_api_versions_response() -> None:
    supported = uvarint(2) + compact_string("metadata.version") + i16(1) + i16(20) + tagged([])
    frame = api_versions_response_v3(
        [(0, 0, 11, []), (18, 0, 4, [(9, b"\x2a")])], throttle=5,
        tags=[(0, supported), (1, i64(123456789)), (3, b"\x01"), (77, b"\x00\x01")])
    msg = decode_response(frame, 18, 3)
    assert msg.ok, msg.status
    assert msg.body_version is None
    assert msg.body == {
        "ErrorCode": 0,
        "ApiKeys": [
            {"ApiKey": 0, "MinVersion": 0, "MaxVersion": 11},
            {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4, "_unknownTaggedFields": [{"tag": 9, "data": "2a"}]},
        ],
        "ThrottleTimeMs": 5,
        "SupportedFeatures": [{"Name": "metadata.version", "MinVersion": 1, "MaxVersion": 20}],
        "FinalizedFeaturesEpoch": 123456789,
        "ZkMigrationReady": True,
        "_unknownTaggedFields": [{"tag": 77, "data": "0001"}],
    }


def test_known_tag_with_wrong_size_is_reported() -> None:
    # FinalizedFeaturesEpoch (tag 1) is an int64; declare 9 bytes for it.
    frame = api_versions_response_v3([], tags=[(1, i64(1) + b"\x00")])
    msg = decode_response(frame, 18, 3)
    assert not msg.ok
    assert "FinalizedFeaturesEpoch" in msg.status and "declared 9 bytes" in msg.status, msg.status


def test_api_versions_v0_fallback() -> None:
    """A broker that does not know ApiVersions v3 answers UNSUPPORTED_VERSION (35) at v0."""
    keys = [(0, 0, 8), (1, 0, 11), (18, 0, 2)]
    frame = i32(78) + i16(35) + i32(len(keys)) + b"".join(i16(k) + i16(lo) + i16(hi) for k, lo, hi in keys)
    msg = decode_response(frame, 18, 3)
    assert msg.ok, msg.status
    assert msg.api_version == 3 and msg.body_version == 0
    assert msg.body == {"ErrorCode": 35,
                        "ApiKeys": [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi} for k, lo, hi in keys]}
    assert any("v0" in note for note in msg.notes), msg.notes
    # The same bytes are a plain v0 response when the request was v0.
    msg0 = decode_response(frame, 18, 0)
    assert msg0.ok and msg0.body_version is None and msg0.body == msg.body


def test_api_versions_fallback_not_used_when_v0_does_not_fit() -> None:
    frame = i32(78) + i16(35) + i32(1) + i16(0) + i16(0) + i16(8) + b"\x99"  # one stray byte
    msg = decode_response(frame, 18, 3)
    assert not msg.ok and msg.body_version is None
