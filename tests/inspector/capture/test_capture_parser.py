"""Tests for inspector.capture.parser, the sans-I/O capture parser: fed whole, one byte at a time, in odd chunks
and with trailing garbage, it gives the same packets and keeps nothing of the chunks."""

from __future__ import annotations

from typing import Any

import pytest

from inspector.capture.parser import CaptureError, CaptureParser, RawPacket
from tests.inspector.capture_writers import ng_epb, ng_idb, ng_shb, ng_spb, pcap_file, tcp_frame

# ----------------------------------------------------------------------------------------------------
# The sans-I/O parser: fed whole, one byte at a time, in odd chunks, and with trailing garbage


def feed_in(data: bytes, sizes: list[int], **kwargs: Any) -> tuple[list[RawPacket], CaptureParser]:
    """Feed ``data`` to a new parser in chunks of the given sizes (cycled), then end it."""
    parser = CaptureParser(**kwargs)
    got: list[RawPacket] = []
    pos = i = 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        got += parser.feed(data[pos:pos + size])
        pos += size
        i += 1
    parser.end()
    return got, parser


def _packets(got: list[RawPacket]) -> list[tuple[float, int, bytes, int, int]]:
    return [(g.ts, g.linktype, g.data, g.caplen, g.wirelen) for g in got]


_PCAP = pcap_file([(i, i * 1000, tcp_frame(bytes([65 + i]) * (i * 37)), 2000) for i in range(12)])


_PCAPNG = ng_shb() + ng_idb(1) + b"".join(ng_epb(0, i, tcp_frame(b"n" * i)) for i in range(12)) + ng_spb(b"s", 1)


@pytest.mark.parametrize("data", [_PCAP, _PCAPNG], ids=["pcap", "pcapng"])
@pytest.mark.parametrize("sizes", [[1 << 30], [1], [3, 17, 1, 250], [16], [24, 4096]])
def test_parser_gives_the_same_packets_whatever_the_chunks(data: bytes, sizes: list[int]) -> None:
    whole, whole_parser = feed_in(data, [len(data)])
    got, parser = feed_in(data, sizes)
    assert len(whole) == 13 if data is _PCAPNG else len(whole) == 12
    assert _packets(got) == _packets(whole)
    assert all(type(g.data) is bytes for g in got)
    assert parser.warnings == whole_parser.warnings == [] and parser.packets == len(whole)
    assert parser.linktype == 1 and parser.format == ("pcapng" if data is _PCAPNG else "pcap")


def test_parser_reports_trailing_garbage_once_after_the_good_packets() -> None:
    got, parser = feed_in(_PCAP + b"\x07" * 9, [5])
    assert len(got) == 12 and parser.done
    assert parser.warnings == ["last record header is truncated (9 of 16 bytes present); stopped after 12 packets"]
    got, parser = feed_in(_PCAP[:-3], [1])
    assert len(got) == 11 and len(parser.warnings) == 1 and "last record is truncated" in parser.warnings[0]


def test_parser_keeps_no_reference_to_a_chunk_it_was_fed() -> None:
    """The file adapter reads into one reused buffer: the packets must be copies."""
    parser = CaptureParser()
    buf = bytearray(_PCAP)
    got = parser.feed(memoryview(buf)[:100]) + parser.feed(memoryview(buf)[100:])
    buf[:] = b"\0" * len(buf)
    assert _packets(got) == _packets(feed_in(_PCAP, [len(_PCAP)])[0])


def test_parser_applies_one_to_every_packet() -> None:
    got, _ = feed_in(_PCAP, [100], one=lambda pkt: len(pkt.data))
    assert got == [len(g.data) for g in feed_in(_PCAP, [len(_PCAP)])[0]]


def test_parser_refuses_data_that_is_no_capture() -> None:
    with pytest.raises(CaptureError, match="not a pcap or pcapng stream"):
        CaptureParser().feed(b"GET / HTTP/1.1\r\n")
