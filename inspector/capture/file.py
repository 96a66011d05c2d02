"""Edge adapter: open capture files (pcap, pcapng, gzip-compressed, stdin) and feed their bytes to the parser.

This is the only layer of the packet pipeline that does I/O: it reads the file in large chunks and hands
them to the sans-I/O :class:`~inspector.capture.parser.CaptureParser`, which cuts them into packets.
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
import stat
import sys
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any, TypeVar, cast

from inspector.capture.parser import (
    PCAP_MAGICS,
    PCAPNG_SHB,
    CaptureError,
    CaptureParser,
    FrameParser,
    RawPacket,
    header_problem,
)

__all__ = [
    "CaptureError",
    "CaptureReader",
    "RawPacket",
    "input_problem",
    "open_capture",
]

_T = TypeVar("_T")
#: What reading the stream may raise; each ends the data (the reason goes into the warnings).
_STREAM_ERRORS = (EOFError, OSError, zlib.error)
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20  # bytes read from the file at a time


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
        self.packets_read = 0
        self._raw = raw
        self._counter = counter
        self._stream = stream
        self._consumed_uncompressed = 0  # bytes read from `stream` (only used when not compressed)
        self._closed = False
        magic = head[:4]
        self._head = head
        self._parser = CaptureParser()
        self._iterated = False  # whether iteration was handed out (parsed() can still choose its parser)
        self._stream_warnings: list[str] = []
        if magic in PCAP_MAGICS:
            self.format = "pcap"
        elif magic == PCAPNG_SHB:
            self.format = "pcapng"
        else:  # pragma: no cover - open_capture checks the magic first
            raise CaptureError(f"{path}: not a capture file")
        self._gen: Generator[Any, None, None] = self._packets(False)

    # -- public API -----------------------------------------------------------------------------------

    @property
    def linktype(self) -> int | None:
        return self._parser.linktype

    @property
    def snaplen(self) -> int | None:
        return self._parser.snaplen

    @property
    def nanosecond(self) -> bool:
        return self._parser.nanosecond

    @property
    def warnings(self) -> list[str]:
        return self._parser.warnings + self._stream_warnings

    @property
    def bytes_read(self) -> int:
        """Bytes consumed from the file so far (compressed bytes for a gzip file); grows by chunks."""
        if self._counter is not None:
            return self._counter.count
        return self._consumed_uncompressed

    def __iter__(self) -> Iterator[RawPacket]:
        self._iterated = True
        return self._gen

    def parsed(self, one: Callable[[RawPacket], _T], frame: FrameParser | None = None) -> Iterator[_T]:
        """What ``one`` makes of every packet, in order (instead of the packets).

        Before the iteration started, the parser makes them (``frame`` as for
        :class:`~inspector.capture.parser.CaptureParser`: what a classic pcap record is parsed into, given as
        its parts, or None); afterwards, ``one`` is called on each packet left.
        """
        if self._iterated:
            return (one(pkt) for pkt in self._gen)
        self._iterated = True
        self._parser = CaptureParser(one, frame)
        # Chunks of an uncompressed classic pcap are read into one reused buffer: a fresh 1 MiB object per chunk
        # page-faults on every page it touches (docs/performance.md). Nothing refers
        # to the buffer afterwards: the record loop copies each record.
        self._gen = self._packets(self.format == "pcap" and not self.compressed)
        return self._gen

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

    # -- reading ----------------------------------------------------------------------------------------

    def _packets(self, pooled: bool) -> Generator[Any, None, None]:
        """The file's chunks through the parser: what it makes of them, in order."""
        parser = self._parser
        feed = parser.feed
        pool = memoryview(bytearray(_CHUNK)) if pooled else None
        try:
            yield from feed(self._head)
            while not parser.done:
                chunk = self._read(_CHUNK) if pool is None else self._read_into(pool)
                if not chunk:
                    break
                yield from feed(chunk)
            if self._stream_error:
                self._stream_warnings.append(f"compressed data is damaged or truncated ({self._stream_error}); "
                                             f"stopped after {parser.packets} packets")
                self._stream_error = ""
            else:
                parser.end()
        finally:
            self.packets_read = parser.packets

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
        """The stream broke: no more data (the iteration's end reports why)."""
        self._stream_error = str(exc) or type(exc).__name__
        self._stream_broken = True

    def _read_into(self, pool: memoryview) -> memoryview:
        """Up to a chunk of the (uncompressed) stream, read into ``pool``; the filled part."""
        got = 0
        want = len(pool)
        if not self._stream_broken:
            readinto = self._stream.readinto  # type: ignore[attr-defined]
            while got < want:
                try:
                    n = readinto(pool[got:])
                except _STREAM_ERRORS as exc:
                    self._stream_failed(exc)
                    break
                if not n:
                    break
                got += n
            self._consumed_uncompressed += got
        return pool[:got]


def input_problem(path: str) -> str | None:
    """Why ``path`` cannot be a capture input, in one line with the fix; None when it can be opened as one: a
    file, ``-`` (stdin), or a pipe or character device (``<(zcat x.pcap.gz)``, a FIFO), read as a stream."""
    if path == "-":
        return None
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{path}: no such file"
    except OSError as exc:
        return f"{path}: cannot open: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return f"{path} is a directory: name the capture files in it (for example {os.path.join(path, '*.pcap')})"
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return None
    return f"{path}: not a file, pipe or device (a socket?): give a capture file, or - for stdin"


def open_capture(path: str) -> CaptureReader:
    """Open a pcap or pcapng capture, optionally gzip-compressed; ``"-"`` reads standard input, and a pipe or
    character device is read as a stream like it (``total_bytes`` None).

    The format is detected from the content, never from the file name. The file header is read and
    checked here, so a file that cannot be used raises :class:`CaptureError` immediately, with a
    one-line message. The file stays open until the reader is closed (it is a context manager).
    """
    total: int | None = None
    if path == "-":
        raw: IO[bytes] = sys.stdin.buffer
    else:
        problem = input_problem(path)
        if problem is not None:
            raise CaptureError(problem)
        try:
            raw = open(path, "rb")  # noqa: SIM115 - owned by the reader
        except OSError as exc:
            raise CaptureError(f"{path}: cannot open: {exc.strerror or exc}") from None
        try:
            st = os.fstat(raw.fileno())
            total = st.st_size if stat.S_ISREG(st.st_mode) else None
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
    problem = header_problem(head)
    if problem is not None:
        raise CaptureError(f"{path}: {problem}")
    reader = CaptureReader(path, raw, counter, stream, head, compressed, total)
    if counter is None:
        reader._consumed_uncompressed = len(head)
    return reader


def iter_packets(path: str) -> Iterator[RawPacket]:
    """Convenience: yield the packets of a capture and close it at the end."""
    with open_capture(path) as reader:
        yield from reader

