"""Sans-I/O TCP stream reassembly, one byte stream per direction of each connection.

:class:`Reassembler` takes :class:`~inspector.capture.packets.Segment` objects (with their capture timestamps)
and returns events; it never opens files or sockets and never reads a clock: time only advances through
the timestamps it is given. Bad or missing traffic never raises: it becomes a :class:`StreamGap`,
:class:`SegmentTruncated` or :class:`ConnectionClosed` event with a reason.

Stream model
------------
Each direction of a connection is a byte stream whose offset 0 is the byte after the SYN when the SYN
was seen, else the first byte of the first segment seen carrying data (or a FIN) in that direction
(captures that start mid-connection). Offsets are Python ints, unbounded: sequence numbers wrap modulo
2**32, offsets do not. Every stream byte up to the direction's highest offset is reported exactly once,
either delivered in a :class:`StreamData` (a zero-copy memoryview slice of the captured frame) or
declared lost in a :class:`StreamGap`, so for each direction::

    bytes_delivered + bytes_gap == highest_offset

Data that arrives in order is delivered at once. Data beyond a hole is buffered until the hole is
filled; the hole becomes a gap when an ACK from the other side shows that the receiver got bytes the
capture never saw, when the direction's buffer exceeds ``max_buffered_per_direction``, when the caller
releases the connection's buffers (:meth:`Reassembler.release`, to bound the memory held across
connections), or when the connection is closed (FIN/RST/idle/eviction/end of capture). Retransmitted and
overlapping bytes are trimmed by slicing, never delivered twice. Data buffered out of order is delivered
with the timestamp of the segment that made it contiguous (the moment a receiver could have read it), so
event timestamps never go backwards within a direction.

Connection identity is the 4-tuple plus a ``conn_id`` given on first sight; a SYN on a tuple whose
connection closed (or that carries a different initial sequence number) starts a new ``conn_id``
(port reuse). Side 0 is the side that sent the SYN (or received the SYN-ACK) if the handshake was seen,
otherwise the side that sent the first packet seen; the reassembler does not know which side is the
Kafka broker.
"""

from __future__ import annotations

import heapq

from contract.limits import DEFAULT_LIMITS
from inspector.capture.packets import ACK, FIN, RST, SYN, Segment
from inspector.tcp.stream_events import (
    CLOSE_END,
    CLOSE_EVICTED,
    CLOSE_FIN,
    CLOSE_IDLE,
    CLOSE_PORT_REUSE,
    CLOSE_RST,
    GAP_ACKED,
    GAP_BUFFER,
    GAP_CLOSE,
    GAP_HELD,
    GAP_SNAPLEN,
    IGNORED_AFTER_CLOSE,
    IGNORED_DATA_AGAIN,
    IGNORED_HANDSHAKE_AGAIN,
    IGNORED_NO_CONNECTION,
    IGNORED_RST_DATA,
    ConnectionClosed,
    ConnectionOpened,
    ConnStats,
    Endpoint,
    Event,
    SegmentTruncated,
    StreamGap,
    _new_stream_data,
)
from inspector.tcp.stream_state import SEQ_MASK, ConnState, DirState

__all__ = ["Reassembler"]


# The TCP flags the per-segment path tests, under private names: compiled, C integers (reassembly.pxd), so
# those tests are C operations rather than Python ones on the flags object.
_SYN, _FIN, _RST, _ACK = SYN, FIN, RST, ACK

# Compiled, _MASK and _ACK_WINDOW are C integers too (reassembly.pxd): the common path's sequence arithmetic is C.
_MASK = SEQ_MASK
_ACK_WINDOW = 1 << 30  # an ACK further ahead than this (max scaled TCP window) is ignored as bogus
_LATE_WINDOW = 1 << 24  # data this far behind a closed connection's end is a late retransmission

# ----------------------------------------------------------------------------------------------------
# Reassembler


class Reassembler:
    """Reassemble the TCP streams of any number of connections from segments in capture order.

    Args:
        max_buffered_per_direction: payload bytes a direction may hold behind a hole; beyond it the
            hole is declared a gap (reason ``"buffer limit exceeded"``) and the data behind it delivered.
        max_connections: connections tracked at once (closed ones remembered to recognise late packets
            included); beyond it the least recently active are evicted (closed ones silently, open ones
            with a ``ConnectionClosed(reason="evicted")``), one percent of the limit at a time.
    """

    def __init__(self, max_buffered_per_direction: int = DEFAULT_LIMITS.max_buffered,
                 max_connections: int = DEFAULT_LIMITS.max_connections) -> None:
        if max_buffered_per_direction < 0 or max_connections < 1:
            raise ValueError("max_buffered_per_direction must be >= 0 and max_connections >= 1")
        self.max_buffered_per_direction = max_buffered_per_direction
        self.max_connections = max_connections
        self._flows: dict[tuple[str, int, str, int], tuple[ConnState, int]] = {}
        self._conns: dict[int, ConnState] = {}
        self._next_id = 1
        self._tiebreak = 0
        self.buffered = 0  # bytes waiting behind holes, all connections together
        # Segments that reached no stream byte, by why (stream_events' IGNORED_*): [segments, payload bytes].
        self.ignored: dict[str, list[int]] = {}
        # The flow table's last two hits (the two directions of the busiest connection), matched by the address
        # strings' identity and the ports: most segments skip the 4-tuple and its look-up. Emptied whenever the
        # table changes.
        self._forget_hits()

    def _forget_hits(self) -> None:
        self._src0: str | None = None
        self._dst0: str | None = None
        self._src1: str | None = None
        self._dst1: str | None = None
        self._sport0 = self._dport0 = self._sport1 = self._dport1 = 0
        self._hit0: tuple[ConnState, int] | None = None
        self._hit1: tuple[ConnState, int] | None = None

    # -- public API ------------------------------------------------------------------------------------

    def feed(self, seg: Segment) -> list[Event]:
        """Process one segment; return the events it causes, in order."""
        out: list[Event] = []
        flags = seg.flags
        src, dst, sport, dport = seg.src_ip, seg.dst_ip, seg.src_port, seg.dst_port
        if src is self._src0 and dst is self._dst0 and sport == self._sport0 and dport == self._dport0:
            entry = self._hit0
        elif src is self._src1 and dst is self._dst1 and sport == self._sport1 and dport == self._dport1:
            entry = self._hit1
        else:
            entry = self._flows.get((src, sport, dst, dport))
            if entry is not None:
                self._src1, self._dst1, self._sport1, self._dport1 = self._src0, self._dst0, self._sport0, self._dport0
                self._hit1 = self._hit0
                self._src0, self._dst0, self._sport0, self._dport0 = src, dst, sport, dport
                self._hit0 = entry
        if entry is None:
            if flags & _RST:
                self._ignore(IGNORED_NO_CONNECTION, seg)
                return out
            conn, side = self._open(seg, out)
        else:
            conn, side = entry
            if conn.closed or flags & _SYN:
                found = self._check_reuse(conn, side, seg, out)
                if found is None:  # counted in ignored, with why
                    return out
                conn, side = found
        ts = seg.ts
        conn.last_ts = ts
        d = conn.dirs[side]
        if flags & (_SYN | _FIN | _RST) or seg.truncated or not d.base_set:
            self._slow(conn, side, d, seg, out)
            return out
        payload = seg.payload
        n = len(payload)
        if n:
            nxt_seq = d.nxt_seq
            seq = seg.seq
            if seq == nxt_seq and not d.heap:  # the common case: next bytes, nothing waiting
                out.append(_new_stream_data(conn.conn_id, side, ts, d.nxt, payload, d.src, d.dst))
                d.seen += n
                d.delivered += n
                d.nxt += n
                size = n  # compiled, a C integer (n stays the object the counters add)
                d.nxt_seq = (nxt_seq + size) & _MASK
                if d.fin_off is not None:
                    self._maybe_finished(conn, ts, out)
            else:
                self._data(conn, side, d, d.offset_of(seg.seq), payload, n, ts, out)
        if flags & _ACK:
            o = conn.dirs[1 - side]
            if o.base_set:
                ack = seg.ack
                nxt_seq = o.nxt_seq
                delta = (ack - nxt_seq) & _MASK
                if 0 < delta < _ACK_WINDOW:
                    self._acked(conn, 1 - side, o, o.nxt + delta, ts, out)
        return out

    def flush(self, ts: float) -> list[Event]:
        """End of capture: report what is still buffered or missing and close every connection."""
        out: list[Event] = []
        for conn in list(self._conns.values()):
            if not conn.closed:
                self._close(conn, ts, CLOSE_END, out)
            self._forget(conn)
        return out

    def close_idle(self, ts: float, idle_seconds: float) -> list[Event]:
        """Close connections with no packet since ``ts - idle_seconds`` (reason ``"idle"``).

        Call it now and then (for example once per second of capture time); it walks all connections.
        Closed connections remembered to recognise late packets are forgotten silently.
        """
        out: list[Event] = []
        limit = ts - idle_seconds
        for conn in [c for c in self._conns.values() if c.last_ts < limit]:
            if not conn.closed:
                self._close(conn, ts, CLOSE_IDLE, out)
            self._forget(conn)
        return out

    def stats(self) -> dict[int, ConnStats]:
        """Counters of every open connection, by ``conn_id`` (closed ones: see ``ConnectionClosed.stats``)."""
        return {cid: c.stats() for cid, c in self._conns.items() if not c.closed}

    def endpoints(self, conn_id: int) -> tuple[Endpoint, Endpoint] | None:
        """(side 0, side 1) endpoints of a connection still tracked, else None."""
        conn = self._conns.get(conn_id)
        return None if conn is None else (conn.dirs[0].src, conn.dirs[1].src)

    def conn_id_for(self, seg: Segment) -> int | None:
        """``conn_id`` of the open connection ``seg``'s 4-tuple belongs to now (after ``feed(seg)``), else None."""
        entry = self._flows.get((seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port))
        return None if entry is None or entry[0].closed else entry[0].conn_id

    def buffered_for(self, conn_id: int) -> int:
        """Bytes waiting behind holes in both directions of a connection (0 when not tracked)."""
        conn = self._conns.get(conn_id)
        return 0 if conn is None else conn.dirs[0].buf_bytes + conn.dirs[1].buf_bytes

    def release(self, conn_id: int, ts: float, reason: str = GAP_HELD) -> list[Event]:
        """Free what an open connection buffers: its holes become gaps with ``reason`` and the data waiting
        behind them is delivered (the connection stays open). For a caller that limits the memory held
        across connections; the connection may close here if both FINs are now settled."""
        out: list[Event] = []
        conn = self._conns.get(conn_id)
        if conn is None or conn.closed:
            return out
        for side, d in enumerate(conn.dirs):
            while d.heap:
                first = d.heap[0][0]
                if first > d.nxt:
                    self._gap(conn, side, d, first - d.nxt, reason, ts, out)
                self._drain(conn, side, d, ts, out)
        if conn.dirs[0].fin_off is not None or conn.dirs[1].fin_off is not None:
            self._maybe_finished(conn, ts, out)
        return out

    @property
    def ignored_segments(self) -> int:
        """Segments ignored, whatever the reason."""
        return sum(counts[0] for counts in self.ignored.values())

    def _ignore(self, reason: str, seg: Segment) -> None:
        counts = self.ignored.get(reason)
        if counts is None:
            counts = self.ignored[reason] = [0, 0]
        counts[0] += 1
        counts[1] += len(seg.payload) + seg.missing

    @property
    def open_connections(self) -> int:
        return sum(1 for c in self._conns.values() if not c.closed)

    # -- connection table ------------------------------------------------------------------------------

    def _open(self, seg: Segment, out: list[Event]) -> tuple[ConnState, int]:
        if len(self._conns) >= self.max_connections:
            self._evict(seg.ts, out)
        src: Endpoint = (seg.src_ip, seg.src_port)
        dst: Endpoint = (seg.dst_ip, seg.dst_port)
        flags = seg.flags
        # A SYN-ACK's sender answered a SYN: it is side 1 even though the SYN itself was not seen.
        side = 1 if flags & SYN and flags & ACK else 0
        a, b = (src, dst) if side == 0 else (dst, src)
        conn = ConnState(self._next_id, a, b, seg.ts, bool(flags & SYN))
        self._next_id += 1
        self._conns[conn.conn_id] = conn
        self._flows[conn.keys[0]] = (conn, 0)
        self._flows[conn.keys[1]] = (conn, 1)
        self._forget_hits()
        out.append(ConnectionOpened(conn.conn_id, seg.ts, a[0], a[1], b[0], b[1], conn.saw_syn))
        return conn, side

    def _forget(self, conn: ConnState) -> None:
        self._forget_hits()
        self._conns.pop(conn.conn_id, None)
        for side, key in enumerate(conn.keys):
            if self._flows.get(key) == (conn, side):
                del self._flows[key]

    def _evict(self, ts: float, out: list[Event]) -> None:
        count = max(1, self.max_connections // 100)
        victims = heapq.nsmallest(count, self._conns.values(), key=lambda c: (not c.closed, c.last_ts))
        for conn in victims:
            if not conn.closed:
                self._close(conn, ts, CLOSE_EVICTED, out)
            self._forget(conn)

    def _check_reuse(self, conn: ConnState, side: int, seg: Segment, out: list[Event]) -> tuple[ConnState, int] | None:
        """A SYN, or a packet for a closed connection: same connection, a new one, or ignore (None: counted in
        ``ignored``)."""
        flags = seg.flags
        d = conn.dirs[side]
        if flags & SYN:
            same_isn = d.base_set and (seg.seq + 1) & _MASK == d.base_seq
            if same_isn:  # retransmitted SYN / SYN-ACK
                if conn.closed:
                    self._ignore(IGNORED_HANDSHAKE_AGAIN, seg)
                    return None
                return conn, side
            if not conn.closed:
                if not d.base_set and side == (1 if flags & ACK else 0):
                    return conn, side  # the SYN-ACK answering the SYN seen (or a late SYN): same connection
                self._close(conn, seg.ts, CLOSE_PORT_REUSE, out)
            self._forget(conn)
            return self._open(seg, out)
        # a non-SYN packet for a closed connection
        if flags & RST or (not seg.payload and not seg.truncated):
            self._ignore(IGNORED_AFTER_CLOSE, seg)  # the end of the closing handshake, or a stray RST
            return None
        if d.base_set:
            off = d.offset_of(seg.seq)
            end = d.end_offset()
            if end - _LATE_WINDOW <= off <= end:
                self._ignore(IGNORED_DATA_AGAIN, seg)  # a late retransmission, or the same traffic again
                return None
        self._forget(conn)  # data from elsewhere in sequence space: a new connection whose SYN we missed
        return self._open(seg, out)

    # -- per-direction processing ----------------------------------------------------------------------

    def _slow(self, conn: ConnState, side: int, d: DirState, seg: Segment, out: list[Event]) -> None:
        """Segments with SYN/FIN/RST flags, snaplen-cut segments and the first segment of a direction."""
        flags = seg.flags
        ts = seg.ts
        if flags & RST:
            if seg.payload or seg.missing:
                self._ignore(IGNORED_RST_DATA, seg)
            self._close(conn, ts, CLOSE_RST, out)
            return
        seq = seg.seq
        if flags & SYN:
            seq = (seq + 1) & _MASK  # the SYN takes one sequence number; data (TCP Fast Open) follows
            if not d.base_set:
                d.set_base(seq)
        payload = seg.payload
        n = len(payload)
        length = n + seg.missing
        if not d.base_set and (length or flags & FIN):
            d.set_base(seq)
        if d.base_set:
            off = d.offset_of(seq)
            if flags & FIN and d.fin_off is None:
                d.fin_off = off + length  # set first, so the data below can complete the direction
            if seg.truncated:
                self._truncated(conn, side, d, off, n, seg.missing, ts, out)
            elif n:
                self._data(conn, side, d, off, payload, n, ts, out)
        if flags & ACK:
            o = conn.dirs[1 - side]
            if o.base_set:
                delta = (seg.ack - o.nxt_seq) & _MASK
                if 0 < delta < _ACK_WINDOW:
                    self._acked(conn, 1 - side, o, o.nxt + delta, ts, out)
        if not conn.closed and (conn.dirs[0].fin_off is not None or conn.dirs[1].fin_off is not None):
            self._maybe_finished(conn, ts, out)

    def _data(self, conn: ConnState, side: int, d: DirState, off: int, payload: memoryview, n: int, ts: float,
              out: list[Event]) -> None:
        d.seen += n
        nxt = d.nxt
        end = off + n
        if end <= nxt:  # all already delivered or declared lost
            d.retrans += n
            return
        if off < nxt:  # overlaps what was delivered: keep only the new tail
            d.retrans += nxt - off
            payload = payload[nxt - off:]
            off = nxt
        if off == nxt:
            out.append(_new_stream_data(conn.conn_id, side, ts, off, payload, d.src, d.dst))
            d.delivered += end - off
            d.nxt = end
            d.nxt_seq = (d.base_seq + end) & _MASK
            if d.heap:
                self._drain(conn, side, d, ts, out)
        else:
            d.ooo += 1
            self._tiebreak += 1
            heapq.heappush(d.heap, (off, self._tiebreak, end, payload))
            d.buf_bytes += n
            self.buffered += n
            if d.buf_bytes > self.max_buffered_per_direction:
                self._overflow(conn, side, d, ts, out)
        if d.fin_off is not None and not conn.closed:
            self._maybe_finished(conn, ts, out)

    def _truncated(self, conn: ConnState, side: int, d: DirState, off: int, captured: int, missing: int, ts: float,
                   out: list[Event]) -> None:
        length = captured + missing
        d.seen += length
        d.trunc += 1
        out.append(SegmentTruncated(conn.conn_id, side, ts, off, captured, missing, d.src, d.dst))
        nxt = d.nxt
        end = off + length
        if end <= nxt:
            d.retrans += length
            return
        if off < nxt:
            d.retrans += nxt - off
            off = nxt
        if off == nxt:
            self._gap(conn, side, d, end - off, GAP_SNAPLEN, ts, out)
            if d.heap:
                self._drain(conn, side, d, ts, out)
        else:
            d.ooo += 1
            self._tiebreak += 1
            heapq.heappush(d.heap, (off, self._tiebreak, end, None))
            d.buf_bytes += end - off
            self.buffered += end - off
            if d.buf_bytes > self.max_buffered_per_direction:
                self._overflow(conn, side, d, ts, out)

    def _gap(self, conn: ConnState, side: int, d: DirState, length: int, reason: str, ts: float,
             out: list[Event]) -> None:
        out.append(StreamGap(conn.conn_id, side, ts, d.nxt, length, reason, d.src, d.dst))
        d.gap += length
        d.nxt += length
        d.nxt_seq = (d.base_seq + d.nxt) & _MASK

    def _drain(self, conn: ConnState, side: int, d: DirState, ts: float, out: list[Event]) -> None:
        """Deliver the buffered segments that the stream has reached."""
        heap = d.heap
        while heap and heap[0][0] <= d.nxt:
            off, _, end, data = heapq.heappop(heap)
            d.buf_bytes -= end - off
            self.buffered -= end - off
            nxt = d.nxt
            if end <= nxt:
                d.retrans += end - off
                continue
            if off < nxt:
                d.retrans += nxt - off
            if data is None:
                self._gap(conn, side, d, end - nxt, GAP_SNAPLEN, ts, out)
                continue
            out.append(_new_stream_data(conn.conn_id, side, ts, nxt, data[nxt - off:] if off < nxt else data,
                                        d.src, d.dst))
            d.delivered += end - nxt
            d.nxt = end
            d.nxt_seq = (d.base_seq + end) & _MASK

    def _overflow(self, conn: ConnState, side: int, d: DirState, ts: float, out: list[Event]) -> None:
        while d.heap and d.buf_bytes > self.max_buffered_per_direction:
            self._gap(conn, side, d, d.heap[0][0] - d.nxt, GAP_BUFFER, ts, out)
            self._drain(conn, side, d, ts, out)

    def _acked(self, conn: ConnState, side: int, d: DirState, ack_off: int, ts: float, out: list[Event]) -> None:
        """The receiver of direction ``side`` acknowledged up to ``ack_off``: bytes below it that the
        capture has not delivered will never come (the sender will not retransmit them)."""
        if d.fin_off is not None and ack_off > d.fin_off:
            ack_off = d.fin_off  # the FIN takes a sequence number but is not a stream byte
        while d.nxt < ack_off:
            limit = ack_off
            if d.heap and d.heap[0][0] < limit:
                limit = d.heap[0][0]
            if limit > d.nxt:
                self._gap(conn, side, d, limit - d.nxt, GAP_ACKED, ts, out)
            self._drain(conn, side, d, ts, out)
        if d.fin_off is not None and not conn.closed:
            self._maybe_finished(conn, ts, out)

    def _maybe_finished(self, conn: ConnState, ts: float, out: list[Event]) -> None:
        """Close the connection once both directions sent a FIN and every byte before them is settled."""
        d0, d1 = conn.dirs
        if (d0.fin_off is not None and d1.fin_off is not None and not d0.heap and not d1.heap
                and d0.nxt >= d0.fin_off and d1.nxt >= d1.fin_off):
            self._close(conn, ts, CLOSE_FIN, out)

    def _flush_dir(self, conn: ConnState, side: int, d: DirState, ts: float, out: list[Event]) -> None:
        while d.heap:
            first = d.heap[0][0]
            if first > d.nxt:
                self._gap(conn, side, d, first - d.nxt, GAP_CLOSE, ts, out)
            self._drain(conn, side, d, ts, out)
        if d.fin_off is not None and d.fin_off > d.nxt:
            self._gap(conn, side, d, d.fin_off - d.nxt, GAP_CLOSE, ts, out)

    def _close(self, conn: ConnState, ts: float, reason: str, out: list[Event]) -> None:
        for side, d in enumerate(conn.dirs):
            self._flush_dir(conn, side, d, ts, out)
        conn.closed = True
        out.append(ConnectionClosed(conn.conn_id, ts, reason, conn.stats()))
