"""The classic pcap record loop (inspector/native/_packets.pyx), which slices records and parses each with
``parse_frame``, the one header parser.

Whatever the file, ``segments(reader)`` must give exactly ``[parse_packet(p) for p in reader]`` (the reader's
own records, one RawPacket each) and the reader the same warnings and count: on every bundled and shared real
capture, on hand-made frames of every link type and shape the parser knows (built with scapy, an independent
encoder), and on those frames cut, corrupted and with odd record lengths, in both byte orders and time
resolutions. The parser itself is held to scapy, dpkt and tshark in test_packets.py.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
from scapy.layers.l2 import CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Loopback, LoopbackOpenBSD
from scapy.layers.l2 import Ether as _Ether
from scapy.packet import Packet, Raw

from inspector.capture.file import open_capture
from inspector.capture.packets import parse_packet, segments
from tests.inspector.capture_frames import CAPTURES
from tests.inspector.capture_writers import pcap_file


def Ether(**kw: object) -> _Ether:  # noqa: N802 - reads like the scapy layer it builds
    return _Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", **kw)  # type: ignore[arg-type]


def _tcp4(payload: bytes = b"kafka!" * 5, **kw: object) -> Packet:
    return (IP(src="192.0.2.1", dst="198.51.100.7", **kw) /  # type: ignore[arg-type]
            TCP(sport=50123, dport=9092, seq=0xFFFFFFF0, ack=77, flags="PA") / Raw(payload))


def _tcp6(*ext: Packet) -> Packet:
    pkt: Packet = IPv6(src="2001:db8::1", dst="2001:db8::2")
    for e in ext:
        pkt = pkt / e
    return pkt / TCP(sport=50123, dport=9092, seq=1000, ack=2000, flags="A") / Raw(b"six" * 9)


#: (frame, linktype): every shape parse_packet handles or skips.
FRAMES: list[tuple[bytes, int]] = [
    (bytes(Ether() / _tcp4()), 1),
    (bytes(Ether() / Dot1Q(vlan=10) / _tcp4()), 1),
    (bytes(Ether() / Dot1AD(vlan=5) / Dot1Q(vlan=7) / _tcp4()), 1),
    (bytes(CookedLinux() / _tcp4()), 113),
    (bytes(CookedLinux(proto=0x8100) / Dot1Q(vlan=3) / _tcp4()), 113),
    (bytes(CookedLinuxV2() / _tcp4()), 276),
    (bytes(Loopback() / _tcp4()), 0),
    (bytes(LoopbackOpenBSD() / _tcp4()), 108),
    *((bytes(_tcp4()), lt) for lt in (101, 12, 14, 228)),
    *((bytes(_tcp6()), lt) for lt in (101, 229)),
    (bytes(Ether() / _tcp6()), 1),
    (bytes(CookedLinuxV2() / _tcp6()), 276),
    (struct.pack("<I", 30) + bytes(_tcp6()), 0),
    (bytes(Ether() / _tcp6(IPv6ExtHdrHopByHop())), 1),
    (bytes(Ether() / _tcp6(IPv6ExtHdrFragment())), 1),
    (bytes(Ether() / _tcp4(flags="MF")), 1),
    (bytes(Ether() / _tcp4(frag=3)), 1),
    (bytes(Ether() / IP(src="192.0.2.1", dst="198.51.100.7") / UDP() / Raw(b"x")), 1),
    (bytes(Ether() / IP() / ICMP()), 1),
    (bytes(Ether() / _tcp4(payload=b"")), 1),
    (bytes(Ether() / IP(src="192.0.2.1", dst="198.51.100.7") / TCP(options=[("NOP", None)] * 4) / Raw(b"o")), 1),
    (bytes(Ether(type=0x0806) / Raw(b"\0" * 28)), 1),
    (bytes(_tcp4()), 147),  # an unsupported link type
]


def _read(path: Path) -> tuple[list[object], list[str], int]:
    with open_capture(str(path)) as reader:
        out = list(segments(reader))
    return out, reader.warnings, reader.packets_read


def _reference(path: Path) -> tuple[list[object], list[str], int]:
    with open_capture(str(path)) as reader:
        out = [parse_packet(p) for p in reader]
    return out, reader.warnings, reader.packets_read


def _same(path: Path) -> int:
    got, expected = _read(path), _reference(path)
    assert got == expected
    return len(got[0])


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name for p in CAPTURES])
def test_every_real_capture(capture: Path) -> None:
    assert _same(capture) > 0


@pytest.mark.parametrize(("endian", "nano"), [("<", False), (">", False), ("<", True), (">", True)])
def test_every_link_type_and_shape(tmp_path: Path, endian: str, nano: bool) -> None:
    for i, (frame, linktype) in enumerate(FRAMES):
        path = tmp_path / f"{i}.pcap"
        records = [(1_700_000_000 + k, 999_999 - k, frame, len(frame) + extra)
                   for k, extra in enumerate((0, 0, 7, -3))]
        path.write_bytes(pcap_file(records, endian=endian, nano=nano, linktype=linktype))
        assert _same(path) == 4


def test_cut_and_corrupted_frames(tmp_path: Path) -> None:
    rng = random.Random(11)
    for linktype in sorted({lt for _, lt in FRAMES}):
        records = []
        for frame, lt in FRAMES:
            if lt != linktype:
                continue
            for cut in range(len(frame) + 1):
                records.append((5, cut, frame[:cut], len(frame)))
            for _ in range(200):
                data = bytearray(frame)
                for _ in range(rng.randint(1, 4)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
                records.append((6, 0, bytes(data), len(data) + rng.choice((0, 0, 20))))
        path = tmp_path / f"lt{linktype}.pcap"
        path.write_bytes(pcap_file(records, linktype=linktype))
        assert _same(path) == len(records)


def test_records_straddling_chunks_and_a_truncated_end(tmp_path: Path) -> None:
    frame = bytes(Ether() / _tcp4(payload=b"z" * 1400))
    records = [(1, k, frame, len(frame)) for k in range(2000)]  # ~3 MB: several 1 MiB chunks
    data = pcap_file(records)
    path = tmp_path / "big.pcap"
    path.write_bytes(data)
    assert _same(path) == 2000
    path.write_bytes(data[:-700])  # the last record cut short: same warning, same count
    got = _read(path)
    assert got == _reference(path) and got[1]


