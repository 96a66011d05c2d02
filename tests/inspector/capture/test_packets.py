"""Tests for inspector.capture.packets: link layers, VLANs, IPv4/IPv6, TCP, truncation, malformed frames."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
from pathlib import Path

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import (
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.l2 import ARP, CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Loopback, LoopbackOpenBSD
from scapy.layers.l2 import Ether as _Ether
from scapy.packet import Packet, Raw

from inspector.capture.file import RawPacket, open_capture
from inspector.capture.packets import ACK, FIN, PSH, SYN, Segment, Skipped, parse_packet

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL_CAPTURES = Path(__file__).parents[3].parent / "shared" / "real-captures"

PAYLOAD = b"\x00\x00\x00\x2bkafka request bytes"


def Ether(**kw: object) -> _Ether:  # noqa: N802 - reads like the scapy layer it builds
    """An Ethernet header with explicit addresses: scapy would otherwise resolve them on the network."""
    return _Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", **kw)  # type: ignore[arg-type]


def raw(frame: bytes, linktype: int = 1, wirelen: int | None = None, ts: float = 12.5) -> RawPacket:
    return RawPacket(ts, linktype, frame, len(frame), len(frame) if wirelen is None else wirelen)


def tcp4(payload: bytes = PAYLOAD, **kw: object) -> Packet:
    return (IP(src="192.0.2.1", dst="198.51.100.7", **kw) /  # type: ignore[arg-type]
            TCP(sport=50123, dport=9092, seq=0xFFFFFFF0, ack=77, flags="PA") / Raw(payload))


def tcp6(*ext: object, payload: bytes = PAYLOAD) -> Packet:
    pkt = IPv6(src="2001:db8::1", dst="2001:db8::2")
    for e in ext:
        pkt = pkt / e
    return pkt / TCP(sport=50123, dport=9092, seq=1000, ack=2000, flags="A") / Raw(payload)


def seg(pkt: RawPacket) -> Segment:
    out = parse_packet(pkt)
    assert isinstance(out, Segment), out
    return out


def skipped(pkt: RawPacket) -> str:
    out = parse_packet(pkt)
    assert isinstance(out, Skipped), out
    return out.reason


# ----------------------------------------------------------------------------------------------------
# Fields, zero copy


def test_ethernet_ipv4_tcp_fields() -> None:
    frame = bytes(Ether() / tcp4())
    s = seg(raw(frame))
    assert (s.ts, s.src_ip, s.src_port, s.dst_ip, s.dst_port) == (12.5, "192.0.2.1", 50123, "198.51.100.7", 9092)
    assert (s.seq, s.ack, s.flags) == (0xFFFFFFF0, 77, PSH | ACK)
    assert bytes(s.payload) == PAYLOAD
    assert not s.truncated and s.missing == 0


@pytest.mark.parametrize("high", [0x7F, 0x80, 0xFF])
def test_every_field_with_its_high_bits_set(high: int) -> None:
    """Header bytes at and above 0x80 (read as C bytes when compiled) give the same unsigned values scapy wrote."""
    word = high << 24 | 0x00FF80
    src, dst = f"{high}.255.128.1", f"{high ^ 0x80}.1.255.254"
    frame = bytes(Ether(type=0x8100) / Dot1Q(vlan=0xFFF, type=0x0800) /
                  IP(src=src, dst=dst, ttl=255, tos=0xFF, id=0xFFFF) /
                  TCP(sport=high << 8 | 0xFF, dport=0xFFFF, seq=word, ack=word ^ 0xFFFFFFFF, flags=0x1FF & 0xFF,
                      window=0xFFFF) / Raw(bytes([high]) * 3))
    s = seg(raw(frame))
    assert (s.src_ip, s.src_port, s.dst_ip, s.dst_port) == (src, high << 8 | 0xFF, dst, 0xFFFF)
    assert (s.seq, s.ack, s.flags) == (word, word ^ 0xFFFFFFFF, 0xFF)
    assert bytes(s.payload) == bytes([high]) * 3


def test_payload_is_a_view_of_the_frame_not_a_copy() -> None:
    pkt = raw(bytes(Ether() / tcp4()))
    s = seg(pkt)
    assert isinstance(s.payload, memoryview)
    assert s.payload.obj is pkt.data


def test_segment_is_slotted_and_read_only_when_compiled() -> None:
    s = seg(raw(bytes(Ether() / tcp4())))
    assert not hasattr(s, "__dict__")
    with pytest.raises(AttributeError):  # an extension type: its fields are read-only to Python (set from C)
        s.seq = 5  # type: ignore[misc]


def test_ipv4_options_and_tcp_options() -> None:
    pkt = (Ether() / IP(src="10.1.1.1", dst="10.1.1.2", options=[b"\x94\x04\x00\x00"]) /
           TCP(sport=1, dport=2, options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 2))]) /
           Raw(b"after options"))
    s = seg(raw(bytes(pkt)))
    assert bytes(s.payload) == b"after options"


def test_ethernet_padding_is_not_payload() -> None:
    frame = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(flags="A"))
    padded = frame + b"\x00" * (60 - len(frame)) + b"FCS!"  # short frame padding plus a trailer
    s = seg(raw(padded, wirelen=len(padded) + 10))  # even a cut trailer does not truncate the segment
    assert bytes(s.payload) == b"" and not s.truncated and s.missing == 0


# ----------------------------------------------------------------------------------------------------
# Link layers


@pytest.mark.parametrize(
    ("frame", "linktype"),
    [
        (Ether() / tcp4(), 1),
        (Ether() / Dot1Q(vlan=10) / tcp4(), 1),
        (Ether() / Dot1AD(vlan=5) / Dot1Q(vlan=7) / tcp4(), 1),  # QinQ
        (Ether(type=0x8100) / Dot1Q(vlan=1, type=0x8100) / Dot1Q(vlan=2) / tcp4(), 1),
        (CookedLinux() / tcp4(), 113),
        (CookedLinux(proto=0x8100) / Dot1Q(vlan=3) / tcp4(), 113),
        (CookedLinuxV2() / tcp4(), 276),
        (Loopback() / tcp4(), 0),
        (LoopbackOpenBSD() / tcp4(), 108),
        (tcp4(), 101),
        (tcp4(), 12),
        (tcp4(), 14),
        (tcp4(), 228),
    ],
    ids=["ether", "vlan", "qinq", "double-8100", "sll", "sll-vlan", "sll2", "null", "loop", "raw101",
         "raw12", "raw14", "ipv4-228"],
)
def test_ipv4_link_layers(frame: object, linktype: int) -> None:
    s = seg(raw(bytes(frame), linktype))  # type: ignore[call-overload]
    assert (s.src_ip, s.dst_ip, s.dst_port, bytes(s.payload)) == ("192.0.2.1", "198.51.100.7", 9092, PAYLOAD)


@pytest.mark.parametrize(
    ("frame", "linktype"),
    [
        (Ether() / tcp6(), 1),
        (Ether() / Dot1Q(vlan=10) / tcp6(), 1),
        (CookedLinux() / tcp6(), 113),
        (CookedLinuxV2() / tcp6(), 276),
        (struct.pack("<I", 30) + bytes(tcp6()), 0),  # NULL, AF_INET6 as on macOS, little-endian
        (struct.pack(">I", 24) + bytes(tcp6()), 0),  # NULL written on a big-endian BSD
        (struct.pack(">I", 24) + bytes(tcp6()), 108),
        (tcp6(), 101),
        (tcp6(), 229),
    ],
)
def test_ipv6_link_layers(frame: object, linktype: int) -> None:
    data = frame if isinstance(frame, bytes) else bytes(frame)  # type: ignore[call-overload]
    s = seg(raw(data, linktype))
    assert (s.src_ip, s.dst_ip, s.seq, s.ack, bytes(s.payload)) == ("2001:db8::1", "2001:db8::2", 1000, 2000,
                                                                    PAYLOAD)


def test_ipv6_extension_headers_are_skipped_over() -> None:
    pkt = tcp6(IPv6ExtHdrHopByHop(), IPv6ExtHdrRouting(addresses=["2001:db8::9"]), IPv6ExtHdrDestOpt())
    s = seg(raw(bytes(Ether() / pkt)))
    assert bytes(s.payload) == PAYLOAD and s.dst_port == 9092


def test_unsupported_link_type() -> None:
    assert skipped(raw(bytes(tcp4()), linktype=127)) == "unsupported link type 127"


# ----------------------------------------------------------------------------------------------------
# Things that are not usable TCP


def test_fragments_are_skipped() -> None:
    more = IP(src="10.0.0.1", dst="10.0.0.2", flags="MF", frag=0) / TCP() / Raw(b"x" * 40)
    last = IP(src="10.0.0.1", dst="10.0.0.2", frag=5, proto=6) / Raw(b"y" * 16)
    assert skipped(raw(bytes(Ether() / more))) == "IP fragment"
    assert skipped(raw(bytes(Ether() / last))) == "IP fragment"
    frag6 = IPv6() / IPv6ExtHdrFragment(m=1) / TCP() / Raw(b"z" * 20)
    assert skipped(raw(bytes(Ether() / frag6))) == "IP fragment"
    df = IP(src="10.0.0.1", dst="10.0.0.2", flags="DF") / TCP()  # don't-fragment is not a fragment
    assert isinstance(parse_packet(raw(bytes(Ether() / df))), Segment)


def test_non_tcp_is_skipped_with_a_reason() -> None:
    assert skipped(raw(bytes(Ether() / IP() / UDP() / Raw(b"dns")))) == "not TCP (IP protocol 17)"
    assert skipped(raw(bytes(Ether() / IPv6() / UDP()))) == "not TCP (IPv6 next header 17)"
    assert skipped(raw(bytes(Ether() / ARP()))) == "not IP"
    assert skipped(raw(b"\x12\x34" + bytes(20), linktype=101)) == "not IP"


def test_skipped_values_are_shared_not_allocated() -> None:
    a = parse_packet(raw(bytes(Ether() / IP() / UDP())))
    b = parse_packet(raw(bytes(Ether() / IP(src="1.2.3.4") / UDP())))
    assert a is b


@pytest.mark.parametrize("cut", [5, 13, 14, 20, 33, 34, 40, 47, 53])
def test_truncated_headers_are_skipped(cut: int) -> None:
    frame = bytes(Ether() / tcp4())[:cut]
    assert skipped(raw(frame, wirelen=100)) == "truncated header"


def test_malformed_headers() -> None:
    bad_ihl = bytearray(bytes(Ether() / tcp4()))
    bad_ihl[14] = 0x43  # header length 12 bytes
    assert skipped(raw(bytes(bad_ihl))) == "malformed IP header"
    bad_doff = bytearray(bytes(Ether() / tcp4()))
    bad_doff[14 + 20 + 12] = 0x20  # data offset 8 bytes
    assert skipped(raw(bytes(bad_doff))) == "malformed TCP header"
    bad_total = bytearray(bytes(Ether() / tcp4()))
    bad_total[16:18] = (10).to_bytes(2, "big")  # total length smaller than the header
    assert skipped(raw(bytes(bad_total))) == "malformed IP header"
    wrong_version = bytearray(bytes(Ether() / tcp4()))
    wrong_version[14] = 0x65
    assert skipped(raw(bytes(wrong_version))) == "malformed IP header"


# ----------------------------------------------------------------------------------------------------
# Snap-length truncation


def test_snaplen_cut_segment() -> None:
    full = bytes(Ether() / tcp4(payload=b"A" * 1000))
    cut = full[:100]
    s = seg(raw(cut, wirelen=len(full)))
    assert s.truncated and s.missing == 1000 - (100 - 54)
    assert bytes(s.payload) == b"A" * 46
    assert len(s.payload) + s.missing == 1000


def test_cut_exactly_after_tcp_header() -> None:
    full = bytes(Ether() / tcp4(payload=b"B" * 10))
    s = seg(raw(full[:54], wirelen=len(full)))
    assert s.truncated and s.missing == 10 and bytes(s.payload) == b""


def test_ip_length_beyond_frame_is_truncation_even_if_record_lengths_agree() -> None:
    full = bytes(Ether() / tcp4(payload=b"C" * 30))
    s = seg(raw(full[:-5]))  # caplen == wirelen, but IP says 5 more bytes
    assert s.truncated and s.missing == 5


def test_tso_zero_total_length() -> None:
    frame = bytearray(bytes(Ether() / tcp4(payload=b"D" * 3000)))
    frame[16:18] = b"\x00\x00"  # as captured before segmentation offload fills it in
    s = seg(raw(bytes(frame)))
    assert bytes(s.payload) == b"D" * 3000 and not s.truncated
    s = seg(raw(bytes(frame[:1000]), wirelen=len(frame)))
    assert s.truncated and len(s.payload) + s.missing == 3000


def test_ipv6_truncated() -> None:
    full = bytes(Ether() / tcp6(payload=b"E" * 500))
    s = seg(raw(full[:200], wirelen=len(full)))
    assert s.truncated and len(s.payload) + s.missing == 500


# ----------------------------------------------------------------------------------------------------
# Never an exception


@settings(max_examples=400, deadline=None)
@given(linktype=st.sampled_from([0, 1, 12, 14, 101, 108, 113, 228, 229, 276, 9999]),
       data=st.binary(max_size=120), wire_extra=st.integers(0, 2000))
def test_random_bytes_never_raise(linktype: int, data: bytes, wire_extra: int) -> None:
    out = parse_packet(RawPacket(0.0, linktype, data, len(data), len(data) + wire_extra))
    assert isinstance(out, Segment | Skipped)


@settings(max_examples=300, deadline=None)
@given(cut=st.integers(0, 200), flips=st.lists(st.tuples(st.integers(0, 199), st.integers(0, 255)), max_size=4))
def test_damaged_real_frames_never_raise(cut: int, flips: list[tuple[int, int]]) -> None:
    frame = bytearray(bytes(Ether() / Dot1Q() / tcp6(IPv6ExtHdrHopByHop(), payload=b"F" * 100)))
    for pos, value in flips:
        if pos < len(frame):
            frame[pos] = value
    data = bytes(frame[:cut])
    out = parse_packet(RawPacket(0.0, 1, data, len(data), len(frame)))
    assert isinstance(out, Segment | Skipped)
    if isinstance(out, Segment):
        assert out.missing >= 0 and out.truncated == (out.missing > 0)


# ----------------------------------------------------------------------------------------------------
# Real captures, cross-checked against dpkt and tshark


def _dpkt_view(pkt: RawPacket) -> tuple[str, int, str, int, int, int, int, bytes] | None:
    if pkt.linktype == 1:
        l3 = dpkt.ethernet.Ethernet(pkt.data).data
    elif pkt.linktype == 113:
        l3 = dpkt.sll.SLL(pkt.data).data
    elif pkt.linktype == 276:
        l3 = dpkt.sll2.SLL2(pkt.data).data
    else:
        return None
    if not isinstance(l3, dpkt.ip.IP) or not isinstance(l3.data, dpkt.tcp.TCP):
        return None
    t = l3.data
    return (socket.inet_ntoa(l3.src), t.sport, socket.inet_ntoa(l3.dst), t.dport, t.seq, t.ack, t.flags,
            bytes(t.data))


def _captures() -> list[Path]:
    paths = [FIXTURES / n for n in ("loopback-http.pcap", "any-sll2-http.pcap", "dumpcap-two-interfaces.pcapng")]
    if REAL_CAPTURES.is_dir():
        paths += sorted(REAL_CAPTURES.glob("*.pcap"))
    return paths


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.name)
def test_real_captures_agree_with_dpkt(path: Path) -> None:
    with open_capture(str(path)) as reader:
        packets = list(reader)
    assert packets
    for pkt in packets:
        out = parse_packet(pkt)
        ref = _dpkt_view(pkt)
        assert isinstance(out, Segment), out
        if ref is not None:
            assert (out.src_ip, out.src_port, out.dst_ip, out.dst_port, out.seq, out.ack, out.flags,
                    bytes(out.payload)) == ref
            assert not out.truncated


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize("name", ["loopback-http-snaplen80.pcap", "any-sll2-http.pcap",
                                  "dumpcap-two-interfaces.pcapng"])
def test_fixtures_agree_with_tshark(name: str) -> None:
    path = FIXTURES / name
    res = subprocess.run(
        ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=,", "-e", "ip.src", "-e", "tcp.srcport",
         "-e", "tcp.seq_raw", "-e", "tcp.ack_raw", "-e", "tcp.flags", "-e", "tcp.len"],
        capture_output=True, text=True, timeout=120, check=True)
    expected = [line.split(",") for line in res.stdout.splitlines()]
    with open_capture(str(path)) as reader:
        segments = [seg(p) for p in reader]
    assert len(segments) == len(expected)
    for s, (ip, port, seq, ack, flags, length) in zip(segments, expected, strict=True):
        assert (s.src_ip, s.src_port, s.seq, s.ack, s.flags) == (ip, int(port), int(seq), int(ack), int(flags, 16))
        assert len(s.payload) + s.missing == int(length)  # tshark's tcp.len is the segment's real length


def test_snaplen_fixture_marks_cut_segments() -> None:
    with open_capture(str(FIXTURES / "loopback-http-snaplen80.pcap")) as reader:
        segments = [seg(p) for p in reader]
    cut = [s for s in segments if s.truncated]
    assert len(cut) == 6
    assert all(len(s.payload) == 80 - 66 and s.missing > 0 for s in cut)
    assert all(not s.truncated for s in segments if s.flags & (SYN | FIN))
