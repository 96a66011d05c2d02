"""Link layer -> IP -> TCP segment, without copying payload bytes.

:func:`parse_frame` (and :func:`parse_packet`, for a :class:`~inspector.capture.parser.RawPacket`) turns a
captured frame into a :class:`Segment` (TCP) or a :class:`Skipped` (anything else, with a reason): the one
parser of link, IP and TCP headers, for classic pcap, pcapng and the tap. Compiled (``packets.pxd``), it reads
the headers as C bytes straight from the frame; the payload is a ``memoryview`` slice of the frame, never a
copy. The classic pcap record loop (``inspector/native/_packets.pyx``) only slices records out of the file's
buffer and calls it. ``bench/bench_packets.py`` measures the whole read + parse + reassemble path.

Malformed or uninteresting traffic is never an exception: it is a :class:`Skipped` whose ``reason`` is a
short, low-cardinality string suitable for counting.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

from inspector.capture.parser import PacketSource, RawPacket
from inspector.frozen_init import fast_frozen_init

__all__ = [
    "ACK",
    "FIN",
    "LINKTYPES",
    "LINK_TYPES",
    "PSH",
    "RST",
    "SYN",
    "URG",
    "LinkType",
    "Segment",
    "Skipped",
    "parse_packet",
    "segments",
]

# TCP flag bits
FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10
URG = 0x20

# Link types handled (LINKTYPE_* values as stored in pcap/pcapng files).
LT_NULL = 0
LT_ETHERNET = 1
LT_RAW_12 = 12  # DLT_RAW on some BSDs
LT_RAW_14 = 14  # DLT_RAW on OpenBSD
LT_RAW = 101
LT_LOOP = 108
LT_LINUX_SLL = 113
LT_IPV4 = 228
LT_IPV6 = 229
LT_LINUX_SLL2 = 276
_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_IPV6_EXT = frozenset((0, 43, 60))  # hop-by-hop, routing, destination options: (len + 1) * 8 bytes
_IPV6_FRAGMENT = 44
_IPV6_AH = 51  # authentication header: (len + 2) * 4 bytes

_EMPTY = memoryview(b"")


@dataclass  # compiled, an extension type (packets.pxd), read-only to Python; from source, the slots below
class Segment:
    """One TCP segment.

    ``payload`` is a memoryview into the captured frame (no copy). ``truncated`` is True when part of
    the segment's payload was not captured (snap length): the IP length says the segment carries more
    than the frame holds. ``payload`` is then the captured part and ``missing`` the number of payload
    bytes that were cut, so the segment's real payload length is ``len(payload) + missing``. (A frame cut
    only in its link-layer trailer is not truncated: all its TCP payload is there.)
    """

    __slots__ = ("ts", "src_ip", "src_port", "dst_ip", "dst_port", "seq", "ack", "flags", "payload", "truncated",
                 "missing")

    ts: float
    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int
    seq: int
    ack: int
    flags: int
    payload: memoryview
    truncated: bool
    missing: int


def _new_segment(ts: float, src_ip: str, src_port: int, dst_ip: str, dst_port: int, seq: int, ack: int, flags: int,
                 payload: memoryview, truncated: bool, missing: int) -> Segment:
    """Segment(...) for the typed packet parser, every field positionally: compiled, stored from C (the class's
    own ``__init__`` parses its eleven arguments as a Python call: docs/performance.md)."""
    s = Segment.__new__(Segment)
    s.ts = ts
    s.src_ip = src_ip
    s.src_port = src_port
    s.dst_ip = dst_ip
    s.dst_port = dst_port
    s.seq = seq
    s.ack = ack
    s.flags = flags
    s.payload = payload
    s.truncated = truncated
    s.missing = missing
    return s


@dataclass(frozen=True)  # compiled, an extension type (packets.pxd); from source, the slots below
class Skipped:
    """A packet that carries no TCP segment we can use; ``reason`` is short and low-cardinality."""

    __slots__ = ("reason",)

    reason: str


fast_frozen_init(Skipped)  # from source (compiled, a no-op)

# Skipped values are shared: parsing allocates nothing for packets it skips.
_skips: dict[str, Skipped] = {}


def _skip(reason: str) -> Skipped:
    s = _skips.get(reason)
    if s is None:
        if len(_skips) > 4096:  # reasons embed small numbers; never let the cache grow without bound
            _skips.clear()
        s = _skips[reason] = Skipped(reason)
    return s


SKIP_TRUNCATED = _skip("truncated header")
SKIP_FRAGMENT = _skip("IP fragment")
SKIP_BAD_IP = _skip("malformed IP header")
SKIP_BAD_TCP = _skip("malformed TCP header")
SKIP_NOT_IP = _skip("not IP")

@dataclass(frozen=True)  # compiled, an extension type (packets.pxd); from source, the slots below
class LinkType:
    """How a link type's frames start (dpkt's ``__hdr__`` idea: a header is data): ``header`` bytes before the
    network layer, and the offset of the ethertype among them, or -1 when the link layer names no protocol
    (then IP, told by its version nibble)."""

    __slots__ = ("name", "header", "ethertype_at")

    name: str
    header: int
    ethertype_at: int


fast_frozen_init(LinkType)  # from source (compiled, a no-op)

#: The link types handled (LINKTYPE_* values as stored in pcap/pcapng files), each its header's layout.
LINK_TYPES: dict[int, LinkType] = {
    # a 4-byte address family (host byte order for NULL, network order for LOOP, and the AF_INET6 value differs
    # between systems): the IP version nibble is more reliable
    LT_NULL: LinkType("BSD loopback (NULL)", 4, -1),
    LT_ETHERNET: LinkType("Ethernet", 14, 12),
    LT_RAW_12: LinkType("raw IP", 0, -1),
    LT_RAW_14: LinkType("raw IP", 0, -1),
    LT_RAW: LinkType("raw IP", 0, -1),
    LT_LOOP: LinkType("OpenBSD loopback (LOOP)", 4, -1),
    LT_LINUX_SLL: LinkType("Linux cooked (SLL)", 16, 14),
    LT_IPV4: LinkType("raw IPv4", 0, -1),
    LT_IPV6: LinkType("raw IPv6", 0, -1),
    LT_LINUX_SLL2: LinkType("Linux cooked v2 (SLL2)", 20, 0),
}
LINKTYPES: dict[int, str] = {lt: link.name for lt, link in LINK_TYPES.items()}

# The last link type looked up and its layout: a capture has one link type (a pcapng a few), so most frames need
# no dictionary look-up (compiled, two C statics).
_last_lt = -1
_last_link: LinkType | None = None


# Address text caches: the same few addresses appear in millions of packets. Reusing the same str
# objects also makes the reassembler's dictionary keys hash faster (str caches its hash).
_v4_names: dict[int, str] = {}
_v6_names: dict[bytes, str] = {}
_ntoa = socket.inet_ntoa
_ntop = socket.inet_ntop
_AF_INET6 = socket.AF_INET6


def _v4(addr: int) -> str:
    name = _v4_names.get(addr)
    if name is None:
        if len(_v4_names) >= 65536:
            _v4_names.clear()
        name = _v4_names[addr] = _ntoa(addr.to_bytes(4, "big"))
    return name


# The last two IPv4 addresses named (a connection's two ends): most packets need no dictionary look-up
# and, compiled, no int object for the address.
_key0 = -1
_name0 = ""
_key1 = -1
_name1 = ""


def _v4_name(addr: int) -> str:
    """:func:`_v4`, remembering the last two addresses."""
    global _key0, _name0, _key1, _name1
    if addr == _key0:
        return _name0
    if addr == _key1:
        return _name1
    name = _v4(addr)
    _key1 = _key0
    _name1 = _name0
    _key0 = addr
    _name0 = name
    return name


def _v6(addr: bytes) -> str:
    name = _v6_names.get(addr)
    if name is None:
        if len(_v6_names) >= 65536:
            _v6_names.clear()
        name = _v6_names[addr] = _ntop(_AF_INET6, addr)
    return name


def parse_packet(pkt: RawPacket) -> Segment | Skipped:
    """Decode link layer, IPv4/IPv6 and TCP headers of one captured frame."""
    return parse_frame(pkt.data, pkt.linktype, pkt.ts, pkt.caplen, pkt.wirelen)


def _u8(b: bytes, p: int) -> int:
    """The byte at ``b[p]`` (compiled: a C read, as an unsigned char)."""
    x = b[p]
    return x


def _be16(b: bytes, p: int) -> int:
    """The unsigned big-endian 16-bit integer at ``b[p:p + 2]`` (compiled: two C byte reads)."""
    hi = b[p]
    lo = b[p + 1]
    return hi * 256 + lo


def _be32(b: bytes, p: int) -> int:
    """The unsigned big-endian 32-bit integer at ``b[p:p + 4]`` (compiled: four C byte reads)."""
    r = b[p]  # compiled, an unsigned long: the products below stay unsigned
    r = r * 256 + b[p + 1]
    r = r * 256 + b[p + 2]
    return r * 256 + b[p + 3]


def parse_frame(data: bytes, lt: int, ts: float, caplen: int, wirelen: int) -> Segment | Skipped:
    """:func:`parse_packet` of a frame given as its parts: the one parser of link, IP and TCP headers, for the
    classic pcap record loop (:class:`RecordLoop`), pcapng and the tap alike. Compiled (``packets.pxd``), the
    headers are read as C bytes; the payload is a memoryview slice of ``data``, never a copy."""
    global _last_lt, _last_link
    n = len(data)
    # --- link layer (LINK_TYPES): the network-layer offset and its ethertype (or 0: "IP, look at the version")
    link = _last_link
    if lt != _last_lt or link is None:
        link = LINK_TYPES.get(lt)
        if link is None:
            return _skip(f"unsupported link type {lt}")
        _last_lt = lt
        _last_link = link
    off = link.header
    if n < off:
        return SKIP_TRUNCATED
    etype = _be16(data, link.ethertype_at) if link.ethertype_at >= 0 else 0
    # 802.1Q / 802.1ad (QinQ) tags: 4 bytes each, possibly stacked
    while etype == 0x8100 or etype == 0x88A8 or etype == 0x9100 or etype == 0x9200:
        if n < off + 4:
            return SKIP_TRUNCATED
        etype = _be16(data, off + 2)
        off += 4
    if etype == 0:
        if n <= off:
            return SKIP_TRUNCATED
        version = _u8(data, off) >> 4
        etype = _ETH_IPV4 if version == 4 else _ETH_IPV6 if version == 6 else 0
    # --- network layer
    if etype == _ETH_IPV4:
        return _ipv4(data, n, off, ts, caplen, wirelen)
    if etype == _ETH_IPV6:
        return _ipv6(data, n, off, ts, caplen, wirelen)
    return SKIP_NOT_IP


def _ipv4(data: bytes, n: int, off: int, ts: float, caplen: int, wirelen: int) -> Segment | Skipped:
    """The IPv4 packet at ``off`` of a frame of ``n`` bytes: its TCP segment (compiled, a C function)."""
    if n < off + 20:
        return SKIP_TRUNCATED
    vihl = _u8(data, off)
    ihl = (vihl & 0x0F) << 2
    if vihl >> 4 != 4 or ihl < 20:
        return SKIP_BAD_IP
    if _be16(data, off + 6) & 0x3FFF:  # more-fragments flag or a non-zero fragment offset
        return SKIP_FRAGMENT
    proto = _u8(data, off + 9)
    if proto != 6:
        return _skip(f"not TCP (IP protocol {proto})")
    total = _be16(data, off + 2)
    if total == 0:  # TCP segmentation offload: the length was left for the NIC to fill in
        ip_end = n + max(0, wirelen - caplen)
    elif total < ihl:
        return SKIP_BAD_IP
    else:
        ip_end = off + total
    return _tcp(data, n, ts, _v4_name(_be32(data, off + 12)), _v4_name(_be32(data, off + 16)), off + ihl, ip_end)


def _ipv6(data: bytes, n: int, off: int, ts: float, caplen: int, wirelen: int) -> Segment | Skipped:
    """The IPv6 packet at ``off`` of a frame of ``n`` bytes: its TCP segment, after any extension headers
    (compiled, a C function)."""
    if n < off + 40:
        return SKIP_TRUNCATED
    if _u8(data, off) >> 4 != 6:
        return SKIP_BAD_IP
    plen = _be16(data, off + 4)
    nh = _u8(data, off + 6)
    src_ip = _v6(data[off + 8:off + 24])
    dst_ip = _v6(data[off + 24:off + 40])
    ip_end = off + 40 + plen if plen else n + max(0, wirelen - caplen)  # 0: jumbogram
    tcp_off = off + 40
    while nh != 6:
        if nh in _IPV6_EXT or nh == _IPV6_AH:
            if n < tcp_off + 2:
                return SKIP_TRUNCATED
            hlen = (_u8(data, tcp_off + 1) + 1) << 3 if nh != _IPV6_AH else (_u8(data, tcp_off + 1) + 2) << 2
            nh = _u8(data, tcp_off)
            tcp_off += hlen
        elif nh == _IPV6_FRAGMENT:
            return SKIP_FRAGMENT
        else:
            return _skip(f"not TCP (IPv6 next header {nh})")
    if tcp_off > ip_end:
        return SKIP_BAD_IP
    return _tcp(data, n, ts, src_ip, dst_ip, tcp_off, ip_end)


def _tcp(data: bytes, n: int, ts: float, src_ip: str, dst_ip: str, tcp_off: int, ip_end: int) -> Segment | Skipped:
    """The TCP segment at ``tcp_off`` of a frame of ``n`` bytes whose IP packet ends at ``ip_end`` (compiled, a C
    function)."""
    if n < tcp_off + 14:
        return SKIP_TRUNCATED
    start = tcp_off + ((_u8(data, tcp_off + 12) >> 4) << 2)
    if start < tcp_off + 20 or start > ip_end:
        return SKIP_BAD_TCP
    if start > n:
        return SKIP_TRUNCATED
    if ip_end <= n:
        payload = memoryview(data)[start:ip_end] if ip_end > start else _EMPTY
        missing = 0
    else:  # cut by the snap length: the captured part, and how much is missing
        payload = memoryview(data)[start:] if n > start else _EMPTY
        missing = ip_end - n
    return _new_segment(ts, src_ip, _be16(data, tcp_off), dst_ip, _be16(data, tcp_off + 2), _be32(data, tcp_off + 4),
                        _be32(data, tcp_off + 8), _u8(data, tcp_off + 13), payload, missing > 0, missing)


def segments(reader: PacketSource) -> Iterator[Segment | Skipped]:
    """:func:`parse_packet` of every packet of ``reader``, in order; the records of a classic pcap go
    through the typed loop (``inspector/native/_packets.pyx``), each parsed by :func:`parse_frame`."""
    return reader.parsed(parse_packet, parse_frame)
