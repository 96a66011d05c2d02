"""Segments in, Kafka messages out: reassembly, content detection and per-connection decoding.

``Inspector`` is sans-I/O: it takes parsed TCP segments (with their timestamps) and returns
connection events. A connection is Kafka when its frames decode as Kafka (or when ``ports``
names its broker port); other TCP traffic is counted, not decoded.
"""

from __future__ import annotations

from collections.abc import Sequence

from inspector.connection import (
    MAX_PENDING,
    ConnectionEvent,
    Endpoint,
    KafkaConnection,
    KafkaMessage,
)
from inspector.packets import Segment
from inspector.reassembly import (
    CLOSE_EVICTED,
    ConnectionClosed,
    ConnectionOpened,
    ConnStats,
    Event,
    Reassembler,
    StreamData,
    StreamGap,
)

#: Without a port hint, a connection that yields this many frames (or bytes) and no message that
#: decodes is not Kafka.
DETECT_MAX_EVENTS = 16
DETECT_MAX_BYTES = 256 * 1024


class _Tracked:
    """A connection being inspected. Its :class:`KafkaConnection` is only made when the first stream
    bytes (or gap) arrive, so a connection that never carries data (SYN floods, half-open connections)
    costs little memory and garbage-collector time."""

    __slots__ = ("_conn", "_spec", "held", "ignored_bytes", "kafka")

    def __init__(self, spec: tuple[int, Endpoint, Endpoint, int | None, bool, int, int], kafka: bool | None) -> None:
        self._spec = spec  # KafkaConnection arguments: conn_id, a, b, client_side, synced, max_frame, max_pending
        self._conn: KafkaConnection | None = None
        self.kafka = kafka  # None while undecided
        self.held: list[ConnectionEvent] = []
        self.ignored_bytes = 0

    @property
    def conn(self) -> KafkaConnection:
        conn = self._conn
        if conn is None:
            conn = self._conn = self.new_conn()
        return conn

    def new_conn(self) -> KafkaConnection:
        conn_id, a, b, client_side, synced, max_frame, max_pending = self._spec
        return KafkaConnection(conn_id, a, b, client_side=client_side, synced=synced, max_frame=max_frame,
                               max_pending=max_pending)

    @property
    def has_conn(self) -> bool:
        return self._conn is not None

    @property
    def bytes_seen(self) -> int:
        return 0 if self._conn is None else sum(self._conn.stats.bytes_seen)


class Closed:
    """A connection ended; ``kafka`` says whether it was Kafka traffic."""

    __slots__ = ("_tracked", "ignored_bytes", "kafka")

    def __init__(self, tracked: _Tracked, kafka: bool, ignored_bytes: int) -> None:
        self._tracked = tracked
        self.kafka = kafka
        self.ignored_bytes = ignored_bytes

    @property
    def carried_data(self) -> bool:
        """False when no stream byte (nor gap) ever reached the connection: a SYN alone, a handshake only."""
        return self._tracked.has_conn

    @property
    def conn(self) -> KafkaConnection:
        """The connection's state; for one that never carried data a fresh, empty one (not kept)."""
        tracked = self._tracked
        return tracked.conn if tracked.has_conn else tracked.new_conn()


class Inspector:
    def __init__(self, *, ports: set[int] | None = None, conn_id_base: int = 0,
                 max_frame: int = 100 * 1024 * 1024, max_buffered: int = 8 * 1024 * 1024,
                 max_connections: int = 100_000, max_pending: int = MAX_PENDING) -> None:
        self.ports = ports or set()
        self.conn_id_base = conn_id_base
        self.max_frame = max_frame
        self.max_pending = max_pending
        self.evicted = 0  # connections closed because more than max_connections were open
        self.reassembler = Reassembler(max_buffered_per_direction=max_buffered, max_connections=max_connections)
        self.conns: dict[int, _Tracked] = {}
        self.closed: list[Closed] = []
        self.max_conn_id = conn_id_base

    def segment(self, seg: Segment) -> list[ConnectionEvent]:
        return self._dispatch(self.reassembler.feed(seg))

    def finish(self, ts: float) -> list[ConnectionEvent]:
        out = self._dispatch(self.reassembler.flush(ts))
        for conn_id in list(self.conns):
            out.extend(self._close(conn_id, ts))
        return out

    def _dispatch(self, events: Sequence[Event]) -> list[ConnectionEvent]:
        out: list[ConnectionEvent] = []
        for ev in events:
            if isinstance(ev, StreamData):
                tracked = self.conns.get(ev.conn_id)
                if tracked is None:
                    continue
                if tracked.kafka is False:
                    tracked.ignored_bytes += len(ev.data)
                    continue
                self._emit(tracked, tracked.conn.data(ev.side, ev.ts, ev.data), out)
            elif isinstance(ev, StreamGap):
                tracked = self.conns.get(ev.conn_id)
                if tracked is None or tracked.kafka is False:
                    continue
                self._emit(tracked, tracked.conn.gap(ev.side, ev.ts, ev.length, ev.reason), out)
            elif isinstance(ev, ConnectionOpened):
                self._open(ev)
            elif isinstance(ev, ConnectionClosed):
                if ev.reason == CLOSE_EVICTED:
                    self.evicted += 1
                out.extend(self._close(ev.conn_id, ev.ts, ev.stats))
        return out

    def _open(self, ev: ConnectionOpened) -> None:
        a = Endpoint(ev.a_ip, ev.a_port)
        b = Endpoint(ev.b_ip, ev.b_port)
        client_side: int | None = 0 if ev.saw_syn else None
        kafka: bool | None = None
        if self.ports:
            if ev.b_port in self.ports:
                client_side, kafka = 0, True
            elif ev.a_port in self.ports:
                client_side, kafka = 1, True
            else:
                kafka = False
        conn_id = self.conn_id_base + ev.conn_id
        self.max_conn_id = max(self.max_conn_id, conn_id)
        self.conns[ev.conn_id] = _Tracked((conn_id, a, b, client_side, ev.saw_syn, self.max_frame, self.max_pending),
                                          kafka)

    def _emit(self, tracked: _Tracked, events: list[ConnectionEvent], out: list[ConnectionEvent]) -> None:
        if tracked.kafka:
            out.extend(events)
            return
        tracked.held.extend(events)
        if any(isinstance(e, KafkaMessage) and e.message.ok for e in events):
            tracked.kafka = True
            out.extend(tracked.held)
            tracked.held = []
        elif len(tracked.held) > DETECT_MAX_EVENTS or tracked.bytes_seen > DETECT_MAX_BYTES:
            tracked.kafka = False
            tracked.ignored_bytes += tracked.bytes_seen
            tracked.held = []

    def _close(self, conn_id: int, ts: float, stats: ConnStats | None = None) -> list[ConnectionEvent]:
        tracked = self.conns.pop(conn_id, None)
        if tracked is None:
            return []
        out: list[ConnectionEvent] = []
        if tracked.kafka is not False:
            if tracked.has_conn:
                self._emit(tracked, tracked.conn.finish(ts), out)
            if tracked.kafka is None:
                # Never decoded a single message: not Kafka (or nothing to show).
                tracked.kafka = bool(tracked.held) and any(isinstance(e, KafkaMessage) for e in tracked.held)
                if tracked.kafka:
                    out.extend(tracked.held)
                else:
                    tracked.ignored_bytes += tracked.bytes_seen
                tracked.held = []
        if stats is not None and tracked.kafka and tracked.has_conn:
            retransmitted = tracked.conn.stats.bytes_retransmitted
            retransmitted[0] = stats.sides[0].retransmitted_bytes
            retransmitted[1] = stats.sides[1].retransmitted_bytes
        self.closed.append(Closed(tracked, bool(tracked.kafka), tracked.ignored_bytes))
        return out
