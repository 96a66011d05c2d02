"""Tests for inspector.tcp.reassembly: exact byte delivery, gaps and accounting, also under random segmentation,
order, duplication and loss."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.capture.packets import ACK, FIN, PSH, SYN
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import (
    GAP_ACKED,
    GAP_CLOSE,
    GAP_SNAPLEN,
    ConnectionClosed,
    ConnectionOpened,
    StreamData,
    StreamGap,
)
from tests.inspector.reassembly_streams import (
    DATA,
    MASK,
    C,
    S,
    Streams,
    chunks,
    handshake,
    mk,
    run,
)

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
