"""Role detection, correlation, acks=0 and responses whose request is missing."""

from __future__ import annotations

from inspector.kafka.connection import Endpoint, KafkaConnection, KafkaMessage, StreamIssue
from tests.frames import (
    api_versions_request_v0,
    api_versions_response_v0,
    frame,
    metadata_request_v0,
    metadata_response_v0,
    produce_request_v3,
    produce_response_v3,
)

A = Endpoint("10.0.0.1", 40000)
B = Endpoint("10.0.0.2", 9092)


def _messages(events: list) -> list[KafkaMessage]:
    return [e for e in events if isinstance(e, KafkaMessage)]


def test_request_and_response_are_correlated_with_latency() -> None:
    conn = KafkaConnection(1, A, B, client_side=0)
    out = conn.data(0, 10.0, frame(metadata_request_v0(5, ["orders"])))
    out += conn.data(1, 10.25, frame(metadata_response_v0(5, [(1, "b1", 9092)], ["orders"])))
    req, resp = _messages(out)
    assert (req.direction, req.message.api_name, req.client_id) == ("request", "Metadata", "test-client")
    assert resp.direction == "response" and resp.message.api_key == 3 and resp.message.ok
    assert resp.latency_ms == 250.0 and resp.client_id == "test-client"
    assert resp.message.body["Brokers"][0]["Host"] == "b1"
    assert conn.pending == {}


def test_client_side_found_by_content_when_no_syn_was_seen() -> None:
    # Side 0 happens to be the broker: its first bytes are a response.
    conn = KafkaConnection(1, B, A, client_side=None)
    out = conn.data(1, 1.0, frame(api_versions_request_v0(1)))
    out += conn.data(0, 1.1, frame(api_versions_response_v0(1, [(18, 0, 3)])))
    assert conn.client_side == 1
    req, resp = _messages(out)
    assert req.client == A and req.broker == B
    assert resp.message.body == {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}


def test_produce_acks_zero_expects_no_response() -> None:
    conn = KafkaConnection(1, A, B, client_side=0)
    conn.data(0, 1.0, frame(produce_request_v3(1, acks=0)))
    assert conn.pending == {}
    conn.data(0, 1.0, frame(produce_request_v3(2, acks=1)))
    assert list(conn.pending) == [2]
    out = conn.data(1, 1.5, frame(produce_response_v3(2)))
    assert _messages(out)[0].message.body["Responses"][0]["PartitionResponses"][0]["BaseOffset"] == 42
    conn.finish(2.0)
    assert conn.stats.responses_missing == 0


def test_response_without_request_is_decoded_from_candidates() -> None:
    conn = KafkaConnection(1, A, B, client_side=0)
    out = conn.data(1, 1.0, frame(metadata_response_v0(77, [(1, "broker-1", 9092)], ["orders"])))
    (msg,) = _messages(out)
    assert msg.request_missing
    assert (3, 0) in msg.candidates
    assert msg.message.api_key == 3 and msg.message.ok
    assert msg.message.body["Brokers"][0]["Host"] == "broker-1"
    assert 0 < (msg.confidence or 0) <= 1


def test_gap_is_accounted_and_next_request_resyncs() -> None:
    conn = KafkaConnection(1, A, B, client_side=0)
    first = frame(metadata_request_v0(1, ["a"]))
    out = conn.data(0, 1.0, first[:9])
    out += conn.gap(0, 1.1, 30, "lost")
    out += conn.data(0, 1.2, b"\x07" * 5 + frame(metadata_request_v0(2, ["b"])))
    msgs = _messages(out)
    assert [m.message.correlation_id for m in msgs] == [2]
    issues = [e for e in out if isinstance(e, StreamIssue)]
    assert sum(i.length for i in issues if i.kind == "gap") == 30
    assert sum(i.length for i in issues if i.kind == "skipped") == 9 + 5
    st = conn.stats
    assert st.bytes_framed[0] + st.bytes_skipped[0] == st.bytes_seen[0]


def test_latency_is_rounded_to_the_microsecond_half_to_even() -> None:
    """The latency is round((answered - sent) * 1e6) / 1000 (half to even), however it is computed: exact
    half microseconds, negative differences (clocks stepping back), long waits and random ones."""
    import random

    rng = random.Random(3)
    pairs = [(1.0, 1.0 + 2.5e-6), (1.0, 1.0 + 3.5e-6), (5.0, 5.0 - 2.5e-6), (0.0, 0.0), (1.0, 0.9999995),
             (1_700_000_000.0, 1_700_000_000.0 + 86_400.0 * 365)]
    pairs += [(t, t + rng.uniform(-1.0, 100.0)) for t in (rng.uniform(0, 2e9) for _ in range(300))]
    pairs += [(t, t + rng.randrange(0, 10**7) / 2e6) for t in (rng.uniform(0, 4.0) for _ in range(300))]
    conn = KafkaConnection(1, A, B, client_side=0)
    for corr, (sent, answered) in enumerate(pairs):
        out = conn.data(0, sent, frame(metadata_request_v0(corr, ["t"])))
        out += conn.data(1, answered, frame(metadata_response_v0(corr, [], ["t"])))
        _, resp = _messages(out)
        assert resp.latency_ms == round((answered - sent) * 1_000_000.0) / 1000.0, (sent, answered)
