"""Fuzz targets: one function per entry point that takes hostile bytes.

Each target takes one input (``bytes``) and checks the invariants of the code under test:

* no exception escapes (bad input becomes a status, a warning or an event, never a traceback);
* accounting invariants hold where the code promises them (the reassembler: for every direction,
  bytes delivered + bytes in gaps == highest stream offset; the connection: every delivered byte was
  framed or skipped);
* results are well formed (a status string, JSON-serialisable bodies).

A violated invariant raises :class:`InvariantError` (an ``AssertionError``, so the fuzzer reports it
as a crash). Hangs are caught by the runner's per-input time limit (``fuzz/run.py``).

The targets are plain functions (no atheris import) so that the regression tests replay saved
inputs through exactly the same code: ``TARGETS[name](data)``.

Input formats (``fuzz/make_corpus.py`` writes seeds in these formats):

``request``      a request frame (the bytes after the 4-byte length prefix).
``response``     ``>hh`` api key and version, ``>hh`` inner (Envelope) key and version (-1: none),
                 then a response frame.
``embedded``     one byte choosing the schema / protocol type, then the embedded bytes.
``envelope``     an Envelope request around fuzzed RequestData, RequestPrincipal and ClientHostAddress,
                 and an EnvelopeResponse around fuzzed ResponseData (see :func:`target_envelope`).
``records``      a ``records`` field (decoded at level "records", decompressed, small caps).
``reassembler``  a segment script (see :func:`parse_segments`) fed to ``Reassembler``.
``pipeline``     the same segment script fed to ``Inspector`` (framing, roles, correlation, events).
``capture``      a whole capture file (pcap / pcapng / gzip), read with ``open_capture`` and
                 every packet parsed with ``parse_packet``.
``tls``          a profile, flags and the operations of a real TLS connection (see :func:`target_tls`).
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

#: Caps used by the targets: small, so that one input stays cheap.
RECORDS_MAX_DECOMPRESSED = 1 << 20
RECORDS_MAX_RECORDS = 2000
REASSEMBLER_MAX_BUFFERED = 4096
REASSEMBLER_MAX_CONNECTIONS = 3
PIPELINE_MAX_FRAME = 1 << 16
#: Warnings one capture may give: a line per kind of damaged block skipped, one for what ended the packets.
CAPTURE_MAX_WARNINGS = 8


class InvariantError(AssertionError):
    """An invariant of the code under test does not hold for this input."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantError(message)


# ----------------------------------------------------------------------------------------------------
# Decoders


def _check_message(msg: Any, size: int) -> None:
    check(isinstance(msg.status, str) and msg.status != "", "status must be a non-empty string")
    check(msg.size == size, f"size {msg.size} != frame size {size}")
    if msg.ok:
        check(msg.body is not None, "an ok message has a body")
    _json(msg.body)
    _json(msg.header)
    if msg.inner is not None:
        check(isinstance(msg.inner.status, str), "inner status must be a string")
        _json(msg.inner.body)


def _json(value: Any) -> None:
    """Bodies must be written the way the event writer writes them (the one body writer), as valid JSON."""
    if value is not None:
        from inspector.rows.event_table import body_json

        text = body_json(value)
        check(text is not None, "a body is written as JSON text")
        json.loads(text)  # type: ignore[arg-type]


def target_request(data: bytes) -> None:
    from decoders import decode_request

    _check_message(decode_request(data), len(data))
    _check_message(decode_request(data, postprocess=False), len(data))


def target_response(data: bytes) -> None:
    from decoders import decode_response

    if len(data) < 8:
        return
    key, version, inner_key, inner_version = struct.unpack_from(">hhhh", data)
    inner = (inner_key, inner_version) if inner_key >= 0 and inner_version >= 0 else None
    frame = data[8:]
    _check_message(decode_response(frame, key, version, inner=inner), len(frame))


#: Embedded schemas and the (protocol type, role) pairs of decode_group_bytes, chosen by the first byte.
EMBEDDED_SCHEMAS = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment", "ConnectProtocolWorkerState",
                    "ConnectProtocolAssignment", "DefaultPrincipalData")
GROUP_CHOICES: tuple[tuple[str | None, str], ...] = (
    ("consumer", "subscription"), ("consumer", "assignment"), ("connect", "subscription"),
    ("connect", "assignment"), (None, "subscription"), (None, "assignment"), ("sticky-ish", "assignment"))


def target_embedded(data: bytes) -> None:
    from decoders.element_budget import ElementBudget
    from decoders.embedded import decode_group_bytes, decode_versioned

    if not data:
        return
    choice, raw = data[0], data[1:]
    n = len(EMBEDDED_SCHEMAS)
    if choice % (n + len(GROUP_CHOICES)) < n:
        result: dict[str, Any] | None = decode_versioned(EMBEDDED_SCHEMAS[choice % n], raw, ElementBudget())
    else:
        ptype, role = GROUP_CHOICES[choice % len(GROUP_CHOICES)]
        result = decode_group_bytes(ptype, role, raw, ElementBudget())
    check(result is not None and isinstance(result.get("status"), str), "embedded result needs a status")
    _json(result)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_bytes(raw: bytes | None) -> bytes:
    return b"\x00" if raw is None else _uvarint(len(raw) + 1) + raw


def envelope_request(inner: bytes, principal: bytes | None, address: bytes, corr: int = 7,
                     client_id: str = "broker-1", tags: bytes = b"\x00") -> bytes:
    """An Envelope v0 request frame (header v2) carrying ``inner`` as RequestData."""
    cid = client_id.encode()
    header = struct.pack(">hhi", 58, 0, corr) + struct.pack(">h", len(cid)) + cid + b"\x00"
    body = _compact_bytes(inner) + _compact_bytes(principal) + _compact_bytes(address) + tags
    return header + body


def envelope_response(response_data: bytes | None, corr: int = 7, error: int = 0) -> bytes:
    """An EnvelopeResponse v0 frame (header v1) carrying ``response_data``."""
    return struct.pack(">i", corr) + b"\x00" + _compact_bytes(response_data) + struct.pack(">h", error) + b"\x00"


class _Reader:
    """Consume fields from the front of a fuzz input; short input gives empty / zero values."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def uint(self, size: int) -> int:
        return int.from_bytes(self.take(size).ljust(size, b"\0"), "big")

    def int16(self) -> int:
        value = self.uint(2)
        return value - 0x10000 if value >= 0x8000 else value


def target_envelope(data: bytes) -> None:
    """``>H`` RequestData length + bytes, ``>B`` RequestPrincipal length (255: null) + bytes, ``>B``
    ClientHostAddress length + bytes, ``>hh`` inner key/version known for the response (-1: unknown),
    ``>H`` ResponseData length (65535: null) + bytes."""
    from decoders import decode_request, decode_response

    r = _Reader(data)
    inner = r.take(r.uint(2))
    n = r.uint(1)
    principal = None if n == 255 else r.take(n)
    address = r.take(r.uint(1))
    inner_key, inner_version = r.int16(), r.int16()
    n = r.uint(2)
    response_data = None if n == 0xFFFF else r.take(n)
    frame = envelope_request(inner, principal, address)
    _check_message(decode_request(frame), len(frame))
    answer = envelope_response(response_data)
    known = (inner_key, inner_version) if inner_key >= 0 and inner_version >= 0 else None
    _check_message(decode_response(answer, 58, 0, inner=known), len(answer))


def encode_envelope(inner: bytes, principal: bytes | None, address: bytes, inner_key: int, inner_version: int,
                    response_data: bytes | None) -> bytes:
    """A seed for the envelope target."""
    out = struct.pack(">H", len(inner)) + inner
    out += b"\xff" if principal is None else bytes([len(principal)]) + principal
    out += bytes([len(address)]) + address + struct.pack(">hh", inner_key, inner_version)
    out += b"\xff\xff" if response_data is None else struct.pack(">H", len(response_data)) + response_data
    return out


def target_records(data: bytes) -> None:
    from decoders.records import Budget, decode_records

    for level in ("headers", "records"):
        result = decode_records(data, level, decompress=True, max_decompressed=RECORDS_MAX_DECOMPRESSED,
                                max_records=RECORDS_MAX_RECORDS)
        check(isinstance(result.get("status"), str), "records result needs a status")
        check(result.get("size") == len(data), "records size must be the field size")
        _json(result)
    # Two fields sharing one budget: together they never inflate more than the budget.
    budget = Budget(RECORDS_MAX_DECOMPRESSED, RECORDS_MAX_RECORDS)
    for _ in range(2):
        decode_records(data, "records", decompress=True, max_decompressed=RECORDS_MAX_DECOMPRESSED,
                       max_records=RECORDS_MAX_RECORDS, budget=budget)
    check(budget.decompressed >= 0 and budget.records >= 0, f"shared budget overdrawn: {budget}")


# ----------------------------------------------------------------------------------------------------
# Segment scripts (reassembler and pipeline targets)

CLIENT_IP, BROKER_IP, BROKER_PORT = "10.0.0.1", "10.0.0.2", 9092
_OP = struct.Struct(">BBHH")  # control, flags, payload length, time step (µs)


def parse_segments(data: bytes) -> Iterator[Any]:
    """Turn a segment script into :class:`~inspector.capture.packets.Segment` objects.

    The script is a sequence of operations; each is ``>BBHH`` (control, TCP flags, payload length,
    time step in µs), then for the sequence-number mode a 4-byte seq or 2-byte delta, then a 4-byte
    ack if bit 6 is set, then the payload (cut at the end of the input), then a 2-byte count of
    bytes cut by the snap length if bit 7 is set. Control byte: bits 0-1 connection (4 port pairs),
    bit 2 direction (1: broker to client), bits 3-4 seq mode (0: next expected, 1: absolute seq,
    2: signed delta from the next expected, 3: delta from the initial sequence number), bit 5: the ack
    is the other direction's next expected byte (else 0 unless bit 6), bit 6: absolute ack follows,
    bit 7: truncated by the snap length.
    """
    from inspector.capture.packets import Segment

    nxt: dict[tuple[int, int], int] = {}
    isn: dict[tuple[int, int], int] = {}
    ts = 1_700_000_000.0
    pos = 0
    n = len(data)
    while pos + _OP.size <= n:
        control, flags, length, step = _OP.unpack_from(data, pos)
        pos += _OP.size
        conn, direction, mode = control & 3, (control >> 2) & 1, (control >> 3) & 3
        key = (conn, direction)
        expected = nxt.get(key, (1000 + 7919 * conn + 100_000 * direction) & 0xFFFFFFFF)
        if mode == 1 and pos + 4 <= n:
            seq = struct.unpack_from(">I", data, pos)[0]
            pos += 4
        elif mode in (2, 3) and pos + 2 <= n:
            delta = struct.unpack_from(">h", data, pos)[0]
            pos += 2
            seq = ((expected if mode == 2 else isn.get(key, expected)) + delta) & 0xFFFFFFFF
        else:
            seq = expected
        ack = 0
        if control & 0x20:
            ack = nxt.get((conn, 1 - direction), 0)
        if control & 0x40 and pos + 4 <= n:
            ack = struct.unpack_from(">I", data, pos)[0]
            pos += 4
        payload = data[pos:pos + length]
        pos += len(payload)
        missing = 0
        if control & 0x80 and pos + 2 <= n:
            missing = struct.unpack_from(">H", data, pos)[0]
            pos += 2
        ts += step / 1e6
        isn.setdefault(key, seq)
        consumed = len(payload) + missing + (1 if flags & 0x03 else 0)  # SYN and FIN take a sequence number
        nxt[key] = (seq + consumed) & 0xFFFFFFFF
        client = (CLIENT_IP, 40000 + conn)
        broker = (BROKER_IP, BROKER_PORT)
        src, dst = (client, broker) if direction == 0 else (broker, client)
        yield Segment(ts, src[0], src[1], dst[0], dst[1], seq, ack, flags, memoryview(payload), missing > 0,
                      missing)


def encode_segment(conn: int, direction: int, flags: int, seq: int, ack: int, payload: bytes,
                   step_us: int = 1000, missing: int = 0) -> bytes:
    """One operation of a segment script with an absolute seq and ack (what real packets become)."""
    control = (conn & 3) | (direction & 1) << 2 | 1 << 3 | 0x40 | (0x80 if missing else 0)
    out = _OP.pack(control, flags & 0xFF, len(payload), min(step_us, 0xFFFF)) + struct.pack(">II", seq, ack)
    out += payload
    if missing:
        out += struct.pack(">H", min(missing, 0xFFFF))
    return out


def target_reassembler(data: bytes) -> None:
    from inspector.tcp.reassembly import Reassembler
    from inspector.tcp.stream_events import ConnectionClosed, ConnectionOpened, SegmentTruncated, StreamData, StreamGap

    r = Reassembler(max_buffered_per_direction=REASSEMBLER_MAX_BUFFERED,
                    max_connections=REASSEMBLER_MAX_CONNECTIONS)
    position: dict[tuple[int, int], int] = {}
    delivered: dict[tuple[int, int], int] = {}
    gap: dict[tuple[int, int], int] = {}
    opened: set[int] = set()
    closed: set[int] = set()

    def account(events: list[Any]) -> None:
        for ev in events:
            if isinstance(ev, ConnectionOpened):
                check(ev.conn_id not in opened, f"connection {ev.conn_id} opened twice")
                opened.add(ev.conn_id)
                continue
            check(ev.conn_id in opened and ev.conn_id not in closed, f"event for a connection not open: {ev}")
            if isinstance(ev, (StreamData, StreamGap)):
                key = (ev.conn_id, ev.side)
                length = len(ev.data) if isinstance(ev, StreamData) else ev.length
                check(length > 0, f"empty stream event {ev}")
                check(ev.offset == position.get(key, 0), f"{type(ev).__name__} at offset {ev.offset}, "
                      f"expected {position.get(key, 0)} (conn {ev.conn_id} side {ev.side})")
                position[key] = ev.offset + length
                target = delivered if isinstance(ev, StreamData) else gap
                target[key] = target.get(key, 0) + length
            elif isinstance(ev, SegmentTruncated):
                check(ev.captured >= 0 and ev.missing > 0, f"bad truncation event {ev}")
            elif isinstance(ev, ConnectionClosed):
                closed.add(ev.conn_id)
                check(ev.stats is not None, "ConnectionClosed without stats")
                assert ev.stats is not None
                for side, d in enumerate(ev.stats.sides):
                    key = (ev.conn_id, side)
                    check(d.bytes_delivered + d.bytes_gap == d.highest_offset,
                          f"conn {ev.conn_id} side {side}: delivered {d.bytes_delivered} + gap {d.bytes_gap} "
                          f"!= highest offset {d.highest_offset}")
                    check(d.highest_offset == position.get(key, 0), f"conn {ev.conn_id} side {side}: highest "
                          f"offset {d.highest_offset} but events reached {position.get(key, 0)}")
                    check(d.bytes_delivered == delivered.get(key, 0) and d.bytes_gap == gap.get(key, 0),
                          f"conn {ev.conn_id} side {side}: stats disagree with the events")
                    check(d.buffered_bytes == 0, "bytes still buffered after close")

    for seg in parse_segments(data):
        account(r.feed(seg))
        for stats in r.stats().values():
            for d in stats.sides:
                check(d.buffered_bytes <= REASSEMBLER_MAX_BUFFERED, f"buffer limit exceeded: {d.buffered_bytes}")
                check(d.bytes_delivered + d.bytes_gap == d.highest_offset, "open connection accounting broken")
        check(len(r._conns) <= REASSEMBLER_MAX_CONNECTIONS, "connection limit exceeded")
    account(r.flush(2_000_000_000.0))
    check(opened == closed, f"connections never closed: {sorted(opened - closed)}")


def target_pipeline(data: bytes) -> None:
    from contract.limits import DecodeLimits
    from inspector.kafka.connection import KafkaMessage, StreamIssue
    from inspector.kafka.pipeline import Inspector
    from inspector.rows.event_table import EventTable, RecordsOptions
    from inspector.rows.summary import Summary

    ports = {BROKER_PORT} if data[:1] and data[0] & 1 else set()
    body = data[1:]
    limits = DecodeLimits(max_frame=PIPELINE_MAX_FRAME, max_buffered=REASSEMBLER_MAX_BUFFERED,
                          max_connections=REASSEMBLER_MAX_CONNECTIONS, max_decompressed=RECORDS_MAX_DECOMPRESSED)
    inspector = Inspector(ports=ports, limits=limits)
    summary = Summary()
    table = EventTable("fuzz", RecordsOptions("records", True), limits)
    last = 0.0

    def consume(events: list[Any]) -> None:
        for ev in events:
            if isinstance(ev, KafkaMessage):
                summary.message(ev)
                table.add(ev)
            else:
                check(isinstance(ev, StreamIssue) and ev.length >= 0, f"bad stream issue {ev}")
                summary.issue(ev)

    for seg in parse_segments(body):
        last = seg.ts
        consume(inspector.segment(seg))
    consume(inspector.finish(last))
    table.take()
    for closed in inspector.closed:
        if not closed.kafka:
            continue
        st = closed.conn.stats
        for side in (0, 1):
            check(st.bytes_seen[side] == st.bytes_framed[side] + st.bytes_skipped[side],
                  f"side {side}: {st.bytes_seen[side]} bytes delivered but {st.bytes_framed[side]} framed + "
                  f"{st.bytes_skipped[side]} skipped")
        summary.connection_closed(closed.conn, "fuzz")
    check(not inspector.conns, "connections left open after finish")


# ----------------------------------------------------------------------------------------------------
# Capture files

_CAPTURE_DIR = tempfile.mkdtemp(prefix="kafka-inspector-fuzz-")
_CAPTURE_PATH = os.path.join(_CAPTURE_DIR, "input.pcap")


def target_capture(data: bytes) -> None:
    from inspector.capture.file import CaptureError, open_capture
    from inspector.capture.packets import Segment, Skipped, parse_packet

    with open(_CAPTURE_PATH, "wb") as f:
        f.write(data)
    try:
        reader = open_capture(_CAPTURE_PATH)
    except CaptureError as exc:
        check("\n" not in str(exc), "capture errors are one line")
        return
    with reader:
        for pkt in reader:
            check(pkt.caplen == len(pkt.data), "caplen must be the stored length")
            seg = parse_packet(pkt)
            check(isinstance(seg, (Segment, Skipped)), "parse_packet returns a Segment or a Skipped")
            if isinstance(seg, Segment):
                check(0 <= seg.src_port <= 0xFFFF and 0 <= seg.dst_port <= 0xFFFF, "ports in range")
                check(seg.truncated == (seg.missing > 0), "truncated iff bytes are missing")
    for warning in reader.warnings:
        check(isinstance(warning, str) and "\n" not in warning, "warnings are one line")
    # One line per kind of damage however many blocks have it (a hostile file must not make a warning per block).
    check(len(reader.warnings) <= CAPTURE_MAX_WARNINGS, f"{len(reader.warnings)} warnings")


# ----------------------------------------------------------------------------------------------------
# TLS with keys

#: The TLS connections of the tls target (``tls_memory.contexts`` options), chosen by the input's first byte:
#: TLS 1.3 (AES-256-GCM), with a client certificate (decrypted Certificate, the principal) and after a
#: HelloRetryRequest; TLS 1.2 with AES-GCM, ChaCha20-Poly1305, AES-CBC with encrypt-then-MAC and without.
TLS_PROFILES: tuple[dict[str, Any], ...] = (
    {}, {"client_cert": True}, {"hrr": True, "tickets": False},
    {"tls12": "ECDHE-RSA-AES128-GCM-SHA256"}, {"tls12": "ECDHE-RSA-CHACHA20-POLY1305"},
    {"tls12": "ECDHE-RSA-AES128-SHA"}, {"tls12": "ECDHE-RSA-AES256-SHA384", "etm": False},
)
#: Bytes a TLS direction may hold (an incomplete record, an incomplete handshake message: both capped).
TLS_MAX_HELD = (16384 + 2048 + 5) + (1 << 20)
_TLS: dict[str, Any] = {}


def _tls_contexts(profile: int) -> tuple[Any, Any, str]:
    """The (client, server) contexts of a profile and its key log file, made once per process."""
    if not _TLS:
        from pcaps.capture_kit.tls_memory import make_pki

        _TLS["dir"] = tempfile.mkdtemp(prefix="kafka-inspector-fuzz-tls-")
        _TLS["pki"] = make_pki(__import__("pathlib").Path(_TLS["dir"]) / "pki")
    made = _TLS.get(profile)
    if made is None:
        from pcaps.capture_kit.tls_memory import contexts

        client, server = contexts(_TLS["pki"], **TLS_PROFILES[profile])
        keylog = os.path.join(_TLS["dir"], f"keylog-{profile}")
        client.keylog_filename = keylog
        made = _TLS[profile] = (client, server, keylog)
    return made


def target_tls(data: bytes) -> None:
    """A real TLS connection (OpenSSL, in memory) whose traffic the input writes, fed with its key log to
    ``TlsSession``: the record layer, decryption, the decrypted handshake, alerts, record and message
    reassembly, the byte accounting.

    Input: a profile byte (:data:`TLS_PROFILES`), a flags byte (bit 0: no key log; bit 1: the key log's
    secrets altered; bit 2: close_notify at the end; bit 3: each chunk fed in pieces of the next byte's size),
    then operations, each ``>BH`` (kind, length) and ``length`` bytes: kind % 4 == 0 the client writes them
    (sealed by OpenSSL into application data records), 1 the server; 2 raw bytes injected into a direction's
    stream (kind bit 7: the server's); 3 the last chunk of a direction (bit 7) changed: the byte at the
    position the first two bytes give is XORed with the third.

    Invariants: no exception; each direction's bytes all accounted (``fed`` equals the sum of the categories);
    bounded holding; and a direction nobody tampered with, decrypted with the right keys, gives back exactly
    what was written.
    """
    import ssl

    from inspector.tls.keylog import KeyLog
    from inspector.tls.session import TlsSession
    from inspector.tls.tls_events import TlsApplicationData
    from pcaps.capture_kit.tls_memory import MemoryTls

    if len(data) < 2:
        return
    profile, flags = data[0] % len(TLS_PROFILES), data[1]
    r = _Reader(data[2:])
    piece = max(1, r.uint(1)) if flags & 8 else 0
    client_ctx, server_ctx, keylog_path = _tls_contexts(profile)
    start = os.path.getsize(keylog_path) if os.path.exists(keylog_path) else 0
    tls = MemoryTls(client_ctx, server_ctx)
    try:
        tls.handshake()
    except ssl.SSLError:
        return  # a profile this OpenSSL refuses: nothing to fuzz
    chunks: list[tuple[bool, bytes]] = list(tls.chunks)
    written = {True: b"", False: b""}
    tampered = {True: False, False: False}
    while r.pos + 3 <= len(r.data):
        kind, length = r.uint(1), r.uint(2)
        payload = r.take(length)
        op, side = kind % 4, not kind & 0x80
        if op in (0, 1):
            from_client = op == 0
            if payload:
                chunks.append((from_client, tls.seal(from_client, payload)))
                written[from_client] += payload
        elif op == 2:
            if payload:
                chunks.append((side, payload))
                tampered[side] = True
        elif len(payload) >= 3:
            last = [i for i, (s, c) in enumerate(chunks) if s == side and c]
            if last:
                i = last[-1]
                chunk = bytearray(chunks[i][1])
                at = int.from_bytes(payload[:2], "big") % len(chunk)
                chunk[at] ^= payload[2] or 1
                chunks[i] = (side, bytes(chunk))
                tampered[side] = True
    if flags & 4:
        for obj in (tls.client, tls.server):
            try:
                obj.unwrap()
            except (ssl.SSLError, ssl.SSLWantReadError):
                pass
        for from_client, bio in ((True, tls._client_out), (False, tls._server_out)):
            tail = bio.read()
            if tail:
                chunks.append((from_client, tail))
    with open(keylog_path) as f:
        f.seek(start)
        keylog_text = f.read()
    if flags & 1:
        keylog_text = ""
    elif flags & 2:
        keylog_text = keylog_text.replace("a", "b").replace("1", "2")
    session = TlsSession(KeyLog(keylog_text))
    plain = {True: bytearray(), False: bytearray()}
    ts = 1_700_000_000.0

    def take(events: list[Any]) -> None:
        for ev in events:
            if isinstance(ev, TlsApplicationData):
                plain[ev.from_client] += ev.data

    for from_client, chunk in chunks:
        ts += 0.001
        step = piece or len(chunk) or 1
        for i in range(0, len(chunk), step):
            take(session.feed(from_client, chunk[i:i + step], ts))
            check(session.held(from_client) <= TLS_MAX_HELD, f"TLS direction holds {session.held(from_client)}")
    take(session.finish(ts))
    for from_client in (True, False):
        counts = session.counts(from_client)
        check(counts.fed == counts.accounted, f"TLS bytes not accounted: {counts}")
        check(counts.fed == sum(len(c) for s, c in chunks if s == from_client), "fed is what was fed")
        if not tampered[from_client] and not flags & 3 and not tampered[not from_client]:
            check(bytes(plain[from_client]) == written[from_client],
                  f"decrypted {len(plain[from_client])} bytes, {len(written[from_client])} written "
                  f"(profile {profile}, {'client' if from_client else 'server'})")


TARGETS: dict[str, Callable[[bytes], None]] = {
    "request": target_request,
    "response": target_response,
    "embedded": target_embedded,
    "envelope": target_envelope,
    "records": target_records,
    "reassembler": target_reassembler,
    "pipeline": target_pipeline,
    "capture": target_capture,
    "tls": target_tls,
}

#: Largest input the fuzzer generates per target (libFuzzer -max_len).
MAX_LEN: dict[str, int] = {
    "request": 65536,
    "response": 65536,
    "embedded": 16384,
    "envelope": 16384,
    "records": 262144,
    "reassembler": 65536,
    "pipeline": 262144,
    "capture": 262144,
    "tls": 65536,
}
