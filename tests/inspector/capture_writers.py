"""Writers of hand-made capture files for the tests: classic pcap and pcapng blocks in every variant the
specs allow, written here, independent of the code under test."""

from __future__ import annotations

import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether as _Ether
from scapy.packet import Raw

from inspector.capture.file import CaptureReader, open_capture
from inspector.capture.parser import RawPacket


def Ether() -> _Ether:  # noqa: N802 - reads like the scapy layer it builds
    """An Ethernet header with explicit addresses: scapy would otherwise resolve them on the network."""
    return _Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


# ----------------------------------------------------------------------------------------------------
# Writers for hand-made files (every variant the spec allows, independent of the code under test)


def pcap_file(records: list[tuple[int, int, bytes, int]], endian: str = "<", nano: bool = False,
              linktype: int = 1, snaplen: int = 65535) -> bytes:
    """records: (seconds, fraction in µs or ns, data, wirelen)."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for sec, frac, data, wirelen in records:
        out.append(struct.pack(endian + "IIII", sec, frac, len(data), wirelen))
        out.append(data)
    return b"".join(out)


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def ng_block(btype: int, body: bytes, e: str = "<") -> bytes:
    body = _pad(body)
    total = 12 + len(body)
    return struct.pack(e + "II", btype, total) + body + struct.pack(e + "I", total)


def ng_option(code: int, value: bytes, e: str = "<") -> bytes:
    return struct.pack(e + "HH", code, len(value)) + _pad(value)


def ng_shb(e: str = "<") -> bytes:
    body = struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + ng_option(4, b"test writer", e) + ng_option(0, b"", e)
    return ng_block(0x0A0D0D0A, body, e)


def ng_idb(linktype: int, snaplen: int = 0, tsresol: int | None = None, tsoffset: int | None = None,
           e: str = "<") -> bytes:
    opts = ng_option(2, b"eth0", e)
    if tsresol is not None:
        opts += ng_option(9, bytes([tsresol]), e)
    if tsoffset is not None:
        opts += ng_option(14, struct.pack(e + "q", tsoffset), e)
    opts += ng_option(0, b"", e)
    return ng_block(1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts, e)


def ng_epb(iface: int, ticks: int, data: bytes, wirelen: int | None = None, e: str = "<") -> bytes:
    body = struct.pack(e + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                       len(data) if wirelen is None else wirelen) + _pad(data) + ng_option(1, b"hi", e)
    return ng_block(6, body, e)


def ng_spb(data: bytes, wirelen: int, e: str = "<") -> bytes:
    return ng_block(3, struct.pack(e + "I", wirelen) + data, e)


def read_all(path: str | Path) -> tuple[list[RawPacket], CaptureReader]:
    with open_capture(str(path)) as reader:
        packets = list(reader)
    return packets, reader


def tcp_frame(payload: bytes = b"hello", seq: int = 1) -> bytes:
    return bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=40000, dport=9092, seq=seq)
                 / Raw(payload))


def ng_opb(iface: int, ticks: int, data: bytes, wirelen: int | None = None, e: str = "<") -> bytes:
    """An obsolete Packet Block (type 2): a 16-bit interface id and a 16-bit drops count."""
    body = struct.pack(e + "HHIIII", iface, 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                       len(data) if wirelen is None else wirelen) + _pad(data)
    return ng_block(2, body, e)
