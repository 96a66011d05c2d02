"""Edge adapter: read capture files (pcap, pcapng, gzip-compressed, stdin) as a stream of raw packets.

This is the only layer of the packet pipeline that does I/O. It reads the file in large chunks and
parses record headers itself with ``struct.unpack_from`` (faster than ``dpkt.pcap.Reader``, which also
hides the original packet length that is needed to detect snap-length truncation).

Memory is bounded by one chunk plus the largest record, whatever the file size.

Errors: a file that cannot be opened or is not a capture raises :class:`CaptureError` from
:func:`open_capture`. Damage found later (truncated last record, corrupt record header, truncated
gzip stream) ends the iteration and is described in :attr:`CaptureReader.warnings`: the packets read
before the damage are still good.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from struct import Struct
from typing import IO, Any, TypeVar, cast

__all__ = [
    "CaptureError",
    "CaptureReader",
    "RawPacket",
    "fast_frozen_init",
    "open_capture",
]

_T = TypeVar("_T")
#: ``batch(chunk, pos, out) -> (pos after them, count)`` and ``make_batch(little_endian, time_scale, linktype)``
#: of :meth:`CaptureReader.parsed`.
Batch = Callable[[bytes | memoryview, int, list[Any]], tuple[int, int]]
MakeBatch = Callable[[bool, float, int], Batch | None]
#: What reading the stream may raise; each ends the data (the reason goes into the warnings).
_STREAM_ERRORS = (EOFError, OSError, zlib.error)


def fast_frozen_init(cls: type[_T]) -> type[_T]:
    """Give a ``@dataclass(frozen=True, slots=True)`` class a faster ``__init__``.

    The dataclass-generated ``__init__`` of a frozen class sets every field with
    ``object.__setattr__(self, name, value)``, which costs about 80 ns per field. Setting the slots through
    their member descriptors does the same thing (the instance stays frozen: assigning an attribute
    afterwards still raises ``FrozenInstanceError``) at about half the cost, which matters for the
    per-packet objects of the hot path. Fields with ``init=False``, default factories or ``__post_init__``
    are not supported (the decorator refuses such classes). A class compiled as an extension type (a
    ``.pxd`` declares it; its fields are in the object, read-only to Python) is returned as it is.
    """
    import dataclasses

    if not cls.__flags__ & (1 << 9):  # not Py_TPFLAGS_HEAPTYPE: a compiled extension type
        return cls

    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} must be a @dataclass(frozen=True, slots=True)")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: __post_init__ is not supported")
    ns: dict[str, Any] = {}
    args: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: only plain fields and plain defaults are supported")
        ns[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            ns[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})")
    src = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(src, ns)  # noqa: S102 - same technique as dataclasses itself
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = getattr(cls.__init__, "__doc__", None)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


class CaptureError(Exception):
    """The file cannot be read as a capture (missing, empty, not pcap/pcapng, damaged header)."""


@dataclass(frozen=True)  # compiled, an extension type (capture_file.pxd); from source, the slots below
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

# Classic pcap magic numbers as they appear in the first 4 bytes of the file.
_PCAP_MAGICS: dict[bytes, tuple[str, int]] = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),  # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),  # big-endian, microseconds
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),  # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),  # big-endian, nanoseconds
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
_GZIP_MAGIC = b"\x1f\x8b"
_KNOWN_OTHER_MAGICS: dict[bytes, str] = {
    b"\xa1\xb2\xcd\x34": "Kuznetzov modified pcap (unsupported)",
    b"\x34\xcd\xb2\xa1": "Kuznetzov modified pcap (unsupported)",
    b"\x28\xb5\x2f\xfd": "zstd-compressed data (decompress it first)",
    b"BZh9": "bzip2-compressed data (decompress it first)",
    b"\xfd7zX": "xz-compressed data (decompress it first)",
    b"PK\x03\x04": "a zip archive (extract it first)",
}

_CHUNK = 1 << 20  # bytes read from the file at a time
_MAX_RECORD = 256 << 20  # a record (or pcapng block) larger than this is taken as corruption

# pcapng block types
_BT_IDB = 0x00000001
_BT_OPB = 0x00000002  # obsolete Packet Block
_BT_SPB = 0x00000003
_BT_EPB = 0x00000006
_BT_SHB = 0x0A0D0D0A
_BOM_LE = b"\x4d\x3c\x2b\x1a"
_BOM_BE = b"\x1a\x2b\x3c\x4d"


class _CountingReader(io.RawIOBase):
    """Wrap a binary stream, counting the bytes read from it (for progress of compressed input)."""

    def __init__(self, f: IO[bytes], prefix: bytes = b"") -> None:
        super().__init__()
        self._f = f
        self._prefix = prefix
        self.count = len(prefix)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        mv = memoryview(b).cast("B")
        if self._prefix:
            n = min(len(mv), len(self._prefix))
            mv[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = self._f.read(len(mv))
        n = len(data)
        mv[:n] = data
        self.count += n
        return n


def _read_full(f: IO[bytes], n: int) -> bytes:
    """Read up to ``n`` bytes, looping over short reads; fewer than ``n`` only at end of file."""
    data = f.read(n)
    if data is None:  # non-blocking stream with nothing available: not supported, treat as EOF
        return b""
    if len(data) >= n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = f.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class CaptureReader:
    """Iterate over the packets of one capture. Create it with :func:`open_capture`.

    Attributes:
        path: the path given to :func:`open_capture` (``"-"`` for stdin).
        format: ``"pcap"`` or ``"pcapng"``.
        compressed: True when the file was gzip-compressed.
        linktype: link type of the file (pcap) or of the first interface (pcapng; None before it is read).
        snaplen: snap length from the file header (pcap) or first interface (pcapng; None before).
        nanosecond: True for a nanosecond-resolution classic pcap.
        warnings: one line per problem found while reading (damage that ended the iteration early,
            packets referring to unknown interfaces, ...), without the file name.
        packets_read: packets yielded (updated when the iteration ends).
        total_bytes: size of the file on disk, None when unknown (stdin, pipes).

    The reader is single-pass: iterating it a second time continues where the first one stopped.
    """

    def __init__(self, path: str, raw: IO[bytes], counter: _CountingReader | None, stream: IO[bytes],
                 head: bytes, compressed: bool, total_bytes: int | None) -> None:
        self.path = path
        self.compressed = compressed
        self.total_bytes = total_bytes
        self.warnings: list[str] = []
        self.packets_read = 0
        self.linktype: int | None = None
        self.snaplen: int | None = None
        self.nanosecond = False
        self._raw = raw
        self._counter = counter
        self._stream = stream
        self._consumed_uncompressed = 0  # bytes read from `stream` (only used when not compressed)
        self._closed = False
        magic = head[:4]
        self._head = head
        self._iterated = False  # whether iteration was handed out (parsed() can still choose its loop)
        self._gen: Generator[Any, None, None]
        if magic in _PCAP_MAGICS:
            self.format = "pcap"
            self._gen = self._iter_pcap(head)
        elif magic == _PCAPNG_SHB:
            self.format = "pcapng"
            self._gen = self._iter_pcapng(head)
        else:  # pragma: no cover - open_capture checks the magic first
            raise CaptureError(f"{path}: not a capture file")

    # -- public API -----------------------------------------------------------------------------------

    @property
    def bytes_read(self) -> int:
        """Bytes consumed from the file so far (compressed bytes for a gzip file); grows by chunks."""
        if self._counter is not None:
            return self._counter.count
        return self._consumed_uncompressed

    def __iter__(self) -> Iterator[RawPacket]:
        self._iterated = True
        return self._gen

    def parsed(self, one: Callable[[RawPacket], _T], make_batch: MakeBatch | None = None) -> Iterator[_T]:
        """What ``one`` makes of every packet, in order (instead of the packets).

        For a classic pcap not yet iterated, ``make_batch(little_endian, time_scale, linktype)`` may
        return a function that parses, in one call, the records lying whole in a chunk:
        ``batch(chunk, pos, out) -> (pos after them, count)``, appending what ``one`` would make of each
        (``inspector.native``); it returns None when it has no such function. ``chunk`` is bytes-like and
        may be reused for the next chunk: nothing the batch makes may refer to it.
        """
        own_loop = self.format == "pcap" and not self._iterated
        self._iterated = True
        if own_loop:
            self._gen = self._iter_pcap(self._head, one, make_batch)
            return self._gen
        return (one(pkt) for pkt in self._gen)

    def __enter__(self) -> CaptureReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the underlying file (never closes stdin)."""
        if self._closed:
            return
        self._closed = True
        if self._stream is not self._raw:
            try:
                self._stream.close()
            except Exception:  # pragma: no cover - closing a half-broken gzip stream
                pass
        if self.path != "-":  # never close stdin
            self._raw.close()

    def __repr__(self) -> str:
        return (f"CaptureReader(path={self.path!r}, format={self.format!r}, compressed={self.compressed}, "
                f"linktype={self.linktype}, packets_read={self.packets_read})")

    # -- reading helpers -------------------------------------------------------------------------------

    def _read(self, n: int) -> bytes:
        """Read up to n bytes; fewer only at end of data. Damage in a gzip stream ends the data."""
        if self._stream_broken:
            return b""
        parts: list[bytes] = []
        got = 0
        # read1 on a gzip stream returns what one piece of compressed input gives: when the stream turns
        # out damaged, only that piece is lost, not everything requested.
        read = self._stream.read1 if self.compressed else self._stream.read  # type: ignore[attr-defined]
        while got < n:
            try:
                data = read(n - got)
            except _STREAM_ERRORS as exc:
                self._stream_failed(exc)
                break
            if not data:
                break
            parts.append(data)
            got += len(data)
        if self._counter is None:
            self._consumed_uncompressed += got
        return parts[0] if len(parts) == 1 else b"".join(parts)

    _stream_broken = False
    _stream_error = ""

    def _stream_failed(self, exc: BaseException) -> None:
        """The stream broke: no more data (``_finish`` reports why)."""
        self._stream_error = str(exc) or type(exc).__name__
        self._stream_broken = True

    def _refill(self, pool: memoryview, left: bytes) -> memoryview:
        """``left`` then up to a chunk of the (uncompressed) stream, in ``pool``; the filled part."""
        k = len(left)
        pool[:k] = left
        got = 0
        want = len(pool) - k
        if not self._stream_broken:
            readinto = self._stream.readinto  # type: ignore[attr-defined]
            while got < want:
                try:
                    n = readinto(pool[k + got:])
                except _STREAM_ERRORS as exc:
                    self._stream_failed(exc)
                    break
                if not n:
                    break
                got += n
            self._consumed_uncompressed += got
        return pool[:k + got]

    def _truncated(self, count: int, what: str, need: int, have: int) -> None:
        if self._stream_broken:
            return  # reported by _finish
        self.warnings.append(f"{what} is truncated ({have} of {need} bytes present); "
                             f"stopped after {count} packets")

    def _finish(self, count: int) -> None:
        self.packets_read = count
        if self._stream_error:
            self.warnings.append(f"compressed data is damaged or truncated "
                                 f"({self._stream_error}); stopped after {count} packets")
            self._stream_error = ""

    # -- classic pcap ---------------------------------------------------------------------------------

    def _parse_pcap_header(self, hdr: bytes) -> tuple[str, int]:
        endian, divisor = _PCAP_MAGICS[hdr[:4]]
        _major, _minor, _zone, _sigfigs, snaplen, network = Struct(endian + "HHiIII").unpack_from(hdr, 4)
        self.snaplen = snaplen
        self.linktype = network & 0xFFFF  # upper bits may carry FCS information
        self.nanosecond = divisor == 1_000_000_000
        return endian, divisor

    def _iter_pcap(self, head: bytes, one: Callable[[RawPacket], Any] | None = None,
                   make_batch: MakeBatch | None = None) -> Generator[Any, None, None]:
        """The packets (or, with ``one``, what ``one`` makes of each; see :meth:`parsed`)."""
        endian, divisor = self._parse_pcap_header(head)
        linktype = self.linktype
        assert linktype is not None
        unpack_rec = Struct(endian + "IIII").unpack_from
        scale = 1.0 / divisor
        batch = make_batch(endian == "<", scale, linktype) if make_batch is not None else None
        # With a batch parser, chunks of an uncompressed file are read into one reused buffer: a fresh
        # 1 MiB object per chunk page-faults on every page it touches (measured: 0.2 s per 100 MB, more than
        # parsing). Nothing refers to the buffer afterwards: packets and payloads are copies.
        pool = memoryview(bytearray(_CHUNK + 16)) if batch is not None and not self.compressed else None
        read = self._read
        buf: bytes | memoryview = head
        pos = 24
        buflen = len(buf)
        count = 0
        make = RawPacket
        try:
            while True:
                if batch is not None and buflen - pos >= 16:
                    results: list[Any] = []
                    pos, _ = batch(buf, pos, results)  # the records whole in this chunk, in one call
                    for result in results:
                        count += 1
                        yield result
                if buflen - pos < 16:
                    buf = bytes(buf[pos:]) + read(_CHUNK) if pool is None else self._refill(pool, bytes(buf[pos:]))
                    pos = 0
                    buflen = len(buf)
                    if buflen < 16:
                        if buflen:
                            self._truncated(count, "last record header", 16, buflen)
                        return
                    continue
                sec, frac, caplen, wirelen = unpack_rec(buf, pos)
                start = pos + 16
                end = start + caplen
                if end > buflen:
                    if caplen > _MAX_RECORD:
                        self.warnings.append(
                            f"record {count + 1} claims {caplen} captured bytes: the file is "
                            f"damaged there; stopped after {count} packets")
                        return
                    # The record straddles the end of the chunk: complete it with a read of exactly the
                    # missing bytes (one copy), then start the next chunk afresh.
                    rest = read(end - buflen)
                    data = bytes(buf[start:]) + rest
                    buf = b""
                    pos = buflen = 0
                    if len(data) < caplen:
                        self._truncated(count, "last record", caplen, len(data))
                        return
                    count += 1
                    pkt = make(sec + frac * scale, linktype, data, caplen, wirelen)
                    yield pkt if one is None else one(pkt)
                    continue
                count += 1
                pkt = make(sec + frac * scale, linktype, bytes(buf[start:end]), caplen, wirelen)
                yield pkt if one is None else one(pkt)
                pos = end
        finally:
            self._finish(count)

    # -- pcapng ---------------------------------------------------------------------------------------

    def _iter_pcapng(self, head: bytes) -> Generator[RawPacket, None, None]:
        read = self._read
        buf = head
        pos = 0
        buflen = len(buf)
        count = 0
        make = RawPacket
        endian = "<"
        u32 = Struct("<I").unpack_from
        hdr2 = Struct("<II").unpack_from
        epb = Struct("<IIIII").unpack_from
        # per interface: (linktype, seconds per tick, offset seconds, snaplen)
        ifaces: list[tuple[int, float, int, int]] = []
        unknown_iface_warned = False
        try:
            while True:
                if buflen - pos < 12:
                    buf = buf[pos:] + read(_CHUNK)
                    pos = 0
                    buflen = len(buf)
                    if buflen < 12:
                        if buflen:
                            self._truncated(count, "last block", 12, buflen)
                        return
                btype, blen = hdr2(buf, pos)
                if btype == _BT_SHB:
                    # The byte order of this section is given by the byte-order magic, read it first.
                    bom = buf[pos + 8:pos + 12]
                    if bom == _BOM_LE:
                        endian = "<"
                    elif bom == _BOM_BE:
                        endian = ">"
                    else:
                        self.warnings.append(f"bad pcapng section header (byte-order magic "
                                             f"{bom.hex()}); stopped after {count} packets")
                        return
                    u32 = Struct(endian + "I").unpack_from
                    hdr2 = Struct(endian + "II").unpack_from
                    epb = Struct(endian + "IIIII").unpack_from
                    btype, blen = hdr2(buf, pos)
                if blen < 12 or blen % 4 or blen > _MAX_RECORD:
                    self.warnings.append(f"pcapng block of type 0x{btype:08x} has invalid "
                                         f"length {blen}: the file is damaged there; stopped after "
                                         f"{count} packets")
                    return
                end = pos + blen
                if end > buflen:
                    buf = buf[pos:] + read(max(_CHUNK, blen))
                    pos = 0
                    buflen = len(buf)
                    end = blen
                    if end > buflen:
                        self._truncated(count, f"last block (type 0x{btype:08x})", blen, buflen)
                        return
                if btype == _BT_EPB:
                    iface, ts_hi, ts_lo, caplen, wirelen = epb(buf, pos + 8)
                    if 28 + caplen > blen - 4:
                        self.warnings.append(f"packet block {count + 1} claims {caplen} bytes "
                                             f"in a {blen}-byte block; packet skipped")
                    elif iface < len(ifaces):
                        lt, tick, tsoff, _snap = ifaces[iface]
                        count += 1
                        yield make(((ts_hi << 32) | ts_lo) * tick + tsoff, lt,
                                   buf[pos + 28:pos + 28 + caplen], caplen, wirelen)
                    elif not unknown_iface_warned:
                        unknown_iface_warned = True
                        self.warnings.append(f"packet refers to undeclared interface {iface}; "
                                             "such packets are skipped")
                elif btype == _BT_IDB:
                    ifaces.append(self._parse_idb(buf, pos, blen, endian))
                    if self.linktype is None:
                        self.linktype = ifaces[-1][0]
                        self.snaplen = ifaces[-1][3]
                elif btype == _BT_SHB:
                    ifaces = []  # interfaces are numbered per section
                    unknown_iface_warned = False
                elif btype == _BT_SPB:
                    if not ifaces:
                        if not unknown_iface_warned:
                            unknown_iface_warned = True
                            self.warnings.append("simple packet block before any interface; "
                                                 "such packets are skipped")
                    else:
                        lt, _tick, _tsoff, snap = ifaces[0]
                        wirelen = u32(buf, pos + 8)[0]
                        caplen = min(wirelen, blen - 16)
                        if snap:
                            caplen = min(caplen, snap)
                        count += 1
                        yield make(0.0, lt, buf[pos + 12:pos + 12 + caplen], caplen, wirelen)
                elif btype == _BT_OPB:
                    iface16 = Struct(endian + "H").unpack_from(buf, pos + 8)[0]
                    ts_hi, ts_lo, caplen, wirelen = Struct(endian + "IIII").unpack_from(buf, pos + 12)
                    if 28 + caplen <= blen - 4 and iface16 < len(ifaces):
                        lt, tick, tsoff, _snap = ifaces[iface16]
                        count += 1
                        yield make(((ts_hi << 32) | ts_lo) * tick + tsoff, lt,
                                   buf[pos + 28:pos + 28 + caplen], caplen, wirelen)
                # every other block type (name resolution, statistics, custom, DSB...) is skipped
                pos = end
        finally:
            self._finish(count)

    def _parse_idb(self, buf: bytes, pos: int, blen: int, endian: str) -> tuple[int, float, int, int]:
        linktype, _reserved, snaplen = Struct(endian + "HHI").unpack_from(buf, pos + 8)
        tick = 1e-6
        tsoff = 0
        opt = pos + 16
        opt_end = pos + blen - 4
        hdr = Struct(endian + "HH").unpack_from
        while opt + 4 <= opt_end:
            code, length = hdr(buf, opt)
            value = buf[opt + 4:opt + 4 + length]
            if code == 0:  # opt_endofopt
                break
            if code == 9 and length >= 1:  # if_tsresol
                v = value[0]
                exp = v & 0x7F
                tick = 2.0 ** -exp if v & 0x80 else 10.0 ** -exp
            elif code == 14 and length >= 8:  # if_tsoffset (seconds)
                tsoff = Struct(endian + "q").unpack_from(value)[0]
            opt += 4 + length + (-length % 4)
        return linktype, tick, tsoff, snaplen


def _describe_magic(head: bytes) -> str:
    for magic, what in _KNOWN_OTHER_MAGICS.items():
        if head.startswith(magic):
            return what
    return f"unknown magic 0x{head[:4].hex()}"


def open_capture(path: str) -> CaptureReader:
    """Open a pcap or pcapng capture, optionally gzip-compressed; ``"-"`` reads standard input.

    The format is detected from the content, never from the file name. The file header is read and
    checked here, so a file that cannot be used raises :class:`CaptureError` immediately, with a
    one-line message. The file stays open until the reader is closed (it is a context manager).
    """
    total: int | None = None
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 - owned by the reader
        except OSError as exc:
            raise CaptureError(f"{path}: cannot open: {exc.strerror or exc}") from None
        try:
            st = os.fstat(raw.fileno())
            total = st.st_size
        except OSError:  # pragma: no cover
            total = None
    try:
        return _open_stream(path, raw, total)
    except BaseException:
        if path != "-":
            raw.close()
        raise


def _open_stream(path: str, raw: IO[bytes], total: int | None) -> CaptureReader:
    try:
        head = _read_full(raw, 24)
    except OSError as exc:
        raise CaptureError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not head:
        raise CaptureError(f"{path}: empty file, not a capture")
    counter: _CountingReader | None = None
    stream: IO[bytes] = raw
    compressed = False
    if head.startswith(_GZIP_MAGIC):
        compressed = True
        counter = _CountingReader(raw, prefix=head)
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=io.BufferedReader(counter, buffer_size=_CHUNK), mode="rb"))
        try:
            head = _read_full(stream, 24)
        except (EOFError, OSError, zlib.error) as exc:
            raise CaptureError(f"{path}: gzip data cannot be decompressed: {exc}") from None
        if not head:
            raise CaptureError(f"{path}: gzip file is empty, not a capture")
    magic = head[:4]
    if magic in _PCAP_MAGICS:
        if len(head) < 24:
            raise CaptureError(f"{path}: pcap file header is truncated ({len(head)} of 24 bytes)")
    elif magic == _PCAPNG_SHB:
        if len(head) < 12:
            raise CaptureError(f"{path}: pcapng section header is truncated ({len(head)} bytes)")
        if head[8:12] not in (_BOM_LE, _BOM_BE):
            raise CaptureError(f"{path}: pcapng section header has a bad byte-order magic "
                               f"0x{head[8:12].hex()}")
    else:
        raise CaptureError(f"{path}: not a pcap or pcapng file ({_describe_magic(head)})")
    reader = CaptureReader(path, raw, counter, stream, head, compressed, total)
    if counter is None:
        reader._consumed_uncompressed = len(head)
    return reader


def iter_packets(path: str) -> Iterator[RawPacket]:
    """Convenience: yield the packets of a capture and close it at the end."""
    with open_capture(path) as reader:
        yield from reader

