"""Whether a connection is TLS, from its first stream bytes (sans-I/O, and cheap to import: the pipeline asks
every connection once; the TLS modules that read and decrypt it are imported only when one is TLS).

:func:`looks_like_tls`: a ClientHello record at the start of a client's stream; :func:`looks_like_records`:
TLS records seen from the middle of a connection (the capture started after its handshake); :func:`sniff`
decides between the two, and plaintext. The record layer (:mod:`inspector.tls.tls_records`) takes its wire
constants from here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ALERT",
    "APPLICATION_DATA",
    "CHANGE_CIPHER_SPEC",
    "HANDSHAKE",
    "HEADER_LEN",
    "MAX_FRAGMENT",
    "SNIFF_HELLO",
    "SNIFF_LEN",
    "SNIFF_PLAIN",
    "SNIFF_RECORDS",
    "SNIFF_WINDOW",
    "looks_like_records",
    "looks_like_tls",
    "sniff",
]

# Record content types (RFC 8446 section 5.1; heartbeat, 24, is the record layer's alone)
CHANGE_CIPHER_SPEC: Final = 20
ALERT: Final = 21
HANDSHAKE: Final = 22
APPLICATION_DATA: Final = 23

HEADER_LEN: Final = 5  # a record header: content type, legacy version, length
MAX_FRAGMENT: Final = (1 << 14) + 2048  # TLSCiphertext.length at most 2^14 + 2048: longer is malformed
SNIFF_LEN: Final = 6  # looks_like_tls: a record header and the type of its first handshake message
SNIFF_WINDOW: Final = 4096  # looks_like_records: the record headers within a connection's first bytes checked
# sniff's verdicts
SNIFF_PLAIN: Final = 0  # not TLS
SNIFF_HELLO: Final = 1  # TLS from its start: a ClientHello
SNIFF_RECORDS: Final = 2  # TLS records, seen from the middle of the connection
_CONNECTION_TYPES: Final = frozenset({CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA})
_CLIENT_HELLO: Final = 1


def looks_like_tls(first_bytes: bytes) -> bool | None:
    """Whether a client's stream starts with a TLS ClientHello record: True or False from
    :data:`SNIFF_LEN` (6) bytes on; with fewer, False as soon as a byte disagrees, else None (too few to
    tell). Checked: content type handshake, version 3.0-3.4, a length from 1 to the record maximum, and the
    ClientHello message type."""
    b = first_bytes[:SNIFF_LEN]
    checks = (b[0] == HANDSHAKE if len(b) > 0 else None, b[1] == 3 if len(b) > 1 else None,
              b[2] <= 4 if len(b) > 2 else None,
              0 < ((b[3] << 8) | b[4]) <= MAX_FRAGMENT if len(b) > 4 else None,
              b[5] == _CLIENT_HELLO if len(b) > 5 else None)
    if False in checks:
        return False
    return None if None in checks else True


def looks_like_records(data: bytes) -> bool | None:
    """Whether a stream seen from its middle starts with TLS records, conservatively: every complete record
    header in ``data`` (the first one at its start, each next one where the previous record ends, at most
    :data:`SNIFF_WINDOW` bytes looked at) has content type 20-23, version 3.0-3.4 and a length from 1 to the
    record maximum. None while fewer than :data:`HEADER_LEN` bytes agree. A Kafka stream cut at a frame
    boundary never looks so (its first byte would make a frame of over 335 MB); cut anywhere, one in millions
    might."""
    b = data[:SNIFF_WINDOW]
    end = len(b)
    if end < HEADER_LEN:
        if (end > 0 and b[0] not in _CONNECTION_TYPES) or (end > 1 and b[1] != 3) or (end > 2 and b[2] > 4):
            return False
        return None
    pos = 0
    while end - pos >= HEADER_LEN:
        length = (b[pos + 3] << 8) | b[pos + 4]
        if b[pos] not in _CONNECTION_TYPES or b[pos + 1] != 3 or b[pos + 2] > 4 or not 0 < length <= MAX_FRAGMENT:
            return False
        pos += HEADER_LEN + length
    return True


def sniff(first_bytes: bytes, mid_stream: bool) -> int | None:
    """What a connection's first stream bytes (of the side that sent first) say: :data:`SNIFF_HELLO` (a
    ClientHello: TLS from its start), :data:`SNIFF_RECORDS` (only when ``mid_stream``, the bytes not being
    the stream's start: TLS records), :data:`SNIFF_PLAIN`, or None while too few bytes tell."""
    hello = looks_like_tls(first_bytes)
    if hello:
        return SNIFF_HELLO
    if hello is None:
        return None
    if not mid_stream:
        return SNIFF_PLAIN
    records = looks_like_records(first_bytes)
    return None if records is None else SNIFF_RECORDS if records else SNIFF_PLAIN
