"""The state :class:`~inspector.tcp.reassembly.Reassembler` keeps per connection and per direction.

A direction maps TCP sequence numbers (modulo 2**32) to unbounded stream offsets and counts what it saw,
delivered, lost in gaps, retransmitted, received out of order and lost to the snap length; its
:meth:`DirState.stats` are what ``connections.parquet`` accounts. Compiled, both are extension types
(``stream_state.pxd``) whose fields the reassembler reads as C struct members.
"""

from __future__ import annotations

from inspector.tcp.stream_events import ConnStats, DirectionStats, Endpoint

__all__ = ["SEQ_HALF", "SEQ_MASK", "SEQ_WRAP", "ConnState", "DirState"]

#: Sequence-number arithmetic modulo 2**32.
SEQ_MASK = 0xFFFFFFFF
SEQ_HALF = 0x80000000
SEQ_WRAP = 0x100000000
_MASK = SEQ_MASK  # compiled, a C integer (stream_state.pxd)


class DirState:
    """One direction of a connection: where its stream stands and what it counted."""

    __slots__ = ("base_set", "base_seq", "buf_bytes", "delivered", "dst", "fin_off", "gap", "heap", "nxt",
                 "nxt_seq", "ooo", "retrans", "seen", "src", "trunc")

    def __init__(self, src: Endpoint, dst: Endpoint) -> None:
        self.src = src
        self.dst = dst
        self.base_set = False
        self.base_seq = 0  # sequence number of stream offset 0
        self.nxt = 0  # next stream offset to deliver (== highest offset reached)
        self.nxt_seq = 0  # (base_seq + nxt) mod 2**32
        # Segments waiting behind a hole: (offset, tiebreak, end, data or None for a snaplen-cut one).
        self.heap: list[tuple[int, int, int, memoryview | None]] = []
        self.buf_bytes = 0
        self.fin_off: int | None = None
        self.seen = 0
        self.delivered = 0
        self.gap = 0
        self.retrans = 0
        self.ooo = 0
        self.trunc = 0

    def set_base(self, seq: int) -> None:
        self.base_set = True
        self.base_seq = self.nxt_seq = seq & _MASK

    def offset_of(self, seq: int) -> int:
        """Stream offset of sequence number ``seq``: the one nearest to the next expected offset."""
        delta = (seq - self.nxt_seq) & _MASK
        if delta >= SEQ_HALF:
            delta -= SEQ_WRAP
        return self.nxt + delta

    def end_offset(self) -> int:
        return self.nxt if self.fin_off is None else max(self.nxt, self.fin_off)

    def stats(self) -> DirectionStats:
        return DirectionStats(self.seen, self.delivered, self.gap, self.retrans, self.ooo, self.trunc,
                              self.nxt, self.buf_bytes)


class ConnState:
    """Both directions of one connection, as the reassembler keeps them."""

    __slots__ = ("closed", "conn_id", "dirs", "keys", "last_ts", "saw_syn")

    def __init__(self, conn_id: int, a: Endpoint, b: Endpoint, ts: float, saw_syn: bool) -> None:
        self.conn_id = conn_id
        self.dirs = (DirState(a, b), DirState(b, a))
        self.keys = ((a[0], a[1], b[0], b[1]), (b[0], b[1], a[0], a[1]))
        self.last_ts = ts
        self.closed = False
        self.saw_syn = saw_syn

    def has_data(self) -> bool:
        return any(d.base_set for d in self.dirs)

    def stats(self) -> ConnStats:
        return ConnStats(self.conn_id, (self.dirs[0].stats(), self.dirs[1].stats()))
