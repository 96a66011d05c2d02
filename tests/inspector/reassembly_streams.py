"""What the reassembler's tests share: segments made by hand and a collector that checks every event.

:class:`Streams` rebuilds each direction's bytes from the events (gaps as ``?``), asserts that offsets never
skip or repeat and that each direction's accounting adds up (delivered + gaps == highest offset).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from inspector.capture.packets import ACK, PSH, SYN, Segment
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import ConnectionClosed, ConnectionOpened, Event, StreamData, StreamGap

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


