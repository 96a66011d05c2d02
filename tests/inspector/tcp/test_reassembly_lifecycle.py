"""Tests for inspector.tcp.reassembly: connection life cycle (FIN, RST, port reuse, idle, eviction), snap length
and buffer limits."""

from __future__ import annotations

import dataclasses

import pytest

from inspector.capture.packets import ACK, FIN, RST
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import (
    GAP_ACKED,
    GAP_BUFFER,
    GAP_CLOSE,
    GAP_SNAPLEN,
    ConnectionClosed,
    ConnectionOpened,
    SegmentTruncated,
    StreamData,
    StreamGap,
)
from tests.inspector.reassembly_streams import (
    DATA,
    C,
    S,
    Streams,
    chunks,
    handshake,
    mk,
    run,
)

# ----------------------------------------------------------------------------------------------------
# Connection life cycle


def test_rst_closes_and_reports_buffered_and_missing() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 0, b"aaaa"), mk(C, S, 8, b"cccc"), mk(S, C, 0, flags=RST | ACK, ts=2.0)])
    assert st_.closed[1].reason == "rst" and st_.closed[1].ts == 2.0
    assert bytes(st_.data[1, 0]) == b"aaaa????cccc"
    assert st_.gaps[1, 0] == [(4, 4, GAP_CLOSE)]
    st_.feed(r, [mk(C, S, 12, b"late"), mk(S, C, 0, flags=ACK)])  # ignored: the connection is gone
    assert r.ignored_segments == 2 and len(st_.opened) == 1
    st_.finish(r)


def test_stray_rst_does_not_open_a_connection() -> None:
    r = Reassembler()
    assert r.feed(mk(C, S, 5, flags=RST)) == []
    assert r.flush(1.0) == []


def test_port_reuse_after_fin_gets_a_new_conn_id() -> None:
    first = handshake(100, 200) + [
        mk(C, S, 100, b"one"), mk(C, S, 103, flags=FIN | ACK), mk(S, C, 200, flags=FIN | ACK, ack=104),
        mk(C, S, 104, ack=201)]
    second = handshake(9_000, 7_000) + [mk(C, S, 9_000, b"two")]
    st_ = run(first + [mk(C, S, 103, flags=FIN | ACK)] + second)  # with a retransmitted FIN in between
    assert st_.closed[1].reason == "fin" and st_.closed[2].reason == "end of capture"
    assert bytes(st_.data[1, 0]) == b"one" and bytes(st_.data[2, 0]) == b"two"
    assert len(st_.opened) == 2


def test_new_handshake_on_an_open_connection_replaces_it() -> None:
    st_ = run(handshake(100, 200) + [mk(C, S, 100, b"old")] + handshake(5_000, 6_000) + [mk(C, S, 5_000, b"new")])
    assert st_.closed[1].reason == "port reuse"
    assert bytes(st_.data[2, 0]) == b"new" and st_.opened[2].saw_syn


def test_retransmitted_syn_and_syn_ack_are_harmless() -> None:
    h = handshake(100, 200)
    st_ = run([h[0], h[0], h[1], h[1], h[2], mk(C, S, 100, b"data")])
    assert len(st_.opened) == 1 and bytes(st_.data[1, 0]) == b"data"


def test_late_data_after_close_is_ignored_but_far_data_is_a_new_connection() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 0, b"abc"), mk(C, S, 3, flags=FIN | ACK), mk(S, C, 0, flags=FIN | ACK, ack=4)])
    assert st_.closed[1].reason == "fin"
    st_.feed(r, [mk(C, S, 0, b"abc")])  # retransmission of the closed connection's data
    assert len(st_.opened) == 1
    st_.feed(r, [mk(C, S, 2_000_000_000, b"fresh")])  # a new connection whose SYN was missed
    assert len(st_.opened) == 2 and not st_.opened[2].saw_syn
    st_.finish(r)
    assert bytes(st_.data[2, 0]) == b"fresh"


def test_fin_before_last_data_waits_for_it() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [
        mk(C, S, 0, b"aaa"), mk(C, S, 6, flags=FIN | ACK), mk(S, C, 0, flags=FIN | ACK),
    ])
    assert 1 not in st_.closed  # bytes [3, 6) still missing
    st_.feed(r, [mk(C, S, 3, b"bbb")])
    assert st_.closed[1].reason == "fin" and bytes(st_.data[1, 0]) == b"aaabbb"
    st_.finish(r)


def test_missing_bytes_before_fin_become_a_gap_when_acked() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 0, b"aaa"), mk(C, S, 6, flags=FIN | ACK),
                             mk(S, C, 0, flags=FIN | ACK, ack=7)])
    assert st_.gaps[1, 0] == [(3, 3, GAP_ACKED)] and st_.closed[1].reason == "fin"
    st_.finish(r)


def test_close_idle() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 0, b"a", ts=1.0), mk(("10.0.0.3", 1), S, 0, b"b", ts=50.0)])
    st_.add(r.close_idle(60.0, 30.0))
    assert list(st_.closed) == [1] and st_.closed[1].reason == "idle" and st_.closed[1].ts == 60.0
    st_.feed(r, [mk(C, S, 1, b"c", ts=61.0)])  # activity after an idle close: a new connection
    assert len(st_.opened) == 3
    st_.finish(r)


def test_max_connections_evicts_the_least_recently_active() -> None:
    r = Reassembler(max_connections=2)
    a, b, c = ("10.0.0.3", 1), ("10.0.0.4", 2), ("10.0.0.5", 3)
    st_ = Streams().feed(r, [mk(a, S, 0, b"a", ts=1.0), mk(b, S, 0, b"b", ts=2.0), mk(a, S, 1, b"a", ts=3.0),
                             mk(c, S, 0, b"c", ts=4.0)])
    assert list(st_.closed) == [2] and st_.closed[2].reason == "evicted"
    assert r.open_connections == 2
    st_.finish(r)


def test_closed_connections_are_evicted_first_and_silently() -> None:
    r = Reassembler(max_connections=2)
    a, b, c = ("10.0.0.3", 1), ("10.0.0.4", 2), ("10.0.0.5", 3)
    st_ = Streams().feed(r, [mk(a, S, 0, b"a", ts=1.0), mk(b, S, 0, b"b", ts=2.0), mk(b, S, 1, flags=RST, ts=3.0),
                             mk(c, S, 0, b"c", ts=4.0)])
    assert st_.closed[2].reason == "rst" and 1 not in st_.closed and 3 in st_.opened
    st_.finish(r)


def test_stats_of_open_connections() -> None:
    r = Reassembler()
    Streams().feed(r, [mk(C, S, 0, b"abcd"), mk(C, S, 0, b"ab"), mk(C, S, 10, b"zz")])
    stats = r.stats()[1]
    d = stats.sides[0]
    assert (d.bytes_seen, d.bytes_delivered, d.retransmitted_bytes, d.out_of_order_segments, d.buffered_bytes,
            d.highest_offset) == (8, 4, 2, 1, 2, 4)
    assert stats.bytes_seen == 8 and r.endpoints(1) == (C, S)


# ----------------------------------------------------------------------------------------------------
# Snap length and buffer limits


def test_snaplen_truncated_segment_in_order() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 0, b"head"), mk(C, S, 4, b"cut", missing=97), mk(C, S, 104, b"tail")])
    trunc = [e for e in st_.events if isinstance(e, SegmentTruncated)]
    assert trunc == [SegmentTruncated(1, 0, 1.0, 4, 3, 97, C, S)]
    assert st_.gaps[1, 0] == [(4, 100, GAP_SNAPLEN)]
    assert bytes(st_.data[1, 0]) == b"head" + b"?" * 100 + b"tail"  # the captured "cut" is not delivered
    st_.finish(r)
    stats = st_.closed[1].stats
    assert stats is not None and stats.sides[0].truncated_segments == 1


def test_snaplen_truncated_segment_out_of_order_and_overlapping() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 0, b"head"), mk(C, S, 10, b"x", missing=9), mk(C, S, 4, b"012345"),
                             mk(C, S, 8, b"6789abcdefghij")])
    assert bytes(st_.data[1, 0]) == b"head012345" + b"?" * 10 + b"ij"
    assert st_.gaps[1, 0] == [(10, 10, GAP_SNAPLEN)]
    st_.finish(r)


def test_buffer_limit_declares_the_hole_lost() -> None:
    r = Reassembler(max_buffered_per_direction=1000)
    segs = chunks(0, DATA, range(0, 3000, 100))
    del segs[1]  # hole [100, 200)
    st_ = Streams().feed(r, segs[:11])  # 1000 bytes waiting: at the limit, still waiting
    assert st_.pos[1, 0] == 100 and not st_.all_gaps()
    st_.feed(r, segs[11:12])
    assert st_.gaps[1, 0] == [(100, 100, GAP_BUFFER)] and st_.pos[1, 0] == 1300
    st_.feed(r, segs[12:]).finish(r)
    assert bytes(st_.data[1, 0]) == DATA[:100] + b"?" * 100 + DATA[200:]


def test_events_are_frozen_dataclasses() -> None:
    for cls in (ConnectionOpened, StreamData, StreamGap, SegmentTruncated, ConnectionClosed):
        assert dataclasses.is_dataclass(cls)
    # The per-segment event has no instance dict (compiled: its fields are in the object; from source: slots).
    assert not hasattr(StreamData(1, 0, 1.0, 0, memoryview(b"x"), ("a", 1), ("b", 2)), "__dict__")
    ev = StreamGap(1, 0, 1.0, 0, 5, "x")
    with pytest.raises(AttributeError):  # from source FrozenInstanceError (a subclass); compiled, read-only
        ev.length = 3  # type: ignore[misc]
    assert ev == StreamGap(1, 0, 1.0, 0, 5, "x") and hash(ev) == hash(StreamGap(1, 0, 1.0, 0, 5, "x"))
