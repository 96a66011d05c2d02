"""Every pcapng block kind the parser reads is checked before it is read: hand-made blocks shorter than their
fixed fields, lying captured lengths, trailing lengths that disagree, at the end of the data and mid-file,
fed whole and a byte at a time. Damage is a warning (a counted skip, or the end of the packets), never an
exception, and never a packet made of another block's bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from contract.errors import ExitCode
from inspector.capture.file import CaptureError, open_capture
from inspector.capture.parser import CaptureParser, RawPacket
from inspector.cli.main import main
from tests.inspector.capture_writers import ng_block, ng_epb, ng_idb, ng_opb, ng_shb, ng_spb, read_all, tcp_frame

SHB, IDB, OPB, SPB, EPB = 0x0A0D0D0A, 1, 2, 3, 6
#: The length of each block kind with no data nor options (header, fixed fields, trailing length), from the
#: pcapng specification (draft-ietf-opsawg-pcapng), written here independently of the parser.
FIXED = {SHB: 28, IDB: 20, OPB: 32, SPB: 16, EPB: 32}
NAMES = {IDB: "interface description", OPB: "packet", SPB: "simple packet", EPB: "enhanced packet"}


def short_block(btype: int, blen: int, fill: int = 0x41) -> bytes:
    """A block of ``blen`` bytes (a multiple of 4, at least 12) whose length fields agree, body ``fill``."""
    return struct.pack("<II", btype, blen) + bytes([fill]) * (blen - 12) + struct.pack("<I", blen)


def parse(data: bytes, sizes: list[int]) -> tuple[list[RawPacket], CaptureParser]:
    parser = CaptureParser()
    got: list[Any] = []
    pos = i = 0
    while pos < len(data):
        got += parser.feed(data[pos:pos + sizes[i % len(sizes)]])
        pos += sizes[i % len(sizes)]
        i += 1
    parser.end()
    return got, parser


HEAD = ng_shb() + ng_idb(1)
GOOD = ng_epb(0, 5, b"good packet")
CHUNKS = [[1 << 30], [1], [5, 13, 64]]


def test_the_40_byte_file_of_the_issue(tmp_path: Path) -> None:
    """A section header, then ``06000000 0c000000 0c000000``: a 12-byte enhanced packet block (was:
    struct.error out of read and show, exit 1)."""
    shb = struct.pack("<II4sHHq", SHB, 28, b"\x4d\x3c\x2b\x1a", 1, 0, -1) + struct.pack("<I", 28)
    path = tmp_path / "short.pcapng"
    path.write_bytes(shb + bytes.fromhex("060000000c0000000c000000"))
    assert path.stat().st_size == 40
    got, reader = read_all(path)
    assert got == []
    assert reader.warnings == ["pcapng enhanced packet block at byte 28 is 12 bytes, shorter than its 32 fixed "
                               "bytes; skipped"]


@pytest.mark.parametrize("btype", [IDB, OPB, SPB, EPB], ids=lambda t: NAMES[t].replace(" ", "-"))
@pytest.mark.parametrize("sizes", CHUNKS, ids=["whole", "bytewise", "chunks"])
def test_a_block_shorter_than_its_fixed_fields_is_skipped(btype: int, sizes: list[int]) -> None:
    for blen in range(12, FIXED[btype], 4):
        # mid-file: the short block's fields would be read from the good packet after it
        data = HEAD + short_block(btype, blen) + GOOD
        got, parser = parse(data, sizes)
        assert [(g.data, g.caplen) for g in got] == [(b"good packet", 11)], blen
        assert parser.warnings == [f"pcapng {NAMES[btype]} block at byte {len(HEAD)} is {blen} bytes, shorter "
                                   f"than its {FIXED[btype]} fixed bytes; skipped"]
        # at the end of the data: its fields would be read from past the data
        got, parser = parse(HEAD + GOOD + short_block(btype, blen), sizes)
        assert [g.data for g in got] == [b"good packet"] and len(parser.warnings) == 1, blen
        assert not parser.done  # skipped, not the end of the packets


@pytest.mark.parametrize("sizes", CHUNKS, ids=["whole", "bytewise", "chunks"])
def test_a_12_byte_simple_packet_block_is_no_packet(sizes: list[int]) -> None:
    """Was: a packet of caplen -4 (its original length read from its trailing length)."""
    got, parser = parse(HEAD + short_block(SPB, 12) + ng_spb(b"spb", 3), sizes)
    assert [(g.data, g.caplen, g.wirelen) for g in got] == [(b"spb", 3, 3)]
    assert "simple packet block at byte" in parser.warnings[0] and len(parser.warnings) == 1


@pytest.mark.parametrize("sizes", CHUNKS, ids=["whole", "bytewise", "chunks"])
def test_a_short_section_header_mid_file_ends_the_packets(sizes: list[int]) -> None:
    for blen in (16, 20, 24):  # long enough to hold a byte-order magic, too short for the rest
        bad = struct.pack("<II4s", SHB, blen, b"\x4d\x3c\x2b\x1a") + b"\0" * (blen - 16) + struct.pack("<I", blen)
        got, parser = parse(HEAD + GOOD + bad + ng_idb(1) + GOOD, sizes)
        assert [g.data for g in got] == [b"good packet"] and parser.done
        assert parser.warnings == [f"pcapng section header at byte {len(HEAD + GOOD)} is {blen} bytes, shorter "
                                   f"than its 28 fixed bytes: the file is damaged there; stopped after 1 packets"]


@pytest.mark.parametrize("blen", [12, 16, 20, 24, 30, 0x7FFFFFF0])
def test_a_file_whose_section_header_is_damaged_is_one_line(tmp_path: Path, blen: int) -> None:
    path = tmp_path / "bad.pcapng"
    path.write_bytes(struct.pack("<II4s", SHB, blen, b"\x4d\x3c\x2b\x1a") + b"\0" * 40)
    with pytest.raises(CaptureError, match=f"section header is damaged \\(its length is {blen} bytes\\)"):
        open_capture(str(path))


@pytest.mark.parametrize("block", [
    ng_epb(0, 1, b"x" * 40), ng_opb(0, 1, b"x" * 40), ng_spb(b"x" * 40, 40), ng_idb(1), ng_block(5, b"\0" * 20),
], ids=["enhanced", "obsolete", "simple", "interface", "statistics"])
@pytest.mark.parametrize("sizes", CHUNKS, ids=["whole", "bytewise", "chunks"])
def test_a_trailing_length_that_disagrees_ends_the_packets(block: bytes, sizes: list[int]) -> None:
    """The length at a block's end repeats the one at its start; when not, the block was not framed right (a
    length lying short would otherwise make the next block start inside this one)."""
    bad = block[:-4] + struct.pack("<I", len(block) + 8)
    got, parser = parse(HEAD + GOOD + bad + GOOD, sizes)
    assert [g.data for g in got] == [b"good packet"] and parser.done
    assert len(parser.warnings) == 1
    assert f"at byte {len(HEAD + GOOD)} is {len(block)} bytes but ends with a length of {len(block) + 8}" \
        in parser.warnings[0]


@pytest.mark.parametrize("make", [ng_epb, ng_opb], ids=["enhanced", "obsolete"])
def test_a_packet_claiming_more_bytes_than_its_block_is_skipped_and_counted(make: Any) -> None:
    liar = bytearray(make(0, 1, b"y" * 8))
    struct.pack_into("<I", liar, 20, 1000)  # the captured length, at the same place in both kinds
    got, parser = parse(HEAD + bytes(liar) + GOOD + bytes(liar) * 3, [1 << 30])
    assert [g.data for g in got] == [b"good packet"]
    assert parser.warnings == [f"pcapng packet block at byte {len(HEAD)} claims 1000 bytes in a {len(liar)}-byte "
                               "block; skipped, and 3 more such blocks"]


def test_packets_on_undeclared_interfaces_are_counted_in_one_line() -> None:
    data = ng_shb() + ng_spb(b"early", 5) + ng_idb(1) + ng_epb(3, 1, b"a") + ng_opb(7, 1, b"b") + GOOD
    got, parser = parse(data, [1 << 30])
    assert [g.data for g in got] == [b"good packet"]
    assert len(parser.warnings) == 1
    assert parser.warnings[0].startswith("pcapng simple packet block at byte 48 comes before any interface")
    assert parser.warnings[0].endswith("; skipped, and 2 more such blocks")


def test_a_million_damaged_blocks_are_a_few_warning_lines() -> None:
    data = HEAD + short_block(EPB, 12) * 1_000_000 + GOOD + short_block(IDB, 16) * 1000
    got, parser = parse(data, [1 << 20])
    assert [g.data for g in got] == [b"good packet"]
    assert parser.warnings == [
        f"pcapng enhanced packet block at byte {len(HEAD)} is 12 bytes, shorter than its 32 fixed bytes; skipped, "
        "and 1,000,999 more such blocks"]


def test_every_block_kind_cut_anywhere_is_never_an_exception() -> None:
    """A file of every kind, cut at every byte: what is whole is read, the rest is one warning."""
    whole = HEAD + GOOD + ng_opb(0, 2, b"opb") + ng_spb(b"spb", 3) + ng_block(4, b"\0" * 4) + ng_shb() + ng_idb(1)
    for cut in range(len(ng_shb()), len(whole)):
        got, parser = parse(whole[:cut], [1 << 30])
        assert len(parser.warnings) <= 1 and all(g.caplen == len(g.data) >= 0 for g in got), cut


_KAFKA = ng_epb(0, 9, tcp_frame(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x04test"))
CLI_CASES: dict[str, tuple[bytes, int, str]] = {
    "the 40-byte file": (struct.pack("<II4sHHqI", SHB, 28, b"\x4d\x3c\x2b\x1a", 1, 0, -1, 28)
                         + bytes.fromhex("060000000c0000000c000000"), ExitCode.OK, "shorter than its 32 fixed bytes"),
    "12-byte simple packet mid-file": (HEAD + short_block(SPB, 12) + _KAFKA, ExitCode.OK, "simple packet block"),
    "short interface block mid-file": (HEAD + short_block(IDB, 16) + _KAFKA, ExitCode.OK, "interface description"),
    "short obsolete packet block": (HEAD + short_block(OPB, 28) + _KAFKA, ExitCode.OK, "pcapng packet block"),
    "trailing length lies": (HEAD + _KAFKA[:-4] + b"\xff\xff\xff\x7f", ExitCode.OK, "ends with a length"),
    "short section header": (struct.pack("<II4sI", SHB, 16, b"\x4d\x3c\x2b\x1a", 16) + ng_idb(1) + _KAFKA,
                             ExitCode.INPUT, "section header is damaged"),
}


@pytest.mark.parametrize("name", list(CLI_CASES))
@pytest.mark.parametrize("command", ["read", "show"])
def test_read_and_show_report_damaged_blocks_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         name: str, command: str) -> None:
    content, code, needle = CLI_CASES[name]
    path = tmp_path / "damaged.pcapng"
    path.write_bytes(content)
    out = tmp_path / "o"
    argv = ["read", str(path), "--output", str(out), "--quiet"] if command == "read" else ["show", str(path)]
    assert main(argv) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    if code != ExitCode.OK:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], captured.err
    elif command == "read":
        warnings = json.loads((out / "summary.json").read_text())["warnings"]
        assert len(warnings) == 1 and needle in warnings[0] and "\n" not in warnings[0], warnings
