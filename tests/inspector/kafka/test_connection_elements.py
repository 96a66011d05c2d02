"""``--max-elements`` reaches the decoder on every path of a connection: requests, correlated responses,
responses whose request is missing (guessed), frames judged while the client side or the frame start are
still unknown; through ``Inspector`` and ``iter_capture``; and ``Summary`` counts the messages it stopped."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from contract.limits import DecodeLimits
from decoders import _runtime, api
from decoders.api import embedded_limit_hit
from decoders.element_budget import ElementBudget
from inspector.kafka.connection import KafkaConnection, hit_elements_limit, is_kafka
from inspector.kafka.pipeline import Inspector
from inspector.read.reader import ReadOptions, iter_capture
from inspector.rows.event_table import EventTable
from inspector.rows.summary import LIMITS, Summary
from tests.decoders.plain_readers import plain_module
from tests.frames import api_versions_request_v0, api_versions_response_v0, frame, request_header
from tests.inspector.hostile_captures import envelope, uvarint
from tests.inspector.kafka.test_connection import A, B, _messages
from tests.inspector.test_hostile_elements import (
    AFTER,
    HELLO,
    cstr,
    join_group_v6_request,
    join_group_v6_response,
)
from tests.inspector.test_hostile_elements import conversation_pcap as pcap_of

KEYS = [(18, 0, 3), (11, 0, 9), (3, 0, 12)]  # an ApiVersions v0 response of 3 elements
LIMIT = "limit: array of {} elements exceeds the elements left of this message's budget (--max-elements) at {}"


def test_default_is_the_decoders() -> None:
    conn = KafkaConnection(1, A, B)
    assert conn.max_elements == _runtime.MAX_ELEMENTS == Inspector().limits.max_elements


@pytest.mark.parametrize(("max_elements", "limited"), [(9_999, True), (10_000, False), (None, False)])
def test_request(max_elements: int | None, limited: bool) -> None:
    kwargs = {} if max_elements is None else {"limits": DecodeLimits(max_elements=max_elements)}
    conn = KafkaConnection(1, A, B, client_side=0, **kwargs)  # type: ignore[arg-type]
    (msg,) = _messages(conn.data(0, 1.0, join_group_v6_request(2, 10_000)))
    if limited:
        assert msg.message.status.startswith(LIMIT.format(10000, "Protocols")) and msg.message.body is None
        assert hit_elements_limit(msg.message) and is_kafka(msg.message) and not msg.message.ok
        assert conn.stats.decode_failures == 1
    else:
        assert msg.message.ok and len((msg.message.body or {})["Protocols"]) == 10_000
    # Either way the request was understood enough to wait for its response.
    assert list(conn.pending) == [2] and (11, 6) in conn.seen_versions


@pytest.mark.parametrize(("max_elements", "limited"), [(2, True), (3, False)])
def test_correlated_response(max_elements: int, limited: bool) -> None:
    conn = KafkaConnection(1, A, B, client_side=0, limits=DecodeLimits(max_elements=max_elements))
    out = conn.data(0, 1.0, frame(api_versions_request_v0(1)))
    out += conn.data(1, 1.5, frame(api_versions_response_v0(1, KEYS)))
    _, resp = _messages(out)
    assert resp.latency_ms == 500.0 and not resp.request_missing
    if limited:
        assert resp.message.status == LIMIT.format(3, "ApiKeys") + " (offset 10)"
        assert conn.stats.decode_failures == 1
    else:
        assert resp.message.ok and len((resp.message.body or {})["ApiKeys"]) == 3


@pytest.mark.parametrize(("max_elements", "limited"), [(2, True), (3, False)])
def test_guessed_response(max_elements: int, limited: bool) -> None:
    """A response whose request is missing: every candidate is decoded within the connection's budget, so a
    layout that needs more elements than allowed does not decode; when none decodes, those that stopped only
    at the budget are what the response is reported as (ApiVersions, a common API, first)."""
    conn = KafkaConnection(1, A, B, client_side=0, limits=DecodeLimits(max_elements=max_elements))
    (resp,) = _messages(conn.data(1, 1.0, frame(api_versions_response_v0(9, KEYS))))
    assert resp.request_missing and conn.stats.requests_missing == 1
    if limited:
        assert resp.candidates[0] == (18, 0) and resp.message.api_key == 18 and resp.message.body is None
        assert hit_elements_limit(resp.message) and conn.stats.decode_failures == 1
    else:
        assert (18, 0) in resp.candidates and resp.message.api_key == 18
        assert resp.message.ok and conn.stats.decode_failures == 0


def test_guessed_response_stopped_by_the_budget() -> None:
    """No candidate decodes within the budget, but ApiVersions v0 (seen on the connection) stops only at it:
    the response is reported as stopped by --max-elements (and counted so), not as undecodable."""
    many = [(k % 70, 0, 9) for k in range(3000)]
    for max_elements, limited in ((1000, True), (3000, False)):
        conn = KafkaConnection(1, A, B, client_side=0, limits=DecodeLimits(max_elements=max_elements))
        conn.data(0, 1.0, frame(api_versions_request_v0(1)))
        conn.data(1, 1.5, frame(api_versions_response_v0(1, KEYS)))
        (resp,) = _messages(conn.data(1, 2.0, frame(api_versions_response_v0(9, many))))
        assert resp.request_missing and resp.candidates[0] == (18, 0) and resp.message.api_key == 18
        assert hit_elements_limit(resp.message) is limited and conn.stats.decode_failures == limited
        summary = Summary()
        summary.message(resp)
        assert summary.limits == ({"--max-elements": 1} if limited else {})
        if limited:
            assert resp.message.status.startswith(LIMIT.format(3000, "ApiKeys")) and resp.message.body is None
            assert 0 < (resp.confidence or 0) <= 1
        else:
            assert resp.message.ok and len((resp.message.body or {})["ApiKeys"]) == 3000


def test_budget_stops_are_told_apart_by_both_readers() -> None:
    """The exact decode behind guessing says 'over budget' for the compiled readers' limit and for the pure
    readers' alike (and nothing for other failures)."""
    data = frame(api_versions_response_v0(9, [(1, 0, 9)] * 50))[4:]
    entry = api._readers(18, 0, "response")
    assert entry is not None
    header = plain_module("header_response_header").VERSIONS[entry.header_version]
    body = plain_module("api_018_api_versions").RESPONSE[0]
    plain = api._Readers(header, body, entry.header_version, entry.post, None)
    for readers in (entry, plain):  # compiled (when built), then pure
        assert api._exact(readers, data, ElementBudget(10)) is api._OVER_BUDGET
        assert api._exact(readers, data[:-3], ElementBudget(10)) is None  # cut short: another failure
        decoded = api._exact(readers, data, ElementBudget(100))
        assert isinstance(decoded, tuple) and len(decoded[1]["ApiKeys"]) == 50
    over: list[tuple[int, int]] = []
    assert api.decode_response_exact(data, 18, 0, 10, over) is None and over == [(18, 0)]
    assert _runtime.spent_budget(_runtime.over_budget(3)) and not _runtime.spent_budget(_runtime.short(3, 2))


def _subscription(topics: int) -> bytes:
    """ConsumerProtocolSubscription v0 of ``topics`` topics, no user data."""
    return struct.pack(">hi", 0, topics) + b"".join(struct.pack(">h", 2) + b"t%d" % (i % 10) for i in range(topics)) \
        + struct.pack(">i", -1)


@pytest.mark.parametrize(("max_elements", "limited"), [(50, True), (101, False)])
def test_embedded_structures_stopped_by_the_budget_are_noted_and_counted(max_elements: int, limited: bool) -> None:
    """The JoinGroup decodes; its member's subscription (100 topics) gets what is left of the budget: when it
    stops, the message carries a note, the notes column shows it and the summary counts the limit."""
    metadata = _subscription(100)
    entry = cstr("range") + uvarint(len(metadata) + 1) + metadata + b"\x00"
    conn = KafkaConnection(1, A, B, client_side=0, limits=DecodeLimits(max_elements=max_elements))
    (msg,) = _messages(conn.data(0, 1.0, join_group_v6_request(2, 1, entry)))
    assert msg.message.ok and msg.message.body is not None
    decoded = msg.message.body["Protocols"][0]["MetadataDecoded"]
    assert decoded["status"].startswith(LIMIT.format(100, "Topics")[:40]) is limited
    assert embedded_limit_hit(msg.message) is limited
    summary = Summary()
    summary.message(msg)
    assert summary.limits == ({"--max-elements": 1} if limited else {}) and summary.decode_failures == 0
    table = EventTable()
    table.add(msg)
    (row,) = table.take().to_pylist()
    assert (row["notes"] or "").startswith("embedded: 1 structure(s) not decoded") is limited


def test_sides_and_frame_start_found_by_content_with_a_small_budget() -> None:
    """No SYN, mid-stream, the broker on side 0: the framer confirms the frame start and the client side is
    decided by decoding the frame with the connection's budget; a frame that stops at the budget is a request
    (before, it counted as a failure: its frame start was not confirmed and its bytes were skipped)."""
    conn = KafkaConnection(1, B, A, client_side=None, synced=False, limits=DecodeLimits(max_elements=5_000))
    out = conn.data(1, 1.0, join_group_v6_request(2, 10_000))
    out += conn.finish(2.0)
    (msg,) = _messages(out)
    assert conn.client_side == 1 and msg.direction == "request" and msg.client == A
    assert msg.message.status.startswith(LIMIT.format(10000, "Protocols"))
    assert conn.stats.bytes_skipped == [0, 0]


def test_envelope_inner_message_shares_the_budget_and_is_counted() -> None:
    """The Envelope decodes; the request it carries (a JoinGroup of 10,000 protocols) gets what is left of the
    budget, stops, and is counted once, as the row of its own it becomes."""
    inner = join_group_v6_request(5, 10_000)[4:]
    conn = KafkaConnection(1, A, B, client_side=0, limits=DecodeLimits(max_elements=5_000))
    (msg,) = _messages(conn.data(0, 1.0, frame(envelope(inner, 77))))
    assert msg.message.ok and msg.message.api_name == "Envelope"
    assert msg.message.inner is not None and hit_elements_limit(msg.message.inner)
    summary = Summary()
    summary.message(msg)
    assert summary.limits == {"--max-elements": 1} and summary.messages == 2
    table = EventTable()
    table.add(msg)
    rows = table.take().to_pylist()
    assert [r["decode_status"][:30] for r in rows] == ["ok", "limit: array of 10000 elements"]


def test_summary_counts_only_the_element_limit() -> None:
    conn = KafkaConnection(1, A, B, client_side=0, limits=DecodeLimits(max_elements=5_000))
    out = conn.data(0, 1.0, join_group_v6_request(2, 10_000))  # stopped by the budget
    out += conn.data(0, 1.1, frame(request_header(3, 0, 4) + struct.pack(">i", 5)))  # 5 topics, none there
    summary = Summary()
    for ev in _messages(out):
        summary.message(ev)
    assert [e.message.status[:9] for e in _messages(out)] == ["limit: ar", "truncated"]
    assert summary.decode_failures == 2 and summary.limits == {"--max-elements": 1}
    assert "--max-elements" in LIMITS


def test_inspector_passes_it_to_every_connection(tmp_path: Path) -> None:
    """Through ReadOptions → Inspector → the connections it makes (also those made only when data comes)."""
    pcap = pcap_of(tmp_path / "join.pcap", [*HELLO, ("c", join_group_v6_request(2, 10_000)),
                                             ("b", join_group_v6_response(2)), *AFTER])
    for options, limited in ((ReadOptions(limits=DecodeLimits(max_elements=5_000)), True), (ReadOptions(), False)):
        summary = Summary()
        events = list(iter_capture(str(pcap), summary, options))
        (join,) = [e for e in events if e.message.api_name == "JoinGroup" and e.direction == "request"]
        assert hit_elements_limit(join.message) is limited
        assert summary.limits == ({"--max-elements": 1} if limited else {})
        assert sum(e.message.ok for e in events) == len(events) - limited
    inspector = Inspector(limits=DecodeLimits(max_elements=123))
    assert inspector.limits.max_elements == 123
    with pytest.raises(ValueError, match="max_elements"):
        DecodeLimits(max_elements=-1)
