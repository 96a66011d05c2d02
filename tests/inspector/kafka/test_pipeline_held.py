"""The global cap on bytes held across connections (``DecodeLimits.max_held``, ``--max-held``).

Incomplete frames (framers) and data waiting behind holes (reassembler) are counted per connection; when
all connections together hold more than the limit, the connection holding the most is released first
(the oldest of equals), until they hold no more than the limit. Released bytes are reported (skipped or
gap, with :data:`~inspector.kafka.pipeline.HELD_REASON`, which names ``--max-held``), the stream resyncs at
the next plausible frame, and the byte accounting still adds up.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.limits import DEFAULT_LIMITS, DecodeLimits
from inspector.capture.file import open_capture
from inspector.capture.packets import ACK, FIN, PSH, RST, SYN, Segment, parse_packet
from inspector.kafka.connection import ConnectionEvent, KafkaMessage, StreamIssue
from inspector.kafka.connection_state import Mode
from inspector.kafka.pipeline import DETECT_MAX_BYTES, HELD_REASON, MAX_HELD, Inspector
from inspector.read.reader import ReadOptions, iter_capture
from inspector.rows.summary import Summary
from tests.frames import api_versions_request_v0, api_versions_response_v0, frame, request_header

PCAPS = Path(__file__).parents[3] / "pcaps"
BROKER = ("10.0.0.2", 9092)
MASK = 0xFFFFFFFF


def claim(length: int, size: int) -> bytes:
    """``size`` bytes starting a frame that claims ``length``: the length prefix, a Produce v3 header, zeros."""
    head = struct.pack(">i", length) + request_header(0, 3, 1, "hostile")
    return head + bytes(size - len(head))


class Client:
    """One TCP connection to the broker; ``send`` makes the client's next segment (or one beyond a hole)."""

    def __init__(self, port: int) -> None:
        self.addr = ("10.0.0.1", port)
        self.seq = 1000
        self.ack = 5000

    def seg(self, flags: int, payload: bytes = b"", *, seq: int | None = None, from_broker: bool = False,
            ts: float = 1.0) -> Segment:
        src, dst = (BROKER, self.addr) if from_broker else (self.addr, BROKER)
        s = (self.ack if from_broker else self.seq) if seq is None else seq
        a = self.seq if from_broker else self.ack
        return Segment(ts, src[0], src[1], dst[0], dst[1], s & MASK, a & MASK, flags, memoryview(payload), False, 0)

    def handshake(self) -> list[Segment]:
        return [self.seg(SYN, seq=self.seq - 1), self.seg(SYN | ACK, seq=self.ack - 1, from_broker=True),
                self.seg(ACK)]

    def send(self, data: bytes, *, skip: int = 0) -> Segment:
        """``data`` at the next offset (or ``skip`` bytes beyond it, leaving a hole: the offset does not move)."""
        seg = self.seg(PSH | ACK, data, seq=self.seq + skip)
        if not skip:
            self.seq += len(data)
        return seg

    def reply(self, data: bytes) -> Segment:
        seg = self.seg(PSH | ACK, data, from_broker=True)
        self.ack += len(data)
        return seg

    def close(self) -> list[Segment]:
        out = [self.seg(FIN | ACK), self.seg(FIN | ACK, from_broker=True)]
        self.seq += 1
        self.ack += 1
        return out


class Run:
    """An Inspector fed segment by segment; after each one the count of held bytes is checked against the
    framers and the reassembler, and against the limit."""

    def __init__(self, ports: set[int] | None = None, max_held: int | None = None) -> None:
        limits = DEFAULT_LIMITS if max_held is None else DecodeLimits(max_held=max_held)
        self.inspector = Inspector(ports=ports, limits=limits)
        self.events: list[ConnectionEvent] = []
        self.peak = 0

    def feed(self, *segments: Segment) -> list[ConnectionEvent]:
        out: list[ConnectionEvent] = []
        for seg in segments:
            out += self.inspector.segment(seg)
            self.check()
        self.events += out
        return out

    def held(self) -> int:
        insp = self.inspector
        framers = sum(t.conn.buffered for t in insp.conns.values() if t.has_conn)
        return framers + insp.reassembler.buffered

    def check(self) -> None:
        insp = self.inspector
        assert insp.held_bytes == self.held()
        for t in insp.conns.values():
            assert t.framer_bytes == (t.conn.buffered if t.has_conn else 0)
        assert insp.held_bytes <= insp.max_held
        self.peak = max(self.peak, insp.held_bytes)

    def finish(self) -> Summary:
        self.events += self.inspector.finish(2.0)
        assert self.inspector.held_bytes == 0 == self.held()
        summary = Summary()
        for c in self.inspector.closed:
            if c.kafka and c.carried_data:
                st = c.conn.stats
                for side in (0, 1):  # every delivered byte was framed or skipped
                    assert st.bytes_seen[side] == st.bytes_framed[side] + st.bytes_skipped[side]
                summary.connection_closed(c.conn, "test")
        for row in summary.connections:
            for who in ("client", "broker"):
                parts = ("decoded", "gap", "undecodable")
                assert row[f"{who}_bytes_seen"] == sum(row[f"{who}_bytes_{p}"] for p in parts)
        return summary


def released(events: list[ConnectionEvent]) -> list[tuple[int, str, int]]:
    """(conn_id, kind, length) of the stream issues that released held bytes."""
    return [(e.conn_id, e.kind, e.length) for e in events if isinstance(e, StreamIssue) and e.reason == HELD_REASON]


def test_the_largest_holder_is_released_first_the_oldest_of_equals() -> None:
    run = Run(ports={9092}, max_held=100_000)
    a, b, c, d, e, f = (Client(41000 + i) for i in range(6))
    for cl in (a, b, c, d, e, f):
        run.feed(*cl.handshake())  # conn ids 1 to 6
    run.feed(a.send(claim(1_000_000, 50_000)), b.send(claim(1_000_000, 30_000)), c.send(claim(1_000_000, 10_000)))
    assert run.inspector.held_bytes == 90_000 and run.inspector.released == 0
    out = run.feed(d.send(claim(1_000_000, 20_000)))  # 110,000 held: a (50,000) goes, 60,000 stay
    assert released(out) == [(1, "skipped", 50_000)]
    assert run.inspector.held_bytes == 60_000 and run.inspector.released == 1
    out = run.feed(b.send(bytes(60_000)))  # b holds 90,000 now: the largest
    assert released(out) == [(2, "skipped", 90_000)]
    assert run.inspector.held_bytes == 30_000
    run.feed(e.send(claim(1_000_000, 35_000)), f.send(claim(1_000_000, 35_000)))
    assert run.inspector.held_bytes == 100_000 and run.inspector.released == 2  # at the limit is not over it
    out = run.feed(c.send(bytes(1)))  # e and f hold the most, 35,000 each: e is older
    assert released(out) == [(5, "skipped", 35_000)]
    out = run.feed(d.send(bytes(50_000)))  # d 70,000, f 35,000, c 10,001
    assert released(out) == [(4, "skipped", 70_000)]
    assert run.inspector.released == 4 and run.inspector.held_bytes == 45_001
    run.finish()


def test_a_released_stream_resyncs_at_the_next_frame_and_everything_is_accounted() -> None:
    run = Run(ports={9092}, max_held=64 * 1024)
    hostile, honest = Client(41000), Client(41001)
    run.feed(*hostile.handshake(), *honest.handshake())
    run.feed(hostile.send(frame(api_versions_request_v0(1))), hostile.reply(frame(api_versions_response_v0(1, []))))
    junk = claim(90_000_000, 200_000)
    for i in range(0, len(junk), 1448):
        run.feed(hostile.send(junk[i:i + 1448]))
    run.feed(hostile.send(frame(api_versions_request_v0(2))), hostile.reply(frame(api_versions_response_v0(2, []))))
    run.feed(honest.send(frame(api_versions_request_v0(3))), honest.reply(frame(api_versions_response_v0(3, []))))
    run.feed(*hostile.close(), *honest.close())
    summary = run.finish()
    issues = released(run.events)
    assert run.inspector.released == 1 and issues and {r[0] for r in issues} == {1}
    msgs = [(e.conn_id, e.direction, e.message.correlation_id, e.message.ok)
            for e in run.events if isinstance(e, KafkaMessage)]
    # The request after the junk is found again, and its response matched to it.
    assert msgs == [(1, "request", 1, True), (1, "response", 1, True), (1, "request", 2, True),
                    (1, "response", 2, True), (2, "request", 3, True), (2, "response", 3, True)]
    (row,) = [r for r in summary.connections if r["conn_id"] == 1]
    assert row["client_bytes_undecodable"] == len(junk) and row["client_bytes_gap"] == 0
    assert row["client_bytes_seen"] == len(junk) + 2 * len(frame(api_versions_request_v0(1)))


def test_data_behind_a_hole_is_released_as_a_gap_and_delivered() -> None:
    run = Run(ports={9092}, max_held=50_000)
    cl = Client(41000)
    run.feed(*cl.handshake())
    request = frame(api_versions_request_v0(7))
    behind = bytes(3000) + request + claim(1_000_000, 57_000)
    out = run.feed(cl.send(behind[:40_000], skip=1000))  # 40,000 wait behind a hole of 1,000
    assert run.inspector.reassembler.buffered == 40_000 and released(out) == []
    out = run.feed(cl.send(behind[40_000:], skip=41_000))  # 60,000+ held: the connection is released
    # The hole becomes a gap, the data behind it is delivered: the framer, lost after the gap, skips the
    # zeros, finds the request, and then holds the incomplete frame after it, which is released too.
    assert run.inspector.released == 1
    assert released(out) == [(1, "gap", 1000), (1, "skipped", 57_000)]
    assert [(e.message.correlation_id, e.message.ok) for e in out if isinstance(e, KafkaMessage)] == [(7, True)]
    assert run.inspector.reassembler.buffered == 0 and run.inspector.held_bytes == 0
    late = cl.send(bytes(1000))  # the hole's bytes after all: already declared lost, a retransmission now
    run.feed(late)
    run.feed(*cl.close())
    summary = run.finish()
    (row,) = summary.connections
    assert row["client_bytes_gap"] == 1000 and row["client_bytes_retransmitted"] == 1000
    assert row["client_bytes_seen"] == 1000 + len(behind)


def test_a_connection_judged_not_kafka_is_released_silently() -> None:
    """Without --port, a connection that never decodes is ignored, but its framer may still hold an
    incomplete frame: it counts, and releasing it makes no event (its bytes are counted as ignored)."""
    run = Run(max_held=400_000)
    x, y = Client(41000), Client(41001)
    run.feed(*x.handshake(), *y.handshake())
    junk = claim(50_000_000, 300_000)
    for i in range(0, len(junk), 1448):
        run.feed(x.send(junk[i:i + 1448]))
    # Judged not Kafka once it passed DETECT_MAX_BYTES: later bytes are ignored, those buffered stay.
    held = run.inspector.conns[1].framer_bytes
    assert run.inspector.conns[1].mode is Mode.NOT_KAFKA
    assert DETECT_MAX_BYTES < held == run.inspector.held_bytes < len(junk)
    out = run.feed(y.send(claim(50_000_000, 150_000)))
    assert run.inspector.released == 1 and released(out) == []
    assert run.inspector.conns[1].framer_bytes == 0 and run.inspector.held_bytes == 150_000
    run.feed(*x.close(), *y.close())
    run.finish()
    closed = {c.conn.conn_id: c for c in run.inspector.closed}
    assert not closed[1].kafka and closed[1].ignored_bytes == len(junk)


def test_many_holders_under_sustained_pressure() -> None:
    """400 connections growing round-robin past the limit: the held bytes never exceed it (checked after
    every segment), each release takes a connection holding the most, and the heap of holders stays
    bounded."""
    run = Run(ports={9092}, max_held=400_000)
    clients = [Client(20000 + i) for i in range(400)]
    for cl in clients:
        run.feed(*cl.handshake())
    conns = run.inspector.conns
    for round_ in range(4):
        for cl in clients:
            issues = released(run.feed(cl.send(claim(90_000_000, 1448) if round_ == 0 else bytes(1000))))
            if issues:
                assert max(t.framer_bytes + t.reasm_bytes for t in conns.values()) <= min(r[2] for r in issues)
            holders = run.inspector._holders
            assert holders is None or len(holders) <= 2 * len(conns) + 4096
    assert run.inspector.released > len(clients) // 2
    run.finish()


def test_the_heap_of_holders_is_kept_under_pressure_only_and_compacted() -> None:
    run = Run(ports={9092}, max_held=1_000_000)
    a, b, c = Client(41000), Client(41001), Client(41002)
    run.feed(*a.handshake(), *b.handshake(), *c.handshake())
    run.feed(a.send(claim(90_000_000, 600_000)), b.send(claim(90_000_000, 300_000)))
    assert run.inspector._holders is None  # never over the limit: no heap
    run.feed(b.send(bytes(200_000)))
    assert run.inspector.released == 1 and run.inspector.held_bytes == 500_000
    assert run.inspector._holders is not None  # 500,000 still held: the heap is kept
    for _ in range(5000):  # 5,000 growths of one connection: one entry each, compacted
        run.feed(b.send(bytes(100)))
        assert len(run.inspector._holders or ()) <= 4096 + 2 * 3
    assert run.inspector.held_bytes == 1_000_000 and run.inspector.released == 1
    assert released(run.feed(c.send(claim(90_000_000, 1000)))) == [(2, "skipped", 1_000_000)]
    assert run.inspector.held_bytes == 1000 and run.inspector._holders is None  # little held again: no heap
    run.finish()


def _segments(pcap: Path, mss: int = 0) -> Iterator[Segment]:
    """The capture's TCP segments; with ``mss``, data segments are cut into segments of at most ``mss``
    bytes and every other pair of pieces is swapped (so frames span segments and some wait behind holes;
    the project's captures were made on loopback, where one segment carries whole frames)."""
    with open_capture(str(pcap)) as reader:
        for pkt in reader:
            seg = parse_packet(pkt)
            if not isinstance(seg, Segment):
                continue
            n = len(seg.payload)
            if not mss or n <= mss or seg.flags & (SYN | FIN | RST) or seg.truncated:
                yield seg
                continue
            pieces = [Segment(seg.ts, seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port, (seg.seq + i) & MASK,
                              seg.ack, seg.flags, seg.payload[i:i + mss], False, 0) for i in range(0, n, mss)]
            for i in range(0, len(pieces) - 1, 4):
                pieces[i], pieces[i + 1] = pieces[i + 1], pieces[i]
            yield from pieces


def _run(pcap: Path, mss: int, max_held: int | None = None) -> Run:
    run = Run(max_held=max_held)
    for seg in _segments(pcap, mss):
        run.feed(seg)
    return run


def _messages(run: Run) -> list[tuple[int, str, int, str]]:
    return [(e.conn_id, e.direction, e.frame_offset, e.message.status) for e in run.events
            if isinstance(e, KafkaMessage)]


@pytest.mark.parametrize("pcap", sorted(PCAPS.glob("*.pcap")), ids=lambda p: p.stem)
def test_real_captures_are_unaffected(pcap: Path) -> None:
    """With the default limit the project's captures (as they are, and cut into 1448-byte segments partly
    out of order) hold far less: nothing is released, the events are the same as without a limit."""
    for mss in (0, 1448):
        run = _run(pcap, mss)
        assert run.inspector.max_held == MAX_HELD
        run.finish()
        assert run.inspector.released == 0 and run.peak < MAX_HELD // 16
        unlimited = _run(pcap, mss, max_held=1 << 62)
        unlimited.finish()
        assert _messages(run) == _messages(unlimited) and _messages(run)
    summary = Summary()
    list(iter_capture(str(pcap), summary, ReadOptions()))
    assert "--max-held" not in summary.limits


@pytest.mark.parametrize("pcap", [PCAPS / "tansu-produce-fetch-compression.pcap",
                                  PCAPS / "mock-cluster-3-brokers-multi-client.pcap"], ids=lambda p: p.stem)
def test_real_captures_with_a_tiny_limit_still_add_up(pcap: Path) -> None:
    """Cut into 100-byte segments with a limit of 256 bytes, frames spanning segments and data behind holes
    are released all the time: decoding suffers, the accounting does not (checked by Run.finish after every
    segment and at the end), and the same stream bytes are accounted."""
    tiny = _run(pcap, 100, max_held=256)
    tiny_summary = tiny.finish()
    assert tiny.inspector.released > 10
    kinds = {kind for _, kind, _ in released(tiny.events)}
    assert kinds == {"skipped", "gap"}
    unlimited = _run(pcap, 100, max_held=1 << 62)
    summary = unlimited.finish()
    assert unlimited.inspector.released == 0
    assert 0 < len(_messages(tiny)) < len(_messages(unlimited))
    assert sum(r["bytes_seen"] for r in tiny_summary.connections) == sum(r["bytes_seen"] for r in summary.connections)
