"""Tests for inspector.reassembly: exact byte delivery, gaps, accounting, connection life cycle."""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.capture_file import open_capture
from inspector.packets import ACK, FIN, PSH, RST, SYN, Segment, parse_packet
from inspector.reassembly import Reassembler
from inspector.stream_events import (
    GAP_ACKED,
    GAP_BUFFER,
    GAP_CLOSE,
    GAP_SNAPLEN,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    SegmentTruncated,
    StreamData,
    StreamGap,
)

FIXTURES = Path(__file__).parent / "fixtures"
REAL_CAPTURES = Path(__file__).parents[2].parent / "shared" / "real-captures"

MASK = 0xFFFFFFFF
C = ("10.0.0.1", 40000)  # client
S = ("10.0.0.2", 9092)  # server
DATA = bytes(random.Random(7).randbytes(3000))


def mk(src: tuple[str, int], dst: tuple[str, int], seq: int, payload: bytes = b"", flags: int = ACK,
       ack: int = 0, ts: float = 1.0, missing: int = 0) -> Segment:
    return Segment(ts, src[0], src[1], dst[0], dst[1], seq & MASK, ack & MASK, flags, memoryview(payload),
                   missing > 0, missing)


def chunks(isn: int, data: bytes, cuts: Iterable[int], src: tuple[str, int] = C, dst: tuple[str, int] = S,
           flags: int = PSH | ACK) -> list[Segment]:
    """Segments of ``data`` (stream offset 0 at sequence ``isn``), cut at the given offsets."""
    bounds = sorted({0, len(data), *(c for c in cuts if 0 < c < len(data))})
    return [mk(src, dst, isn + a, data[a:b], flags) for a, b in zip(bounds, bounds[1:], strict=False)]


class Streams:
    """Collects events, checks their order per direction, rebuilds what each direction delivered."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.pos: dict[tuple[int, int], int] = defaultdict(int)
        self.data: dict[tuple[int, int], bytearray] = defaultdict(bytearray)  # gaps as b"?" bytes
        self.mask: dict[tuple[int, int], bytearray] = defaultdict(bytearray)  # 1 delivered, 0 gap
        self.gaps: dict[tuple[int, int], list[tuple[int, int, str]]] = defaultdict(list)
        self.closed: dict[int, ConnectionClosed] = {}
        self.opened: dict[int, ConnectionOpened] = {}

    def add(self, events: list[Event]) -> list[Event]:
        for ev in events:
            self.events.append(ev)
            if isinstance(ev, StreamData):
                key = (ev.conn_id, ev.side)
                assert ev.conn_id not in self.closed
                assert ev.offset == self.pos[key], (ev, self.pos[key])
                assert len(ev.data) > 0
                self.data[key] += ev.data
                self.mask[key] += b"\x01" * len(ev.data)
                self.pos[key] += len(ev.data)
            elif isinstance(ev, StreamGap):
                key = (ev.conn_id, ev.side)
                assert ev.offset == self.pos[key], (ev, self.pos[key])
                assert ev.length > 0
                self.gaps[key].append((ev.offset, ev.length, ev.reason))
                self.data[key] += b"?" * ev.length
                self.mask[key] += b"\x00" * ev.length
                self.pos[key] += ev.length
            elif isinstance(ev, ConnectionClosed):
                assert ev.conn_id not in self.closed
                self.closed[ev.conn_id] = ev
            elif isinstance(ev, ConnectionOpened):
                assert ev.conn_id not in self.opened
                self.opened[ev.conn_id] = ev
        return events

    def all_gaps(self) -> list[tuple[int, int, str]]:
        return [g for gaps in self.gaps.values() for g in gaps]

    def feed(self, r: Reassembler, segments: Iterable[Segment]) -> Streams:
        for s in segments:
            self.add(r.feed(s))
        return self

    def finish(self, r: Reassembler, ts: float = 99.0) -> Streams:
        self.add(r.flush(ts))
        self.check_accounting()
        return self

    def check_accounting(self) -> None:
        """bytes delivered + bytes in gaps == highest offset, per direction, matching the events."""
        for cid, closed in self.closed.items():
            assert closed.stats is not None
            for side, d in enumerate(closed.stats.sides):
                key = (cid, side)
                delivered = self.pos[key] - sum(g[1] for g in self.gaps[key])
                assert d.bytes_delivered + d.bytes_gap == d.highest_offset == self.pos[key]
                assert d.bytes_delivered == delivered
                assert d.bytes_gap == sum(g[1] for g in self.gaps[key])
                assert d.buffered_bytes == 0


def handshake(cisn: int, sisn: int) -> list[Segment]:
    return [mk(C, S, cisn - 1, flags=SYN), mk(S, C, sisn - 1, flags=SYN | ACK, ack=cisn),
            mk(C, S, cisn, ack=sisn)]


def run(segments: Iterable[Segment], **kw: int) -> Streams:
    r = Reassembler(**kw)
    return Streams().feed(r, segments).finish(r)


# ----------------------------------------------------------------------------------------------------
# Exact delivery


def test_whole_stream_with_handshake_and_fin() -> None:
    cisn, sisn = 1000, 5000
    segs = handshake(cisn, sisn) + chunks(cisn, DATA, range(0, 3000, 1000)) + [
        mk(S, C, sisn, DATA[:500], PSH | ACK, ack=cisn + 3000),
        mk(C, S, cisn + 3000, flags=FIN | ACK, ack=sisn + 500),
        mk(S, C, sisn + 500, flags=FIN | ACK, ack=cisn + 3001),
        mk(C, S, cisn + 3001, ack=sisn + 501),
    ]
    r = Reassembler()
    st_ = Streams().feed(r, segs)
    assert st_.opened[1] == ConnectionOpened(1, 1.0, C[0], C[1], S[0], S[1], True)
    assert bytes(st_.data[1, 0]) == DATA and bytes(st_.data[1, 1]) == DATA[:500]
    assert st_.closed[1].reason == "fin"  # closed by the FINs, before any flush
    assert r.flush(100.0) == []
    st_.check_accounting()
    assert not st_.all_gaps()


def test_in_order_delivery_is_immediate_and_zero_copy() -> None:
    r = Reassembler()
    payload = b"0123456789"
    s = mk(C, S, 77, payload)
    events = r.feed(s)
    assert [type(e) for e in events] == [ConnectionOpened, StreamData]
    data_ev = events[1]
    assert isinstance(data_ev, StreamData)
    assert data_ev.data.obj is payload  # the same buffer, not a copy
    assert (data_ev.conn_id, data_ev.side, data_ev.offset, data_ev.src, data_ev.dst) == (1, 0, 0, C, S)


def test_one_segment_per_byte() -> None:
    st_ = run(chunks(10, DATA[:400], range(400)))
    assert bytes(st_.data[1, 0]) == DATA[:400]


def test_shuffled_segments() -> None:
    segs = handshake(3, 9) + (lambda s: random.Random(1).sample(s, len(s)))(chunks(3, DATA, range(0, 3000, 97)))
    st_ = run(segs)
    assert bytes(st_.data[1, 0]) == DATA
    stats = st_.closed[1].stats
    assert stats is not None and stats.sides[0].out_of_order_segments > 0 and stats.bytes_gap == 0


def test_duplicates_are_delivered_once_and_counted() -> None:
    segs = chunks(50, DATA, range(0, 3000, 300))
    dup = segs + segs[3:6] + segs
    st_ = run(dup)
    assert bytes(st_.data[1, 0]) == DATA
    stats = st_.closed[1].stats
    assert stats is not None
    assert stats.sides[0].retransmitted_bytes == 3000 + 900
    assert stats.sides[0].bytes_seen == 3000 * 2 + 900


def test_overlapping_segments_are_trimmed() -> None:
    d = DATA[:100]
    segs = [mk(C, S, 500, d[0:10]), mk(C, S, 505, d[5:15]), mk(C, S, 540, d[40:60]), mk(C, S, 512, d[12:45]),
            mk(C, S, 500, d[0:100]), mk(C, S, 530, d[30:70])]
    st_ = run(segs)
    assert bytes(st_.data[1, 0]) == d
    assert [e.data.obj for e in st_.events if isinstance(e, StreamData)][-1] is not None


def test_dropped_segment_is_an_exact_gap_at_close() -> None:
    segs = chunks(0, DATA, range(0, 3000, 100))
    del segs[7]  # bytes [700, 800)
    st_ = run(segs)
    assert st_.gaps[1, 0] == [(700, 100, GAP_CLOSE)]
    got = bytes(st_.data[1, 0])
    assert got[:700] == DATA[:700] and got[800:] == DATA[800:] and len(got) == 3000


def test_ack_from_the_other_side_proves_loss() -> None:
    segs = chunks(0, DATA[:1000], range(0, 1000, 100))
    lost = segs.pop(2)  # [200, 300)
    r = Reassembler()
    st_ = Streams().feed(r, segs)
    assert st_.pos[1, 0] == 200  # waiting behind the hole
    st_.add(r.feed(mk(S, C, 0, ack=1000)))  # the server acknowledged everything
    assert st_.gaps[1, 0] == [(200, 100, GAP_ACKED)]
    assert st_.pos[1, 0] == 1000  # and the buffered data came out at once
    st_.add(r.feed(lost))  # late copy: a retransmission, not delivered
    st_.finish(r)
    assert bytes(st_.data[1, 0]) == DATA[:200] + b"?" * 100 + DATA[300:1000]
    stats = st_.closed[1].stats
    assert stats is not None and stats.sides[0].retransmitted_bytes == 100


def test_ack_beyond_everything_seen_reports_lost_tail() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 10, b"abc"), mk(S, C, 99, ack=10 + 8)])
    assert st_.gaps[1, 0] == [(3, 5, GAP_ACKED)]
    st_.feed(r, [mk(C, S, 18, b"xyz")])
    assert bytes(st_.data[1, 0]) == b"abc?????xyz"
    st_.finish(r)


def test_old_and_bogus_acks_are_ignored() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [mk(C, S, 1000, b"abc"), mk(S, C, 5, ack=990), mk(S, C, 5, ack=1003 + (1 << 31))])
    assert not st_.all_gaps()
    st_.finish(r)


def test_sequence_wraparound() -> None:
    isn = (1 << 32) - 1000
    segs = chunks(isn, DATA, range(0, 3000, 111))
    random.Random(3).shuffle(segs)
    st_ = run(handshake(isn, 0xFFFFFFFF) + segs)
    assert bytes(st_.data[1, 0]) == DATA
    assert all(0 <= s.seq <= MASK for s in segs)


def test_offsets_keep_growing_beyond_4_gib() -> None:
    # 300 snaplen-cut segments claiming 16 MiB each: the stream passes 2**32 bytes (sequence numbers wrap
    # once) while stream offsets keep growing.
    r = Reassembler()
    seq = 123
    step = 1 << 24
    gaps = []
    for _ in range(300):
        gaps += [e for e in r.feed(mk(C, S, seq, b"", missing=step)) if isinstance(e, StreamGap)]
        seq += step
    last = r.feed(mk(C, S, seq, b"tail"))[-1]
    assert [g.offset for g in gaps] == [i * step for i in range(300)]
    assert all(g.length == step and g.reason == GAP_SNAPLEN for g in gaps)
    assert isinstance(last, StreamData) and last.offset == 300 * step > 1 << 32
    closed = r.flush(2.0)[-1]
    assert isinstance(closed, ConnectionClosed) and closed.stats is not None
    d = closed.stats.sides[0]
    assert d.bytes_gap + d.bytes_delivered == d.highest_offset == 300 * step + 4


def test_mid_connection_start() -> None:
    r = Reassembler()
    st_ = Streams().feed(r, [
        mk(S, C, 777_000, ack=5),  # a pure ACK first: the server is the first side seen
        mk(C, S, 3_000_000_000, DATA[:100], ack=777_000),
        mk(S, C, 777_000, DATA[:50], ack=3_000_000_100),
    ])
    opened = st_.opened[1]
    assert not opened.saw_syn and (opened.a_ip, opened.a_port) == S  # side 0: first packet's sender
    assert bytes(st_.data[1, 1]) == DATA[:100]  # the client's stream, offset 0 at its first data
    assert bytes(st_.data[1, 0]) == DATA[:50]
    st_.finish(r)
    assert not st_.all_gaps()


def test_syn_ack_first_still_makes_the_client_side_zero() -> None:
    st_ = run([mk(S, C, 99, flags=SYN | ACK, ack=11), mk(C, S, 11, b"req", ack=100), mk(S, C, 100, b"resp")])
    assert (st_.opened[1].a_ip, st_.opened[1].a_port) == C and st_.opened[1].saw_syn
    assert bytes(st_.data[1, 0]) == b"req" and bytes(st_.data[1, 1]) == b"resp"


def test_syn_with_data_fast_open() -> None:
    st_ = run([mk(C, S, 41, b"early", flags=SYN), mk(S, C, 7, flags=SYN | ACK, ack=47), mk(C, S, 47, b"+more")])
    assert bytes(st_.data[1, 0]) == b"early+more"


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


# ----------------------------------------------------------------------------------------------------
# Random segmentation, order, duplication and loss


@settings(max_examples=200, deadline=None)
@given(
    isn=st.integers(0, MASK),
    size=st.integers(1, 600),
    cuts=st.lists(st.integers(1, 599), max_size=40),
    seed=st.integers(0, 2**32),
    dup_ratio=st.floats(0, 1),
    overlap=st.booleans(),
    with_syn=st.booleans(),
)
def test_random_order_duplicates_and_overlaps_deliver_exactly(isn: int, size: int, cuts: list[int], seed: int,
                                                              dup_ratio: float, overlap: bool,
                                                              with_syn: bool) -> None:
    rnd = random.Random(seed)
    data = DATA[:size]
    segs = chunks(isn, data, cuts)
    if overlap:  # add segments spanning random ranges of the same bytes
        for _ in range(len(segs) // 2 + 1):
            a = rnd.randrange(size)
            b = rnd.randint(a + 1, size)
            segs.append(mk(C, S, isn + a, data[a:b]))
    segs += [s for s in segs if rnd.random() < dup_ratio]
    if with_syn:  # the SYN fixes offset 0: any order works
        rnd.shuffle(segs)
        ordered = [mk(C, S, isn - 1, flags=SYN), *segs]
    else:  # without a SYN the stream starts at the first segment seen, so that one must come first
        first, rest = segs[0], segs[1:]
        rnd.shuffle(rest)
        ordered = [first, *rest]
    st_ = run(ordered)
    assert bytes(st_.data[1, 0]) == data
    assert not st_.all_gaps()


@settings(max_examples=200, deadline=None)
@given(
    isn=st.integers(0, MASK),
    size=st.integers(2, 600),
    cuts=st.lists(st.integers(1, 599), min_size=1, max_size=40),
    seed=st.integers(0, 2**32),
    drop_ratio=st.floats(0, 0.5),
    limit=st.sampled_from([0, 50, 300, 8 << 20]),
    ack=st.booleans(),
)
def test_random_loss_is_reported_exactly(isn: int, size: int, cuts: list[int], seed: int, drop_ratio: float,
                                         limit: int, ack: bool) -> None:
    rnd = random.Random(seed)
    data = DATA[:size]
    segs = chunks(isn, data, cuts)
    kept = [segs[0]] + [s for s in segs[1:] if rnd.random() >= drop_ratio]
    head, rest = kept[0], kept[1:]
    rnd.shuffle(rest)
    stream = [mk(C, S, isn - 1, flags=SYN), head] + rest
    if ack:  # the server acknowledges everything at the end
        stream.append(mk(S, C, 1, flags=ACK, ack=isn + size))
    st_ = run(stream, max_buffered_per_direction=limit)
    got = bytes(st_.data[1, 0])
    delivered = st_.mask[1, 0]
    covered = bytearray(size)
    for s in kept:
        off = (s.seq - isn) & MASK
        covered[off:off + len(s.payload)] = b"\x01" * len(s.payload)
    highest = max(((s.seq - isn) & MASK) + len(s.payload) for s in kept)
    assert len(got) == (size if ack else highest)  # every byte up to the end: delivered or a gap, once
    for i in range(len(got)):
        if delivered[i]:
            assert got[i] == data[i], i  # delivered bytes are the right bytes
        if not covered[i]:
            assert not delivered[i], i  # bytes never captured are never delivered
    if limit >= size:  # no buffer overflow: exactly the bytes never captured are the gaps
        assert bytes(delivered) == bytes(covered[:len(got)])
        assert all(g[2] == (GAP_ACKED if ack else GAP_CLOSE) for g in st_.gaps[1, 0])


# ----------------------------------------------------------------------------------------------------
# Whole pipeline on real captures


def pipeline(path: Path) -> Streams:
    r = Reassembler()
    st_ = Streams()
    ts = 0.0
    with open_capture(str(path)) as reader:
        for pkt in reader:
            s = parse_packet(pkt)
            assert isinstance(s, Segment), s
            st_.add(r.feed(s))
            ts = pkt.ts
    return st_.finish(r, ts)


def test_loopback_http_capture() -> None:
    st_ = pipeline(FIXTURES / "loopback-http.pcap")
    assert len(st_.opened) == 2 and all(o.saw_syn for o in st_.opened.values())
    assert [c.reason for c in st_.closed.values()] == ["fin", "fin"]
    assert bytes(st_.data[1, 0]).startswith(b"GET /index.html HTTP/1.1\r\n")
    assert b"hello kafka inspector fixture" in bytes(st_.data[1, 1])
    assert bytes(st_.data[2, 0]).startswith(b"GET /nonexistent HTTP/1.1\r\n")
    assert not st_.all_gaps()


def test_sll2_capture_reassembles_like_the_ethernet_one() -> None:
    eth = pipeline(FIXTURES / "loopback-http.pcap")
    sll2 = pipeline(FIXTURES / "any-sll2-http.pcap")
    assert dict(sll2.data) == dict(eth.data)


def test_snaplen_capture_reports_cut_segments_as_gaps() -> None:
    st_ = pipeline(FIXTURES / "loopback-http-snaplen80.pcap")
    full = pipeline(FIXTURES / "loopback-http.pcap")
    for key, data in st_.data.items():
        assert len(data) == len(full.data[key])  # same stream lengths, cut bytes are gaps
        assert all(g[2] == GAP_SNAPLEN for g in st_.gaps[key])
    assert sum(len(g) for g in st_.gaps.values()) == 6
    assert sum(1 for e in st_.events if isinstance(e, SegmentTruncated)) == 6


def test_two_interface_pcapng_sees_every_packet_twice() -> None:
    # dumpcap writes the packets of each interface in batches: the second copy of the client's request
    # is a retransmission; the second copies of the server's data come after the connection closed.
    r = Reassembler()
    st_ = Streams()
    with open_capture(str(FIXTURES / "dumpcap-two-interfaces.pcapng")) as reader:
        for pkt in reader:
            s = parse_packet(pkt)
            assert isinstance(s, Segment)
            st_.add(r.feed(s))
    st_.finish(r)
    assert len(st_.opened) == 1 and not st_.all_gaps()
    assert b"hello kafka inspector fixture" in bytes(st_.data[1, 1])
    stats = st_.closed[1].stats
    assert stats is not None and stats.sides[0].retransmitted_bytes == stats.sides[0].bytes_delivered == 89
    assert r.ignored_segments == 1 + 7  # the last ACK after both FINs, then the second batch


def _real_captures() -> list[Path]:
    return sorted(REAL_CAPTURES.glob("*.pcap")) if REAL_CAPTURES.is_dir() else []


@pytest.mark.skipif(not _real_captures(), reason="shared/real-captures not present")
@pytest.mark.parametrize("path", _real_captures(), ids=lambda p: p.name)
def test_shared_real_captures_reassemble_without_gaps(path: Path) -> None:
    st_ = pipeline(path)
    assert st_.opened and not st_.all_gaps()
    assert all(len(d) > 0 for d in st_.data.values())


def test_interleaved_connections_reused_and_evicted_tuples_land_on_their_own_connection() -> None:
    """The flow table's last two hits are remembered (compiled, a segment of the busiest connection skips the
    4-tuple): three connections in turn, a 4-tuple reused after its FIN and connections evicted in between
    still deliver each byte to its own connection."""
    clients = [(f"10.0.1.{i}", 50_000 + i) for i in range(3)]
    segments: list[Segment] = []
    for i, c in enumerate(clients):
        segments += [mk(c, S, 99 + i, flags=SYN), mk(S, c, 499 + i, flags=SYN | ACK, ack=100 + i)]
    for k in range(6):
        for i, c in enumerate(clients):  # each in turn: the remembered pair never holds the next one
            segments += [mk(c, S, 100 + i + 2 * k, f"{i}{k}".encode()),
                         mk(S, c, 500 + i + 2 * k, f"r{k}".encode(), ack=102 + i + 2 * k)]
    c0 = clients[0]
    segments += [mk(c0, S, 112, flags=FIN | ACK), mk(S, c0, 512, flags=FIN | ACK, ack=113), mk(c0, S, 113, ack=513),
                 mk(c0, S, 7_999, flags=SYN), mk(S, c0, 8_999, flags=SYN | ACK, ack=8_000), mk(c0, S, 8_000, b"again")]
    st_ = run(segments)
    assert [bytes(st_.data[i, 0]) for i in (1, 2, 3)] == [b"000102030405", b"101112131415", b"202122232425"]
    assert all(bytes(st_.data[i, 1]) == b"r0r1r2r3r4r5" for i in (1, 2, 3))
    assert bytes(st_.data[4, 0]) == b"again" and st_.closed[1].reason == "fin"
    evicting = run(segments, max_connections=2)  # each new connection evicts one: the table changes under it
    assert len(evicting.opened) > len(st_.opened)

    def by_sender(streams: Streams) -> dict[tuple[str, int, str, int], bytes]:
        out: dict[tuple[str, int, str, int], bytes] = defaultdict(bytes)
        for ev in streams.events:
            if isinstance(ev, StreamData):
                out[ev.src[0], ev.src[1], ev.dst[0], ev.dst[1]] += bytes(ev.data)
        return dict(out)

    assert by_sender(evicting) == by_sender(st_)
