"""The TLS twin of a plaintext capture: the same TCP connections carrying the same bytes inside real TLS, and
the NSS key log that decrypts them.

    .venv/bin/python bench/tls_twin.py CAPTURE TWIN.pcap [--keylog FILE] [--tls12 SUITE]

Every TCP connection that carries data gets a real TLS handshake (OpenSSL's, made in memory by
``pcaps/capture_kit/tls_memory.py``: TLS 1.3 with TLS_AES_256_GCM_SHA384, or TLS 1.2 with ``--tls12``'s
OpenSSL cipher string) between its TCP handshake and its first data segment, in segments stamped with that
segment's time; then each data segment's payload is written by its side into the TLS connection and the
records it became replace it, segment for segment, at the same time. Sequence and acknowledgement numbers are
shifted by the bytes TLS adds, the IPv4 and TCP checksums recomputed; every other packet is copied as it is.
Decrypted, the twin is the plaintext capture again: the same Kafka frames at the same times, at the same
offsets of the plaintext streams. The key log (default: the twin's name with ``.keylog``) is the client's
``keylog_filename``.

The capture must be classic pcap (Ethernet, Linux cooked or raw IP link types) of IPv4, its TCP streams without
retransmissions or gaps (as tcpdump on ``lo`` writes them, and as ``pcaps/make_captures.py`` makes them): a
segment out of order stops the tool with an error rather than make a twin whose plaintext differs.
"""

from __future__ import annotations

import argparse
import bisect
import struct
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pcaps.capture_kit.tls_memory import MemoryTls, contexts, make_pki  # noqa: E402

_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}
#: Link-layer header lengths of the link types read: Ethernet, raw IP (two numbers), Linux cooked v1 and v2.
_LINK = {1: 14, 101: 0, 228: 0, 113: 16, 276: 20}
_MASK = 0xFFFFFFFF
_SYN, _ACK, _PSH = 0x02, 0x10, 0x08
_RECENT = 64  # segments of each side kept for their retransmissions
_MAX_SEGMENT = 16384  # the handshake's chunks are cut to segments of at most this


class TwinError(ValueError):
    """A capture this tool cannot make a faithful twin of."""


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071): the 16-bit ones' complement sum is the number modulo 0xFFFF."""
    if len(data) & 1:
        data += b"\0"
    return ~(int.from_bytes(data, "big") % 0xFFFF) & 0xFFFF


def _tcp_packet(ip_header: bytes, tcp_header: bytes, payload: bytes) -> bytes:
    """An IPv4 header (``ip_header``'s options kept) and TCP header, lengths and both checksums made anew."""
    ihl = len(ip_header)
    total = ihl + len(tcp_header) + len(payload)
    ip = bytearray(ip_header)
    struct.pack_into(">HH", ip, 2, total, struct.unpack_from(">H", ip, 4)[0])
    ip[10:12] = b"\0\0"
    struct.pack_into(">H", ip, 10, _checksum(bytes(ip)))
    tcp = bytearray(tcp_header)
    tcp[16:18] = b"\0\0"
    pseudo = ip_header[12:20] + struct.pack(">BBH", 0, 6, len(tcp) + len(payload))
    struct.pack_into(">H", tcp, 16, _checksum(pseudo + bytes(tcp) + payload))
    return bytes(ip) + bytes(tcp) + payload


@dataclass
class _Connection:
    """One TCP connection's rewriting state; index 0 is the client's direction, 1 the server's."""

    client: tuple[bytes, int]  # (IPv4 address, port) of the side that opened it
    isn: list[int | None] = field(default_factory=lambda: [None, None])  # first sequence number of each side
    next: list[int] = field(default_factory=lambda: [0, 0])  # next data offset of each side, in the original
    added: list[int] = field(default_factory=lambda: [0, 0])  # bytes TLS added before it
    ends: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))  # data offsets where ...
    shifts: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))  # ... ``added`` changed to
    tls: MemoryTls | None = None
    #: each side's last segments: offset -> (payload length, new sequence number, records), for retransmissions
    recent: tuple[dict[int, tuple[int, int, bytes]], dict[int, tuple[int, int, bytes]]] = field(
        default_factory=lambda: ({}, {}))

    def shift_at(self, side: int, offset: int) -> int:
        """Bytes added to ``side``'s stream before its original ``offset`` (what an acknowledgement moves by)."""
        i = bisect.bisect_right(self.ends[side], offset)
        return self.shifts[side][i - 1] if i else 0

    def moved(self, side: int) -> None:
        self.ends[side].append(self.next[side])
        self.shifts[side].append(self.added[side])


@dataclass
class TwinStats:
    packets: int = 0
    written: int = 0
    connections: int = 0
    tls_connections: int = 0
    plaintext_bytes: int = 0
    tls_bytes: int = 0


class _Twin:
    def __init__(self, keylog: Path, tls12: str | None, pki_dir: Path) -> None:
        self.client_ctx, self.server_ctx = contexts(make_pki(pki_dir), tls12=tls12)
        self.client_ctx.keylog_filename = str(keylog)
        self.connections: dict[tuple[bytes, int, bytes, int], _Connection] = {}
        self.stats = TwinStats()

    def packet(self, ip: bytes) -> list[bytes]:
        """The packets (IPv4 onwards) that replace one IPv4 packet of the capture."""
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        if ip[0] >> 4 != 4 or ip[9] != 6 or total > len(ip) or struct.unpack_from(">H", ip, 6)[0] & 0x3FFF:
            return [ip]  # not TCP in a whole IPv4 packet: copied
        ip_header, tcp = ip[:ihl], ip[ihl:total]
        sport, dport, seq, ack, offset_flags = struct.unpack_from(">HHIIH", tcp, 0)
        doff, flags = (offset_flags >> 12) * 4, offset_flags & 0x3F
        tcp_header, payload = tcp[:doff], tcp[doff:]
        src, dst = (ip_header[12:16], sport), (ip_header[16:20], dport)
        conn = self.connections.get(src + dst) or self.connections.get(dst + src)
        if conn is None:
            client = src if flags & _SYN and not flags & _ACK or (not flags & _SYN and dport < sport) else dst
            conn = _Connection(client)
            self.connections[client + (dst if client == src else src)] = conn
            self.stats.connections += 1
        side = 0 if src == conn.client else 1
        if conn.isn[side] is None:
            conn.isn[side] = (seq + 1) & _MASK if flags & _SYN else seq
        isn = conn.isn[side]
        assert isn is not None
        offset = (seq - isn) & _MASK if not flags & _SYN else 0
        out: list[bytes] = []
        again = conn.recent[side].get(offset) if payload and offset != conn.next[side] else None
        if again is not None and again[0] == len(payload):  # a retransmission: the same records again
            new_seq, payload = again[1], again[2]
        elif payload:
            if offset != conn.next[side]:
                raise TwinError(f"{_name(src)} -> {_name(dst)}: a segment at stream offset {offset}, "
                                f"{conn.next[side]} expected (only whole retransmissions of one of the last "
                                f"{_RECENT} segments are rewritten, not gaps nor overlaps)")
            if conn.tls is None:
                out += self._handshake(conn, ip_header, tcp_header, side)
            self.stats.plaintext_bytes += len(payload)
            sealed = conn.tls.seal(side == 0, payload)  # type: ignore[union-attr]
            self.stats.tls_bytes += len(sealed)
            new_seq = (seq + conn.added[side]) & _MASK
            conn.added[side] += len(sealed) - len(payload)
            conn.next[side] += len(payload)
            conn.moved(side)
            recent = conn.recent[side]
            recent[offset] = (len(payload), new_seq, sealed)
            if len(recent) > _RECENT:
                del recent[next(iter(recent))]
            payload = sealed
        else:
            new_seq = (seq + conn.added[side]) & _MASK if not flags & _SYN else seq
        new_ack = ack
        other_isn = conn.isn[1 - side]
        if flags & _ACK and other_isn is not None:
            new_ack = (ack + conn.shift_at(1 - side, (ack - other_isn) & _MASK)) & _MASK
        header = bytearray(tcp_header)
        struct.pack_into(">II", header, 4, new_seq, new_ack)
        out.append(_tcp_packet(ip_header, bytes(header), payload))
        return out

    def _handshake(self, conn: _Connection, ip_header: bytes, tcp_header: bytes, side: int) -> list[bytes]:
        """The TLS handshake's segments, before the connection's first data segment (of ``side``)."""
        tls = conn.tls = MemoryTls(self.client_ctx, self.server_ctx)
        tls.handshake()
        self.stats.tls_connections += 1
        out = []
        for from_client, chunk in tls.chunks:
            who = 0 if from_client else 1
            for start in range(0, len(chunk), _MAX_SEGMENT):
                piece = chunk[start:start + _MAX_SEGMENT]
                out.append(self._inserted(conn, ip_header, tcp_header, side, who, piece))
                conn.added[who] += len(piece)
                self.stats.tls_bytes += len(piece)
        for who in (0, 1):
            conn.moved(who)
        tls.chunks.clear()
        return out

    def _inserted(self, conn: _Connection, ip_header: bytes, tcp_header: bytes, side: int, who: int,
                  payload: bytes) -> bytes:
        """A segment of side ``who`` carrying ``payload``, made from a packet of ``side``: addresses and ports
        swapped when the sides differ, no TCP options, PSH+ACK."""
        ip = bytearray(ip_header[:20])
        ip[0] = 0x45
        sport, dport = struct.unpack_from(">HH", tcp_header, 0)
        if who != side:
            ip[12:16], ip[16:20] = ip_header[16:20], ip_header[12:16]
            sport, dport = dport, sport
        own, peer = conn.isn[who], conn.isn[1 - who]
        seq = ((own or 0) + conn.next[who] + conn.added[who]) & _MASK
        ack = ((peer or 0) + conn.next[1 - who] + conn.added[1 - who]) & _MASK
        flags = _PSH | _ACK if peer is not None else _PSH
        header = struct.pack(">HHIIHHHH", sport, dport, seq, ack, (5 << 12) | flags, 65535, 0, 0)
        return _tcp_packet(bytes(ip), header, payload)


def _name(endpoint: tuple[bytes, int]) -> str:
    return f"{'.'.join(map(str, endpoint[0]))}:{endpoint[1]}"


def make_twin(capture: Path, twin: Path, keylog: Path, *, tls12: str | None = None) -> TwinStats:
    """Write the TLS twin of ``capture`` to ``twin`` and its key log to ``keylog`` (see the module docstring)."""
    data = capture.read_bytes()
    order = _MAGICS.get(data[:4])
    if order is None:
        raise TwinError(f"{capture.name}: not a classic pcap file")
    linktype = struct.unpack_from(order + "I", data, 20)[0] & 0x0FFFFFFF
    link = _LINK.get(linktype)
    if link is None:
        raise TwinError(f"{capture.name}: link type {linktype} is not read (Ethernet, Linux cooked, raw IP are)")
    keylog.unlink(missing_ok=True)
    record = struct.Struct(order + "IIII")
    with tempfile.TemporaryDirectory() as pki_dir, twin.open("wb") as out:
        maker = _Twin(keylog, tls12, Path(pki_dir))
        header = bytearray(data[:24])
        struct.pack_into(order + "I", header, 16, max(262144, struct.unpack_from(order + "I", data, 16)[0]))
        out.write(header)
        pos, end = 24, len(data)
        while pos + 16 <= end:
            sec, frac, caplen, _ = record.unpack_from(data, pos)
            frame = data[pos + 16:pos + 16 + caplen]
            pos += 16 + caplen
            maker.stats.packets += 1
            ethertype = frame[12:14] if linktype == 1 else frame[14:16] if linktype == 113 else \
                frame[:2] if linktype == 276 else b"\x08\x00"
            packets = maker.packet(frame[link:]) if ethertype == b"\x08\x00" else [frame[link:]]
            maker.stats.written += len(packets)
            for ip in packets:
                length = link + len(ip)
                out.write(record.pack(sec, frac, length, length))
                out.write(frame[:link])
                out.write(ip)
    return maker.stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", type=Path)
    parser.add_argument("twin", type=Path)
    parser.add_argument("--keylog", type=Path, help="default: the twin's name with .keylog")
    parser.add_argument("--tls12", metavar="SUITE", help="TLS 1.2 with this OpenSSL cipher string")
    args = parser.parse_args(argv)
    keylog = args.keylog or args.twin.with_suffix(".keylog")
    try:
        stats = make_twin(args.capture, args.twin, keylog, tls12=args.tls12)
    except TwinError as exc:
        print(f"tls_twin: {exc}", file=sys.stderr)
        return 1
    print(f"{args.twin}: {stats.tls_connections} of {stats.connections} TCP connections in TLS, "
          f"{stats.plaintext_bytes:,} plaintext bytes in {stats.tls_bytes:,} TLS bytes, {stats.packets:,} packets "
          f"in {stats.written:,}\nkey log: {keylog}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
