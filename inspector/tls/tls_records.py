"""The TLS record layer, sans-I/O: one direction's byte stream split into records, handshake messages
reassembled across records, and the limits that keep both bounded.

This module owns the wire framing of RFC 5246 section 6.2 / RFC 8446 section 5.1: a 5-byte header (content
type, legacy version, length) and a fragment of at most :data:`MAX_FRAGMENT` bytes (2^14 + 2048, the
TLSCiphertext limit of TLS 1.2; TLS 1.3's 2^14 + 256 is within it). It knows nothing of keys: what a record
means is decided by :mod:`inspector.tls.session`.

:class:`RecordSplitter` is fed bytes as they arrive and returns the complete records; it buffers at most one
incomplete record. A header that cannot be TLS (unknown content type, a version whose major byte is not 3, a
length over the limit) makes the direction malformed: parsing stops there and every byte from that header on
is counted in :attr:`RecordSplitter.malformed_bytes`. At every moment the bytes fed equal the sizes of the
records returned plus ``malformed_bytes`` plus ``pending`` (the incomplete record held).

:class:`HandshakeReassembler` turns the fragments of handshake records into handshake messages (a 4-byte
header: type and a 24-bit length), across record boundaries, refusing a message longer than
:data:`MAX_HANDSHAKE_MESSAGE`.

:func:`looks_like_tls` recognises TLS by content: a ClientHello record at the start of a client's stream;
:func:`looks_like_records` and :func:`sniff` too (all three live in :mod:`inspector.tls.sniff`, with the
constants they need, so that the pipeline can ask every connection without importing the rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inspector.frozen_init import fast_frozen_init
from inspector.tls.sniff import (
    ALERT,
    APPLICATION_DATA,
    CHANGE_CIPHER_SPEC,
    HANDSHAKE,
    HEADER_LEN,
    MAX_FRAGMENT,
    SNIFF_HELLO,
    SNIFF_LEN,
    SNIFF_PLAIN,
    SNIFF_RECORDS,
    SNIFF_WINDOW,
    looks_like_records,
    looks_like_tls,
    sniff,
)

__all__ = [
    "ALERT",
    "APPLICATION_DATA",
    "CHANGE_CIPHER_SPEC",
    "CONTENT_TYPES",
    "HANDSHAKE",
    "HANDSHAKE_HEADER_LEN",
    "HEADER_LEN",
    "HEARTBEAT",
    "MAX_FRAGMENT",
    "MAX_HANDSHAKE_MESSAGE",
    "HandshakeMessage",
    "HandshakeReassembler",
    "Record",
    "RecordSplitter",
    "SNIFF_HELLO",
    "SNIFF_LEN",
    "SNIFF_PLAIN",
    "SNIFF_RECORDS",
    "SNIFF_WINDOW",
    "check_header",
    "looks_like_records",
    "looks_like_tls",
    "sniff",
]

HEARTBEAT: Final = 24
CONTENT_TYPES: Final = frozenset({CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA, HEARTBEAT})

HANDSHAKE_HEADER_LEN: Final = 4
# A handshake message longer than this is refused (a certificate chain is the longest: OpenSSL's default
# max_cert_list is 100 KiB). It bounds what the reassembler holds.
MAX_HANDSHAKE_MESSAGE: Final = 1 << 18


@dataclass(frozen=True)  # compiled, an extension type (tls_records.pxd); from source, the slots below
class Record:
    """One complete TLS record: its header fields, its fragment (still encrypted or not, as on the wire) and
    ``ts``, the timestamp of the bytes that completed it. ``header`` is the 5 bytes as on the wire (the
    additional data of TLS 1.3's AEAD)."""

    __slots__ = ("content_type", "version", "fragment", "ts", "header")

    content_type: int
    version: int
    fragment: bytes
    ts: float
    header: bytes

    @property
    def size(self) -> int:
        """The record's bytes on the wire, header included."""
        return HEADER_LEN + len(self.fragment)


fast_frozen_init(Record)


def check_header(header: bytes | bytearray | memoryview) -> str | None:
    """Why a 5-byte record header cannot be TLS, or None when it can."""
    if header[0] not in CONTENT_TYPES:
        return f"unknown record content type {header[0]}"
    if header[1] != 3 or header[2] > 4:
        return f"bad record version 0x{header[1]:02x}{header[2]:02x}"
    length = (header[3] << 8) | header[4]
    if length > MAX_FRAGMENT:
        return f"record length {length} over the TLS maximum {MAX_FRAGMENT}"
    return None


class RecordSplitter:
    """One direction's byte stream split into records, fed incrementally (see the module docstring)."""

    __slots__ = ("_buffer", "error", "malformed_bytes", "records")

    def __init__(self) -> None:
        self._buffer = bytearray()  # at most one incomplete record (header + fragment)
        self.error: str | None = None  # why parsing stopped (the direction is malformed from then on)
        self.malformed_bytes = 0  # bytes of the stream from the bad header on
        self.records = 0

    @property
    def pending(self) -> int:
        """Bytes held in the incomplete record at the end of what was fed."""
        return len(self._buffer)

    def feed(self, data: bytes | memoryview, ts: float) -> list[Record]:
        """The records completed by ``data`` (the bytes that follow what was fed before)."""
        if self.error is not None:
            self.malformed_bytes += len(data)
            return []
        buf = self._buffer
        if not buf:  # nothing held: the records are read from ``data``, the incomplete end kept
            whole = data if type(data) is bytes else bytes(data)
            out, pos = self._split(whole, ts)
            if pos < len(whole):
                buf += whole[pos:] if pos else whole
        else:  # an incomplete record held: read when the bytes complete it (or its header is not TLS)
            buf += data
            if len(buf) >= HEADER_LEN and check_header(buf[:HEADER_LEN]) is None and \
                    len(buf) < HEADER_LEN + ((buf[3] << 8) | buf[4]):
                return []
            out, pos = self._split(bytes(buf), ts)
            if pos:
                del buf[:pos]
        self.records += len(out)
        return out

    def _split(self, data: bytes, ts: float) -> tuple[list[Record], int]:
        """The complete records at the start of ``data`` and where they end; a header that cannot be TLS sets
        :attr:`error` and counts the bytes from it on malformed (returned as read)."""
        out: list[Record] = []
        pos = 0
        end = len(data)
        while end - pos >= HEADER_LEN:
            content_type, major, minor = data[pos], data[pos + 1], data[pos + 2]
            length = (data[pos + 3] << 8) | data[pos + 4]
            if content_type not in CONTENT_TYPES or major != 3 or minor > 4 or length > MAX_FRAGMENT:
                self.error = check_header(data[pos:pos + HEADER_LEN])
                self.malformed_bytes += end - pos
                return out, end
            stop = pos + HEADER_LEN + length
            if stop > end:
                break
            out.append(Record(content_type, (major << 8) | minor, data[pos + HEADER_LEN:stop], ts,
                              data[pos:pos + HEADER_LEN]))
            pos = stop
        return out, pos

    def finish(self) -> int:
        """End of the stream: the incomplete record held (a truncated last record) becomes malformed. Returns
        how many bytes that was."""
        truncated = len(self._buffer)
        if truncated:
            self.malformed_bytes += truncated
            self._buffer.clear()
            if self.error is None:
                self.error = f"truncated record ({truncated} bytes at the end of the stream)"
        return truncated


@dataclass(frozen=True, slots=True)
class HandshakeMessage:
    """One handshake message: its type, its body (without the 4-byte header) and ``raw``, header and body as
    on the wire (what a transcript hash would take)."""

    msg_type: int
    body: bytes
    raw: bytes


fast_frozen_init(HandshakeMessage)


class HandshakeReassembler:
    """The handshake messages of one direction (and one key epoch), from the fragments of its handshake
    records. A message may span records and a record may hold several messages. A message announced longer
    than ``limit`` stops the reassembler (``error`` says why) and it drops everything after; :meth:`lose`
    marks a hole (a record that could not be read), after which fragments are dropped until :meth:`restart`
    (a new key epoch, where a new message must start)."""

    __slots__ = ("_buffer", "error", "limit", "lost")

    def __init__(self, limit: int = MAX_HANDSHAKE_MESSAGE) -> None:
        self._buffer = bytearray()
        self.limit = limit
        self.error: str | None = None
        self.lost = False

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message held."""
        return len(self._buffer)

    def lose(self) -> None:
        """A handshake record could not be read: what is held is dropped and so is what follows, until
        :meth:`restart`."""
        self._buffer.clear()
        self.lost = True

    def restart(self) -> None:
        """A new key epoch: the next fragment starts a message."""
        self._buffer.clear()
        self.lost = False

    def feed(self, fragment: bytes) -> list[HandshakeMessage]:
        """The messages completed by ``fragment``."""
        if self.lost or self.error is not None:
            return []
        buf = self._buffer
        buf += fragment
        out: list[HandshakeMessage] = []
        pos = 0
        end = len(buf)
        while end - pos >= HANDSHAKE_HEADER_LEN:
            length = int.from_bytes(buf[pos + 1:pos + 4], "big")
            if length > self.limit:
                self.error = f"handshake message type {buf[pos]} of {length} bytes over the limit {self.limit}"
                buf.clear()
                return out
            stop = pos + HANDSHAKE_HEADER_LEN + length
            if stop > end:
                break
            raw = bytes(buf[pos:stop])
            out.append(HandshakeMessage(raw[0], raw[HANDSHAKE_HEADER_LEN:], raw))
            pos = stop
        if pos:
            del buf[:pos]
        return out
