"""Tests for inspector.tcp.reassembly on whole captures: real link types, snap lengths, pcapng interfaces and the
shared real captures."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from inspector.capture.file import open_capture
from inspector.capture.packets import ACK, FIN, SYN, Segment, parse_packet
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import (
    GAP_SNAPLEN,
    SegmentTruncated,
    StreamData,
)
from tests.inspector.reassembly_streams import (
    FIXTURES,
    REAL_CAPTURES,
    S,
    Streams,
    mk,
    run,
)

# ----------------------------------------------------------------------------------------------------
# Whole pipeline on real captures


def pipeline(path: Path) -> Streams:
    r = Reassembler()
    st_ = Streams()
    ts = 0.0
    with open_capture(str(path)) as reader:
        for pkt in reader:
            s = parse_packet(pkt)
            assert isinstance(s, Segment), s
            st_.add(r.feed(s))
            ts = pkt.ts
    return st_.finish(r, ts)


def test_loopback_http_capture() -> None:
    st_ = pipeline(FIXTURES / "loopback-http.pcap")
    assert len(st_.opened) == 2 and all(o.saw_syn for o in st_.opened.values())
    assert [c.reason for c in st_.closed.values()] == ["fin", "fin"]
    assert bytes(st_.data[1, 0]).startswith(b"GET /index.html HTTP/1.1\r\n")
    assert b"hello kafka inspector fixture" in bytes(st_.data[1, 1])
    assert bytes(st_.data[2, 0]).startswith(b"GET /nonexistent HTTP/1.1\r\n")
    assert not st_.all_gaps()


def test_sll2_capture_reassembles_like_the_ethernet_one() -> None:
    eth = pipeline(FIXTURES / "loopback-http.pcap")
    sll2 = pipeline(FIXTURES / "any-sll2-http.pcap")
    assert dict(sll2.data) == dict(eth.data)


def test_snaplen_capture_reports_cut_segments_as_gaps() -> None:
    st_ = pipeline(FIXTURES / "loopback-http-snaplen80.pcap")
    full = pipeline(FIXTURES / "loopback-http.pcap")
    for key, data in st_.data.items():
        assert len(data) == len(full.data[key])  # same stream lengths, cut bytes are gaps
        assert all(g[2] == GAP_SNAPLEN for g in st_.gaps[key])
    assert sum(len(g) for g in st_.gaps.values()) == 6
    assert sum(1 for e in st_.events if isinstance(e, SegmentTruncated)) == 6


def test_two_interface_pcapng_sees_every_packet_twice() -> None:
    # dumpcap writes the packets of each interface in batches: the second copy of the client's request
    # is a retransmission; the second copies of the server's data come after the connection closed.
    r = Reassembler()
    st_ = Streams()
    with open_capture(str(FIXTURES / "dumpcap-two-interfaces.pcapng")) as reader:
        for pkt in reader:
            s = parse_packet(pkt)
            assert isinstance(s, Segment)
            st_.add(r.feed(s))
    st_.finish(r)
    assert len(st_.opened) == 1 and not st_.all_gaps()
    assert b"hello kafka inspector fixture" in bytes(st_.data[1, 1])
    stats = st_.closed[1].stats
    assert stats is not None and stats.sides[0].retransmitted_bytes == stats.sides[0].bytes_delivered == 89
    assert r.ignored_segments == 1 + 7  # the last ACK after both FINs, then the second batch


def _real_captures() -> list[Path]:
    return sorted(REAL_CAPTURES.glob("*.pcap")) if REAL_CAPTURES.is_dir() else []


@pytest.mark.skipif(not _real_captures(), reason="shared/real-captures not present")
@pytest.mark.parametrize("path", _real_captures(), ids=lambda p: p.name)
def test_shared_real_captures_reassemble_without_gaps(path: Path) -> None:
    st_ = pipeline(path)
    assert st_.opened and not st_.all_gaps()
    assert all(len(d) > 0 for d in st_.data.values())


def test_interleaved_connections_reused_and_evicted_tuples_land_on_their_own_connection() -> None:
    """The flow table's last two hits are remembered (compiled, a segment of the busiest connection skips the
    4-tuple): three connections in turn, a 4-tuple reused after its FIN and connections evicted in between
    still deliver each byte to its own connection."""
    clients = [(f"10.0.1.{i}", 50_000 + i) for i in range(3)]
    segments: list[Segment] = []
    for i, c in enumerate(clients):
        segments += [mk(c, S, 99 + i, flags=SYN), mk(S, c, 499 + i, flags=SYN | ACK, ack=100 + i)]
    for k in range(6):
        for i, c in enumerate(clients):  # each in turn: the remembered pair never holds the next one
            segments += [mk(c, S, 100 + i + 2 * k, f"{i}{k}".encode()),
                         mk(S, c, 500 + i + 2 * k, f"r{k}".encode(), ack=102 + i + 2 * k)]
    c0 = clients[0]
    segments += [mk(c0, S, 112, flags=FIN | ACK), mk(S, c0, 512, flags=FIN | ACK, ack=113), mk(c0, S, 113, ack=513),
                 mk(c0, S, 7_999, flags=SYN), mk(S, c0, 8_999, flags=SYN | ACK, ack=8_000), mk(c0, S, 8_000, b"again")]
    st_ = run(segments)
    assert [bytes(st_.data[i, 0]) for i in (1, 2, 3)] == [b"000102030405", b"101112131415", b"202122232425"]
    assert all(bytes(st_.data[i, 1]) == b"r0r1r2r3r4r5" for i in (1, 2, 3))
    assert bytes(st_.data[4, 0]) == b"again" and st_.closed[1].reason == "fin"
    evicting = run(segments, max_connections=2)  # each new connection evicts one: the table changes under it
    assert len(evicting.opened) > len(st_.opened)

    def by_sender(streams: Streams) -> dict[tuple[str, int, str, int], bytes]:
        out: dict[tuple[str, int, str, int], bytes] = defaultdict(bytes)
        for ev in streams.events:
            if isinstance(ev, StreamData):
                out[ev.src[0], ev.src[1], ev.dst[0], ev.dst[1]] += bytes(ev.data)
        return dict(out)

    assert by_sender(evicting) == by_sender(st_)
