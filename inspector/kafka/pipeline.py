"""Segments in, Kafka messages out: reassembly, content detection and per-connection decoding.

``Inspector`` is sans-I/O: it takes parsed TCP segments (with their timestamps) and returns
connection events. A connection is Kafka when its frames decode as Kafka (or when ``ports``
names its broker port); other TCP traffic is counted, not decoded.

TLS is recognised by content, on any port, from a connection's first stream bytes (decided once, so
plaintext pays one comparison a segment): its bytes then go through :class:`~inspector.kafka.tls_stream.TlsStream`
(imported when the first TLS connection is found), which decrypts what the key log has keys for and feeds
the plaintext to the same framers. A TLS connection whose content could not be seen (nothing decrypted) is
reported with its TLS description and byte counts, as the Kafka connections are.

Memory held across connections is bounded: the bytes of incomplete frames (framers) and of data waiting
behind holes (reassembler) are counted per connection as they change, and when all connections together
hold more than ``max_held`` the connections holding the most are released (:meth:`Inspector._release`):
their holes become gaps, their incomplete frames skipped bytes, both with reason :data:`HELD_REASON`. The
bytes a TLS connection holds (an incomplete record, an incomplete handshake message) count too; released, its
decryption stops.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.limits import DEFAULT_LIMITS, DecodeLimits
from inspector.capture.packets import Segment
from inspector.kafka.connection import (
    ConnectionEvent,
    Endpoint,
    KafkaConnection,
    KafkaMessage,
    is_kafka,
)
from inspector.kafka.connection_state import MODE_MOVES, TLS_MOVES, Mode, ModeEvent, TlsEvent, TlsState, move
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import (
    CLOSE_EVICTED,
    GAP_HELD,
    ConnectionClosed,
    ConnectionOpened,
    ConnStats,
    Event,
    StreamData,
    StreamGap,
)
from inspector.tls.sniff import SNIFF_HELLO, SNIFF_PLAIN, SNIFF_WINDOW, sniff

if TYPE_CHECKING:
    from inspector.kafka.tls_stream import TlsStream
    from inspector.tls.keylog import KeyLog

#: Without a port hint, a connection that yields this many frames (or bytes) and no message that
#: decodes is not Kafka.
DETECT_MAX_EVENTS = 16
DETECT_MAX_BYTES = 256 * 1024
#: Bytes held in incomplete frames and behind holes, all connections together, before the connections
#: holding the most are released (``--max-held``).
MAX_HELD = DEFAULT_LIMITS.max_held
#: Why released bytes were skipped (StreamIssue reason): names the option to raise.
HELD_REASON = GAP_HELD
# The states the hot path tests, by identity (compiled, module globals rather than class attribute look-ups).
_KAFKA, _NOT_KAFKA, _UNDECIDED = Mode.KAFKA, Mode.NOT_KAFKA, Mode.UNDECIDED
_PLAIN, _SNIFFING = TlsState.PLAIN, TlsState.SNIFFING


@dataclass(frozen=True)  # compiled, an extension type (pipeline.pxd); from source, a plain frozen dataclass
class ConnectionSpec:
    """What a connection's :class:`KafkaConnection` is made with, kept until its first stream bytes."""

    conn_id: int
    a: Endpoint
    b: Endpoint
    client_side: int | None  # None while unknown
    synced: bool  # the SYN was seen: the streams start at a frame boundary
    limits: DecodeLimits
    body_text: bool

    def connection(self) -> KafkaConnection:
        return KafkaConnection(self.conn_id, self.a, self.b, client_side=self.client_side, synced=self.synced,
                               limits=self.limits, body_text=self.body_text)


class _Tracked:
    """A connection being inspected. Its :class:`KafkaConnection` is only made when the first stream
    bytes (or gap) arrive, so a connection that never carries data (SYN floods, half-open connections)
    costs little memory and garbage-collector time."""

    __slots__ = ("_conn", "_spec", "framer_bytes", "held", "ignored_bytes", "mode", "reasm_bytes", "sniffed",
                 "tls_state", "tls_stream")

    def __init__(self, spec: ConnectionSpec, mode: Mode) -> None:
        self._spec = spec
        self._conn: KafkaConnection | None = None
        self.mode = mode  # whether it is Kafka (MODE_MOVES)
        self.tls_state = TlsState.UNSEEN  # whether it is TLS, from its first bytes (TLS_MOVES)
        self.sniffed: _Sniffing | None = None  # its first bytes, held while sniffing
        self.tls_stream: TlsStream | None = None  # once TLS
        self.held: list[ConnectionEvent] = []
        self.ignored_bytes = 0
        # What the connection holds, as last counted (Inspector.held_bytes is their sum over connections):
        self.framer_bytes = 0  # in its framers (incomplete frames) and its TLS session
        self.reasm_bytes = 0  # in the reassembler, behind holes

    @property
    def conn(self) -> KafkaConnection:
        conn = self._conn
        if conn is None:
            conn = self._conn = self.new_conn()
        return conn

    def new_conn(self) -> KafkaConnection:
        return self._spec.connection()

    @property
    def has_conn(self) -> bool:
        return self._conn is not None

    @property
    def bytes_seen(self) -> int:
        """Stream bytes its framers saw (of a TLS connection: its plaintext)."""
        return 0 if self._conn is None else sum(self._conn.stats.bytes_seen)

    @property
    def wire_bytes(self) -> int:
        """Stream bytes delivered (of a TLS connection: its records, not its plaintext)."""
        tls = self.tls_stream
        return self.bytes_seen if tls is None else tls.wire_bytes

    def holding(self) -> int:
        """Bytes its framers and TLS session hold now."""
        if self._conn is None:
            return 0
        tls = self.tls_stream
        return self._conn.buffered + (tls.held if tls is not None else 0)


class _Sniffing:
    """A connection's first bytes while too few tell whether it is TLS (fewer than a record header and a
    handshake type: a few bytes, at most)."""

    __slots__ = ("data", "offset", "side", "ts")

    def __init__(self, side: int, ts: float, offset: int, data: bytes) -> None:
        self.side = side
        self.ts = ts
        self.offset = offset
        self.data = data


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

    @property
    def tls(self) -> TlsStream | None:
        """A TLS connection's stream (its description and byte counts), else None."""
        return self._tracked.tls_stream


class Inspector:
    def __init__(self, *, ports: set[int] | None = None, conn_id_base: int = 0,
                 limits: DecodeLimits = DEFAULT_LIMITS, body_text: bool = False, keylog: KeyLog | None = None) -> None:
        self.ports = ports or set()
        self.conn_id_base = conn_id_base
        self.limits = limits  # each connection's (its frames, pending requests, elements per message) and these:
        self.max_held = limits.max_held  # read per segment
        self.body_text = body_text  # Produce/Fetch bodies as JSON text (KafkaConnection's body_text)
        self.keylog = keylog  # TLS secrets (fed by the caller, which may go on feeding it)
        self.evicted = 0  # connections closed because more than max_connections were open
        self.released = 0  # connections whose held bytes were released because more than max_held were held
        self.held_bytes = 0  # bytes held in framers and behind holes, all open connections together
        self.reassembler = Reassembler(max_buffered_per_direction=limits.max_buffered,
                                       max_connections=limits.max_connections)
        self.conns: dict[int, _Tracked] = {}
        self.closed: list[Closed] = []
        self.max_conn_id = conn_id_base
        # The connections holding bytes, largest first, lazily: an entry (-bytes, key) is pushed whenever a
        # connection's held bytes grow, so each holder has an entry at least as large as what it holds now;
        # entries that no longer match are dropped (or pushed again, smaller) when they reach the top.
        # Only kept from the first time the limit is exceeded until the connections hold little again
        # (None meanwhile): normal traffic pays for counting, not for the heap.
        self._holders: list[tuple[int, int]] | None = None
        self._holders_max = 0  # entries allowed before stale ones are compacted away
        self._reasm_held = 0  # the part of held_bytes behind holes: equals reassembler.buffered once counted

    def segment(self, seg: Segment) -> list[ConnectionEvent]:
        reassembler = self.reassembler
        out = self._dispatch(reassembler.feed(seg))
        if reassembler.buffered != self._reasm_held:
            # Out-of-order data was buffered or drained: of the connections still open, only seg's changed.
            key = reassembler.conn_id_for(seg)
            if key is not None and (tracked := self.conns.get(key)) is not None:
                self._set_held(key, tracked, tracked.framer_bytes, reassembler.buffered_for(key))
        if self.held_bytes > self.max_held:
            self._release(seg.ts, out)
        return out

    def close_idle(self, ts: float, idle_seconds: float) -> list[ConnectionEvent]:
        """Close the connections with no packet in the ``idle_seconds`` before ``ts`` (reason ``"idle"``), as
        ``finish`` closes all: for a capture that never ends (the tap), the connections whose end it did not see."""
        out = self._dispatch(self.reassembler.close_idle(ts, idle_seconds))
        self._holders = None  # rebuilt from the connections still open when next needed
        return out

    def finish(self, ts: float) -> list[ConnectionEvent]:
        out = self._dispatch(self.reassembler.flush(ts))
        for conn_id in list(self.conns):
            out.extend(self._close(conn_id, ts))
        self._holders = None
        return out

    def _dispatch(self, events: Sequence[Event]) -> list[ConnectionEvent]:
        out: list[ConnectionEvent] = []
        for ev in events:
            if isinstance(ev, StreamData):
                self._data(ev, out)
            elif isinstance(ev, StreamGap):
                tracked = self.conns.get(ev.conn_id)
                if tracked is None or tracked.mode is _NOT_KAFKA:
                    continue
                if tracked.tls_state is _SNIFFING:
                    self._decided_plain(ev.conn_id, tracked, out)  # too few bytes said TLS: plaintext
                tls = tracked.tls_stream
                if tls is not None:
                    self._emit(tracked, tls.gap(ev.side, ev.ts, ev.length, ev.reason), out)
                else:
                    self._emit(tracked, tracked.conn.gap(ev.side, ev.ts, ev.length, ev.reason), out)
                if tracked.framer_bytes:
                    self._set_held(ev.conn_id, tracked, tracked.holding(), tracked.reasm_bytes)
            elif isinstance(ev, ConnectionOpened):
                self._open(ev)
            elif isinstance(ev, ConnectionClosed):
                if ev.reason == CLOSE_EVICTED:
                    self.evicted += 1
                out.extend(self._close(ev.conn_id, ev.ts, ev.stats))
        return out

    def _data(self, ev: StreamData, out: list[ConnectionEvent]) -> None:
        """Stream data to its connection (unless it is known not to be Kafka); what the framer now holds
        counted in the memory held."""
        tracked = self.conns.get(ev.conn_id)
        if tracked is None:
            return
        if tracked.mode is _NOT_KAFKA:
            tracked.ignored_bytes += len(ev.data)
            return
        if tracked.tls_state is not _PLAIN:  # TLS, or its first bytes
            self._tls_data(ev, tracked, out)
            return
        conn = tracked._conn if tracked._conn is not None else tracked.conn
        framer = conn.framers[ev.side]
        before = framer.buffered
        self._emit(tracked, conn.data(ev.side, ev.ts, ev.data), out)
        grown = framer.buffered - before
        if grown:  # an incomplete frame grew or completed: count it (inline, once per segment)
            tracked.framer_bytes += grown
            self.held_bytes += grown
            if self._holders is not None:
                self._changed(ev.conn_id, tracked, grown > 0)

    # -- TLS ---------------------------------------------------------------------------------------

    def _tls_data(self, ev: StreamData, tracked: _Tracked, out: list[ConnectionEvent]) -> None:
        """Stream data of a TLS connection, or of one whose first bytes do not yet tell."""
        before = tracked.holding()
        tls = tracked.tls_stream
        if tls is None:
            tls = self._sniff(ev, tracked, out)
            if tls is None:
                return
        self._emit(tracked, tls.data(ev.side, ev.ts, ev.data), out)
        grown = tracked.holding() - before
        if grown:
            self._set_held(ev.conn_id, tracked, tracked.framer_bytes + grown, tracked.reasm_bytes)

    def _sniff(self, ev: StreamData, tracked: _Tracked, out: list[ConnectionEvent]) -> TlsStream | None:
        """A connection's first bytes: TLS (its stream, with the bytes held so far fed) or not (they go to its
        framers as plaintext: None)."""
        sniffing = tracked.sniffed
        if sniffing is not None and sniffing.side != ev.side:
            verdict: int | None = SNIFF_PLAIN  # the other side spoke first: no ClientHello, no record
        else:
            first = bytes(ev.data[:SNIFF_WINDOW]) if sniffing is None else sniffing.data + bytes(ev.data)
            offset = ev.offset if sniffing is None else sniffing.offset
            verdict = sniff(first, mid_stream=offset > 0 or not tracked._spec.synced)
            if verdict is None:  # too few bytes: keep them (a few) until more come
                tracked.tls_state = move(TLS_MOVES, tracked.tls_state, TlsEvent.TOO_FEW)
                tracked.sniffed = _Sniffing(ev.side, ev.ts, offset, first)
                return None
        if verdict == SNIFF_PLAIN:
            self._decided_plain(ev.conn_id, tracked, out)
            self._data(ev, out)
            return None
        from inspector.kafka.tls_stream import (
            TlsStream,  # imported with the first TLS connection (cryptography: ~0.1 s)
        )

        if verdict == SNIFF_HELLO:
            client_side = ev.side  # the ClientHello's sender is the client, whatever port or SYN said
            if not tracked.has_conn:  # the plaintext starts at its beginning
                spec = tracked._spec
                tracked._spec = ConnectionSpec(conn_id=spec.conn_id, a=spec.a, b=spec.b, client_side=client_side,
                                               synced=True, limits=spec.limits, body_text=spec.body_text)
            tracked.conn.client_side = client_side
        else:
            client_side = tracked.conn.client_side or 0
        tls = TlsStream(tracked.conn, self.keylog, client_side, verdict == SNIFF_HELLO)
        tracked.tls_state = move(TLS_MOVES, tracked.tls_state, TlsEvent.SAID_TLS)
        tracked.tls_stream = tls
        tracked.sniffed = None
        if sniffing is not None:
            self._emit(tracked, tls.data(sniffing.side, sniffing.ts, sniffing.data), out)
        return tls

    def _decided_plain(self, key: int, tracked: _Tracked, out: list[ConnectionEvent]) -> None:
        """The connection is not TLS: the first bytes held while deciding go to its framers."""
        sniffing = tracked.sniffed
        tracked.sniffed = None
        tracked.tls_state = move(TLS_MOVES, tracked.tls_state, TlsEvent.SAID_PLAIN)
        if sniffing is not None:
            conn = tracked.conn
            before = conn.buffered
            self._emit(tracked, conn.data(sniffing.side, sniffing.ts, sniffing.data), out)
            grown = conn.buffered - before
            if grown and self.conns.get(key) is tracked:  # (closing, it is no longer counted)
                self._set_held(key, tracked, tracked.framer_bytes + grown, tracked.reasm_bytes)

    # -- memory held across connections ------------------------------------------------------------

    def _set_held(self, key: int, tracked: _Tracked, framer_bytes: int, reasm_bytes: int) -> None:
        """Count what connection ``key`` holds now."""
        old = tracked.framer_bytes + tracked.reasm_bytes
        new = framer_bytes + reasm_bytes
        self.held_bytes += new - old
        self._reasm_held += reasm_bytes - tracked.reasm_bytes
        tracked.framer_bytes = framer_bytes
        tracked.reasm_bytes = reasm_bytes
        if self._holders is not None and new != old:
            self._changed(key, tracked, new > old)

    def _changed(self, key: int, tracked: _Tracked, grew: bool) -> None:
        """While the heap is kept: a connection's held bytes grew (push an entry) or shrank."""
        holders = self._holders
        assert holders is not None
        if grew:
            heapq.heappush(holders, (-(tracked.framer_bytes + tracked.reasm_bytes), key))
            if len(holders) > self._holders_max:
                self._build_holders(holders)
        elif self.held_bytes <= self.max_held >> 2:
            self._holders = None  # little held again: stop keeping the heap

    def _build_holders(self, keys: Iterable[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
        """One entry per connection holding bytes: of the keys in the old entries (the stale ones dropped),
        or of every connection."""
        conns = self.conns
        entries = []
        for key in conns if keys is None else {key for _, key in keys}:
            tracked = conns.get(key)
            if tracked is not None and (held := tracked.framer_bytes + tracked.reasm_bytes):
                entries.append((-held, key))
        heapq.heapify(entries)
        self._holders = entries
        self._holders_max = 2 * len(entries) + 4096
        return entries

    def _largest_holder(self) -> int | None:
        """Key of the connection holding the most bytes (the oldest one of equals); its entry is taken."""
        holders = self._holders if self._holders is not None else self._build_holders()
        conns = self.conns
        while holders:
            neg, key = holders[0]
            tracked = conns.get(key)
            held = tracked.framer_bytes + tracked.reasm_bytes if tracked is not None else 0
            if held == -neg:
                heapq.heappop(holders)
                return key
            if held:
                heapq.heapreplace(holders, (-held, key))  # it holds less than when the entry was made
            else:
                heapq.heappop(holders)
        return None

    def _release(self, ts: float, out: list[ConnectionEvent]) -> None:
        """Release the connections holding the most until all together hold at most ``max_held``."""
        while self.held_bytes > self.max_held:
            key = self._largest_holder()
            if key is None:
                break
            self._release_one(key, ts, out)

    def _release_one(self, key: int, ts: float, out: list[ConnectionEvent]) -> None:
        """Holes become gaps and the data behind them is delivered; then the incomplete frames are skipped
        and the framers resync at the next plausible frame start. Every byte is reported, with HELD_REASON."""
        self.released += 1
        reassembler = self.reassembler
        tracked = self.conns[key]
        if tracked.reasm_bytes:
            out.extend(self._dispatch(reassembler.release(key, ts, HELD_REASON)))
            if self.conns.get(key) is not tracked:  # both FINs settled: it closed (and held nothing more)
                return
            self._set_held(key, tracked, tracked.framer_bytes, 0)
        if tracked.has_conn:
            tls = tracked.tls_stream
            events = tracked.conn.release(ts, HELD_REASON) if tls is None else tls.release(ts, HELD_REASON)
            if tracked.mode is not _NOT_KAFKA:
                self._emit(tracked, events, out)
            self._set_held(key, tracked, tracked.holding(), 0)

    def _open(self, ev: ConnectionOpened) -> None:
        a = Endpoint(ev.a_ip, ev.a_port)
        b = Endpoint(ev.b_ip, ev.b_port)
        client_side: int | None = 0 if ev.saw_syn else None
        mode = _UNDECIDED
        if self.ports:
            if ev.b_port in self.ports:
                client_side, mode = 0, _KAFKA
            elif ev.a_port in self.ports:
                client_side, mode = 1, _KAFKA
            else:
                mode = _NOT_KAFKA
        conn_id = self.conn_id_base + ev.conn_id
        self.max_conn_id = max(self.max_conn_id, conn_id)
        spec = ConnectionSpec(conn_id=conn_id, a=a, b=b, client_side=client_side, synced=ev.saw_syn,
                              limits=self.limits, body_text=self.body_text)
        self.conns[ev.conn_id] = _Tracked(spec, mode)

    def _emit(self, tracked: _Tracked, events: list[ConnectionEvent], out: list[ConnectionEvent]) -> None:
        if tracked.mode is _KAFKA:
            out.extend(events)
            return
        tracked.held.extend(events)
        if _confirms_kafka(events):
            tracked.mode = move(MODE_MOVES, tracked.mode, ModeEvent.DECODED)
            out.extend(tracked.held)
            tracked.held = []
        elif len(tracked.held) > DETECT_MAX_EVENTS or tracked.bytes_seen > DETECT_MAX_BYTES:
            tracked.mode = move(MODE_MOVES, tracked.mode, ModeEvent.NOTHING_DECODED)
            tracked.ignored_bytes += tracked.wire_bytes
            tracked.held = []

    def _close(self, conn_id: int, ts: float, stats: ConnStats | None = None) -> list[ConnectionEvent]:
        tracked = self.conns.pop(conn_id, None)
        if tracked is None:
            return []
        self.held_bytes -= tracked.framer_bytes + tracked.reasm_bytes  # its framers and holes are settled here
        self._reasm_held -= tracked.reasm_bytes
        tracked.framer_bytes = tracked.reasm_bytes = 0
        out: list[ConnectionEvent] = []
        if tracked.mode is not _NOT_KAFKA:
            if tracked.tls_state is _SNIFFING:
                self._decided_plain(conn_id, tracked, out)
            if tracked.has_conn:
                tls = tracked.tls_stream
                self._emit(tracked, tracked.conn.finish(ts) if tls is None else tls.finish(ts), out)
            if tracked.mode is _UNDECIDED:
                # Never decoded a single message: not Kafka (or nothing to show); a TLS connection whose content
                # was not seen (nothing decrypted) is reported.
                tls = tracked.tls_stream
                shown = (bool(tracked.held) and any(isinstance(e, KafkaMessage) for e in tracked.held)
                         or tls is not None and not tls.decrypted)
                tracked.mode = move(MODE_MOVES, _UNDECIDED, ModeEvent.DECODED if shown else ModeEvent.NOTHING_DECODED)
                if shown:
                    out.extend(tracked.held)
                else:
                    tracked.ignored_bytes += tracked.wire_bytes
                tracked.held = []
        if stats is not None and tracked.mode is _KAFKA and tracked.has_conn:
            retransmitted = tracked.conn.stats.bytes_retransmitted
            retransmitted[0] = stats.sides[0].retransmitted_bytes
            retransmitted[1] = stats.sides[1].retransmitted_bytes
        self.closed.append(Closed(tracked, tracked.mode is _KAFKA, tracked.ignored_bytes))
        return out


def _confirms_kafka(events: list[ConnectionEvent]) -> bool:
    """Whether a connection's events show it is Kafka: a message that decoded, or that stopped only at
    --max-elements (else a hostile frame hides in "not Kafka")."""
    for e in events:
        if isinstance(e, KafkaMessage) and is_kafka(e.message):
            return True
    return False
