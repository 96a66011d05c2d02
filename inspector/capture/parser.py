"""Sans-I/O pcap and pcapng parsing: bytes of a capture in, its packets out.

:class:`CaptureParser` is fed the bytes of a capture as they come, in chunks of any size (a file read
1 MiB at a time, or a live ``tcpdump -w -`` stream); :meth:`CaptureParser.feed` returns the packets whole
in what it has been fed so far and keeps the rest (at most one incomplete record) for the next call;
:meth:`CaptureParser.end` says the data ended. It opens nothing, reads nothing and never reads a clock:
``inspector.capture.file`` is its file, gzip and stdin adapter.

The records of a classic pcap are sliced by one typed loop (``inspector/native/_packets.pyx``: faster than
``dpkt.pcap.Reader``, which also hides the original packet length that is needed to detect snap-length
truncation); pcapng blocks are read with ``struct.unpack_from``. Damage found in the
data (a corrupt record header, a record larger than any real one, a truncated last record) is not an
exception: it ends the packets and is described in :attr:`CaptureParser.warnings`; the packets before
it are still good. Only data that is no capture at all raises :class:`CaptureError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from struct import Struct
from typing import Any, NamedTuple, Protocol, TypeVar

from contract.errors import ExitCode, InspectorError
from inspector.frozen_init import fast_frozen_init
from inspector.native._packets import RecordLoop

__all__ = [
    "CaptureError",
    "CaptureParser",
    "FrameParser",
    "PacketSource",
    "RawPacket",
    "describe_magic",
    "header_problem",
]

_T = TypeVar("_T")
#: ``frame(data, linktype, ts, caplen, wirelen)``: what a classic pcap record is parsed into, given as its parts
#: (``inspector.capture.packets.parse_frame``), in place of ``one(RawPacket(...))``; see :class:`CaptureParser`.
FrameParser = Callable[[bytes, int, float, int, int], Any]


class CaptureError(InspectorError):
    """The data cannot be read as a capture (missing, empty, not pcap/pcapng, damaged header)."""

    exit_code = ExitCode.INPUT


@dataclass(frozen=True)  # compiled, an extension type (capture_parser.pxd); from source, the slots below
class RawPacket:
    """One captured frame, as stored in the file.

    ``caplen`` is the number of bytes stored (``len(data)``); ``wirelen`` is the frame's original length
    on the wire. ``caplen < wirelen`` means the capture cut the frame (snap length). Some writers store
    a ``wirelen`` smaller than ``caplen`` (a bug); the record is still returned as stored.
    """

    __slots__ = ("ts", "linktype", "data", "caplen", "wirelen")

    ts: float
    linktype: int
    data: bytes
    caplen: int
    wirelen: int


fast_frozen_init(RawPacket)  # from source (compiled, a no-op)


class PacketSource(Protocol):
    """What turns a capture into packets for a consumer (``inspector.capture.file.CaptureReader``)."""

    def parsed(self, one: Callable[[RawPacket], _T], frame: FrameParser | None = None) -> Iterator[_T]: ...


# Classic pcap magic numbers as they appear in the first 4 bytes of the file.
PCAP_MAGICS: dict[bytes, tuple[str, int]] = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),  # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),  # big-endian, microseconds
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),  # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),  # big-endian, nanoseconds
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
_KNOWN_OTHER_MAGICS: dict[bytes, str] = {
    b"\xa1\xb2\xcd\x34": "Kuznetzov modified pcap (unsupported)",
    b"\x34\xcd\xb2\xa1": "Kuznetzov modified pcap (unsupported)",
    b"\x28\xb5\x2f\xfd": "zstd-compressed data (decompress it first)",
    b"BZh9": "bzip2-compressed data (decompress it first)",
    b"\xfd7zX": "xz-compressed data (decompress it first)",
    b"PK\x03\x04": "a zip archive (extract it first)",
}

_MAX_RECORD = 256 << 20  # a record (or pcapng block) larger than this is taken as corruption

# pcapng block types
_BT_IDB = 0x00000001
_BT_OPB = 0x00000002  # obsolete Packet Block
_BT_SPB = 0x00000003
_BT_EPB = 0x00000006
_BT_SHB = 0x0A0D0D0A
_BOM_LE = b"\x4d\x3c\x2b\x1a"
_BOM_BE = b"\x1a\x2b\x3c\x4d"
class _Block(NamedTuple):
    """A pcapng block type this reader reads."""

    #: what the block is called (in warnings)
    name: str
    #: its length with no data nor options: the 8-byte header, the fixed fields, the 4-byte trailing length. A
    #: block shorter than that is damage: its fixed fields would be read from the block after it, or from past
    #: the data.
    fixed: int


#: The blocks read, by type.
_BLOCKS: dict[int, _Block] = {
    _BT_SHB: _Block("section header", 28),  # byte-order magic, major, minor, section length (8)
    _BT_IDB: _Block("interface description", 20),  # link type, reserved, snap length
    _BT_EPB: _Block("enhanced packet", 32),  # interface, timestamp (2 x 4), captured and original length
    _BT_SPB: _Block("simple packet", 16),  # original length
    _BT_OPB: _Block("packet", 32),  # interface (2), drops (2), timestamp (2 x 4), captured and original length
}


def describe_magic(head: bytes) -> str:
    """What the first bytes of data that is no capture look like (``unknown magic 0x...`` at worst)."""
    for magic, what in _KNOWN_OTHER_MAGICS.items():
        if head.startswith(magic):
            return what
    return f"unknown magic 0x{head[:4].hex()}"


def header_problem(head: bytes) -> str | None:
    """Why the first 24 bytes of some data (all of it, when shorter) are not the start of a capture, or None."""
    magic = head[:4]
    if magic in PCAP_MAGICS:
        if len(head) < 24:
            return f"pcap file header is truncated ({len(head)} of 24 bytes)"
    elif magic == PCAPNG_SHB:
        if len(head) < 12:
            return f"pcapng section header is truncated ({len(head)} bytes)"
        bom = head[8:12]
        if bom not in (_BOM_LE, _BOM_BE):
            return f"pcapng section header has a bad byte-order magic 0x{bom.hex()}"
        blen = Struct("<I" if bom == _BOM_LE else ">I").unpack_from(head, 4)[0]
        if blen < _BLOCKS[_BT_SHB].fixed or blen % 4 or blen > _MAX_RECORD:
            return f"pcapng section header is damaged (its length is {blen} bytes)"
    else:
        return f"not a pcap or pcapng file ({describe_magic(head)})"
    return None


class CaptureParser:
    """The packets of one pcap or pcapng byte stream, fed in chunks; the format is read from the data.

    With ``one``, :meth:`feed` returns what ``one`` makes of each packet instead of the packet. The records of
    a classic pcap are sliced by the one record loop, ``inspector/native/_packets.pyx``: each becomes
    ``frame(data, linktype, ts, caplen, wirelen)`` when ``frame`` is given (the same thing ``one`` makes of
    the packet, without the packet), else ``one(RawPacket(...))``. A chunk fed may be reused by the caller
    afterwards: nothing the parser keeps or returns refers to it.

    Attributes:
        format: ``"pcap"`` or ``"pcapng"`` (None before the first 4 bytes).
        linktype: link type of the file (pcap) or of the first interface (pcapng); None before it is read.
        snaplen: snap length from the file header (pcap) or first interface (pcapng); None before.
        nanosecond: True for a nanosecond-resolution classic pcap.
        warnings: one line per problem found (damage that ended the packets, packets referring to
            unknown interfaces, ...).
        packets: packets parsed so far.
        done: True once damage ended the packets: what is fed afterwards is ignored.
    """

    def __init__(self, one: Callable[[RawPacket], Any] | None = None, frame: FrameParser | None = None) -> None:
        self.format: str | None = None
        self.linktype: int | None = None
        self.snaplen: int | None = None
        self.nanosecond = False
        self.warnings: list[str] = []
        self.packets = 0
        self.done = False
        self._one = one
        self._frame = frame
        #: ``loop(chunk, pos, out) -> (pos after the records whole in it, their count)``: the record loop
        self._loop: Callable[[Any, int, list[Any]], tuple[int, int]] | None = None
        self._tail = bytearray()  # the start of a record (or of the file header) not yet whole
        self._need = 4  # bytes the tail needs before it can be parsed
        self._records: Callable[[Any, list[Any]], None] = self._header
        # classic pcap
        self._scale = 1e-6
        self._unpack_rec = Struct("<IIII").unpack_from
        # pcapng: the section's byte order and interfaces, (linktype, seconds per tick, offset seconds, snaplen)
        self._endian = "<"
        self._u32 = Struct("<I").unpack_from
        self._hdr2 = Struct("<II").unpack_from
        self._epb = Struct("<IIIII").unpack_from
        self._ifaces: list[tuple[int, float, int, int]] = []
        self._base = 0  # offset in the stream of the first byte not yet parsed (pcapng: where a block starts)
        #: damaged blocks skipped, by kind: [the index of its line in the warnings, how many, the first one]
        self._skips: dict[str, list[Any]] = {}

    def feed(self, data: bytes | bytearray | memoryview) -> list[Any]:
        """The packets (or what ``one`` makes of them) whole in the data fed so far, in order."""
        out: list[Any] = []
        if not self.done and len(data):
            self._records(data, out)
        return out

    def end(self) -> None:
        """The data ended: what is left of an incomplete record is reported in :attr:`warnings`."""
        tail = self._tail
        if self.done or not tail:
            return
        have = len(tail)
        if self.format is None:
            self._stop(f"the data ended after {have} bytes, before the capture's format could be read")
        elif self.format == "pcap":
            if self._records == self._header:
                self._stop(f"pcap file header is truncated ({have} of 24 bytes)")
            elif have < 16:
                self._truncated("last record header", 16, have)
            else:
                self._truncated("last record", self._need - 16, have - 16)
        elif self.format == "pcapng":
            if have < 12:
                self._truncated("last block", 12, have)
            else:
                self._truncated(f"last block (type 0x{self._hdr2(tail, 0)[0]:08x})", self._need, have)
        tail.clear()

    # -- shared -----------------------------------------------------------------------------------------

    def _stop(self, warning: str) -> None:
        self.warnings.append(warning)
        self.done = True

    def _truncated(self, what: str, need: int, have: int) -> None:
        self._stop(f"{what} is truncated ({have} of {need} bytes present); stopped after {self.packets} packets")

    def _gather(self, data: Any) -> Any:
        """``data`` after the tail when the two make what the tail needs (its bytes; the tail emptied), else None
        (all of ``data`` kept in the tail)."""
        tail = self._tail
        tail += data
        if len(tail) < self._need:
            return None
        whole = bytes(tail)
        tail.clear()
        return whole

    def _header(self, data: Any, out: list[Any]) -> None:
        """The start of the data: the format from the magic, then the rest to the format's records."""
        buf = self._gather(data)
        if buf is None:
            return
        magic = buf[:4]
        if self.format is None:
            if magic not in PCAP_MAGICS and magic != PCAPNG_SHB:
                self.done = True
                raise CaptureError(f"not a pcap or pcapng stream ({describe_magic(buf)})")
            self.format = "pcap" if magic in PCAP_MAGICS else "pcapng"
            if self.format == "pcap" and len(buf) < 24:
                self._tail += buf
                self._need = 24
                return
        if self.format == "pcapng":
            self._need = 12
            self._records = self._pcapng
            self._pcapng(buf, out)
            return
        endian, divisor = PCAP_MAGICS[magic]
        _major, _minor, _zone, _sigfigs, snaplen, network = Struct(endian + "HHiIII").unpack_from(buf, 4)
        self.snaplen = snaplen
        self.linktype = network & 0xFFFF  # upper bits may carry FCS information
        self.nanosecond = divisor == 1_000_000_000
        self._unpack_rec = Struct(endian + "IIII").unpack_from
        self._scale = 1.0 / divisor
        frame = self._frame if self._frame is not None else self._packet
        self._loop = RecordLoop(endian == "<", self._scale, self.linktype, frame).parse_records
        self._need = 16
        self._records = self._pcap
        if len(buf) > 24:
            self._pcap(memoryview(buf)[24:], out)

    # -- classic pcap -----------------------------------------------------------------------------------

    def _pcap(self, buf: Any, out: list[Any]) -> None:
        """The records of ``buf``, after completing the one the tail started."""
        pos = self._pcap_tail(buf, out) if self._tail else 0
        if pos < 0:
            return  # all of buf went to the tail
        assert self._loop is not None  # made with the file header
        pos, parsed = self._loop(buf, pos, out)  # the records whole in this chunk, in one call
        self.packets += parsed
        n = len(buf)
        if pos < n:  # the start of a record: kept until the rest comes
            caplen = self._unpack_rec(buf, pos)[2] if n - pos >= 16 else 0
            if caplen > _MAX_RECORD:
                self._too_large(caplen)
                return
            self._tail += buf[pos:]
            self._need = 16 if n - pos < 16 else 16 + caplen

    def _packet(self, data: bytes, linktype: int, ts: float, caplen: int, wirelen: int) -> Any:
        """A classic pcap record as a packet (or what ``one`` makes of it), when no ``frame`` parser is given."""
        pkt = RawPacket(ts, linktype, data, caplen, wirelen)
        return pkt if self._one is None else self._one(pkt)

    def _pcap_tail(self, buf: Any, out: list[Any]) -> int:
        """Complete the record the tail started from the start of ``buf``: the position in ``buf`` after it, or
        -1 when all of ``buf`` went to the tail (or the record's length shows damage)."""
        tail = self._tail
        pos = 0
        n = len(buf)
        if len(tail) < 16:  # the record header itself was cut
            pos = min(16 - len(tail), n)
            tail += buf[:pos]
            if len(tail) < 16:
                return -1
            caplen = self._unpack_rec(tail, 0)[2]
            if caplen > _MAX_RECORD:
                tail.clear()
                self._too_large(caplen)
                return -1
            self._need = 16 + caplen
        take = min(self._need - len(tail), n - pos)
        tail += buf[pos:pos + take]
        pos += take
        if len(tail) < self._need:
            return -1
        record = bytes(tail)
        tail.clear()
        self._need = 16
        assert self._loop is not None  # made with the file header
        self.packets += self._loop(record, 0, out)[1]
        return pos

    def _too_large(self, caplen: int) -> None:
        self._stop(f"record {self.packets + 1} claims {caplen} captured bytes: the file is "
                   f"damaged there; stopped after {self.packets} packets")

    # -- pcapng -----------------------------------------------------------------------------------------

    def _pcapng(self, data: Any, out: list[Any]) -> None:  # noqa: C901 - the compiled block loop: a dispatch on block type
        """The blocks whole in the tail and ``data``; an incomplete last one stays in the tail.

        Each block is checked before it is read: its length (at least 12, a multiple of 4, at most
        ``_MAX_RECORD``, repeated at its end) frames it, and a block of a kind read here must hold that kind's
        fixed fields. A wrong length ends the packets (nothing after it can be framed); a block too short for
        its fields, a packet claiming more bytes than its block holds, or one on an undeclared interface is
        skipped and counted (:meth:`_skip`).
        """
        if self._tail:
            buf = self._gather(data)
            if buf is None:
                return
        else:
            buf = data if type(data) is bytes else bytes(data)
        pos = 0
        buflen = len(buf)
        count = self.packets
        one = self._one
        make = RawPacket
        u32 = self._u32
        hdr2 = self._hdr2
        epb = self._epb
        ifaces = self._ifaces
        blocks = _BLOCKS
        try:
            while True:
                if buflen - pos < 12:
                    self._need = 12
                    break
                btype, blen = hdr2(buf, pos)
                if btype == _BT_SHB:
                    # The byte order of this section is given by the byte-order magic, read it first.
                    bom = buf[pos + 8:pos + 12]
                    if bom == _BOM_LE:
                        self._endian = "<"
                    elif bom == _BOM_BE:
                        self._endian = ">"
                    else:
                        self._stop(f"bad pcapng section header at byte {self._base + pos} (byte-order magic "
                                   f"{bom.hex()}); stopped after {count} packets")
                        return
                    endian = self._endian
                    u32 = self._u32 = Struct(endian + "I").unpack_from
                    hdr2 = self._hdr2 = Struct(endian + "II").unpack_from
                    epb = self._epb = Struct(endian + "IIIII").unpack_from
                    btype, blen = hdr2(buf, pos)
                if blen < 12 or blen % 4 or blen > _MAX_RECORD:
                    self._stop(f"pcapng block of type 0x{btype:08x} at byte {self._base + pos} has invalid "
                               f"length {blen}: the file is damaged there; stopped after {count} packets")
                    return
                end = pos + blen
                if end > buflen:
                    self._need = blen
                    break
                trailer = u32(buf, end - 4)[0]
                if trailer != blen:
                    self._stop(f"pcapng block of type 0x{btype:08x} at byte {self._base + pos} is {blen} bytes "
                               f"but ends with a length of {trailer}: the file is damaged there; stopped after "
                               f"{count} packets")
                    return
                known = blocks.get(btype)
                if known is not None and blen < known.fixed:
                    if btype == _BT_SHB:
                        self._stop(f"pcapng section header at byte {self._base + pos} is {blen} bytes, shorter "
                                   f"than its {known.fixed} fixed bytes: the file is damaged there; stopped after "
                                   f"{count} packets")
                        return
                    self._skip("short", f"pcapng {known.name} block at byte {self._base + pos} is {blen} bytes, "
                                        f"shorter than its {known.fixed} fixed bytes")
                elif btype == _BT_EPB:
                    iface, ts_hi, ts_lo, caplen, wirelen = epb(buf, pos + 8)
                    if 28 + caplen > blen - 4:
                        self._skip("caplen", f"pcapng packet block at byte {self._base + pos} claims {caplen} "
                                             f"bytes in a {blen}-byte block")
                    elif iface < len(ifaces):
                        lt, tick, tsoff, _snap = ifaces[iface]
                        count += 1
                        pkt = make(((ts_hi << 32) | ts_lo) * tick + tsoff, lt,
                                   buf[pos + 28:pos + 28 + caplen], caplen, wirelen)
                        out.append(pkt if one is None else one(pkt))
                    else:
                        self._skip("iface", f"pcapng packet block at byte {self._base + pos} refers to "
                                            f"undeclared interface {iface}")
                elif btype == _BT_IDB:
                    ifaces.append(self._parse_idb(buf, pos, blen))
                    if self.linktype is None:
                        self.linktype = ifaces[-1][0]
                        self.snaplen = ifaces[-1][3]
                elif btype == _BT_SHB:
                    ifaces = self._ifaces = []  # interfaces are numbered per section
                elif btype == _BT_SPB:
                    if not ifaces:
                        self._skip("iface", f"pcapng simple packet block at byte {self._base + pos} comes "
                                            "before any interface")
                    else:
                        lt, _tick, _tsoff, snap = ifaces[0]
                        wirelen = u32(buf, pos + 8)[0]
                        caplen = min(wirelen, blen - 16)
                        if snap:
                            caplen = min(caplen, snap)
                        count += 1
                        pkt = make(0.0, lt, buf[pos + 12:pos + 12 + caplen], caplen, wirelen)
                        out.append(pkt if one is None else one(pkt))
                elif btype == _BT_OPB:
                    iface16 = Struct(self._endian + "H").unpack_from(buf, pos + 8)[0]
                    ts_hi, ts_lo, caplen, wirelen = Struct(self._endian + "IIII").unpack_from(buf, pos + 12)
                    if 28 + caplen > blen - 4:
                        self._skip("caplen", f"pcapng packet block at byte {self._base + pos} claims {caplen} "
                                             f"bytes in a {blen}-byte block")
                    elif iface16 < len(ifaces):
                        lt, tick, tsoff, _snap = ifaces[iface16]
                        count += 1
                        pkt = make(((ts_hi << 32) | ts_lo) * tick + tsoff, lt,
                                   buf[pos + 28:pos + 28 + caplen], caplen, wirelen)
                        out.append(pkt if one is None else one(pkt))
                    else:
                        self._skip("iface", f"pcapng packet block at byte {self._base + pos} refers to "
                                            f"undeclared interface {iface16}")
                # every other block type (name resolution, statistics, custom, DSB...) is skipped
                pos = end
            if pos < buflen:
                self._tail += memoryview(buf)[pos:]
        finally:
            self.packets = count
            self._base += pos

    def _skip(self, kind: str, what: str) -> None:
        """A damaged block skipped: the first of each kind is described, the others counted on its line (the
        warnings stay a few lines, however many blocks a hostile file damages)."""
        seen = self._skips.get(kind)
        if seen is None:
            self._skips[kind] = [len(self.warnings), 1, what]
            self.warnings.append(f"{what}; skipped")
            return
        seen[1] += 1
        self.warnings[seen[0]] = f"{seen[2]}; skipped, and {seen[1] - 1:,} more such blocks"

    def _parse_idb(self, buf: bytes, pos: int, blen: int) -> tuple[int, float, int, int]:
        endian = self._endian
        linktype, _reserved, snaplen = Struct(endian + "HHI").unpack_from(buf, pos + 8)
        tick = 1e-6
        tsoff = 0
        opt = pos + 16
        opt_end = pos + blen - 4
        hdr = Struct(endian + "HH").unpack_from
        while opt + 4 <= opt_end:
            code, length = hdr(buf, opt)
            if code == 0:  # opt_endofopt
                break
            value = buf[opt + 4:min(opt + 4 + length, opt_end)]  # an option never reaches past its block
            length = len(value)
            if code == 9 and length >= 1:  # if_tsresol
                v = value[0]
                exp = v & 0x7F
                tick = 2.0 ** -exp if v & 0x80 else 10.0 ** -exp
            elif code == 14 and length >= 8:  # if_tsoffset (seconds)
                tsoff = Struct(endian + "q").unpack_from(value)[0]
            opt += 4 + length + (-length % 4)
        return linktype, tick, tsoff, snaplen
