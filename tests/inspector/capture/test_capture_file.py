"""Tests for inspector.capture.file: pcap / pcapng / gzip / stdin reading and damaged files."""

from __future__ import annotations

import gzip
import io
import os
import struct
import sys
import threading
import tracemalloc
from pathlib import Path

import dpkt
import pytest
from scapy.layers.inet import IP, TCP
from scapy.packet import Raw
from scapy.utils import PcapNgWriter, wrpcap

from inspector.capture.file import open_capture
from inspector.capture.parser import CaptureError
from tests.inspector.capture_writers import (
    Ether,
    ng_block,
    ng_epb,
    ng_idb,
    ng_shb,
    ng_spb,
    pcap_file,
    read_all,
    tcp_frame,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
PCAPS = Path(__file__).parents[3] / "pcaps"


REAL_CAPTURES = Path(__file__).parents[3].parent / "shared" / "real-captures"


# ----------------------------------------------------------------------------------------------------
# Classic pcap


def test_scapy_pcap_roundtrip(tmp_path: Path) -> None:
    pkts = []
    for i in range(5):
        p = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=40000, dport=9092) / Raw(b"x" * i)
        p.time = 1_700_000_000 + i + 0.125
        pkts.append(p)
    path = tmp_path / "s.pcap"
    wrpcap(str(path), pkts)
    got, reader = read_all(path)
    assert reader.format == "pcap" and not reader.compressed and reader.linktype == 1
    assert [bytes(p) for p in pkts] == [g.data for g in got]
    assert all(type(g.data) is bytes for g in got)
    assert [g.ts for g in got] == pytest.approx([1_700_000_000 + i + 0.125 for i in range(5)], abs=1e-6)
    assert all(g.caplen == g.wirelen == len(g.data) and g.linktype == 1 for g in got)
    assert reader.warnings == []
    assert reader.packets_read == 5
    assert reader.bytes_read == reader.total_bytes == path.stat().st_size


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_byte_orders_and_resolutions(tmp_path: Path, endian: str, nano: bool) -> None:
    frac = 123_456_789 if nano else 123_456
    records = [(1_600_000_000, frac, tcp_frame(b"a"), 100), (1_600_000_001, 0, tcp_frame(b"bb"), 200)]
    path = tmp_path / "x.pcap"
    path.write_bytes(pcap_file(records, endian=endian, nano=nano, linktype=113, snaplen=96))
    got, reader = read_all(path)
    assert reader.nanosecond is nano and reader.snaplen == 96 and reader.linktype == 113
    assert [g.data for g in got] == [r[2] for r in records]
    assert [g.wirelen for g in got] == [100, 200]  # original length is kept, not hidden
    assert [g.caplen for g in got] == [len(r[2]) for r in records]
    assert got[0].ts == pytest.approx(1_600_000_000.123456789 if nano else 1_600_000_000.123456, abs=1e-6)
    assert got[1].ts == 1_600_000_001.0
    assert all(g.linktype == 113 for g in got)


def test_linktype_field_fcs_bits_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "fcs.pcap"
    path.write_bytes(pcap_file([(1, 0, tcp_frame(), 60)], linktype=1 | (0x1 << 28) | (0x4 << 26)))
    got, reader = read_all(path)
    assert reader.linktype == 1 and got[0].linktype == 1


def test_record_larger_than_read_chunk(tmp_path: Path) -> None:
    big = bytes(range(256)) * 8192  # 2 MiB: larger than one read chunk
    records = [(1, 0, b"a" * 100, 100), (2, 0, big, len(big)), (3, 0, b"z" * 3, 3)]
    path = tmp_path / "big.pcap"
    path.write_bytes(pcap_file(records, snaplen=len(big)))
    got, _ = read_all(path)
    assert [g.data for g in got] == [r[2] for r in records]


def test_many_records_across_chunk_boundaries_match_dpkt(tmp_path: Path) -> None:
    records = [(i, i % 1_000_000, bytes([i % 251]) * (1 + (i * 7919) % 3000), 5000) for i in range(3000)]
    path = tmp_path / "many.pcap"
    path.write_bytes(pcap_file(records))
    got, reader = read_all(path)
    with open(path, "rb") as f:
        ref = list(dpkt.pcap.Reader(f))
    assert len(got) == len(ref) == 3000
    assert all(g.data == buf and g.ts == pytest.approx(ts) for g, (ts, buf) in zip(got, ref, strict=True))
    assert reader.bytes_read == path.stat().st_size


def test_memory_stays_bounded_on_a_large_file(tmp_path: Path) -> None:
    frame = tcp_frame(b"k" * 1400)
    path = tmp_path / "large.pcap"
    with open(path, "wb") as f:
        f.write(pcap_file([]))
        rec = struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame
        f.write(rec * 20_000)  # ~29 MB
    tracemalloc.start()
    try:
        n = 0
        with open_capture(str(path)) as reader:
            for _pkt in reader:
                n += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 20_000
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes: the reader is not streaming"


# ----------------------------------------------------------------------------------------------------
# pcapng


def test_scapy_pcapng_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.pcapng"
    w = PcapNgWriter(str(path))
    frames = []
    for i in range(3):
        p = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1234, dport=9092, seq=i) / Raw(b"q" * i)
        p.time = 1_700_000_000 + i / 4
        frames.append(bytes(p))
        w.write(p)
    w.close()
    got, reader = read_all(path)
    assert reader.format == "pcapng" and reader.linktype == 1
    assert [g.data for g in got] == frames
    assert [g.ts for g in got] == pytest.approx([1_700_000_000, 1_700_000_000.25, 1_700_000_000.5])


def test_pcapng_interfaces_link_types_tsresol_and_unknown_blocks(tmp_path: Path) -> None:
    f0, f1, f2, f3 = tcp_frame(b"0"), b"\x00" * 16 + b"sll", b"\x45raw-ip", b"spb-frame"
    data = b"".join([
        ng_shb(),
        ng_idb(1, snaplen=65535),  # default resolution: microseconds
        ng_block(0x00000BAD, b"custom block nobody knows"),
        ng_block(4, b"\x00\x00\x00\x00"),  # name resolution block
        ng_idb(113, tsresol=9, tsoffset=10),  # nanoseconds, +10 s
        ng_idb(101, tsresol=0x80 | 10),  # 2^-10 s
        ng_epb(0, 1_700_000_000_250_000, f0, wirelen=1000),
        ng_block(5, struct.pack("<III", 0, 0, 0)),  # interface statistics block
        ng_epb(1, 1_700_000_000_123_456_789, f1),
        ng_epb(2, 1_700_000_000 * 1024 + 512, f2),
        ng_block(0x40000BAD, b"custom, copy-able"),
        ng_spb(f3, len(f3)),  # stored padded: its length comes from the original length
    ])
    path = tmp_path / "multi.pcapng"
    path.write_bytes(data)
    got, reader = read_all(path)
    assert reader.warnings == []
    assert [g.linktype for g in got] == [1, 113, 101, 1]
    assert [g.data for g in got] == [f0, f1, f2, f3]
    assert got[0].ts == pytest.approx(1_700_000_000.25) and got[0].wirelen == 1000
    assert got[1].ts == pytest.approx(1_700_000_010.123456789)
    assert got[2].ts == pytest.approx(1_700_000_000.5)
    assert got[3].wirelen == got[3].caplen == len(f3)
    assert reader.linktype == 1 and reader.snaplen == 65535


def test_pcapng_big_endian_and_several_sections(tmp_path: Path) -> None:
    a, b = tcp_frame(b"first"), tcp_frame(b"second")
    data = b"".join([
        ng_shb(">"), ng_idb(228, e=">"), ng_epb(0, 5_000_000, a, e=">"),
        ng_shb("<"), ng_idb(1, tsresol=3), ng_epb(0, 7_000, b),  # new section: interface 0 is new
    ])
    path = tmp_path / "sections.pcapng"
    path.write_bytes(data)
    got, reader = read_all(path)
    assert [(g.linktype, g.data, g.ts) for g in got] == [(228, a, 5.0), (1, b, 7.0)]
    assert reader.warnings == []


def test_pcapng_packet_for_undeclared_interface_is_skipped_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "noif.pcapng"
    path.write_bytes(ng_shb() + ng_idb(1) + ng_epb(3, 1, b"zz") + ng_epb(0, 2, b"ok"))
    got, reader = read_all(path)
    assert [g.data for g in got] == [b"ok"]
    assert len(reader.warnings) == 1 and "interface 3" in reader.warnings[0]


def test_real_dumpcap_pcapng_with_two_interfaces() -> None:
    got, reader = read_all(FIXTURES / "dumpcap-two-interfaces.pcapng")
    assert len(got) == 24 and reader.warnings == []
    assert {g.linktype for g in got} == {1, 113}  # lo (Ethernet) and any (Linux cooked)
    assert all(1.7e9 < g.ts < 2.0e9 for g in got)
    assert max(g.ts for g in got) - min(g.ts for g in got) < 5


# ----------------------------------------------------------------------------------------------------
# gzip and stdin


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    raw = (FIXTURES / "loopback-http.pcap").read_bytes()
    path = tmp_path / "no-gz-suffix.pcap"
    path.write_bytes(gzip.compress(raw))
    got, reader = read_all(path)
    plain, _ = read_all(FIXTURES / "loopback-http.pcap")
    assert reader.compressed and reader.format == "pcap"
    assert [(g.ts, g.data) for g in got] == [(p.ts, p.data) for p in plain]
    assert reader.bytes_read == path.stat().st_size  # compressed bytes, for a progress bar
    # and a ".gz" name on an uncompressed file is not a problem either
    fake = tmp_path / "plain.pcap.gz"
    fake.write_bytes(raw)
    got2, reader2 = read_all(fake)
    assert not reader2.compressed and len(got2) == len(plain)


def test_gzip_pcapng(tmp_path: Path) -> None:
    path = tmp_path / "c.pcapng.gz"
    path.write_bytes(gzip.compress((FIXTURES / "dumpcap-two-interfaces.pcapng").read_bytes()))
    got, reader = read_all(path)
    assert reader.compressed and reader.format == "pcapng" and len(got) == 24


class _FakeStdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]


@pytest.mark.parametrize("compress", [False, True])
def test_stdin(monkeypatch: pytest.MonkeyPatch, compress: bool) -> None:
    raw = (FIXTURES / "loopback-http.pcap").read_bytes()
    monkeypatch.setattr(sys, "stdin", _FakeStdin(gzip.compress(raw) if compress else raw))
    got, reader = read_all("-")
    assert len(got) == 24 and reader.compressed is compress
    assert reader.total_bytes is None
    assert reader.bytes_read == len(gzip.compress(raw)) if compress else len(raw)


# ----------------------------------------------------------------------------------------------------
# Unreadable files: one exception class, one clear line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"hello, this is not a capture file at all\n", "not a pcap or pcapng file"),
        (b"\x28\xb5\x2f\xfd" + b"\0" * 40, "zstd"),
        (b"\xd4\xc3\xb2\xa1\x02\x00", "pcap file header is truncated"),
        (b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\xde\xad\xbe\xef" + b"\0" * 16, "byte-order magic"),
        (gzip.compress(b"", mtime=0), "gzip file is empty"),
        (gzip.compress(b"GIF89a not a capture", mtime=0), "not a pcap or pcapng file"),
        (b"\x1f\x8b\x08\x00garbage-garbage-garbage", "gzip"),
    ],
)
def test_unreadable_files_raise_capture_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    with pytest.raises(CaptureError) as exc:
        open_capture(str(path))
    text = str(exc.value)
    assert message in text and str(path) in text and "\n" not in text


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="nope.pcap: no such file"):
        open_capture(str(tmp_path / "nope.pcap"))
    with pytest.raises(CaptureError, match="is a directory: name the capture files in it"):
        open_capture(str(tmp_path))


def test_a_fifo_is_read_as_a_stream(tmp_path: Path) -> None:
    """A named pipe (what ``<(cat x.pcap)`` gives) is opened like a file and read to its end; its size is not
    known."""
    data = (PCAPS / "tansu-consumer-group-3-members.pcap").read_bytes()
    with open_capture(str(PCAPS / "tansu-consumer-group-3-members.pcap")) as reader:
        expected = [(p.ts, bytes(p.data)) for p in reader]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("wb") as f:
            for i in range(0, len(data), 1000):  # the reader gets short reads
                f.write(data[i:i + 1000])
                f.flush()

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        with open_capture(str(fifo)) as reader:
            assert reader.total_bytes is None
            got = [(p.ts, bytes(p.data)) for p in reader]
    finally:
        writer.join(30)
    assert got == expected and reader.warnings == []


# ----------------------------------------------------------------------------------------------------
# Damage after the header: iteration ends early with a warning, earlier packets survive


def test_truncated_last_record(tmp_path: Path) -> None:
    data = pcap_file([(1, 0, tcp_frame(b"one"), 60), (2, 0, tcp_frame(b"two"), 60)])
    path = tmp_path / "cut.pcap"
    path.write_bytes(data[:-10])
    got, reader = read_all(path)
    assert [g.ts for g in got] == [1.0]
    assert len(reader.warnings) == 1 and "truncated" in reader.warnings[0] and "\n" not in reader.warnings[0]
    assert reader.packets_read == 1


def test_truncated_last_record_header(tmp_path: Path) -> None:
    data = pcap_file([(1, 0, tcp_frame(b"one"), 60)]) + b"\x01\x02\x03"
    path = tmp_path / "cut.pcap"
    path.write_bytes(data)
    got, reader = read_all(path)
    assert len(got) == 1 and "record header is truncated" in reader.warnings[0]


def test_corrupt_record_length(tmp_path: Path) -> None:
    data = pcap_file([(1, 0, tcp_frame(b"one"), 60)]) + struct.pack("<IIII", 2, 0, 0xFFFFFF00, 10) + b"x" * 50
    path = tmp_path / "corrupt.pcap"
    path.write_bytes(data)
    got, reader = read_all(path)
    assert len(got) == 1 and "damaged" in reader.warnings[0]


def test_header_only_pcap_is_valid_and_empty(tmp_path: Path) -> None:
    path = tmp_path / "h.pcap"
    path.write_bytes(pcap_file([]))
    got, reader = read_all(path)
    assert got == [] and reader.warnings == []


@pytest.mark.parametrize("cut", [1, 5, 13])
def test_truncated_pcapng(tmp_path: Path, cut: int) -> None:
    data = ng_shb() + ng_idb(1) + ng_epb(0, 1, b"first") + ng_epb(0, 2, b"second")
    path = tmp_path / "cut.pcapng"
    path.write_bytes(data[:-cut])
    got, reader = read_all(path)
    assert [g.data for g in got] == [b"first"] and len(reader.warnings) == 1


def test_pcapng_bad_block_length(tmp_path: Path) -> None:
    data = ng_shb() + ng_idb(1) + ng_epb(0, 1, b"first") + struct.pack("<II", 6, 7) + b"\0" * 20
    path = tmp_path / "bad.pcapng"
    path.write_bytes(data)
    got, reader = read_all(path)
    assert len(got) == 1 and "invalid length" in reader.warnings[0]


def test_truncated_gzip_stream(tmp_path: Path) -> None:
    records = [(i, 0, tcp_frame(bytes([i]) * 200), 300) for i in range(200)]
    packed = gzip.compress(pcap_file(records))
    path = tmp_path / "cut.pcap.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    got, reader = read_all(path)
    assert 0 < len(got) < 200
    assert [g.data for g in got] == [r[2] for r in records[: len(got)]]
    assert len(reader.warnings) == 1 and "compressed data" in reader.warnings[0]


# ----------------------------------------------------------------------------------------------------
# Real captures


@pytest.mark.parametrize("name", ["loopback-http.pcap", "loopback-http-nanosecond.pcap",
                                  "any-sll2-http.pcap", "loopback-http-snaplen80.pcap"])
def test_tcpdump_fixtures_match_dpkt(name: str) -> None:
    got, reader = read_all(FIXTURES / name)
    with open(FIXTURES / name, "rb") as f:
        ref = list(dpkt.pcap.Reader(f))
    assert reader.warnings == [] and len(got) == len(ref) == 24
    for g, (ts, buf) in zip(got, ref, strict=True):
        assert g.data == buf and g.ts == pytest.approx(float(ts), abs=1e-9)


def test_nanosecond_and_microsecond_captures_of_the_same_traffic_agree() -> None:
    us, _ = read_all(FIXTURES / "loopback-http.pcap")
    ns, reader = read_all(FIXTURES / "loopback-http-nanosecond.pcap")
    assert reader.nanosecond
    assert [p.data for p in ns] == [p.data for p in us]
    assert all(abs(a.ts - b.ts) < 2e-6 for a, b in zip(ns, us, strict=True))
    assert any(round(p.ts * 1e6) != p.ts * 1e6 for p in ns)  # sub-microsecond digits are kept


def test_snaplen_fixture_keeps_original_lengths() -> None:
    got, reader = read_all(FIXTURES / "loopback-http-snaplen80.pcap")
    assert reader.snaplen == 80
    cut = [g for g in got if g.caplen < g.wirelen]
    assert cut and all(g.caplen == 80 == len(g.data) for g in cut)


def _real_captures() -> list[Path]:
    return sorted(REAL_CAPTURES.glob("*.pcap")) if REAL_CAPTURES.is_dir() else []


@pytest.mark.skipif(not _real_captures(), reason="shared/real-captures not present")
def test_all_shared_real_captures_read_without_error() -> None:
    for path in _real_captures():
        got, reader = read_all(path)
        with open(path, "rb") as f:
            ref = list(dpkt.pcap.Reader(f))
        assert reader.warnings == [], path
        assert len(got) == len(ref) > 0, path
        assert [g.data for g in got] == [buf for _ts, buf in ref], path
