"""What TCP reassembly reports: the events of :class:`~inspector.tcp.reassembly.Reassembler` and its counters.

Each direction of a connection is a byte stream; every stream byte up to the direction's highest offset is
reported exactly once, delivered in a :class:`StreamData` or declared lost in a :class:`StreamGap` (with one
of the ``GAP_*`` reasons). A connection starts with :class:`ConnectionOpened` and ends with
:class:`ConnectionClosed` (one of the ``CLOSE_*`` reasons), which carries its final :class:`ConnStats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inspector.frozen_init import fast_frozen_init

__all__ = [
    "CLOSE_END",
    "CLOSE_EVICTED",
    "CLOSE_FIN",
    "CLOSE_IDLE",
    "CLOSE_PORT_REUSE",
    "CLOSE_RST",
    "GAP_ACKED",
    "GAP_BUFFER",
    "GAP_CLOSE",
    "GAP_HELD",
    "GAP_SNAPLEN",
    "IGNORED_AFTER_CLOSE",
    "IGNORED_DATA_AGAIN",
    "IGNORED_HANDSHAKE_AGAIN",
    "IGNORED_NO_CONNECTION",
    "IGNORED_RST_DATA",
    "IGNORED_REASONS",
    "ConnStats",
    "ConnectionClosed",
    "ConnectionOpened",
    "DirectionStats",
    "Endpoint",
    "Event",
    "SegmentTruncated",
    "StreamData",
    "StreamGap",
]

Endpoint = tuple[str, int]
_NO_ENDPOINT: Endpoint = ("", 0)

# StreamGap reasons
GAP_ACKED: Final = "acked but not captured"  # the receiver acknowledged bytes the capture missed
GAP_BUFFER: Final = "buffer limit exceeded"  # too much data waited behind the hole
GAP_SNAPLEN: Final = "snaplen truncated"  # the segment was cut by the capture's snap length
GAP_CLOSE: Final = "missing at close"  # still missing when the connection was closed / capture ended
GAP_HELD: Final = "held bytes limit exceeded (--max-held)"  # released by release(): all connections held too much

# Why a segment was ignored (Reassembler.ignored counts the segments and their payload bytes by these): the
# segments that reach no stream byte. A connection's own retransmissions are not among them: they are its
# bytes_retransmitted.
IGNORED_NO_CONNECTION: Final = "rst without connection"  # a RST for no connection tracked
IGNORED_AFTER_CLOSE: Final = "after close"  # no data, its connection closed: the closing handshake's last ACK, RSTs
IGNORED_HANDSHAKE_AGAIN: Final = "handshake again"  # a SYN/SYN-ACK with the sequence number of a closed connection
IGNORED_DATA_AGAIN: Final = "data again"  # data a closed connection had carried: a late retransmission, or the
#                                           same traffic a second time (a capture concatenated with a copy of itself)
IGNORED_RST_DATA: Final = "rst data"  # the payload of a RST (diagnostic text some stacks send): not stream bytes
#: Every reason, in the order summaries list them.
IGNORED_REASONS: Final = (IGNORED_DATA_AGAIN, IGNORED_HANDSHAKE_AGAIN, IGNORED_RST_DATA, IGNORED_AFTER_CLOSE,
                          IGNORED_NO_CONNECTION)

# ConnectionClosed reasons
CLOSE_FIN: Final = "fin"
CLOSE_RST: Final = "rst"
CLOSE_IDLE: Final = "idle"
CLOSE_END: Final = "end of capture"
CLOSE_EVICTED: Final = "evicted"
CLOSE_PORT_REUSE: Final = "port reuse"  # a new handshake on the same 4-tuple replaced a connection still open



@dataclass(frozen=True)  # compiled, an extension type (stream_events.pxd); from source, the slots below
class ConnectionOpened:
    """First packet of a connection. Side 0 is ``a``, side 1 is ``b``.

    ``saw_syn`` is True when that first packet was part of the handshake (SYN or SYN-ACK), so both
    streams start at their beginning; False for a connection already running when the capture started.
    """

    __slots__ = ("conn_id", "ts", "a_ip", "a_port", "b_ip", "b_port", "saw_syn")

    conn_id: int
    ts: float
    a_ip: str
    a_port: int
    b_ip: str
    b_port: int
    saw_syn: bool


fast_frozen_init(ConnectionOpened)  # from source (compiled, a no-op)


@dataclass  # compiled, an extension type (stream_events.pxd), read-only to Python; from source, the slots below
class StreamData:
    """Contiguous stream bytes ``[offset, offset + len(data))`` of one direction, delivered once.

    ``data`` is a memoryview slice of the captured frame (no copy). ``src``/``dst`` are the (ip, port)
    of the sending and receiving side of this direction.
    """

    __slots__ = ("conn_id", "side", "ts", "offset", "data", "src", "dst")

    conn_id: int
    side: int
    ts: float
    offset: int
    data: memoryview
    src: Endpoint
    dst: Endpoint


def _new_stream_data(conn_id: int, side: int, ts: float, offset: int, data: memoryview, src: Endpoint,
                     dst: Endpoint) -> StreamData:
    """StreamData(...) for the hot path, every field positionally: compiled, stored from C (the class's own
    ``__init__`` parses its seven arguments as a Python call: docs/performance.md)."""
    s = StreamData.__new__(StreamData)
    s.conn_id = conn_id
    s.side = side
    s.ts = ts
    s.offset = offset
    s.data = data
    s.src = src
    s.dst = dst
    return s


@dataclass(frozen=True)  # compiled, an extension type (stream_events.pxd); from source, a plain frozen dataclass
class StreamGap:
    """Stream bytes ``[offset, offset + length)`` of one direction that will never be delivered."""

    conn_id: int
    side: int
    ts: float
    offset: int
    length: int
    reason: str
    src: Endpoint = _NO_ENDPOINT
    dst: Endpoint = _NO_ENDPOINT


@dataclass(frozen=True)  # compiled, an extension type (stream_events.pxd); from source, a plain frozen dataclass
class SegmentTruncated:
    """A segment cut by the capture's snap length: ``captured`` bytes present, ``missing`` cut.

    Its captured part is not delivered; the whole segment is reported as a :class:`StreamGap` with
    reason ``"snaplen truncated"`` when the stream reaches it. ``offset`` is where the segment starts.
    """

    conn_id: int
    side: int
    ts: float
    offset: int
    captured: int
    missing: int
    src: Endpoint = _NO_ENDPOINT
    dst: Endpoint = _NO_ENDPOINT


@dataclass(frozen=True)  # compiled, an extension type (stream_events.pxd); from source, the slots below
class DirectionStats:
    """Counters of one direction (bytes are TCP payload bytes)."""

    __slots__ = (
        "bytes_seen", "bytes_delivered", "bytes_gap", "retransmitted_bytes", "out_of_order_segments",
        "truncated_segments", "highest_offset", "buffered_bytes",
    )

    bytes_seen: int  # payload of every segment seen, retransmissions and cut bytes included
    bytes_delivered: int  # delivered in StreamData events
    bytes_gap: int  # reported in StreamGap events
    retransmitted_bytes: int  # bytes seen again for offsets already delivered, declared lost or buffered
    out_of_order_segments: int  # segments that arrived beyond a hole
    truncated_segments: int  # segments cut by the snap length
    highest_offset: int  # stream offset reached: bytes_delivered + bytes_gap
    buffered_bytes: int  # waiting behind a hole right now (0 once closed)


fast_frozen_init(DirectionStats)  # from source (compiled, a no-op)


@dataclass(frozen=True)  # compiled, an extension type (stream_events.pxd); from source, the slots below
class ConnStats:
    """Counters of one connection; ``sides[0]`` is the direction sent by side 0."""

    __slots__ = ("conn_id", "sides")

    conn_id: int
    sides: tuple[DirectionStats, DirectionStats]

    @property
    def bytes_seen(self) -> int:
        return self.sides[0].bytes_seen + self.sides[1].bytes_seen

    @property
    def bytes_delivered(self) -> int:
        return self.sides[0].bytes_delivered + self.sides[1].bytes_delivered

    @property
    def bytes_gap(self) -> int:
        return self.sides[0].bytes_gap + self.sides[1].bytes_gap

    @property
    def retransmitted_bytes(self) -> int:
        return self.sides[0].retransmitted_bytes + self.sides[1].retransmitted_bytes

    @property
    def out_of_order_segments(self) -> int:
        return self.sides[0].out_of_order_segments + self.sides[1].out_of_order_segments


fast_frozen_init(ConnStats)  # from source (compiled, a no-op)


@dataclass(frozen=True)  # compiled, an extension type (stream_events.pxd); from source, a plain frozen dataclass
class ConnectionClosed:
    """The connection ended; ``reason`` is one of the ``CLOSE_*`` values. No event follows for it.

    ``stats`` are the connection's final counters (always set by the reassembler).
    """

    conn_id: int
    ts: float
    reason: str
    stats: ConnStats | None = None


Event = ConnectionOpened | StreamData | StreamGap | SegmentTruncated | ConnectionClosed
