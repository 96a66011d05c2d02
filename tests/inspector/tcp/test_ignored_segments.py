"""Every segment the reassembler ignores is counted, with why and its payload bytes: in ``Reassembler.ignored``,
``summary.json`` (``accounting``'s ``segments_ignored``/``bytes_ignored``, ``ignored_segments`` by reason) and
``read``'s output. The case that was silent: a capture concatenated with a copy of itself days later (the same
4-tuples and sequence numbers), whose second copy is all ignored."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from contract.errors import ExitCode
from inspector.capture.packets import ACK, FIN, RST, SYN
from inspector.cli.main import main
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import (
    IGNORED_AFTER_CLOSE,
    IGNORED_DATA_AGAIN,
    IGNORED_HANDSHAKE_AGAIN,
    IGNORED_NO_CONNECTION,
    IGNORED_RST_DATA,
)
from tests.inspector.reassembly_streams import C, S, Streams, mk

PCAPS = Path(__file__).parents[3] / "pcaps"
CAPTURE = PCAPS / "tansu-consumer-group-3-members.pcap"
TWO_DAYS = 2 * 86400


def test_each_reason_counts_segments_and_payload_bytes() -> None:
    r = Reassembler()
    st = Streams()
    st.feed(r, [mk(S, C, 5, flags=RST)])  # no connection
    st.feed(r, [mk(C, S, 99, flags=SYN), mk(S, C, 499, flags=SYN | ACK, ack=100), mk(C, S, 100, flags=ACK, ack=500),
                mk(C, S, 100, b"hello", ack=500), mk(S, C, 500, b"world!", ack=105),
                mk(C, S, 105, flags=FIN | ACK, ack=506), mk(S, C, 506, flags=FIN | ACK, ack=106),
                mk(C, S, 106, flags=ACK, ack=507)])  # closed at the second FIN: this last ACK is after it
    assert len(st.closed) == 1
    st.feed(r, [mk(C, S, 99, flags=SYN), mk(S, C, 499, flags=SYN | ACK, ack=100),  # the same handshake again
                mk(C, S, 100, b"hello", ack=500), mk(S, C, 500, b"world!", ack=105)])  # and its data
    st.feed(r, [mk(C, S, 7000, flags=SYN, ts=3.0), mk(C, S, 7001, b"x" * 10, ts=3.0),
                mk(S, C, 9000, b"diagnostic", flags=RST, ts=3.1)])  # a new connection, reset with text
    st.finish(r)
    assert r.ignored == {IGNORED_NO_CONNECTION: [1, 0], IGNORED_AFTER_CLOSE: [1, 0], IGNORED_HANDSHAKE_AGAIN: [2, 0],
                         IGNORED_DATA_AGAIN: [2, 11], IGNORED_RST_DATA: [1, 10]}
    assert r.ignored_segments == 7 and len(st.opened) == 2


def _tcp_payloads(path: Path) -> int:
    """TCP payload bytes of every packet of a classic Ethernet/IPv4 pcap, read independently of the inspector."""
    data = path.read_bytes()
    magic, = struct.unpack("<I", data[:4])
    assert magic == 0xA1B2C3D4 and struct.unpack("<I", data[20:24])[0] == 1  # microseconds, Ethernet
    pos, total = 24, 0
    while pos < len(data):
        _, _, caplen, _ = struct.unpack("<IIII", data[pos:pos + 16])
        frame = data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
        if frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 0x0F) * 4
        ip_len = struct.unpack(">H", frame[16:18])[0]
        tcp_header = (frame[14 + ihl + 12] >> 4) * 4
        total += ip_len - ihl - tcp_header
    return total


def _twice(path: Path, out: Path, shift: int) -> None:
    """The capture, then its packets again ``shift`` seconds later (a capture concatenated with a copy)."""
    data = path.read_bytes()
    records = bytearray()
    pos = 24
    while pos < len(data):
        sec, usec, caplen, wire = struct.unpack("<IIII", data[pos:pos + 16])
        records += struct.pack("<IIII", sec + shift, usec, caplen, wire) + data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
    out.write_bytes(data + bytes(records))


def test_a_capture_with_a_copy_of_itself_counts_the_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    twice = tmp_path / "twice.pcap"
    _twice(CAPTURE, twice, TWO_DAYS)
    assert main(["read", str(CAPTURE), "-o", str(tmp_path / "once"), "--quiet"]) == ExitCode.OK
    assert main(["read", str(twice), "-o", str(tmp_path / "twice"), "--format", "jsonl"]) == ExitCode.OK
    printed = capsys.readouterr().err
    once = json.loads((tmp_path / "once" / "summary.json").read_text())
    doubled = json.loads((tmp_path / "twice" / "summary.json").read_text())
    # The copy decodes to nothing new (its connections had closed), and is not lost without a word:
    assert doubled["messages"] == once["messages"] and doubled["packets"] == 2 * once["packets"]
    payload = _tcp_payloads(CAPTURE)
    again = doubled["ignored_segments"][IGNORED_DATA_AGAIN]
    assert again["bytes"] == payload  # every payload byte of the copy
    acc = doubled["accounting"]["*"]
    assert acc["bytes_ignored"] == payload and acc["segments_ignored"] == sum(
        c["segments"] for c in doubled["ignored_segments"].values())
    assert doubled["accounting"][twice.name]["bytes_ignored"] == payload
    assert once["accounting"]["*"]["bytes_ignored"] == 0  # once: only the segments after close, no data
    assert set(once["ignored_segments"]) <= {IGNORED_AFTER_CLOSE}
    assert f"ignored: {sum(c['segments'] for c in doubled['ignored_segments'].values() if c['bytes']):,} TCP " \
           f"segments carrying {payload:,} bytes" in printed
    assert f"{IGNORED_DATA_AGAIN}: {again['segments']:,} segments, {payload:,} bytes" in printed
