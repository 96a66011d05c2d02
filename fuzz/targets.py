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
        from inspector.events import body_json

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
    """Turn a segment script into :class:`~inspector.packets.Segment` objects.

    The script is a sequence of operations; each is ``>BBHH`` (control, TCP flags, payload length,
    time step in µs), then for the sequence-number mode a 4-byte seq or 2-byte delta, then a 4-byte
    ack if bit 6 is set, then the payload (cut at the end of the input), then a 2-byte count of
    bytes cut by the snap length if bit 7 is set. Control byte: bits 0-1 connection (4 port pairs),
    bit 2 direction (1: broker to client), bits 3-4 seq mode (0: next expected, 1: absolute seq,
    2: signed delta from the next expected, 3: delta from the initial sequence number), bit 5: the ack
    is the other direction's next expected byte (else 0 unless bit 6), bit 6: absolute ack follows,
    bit 7: truncated by the snap length.
    """
    from inspector.packets import Segment

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
    from inspector.reassembly import Reassembler
    from inspector.stream_events import ConnectionClosed, ConnectionOpened, SegmentTruncated, StreamData, StreamGap

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
    from inspector.connection import KafkaMessage, StreamIssue
    from inspector.events import EventTable, RecordsOptions
    from inspector.pipeline import Inspector
    from inspector.summary import Summary

    ports = {BROKER_PORT} if data[:1] and data[0] & 1 else set()
    body = data[1:]
    inspector = Inspector(ports=ports, max_frame=PIPELINE_MAX_FRAME, max_buffered=REASSEMBLER_MAX_BUFFERED,
                          max_connections=REASSEMBLER_MAX_CONNECTIONS)
    summary = Summary()
    table = EventTable("fuzz", RecordsOptions("records", True, RECORDS_MAX_DECOMPRESSED))
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
    from inspector.capture_file import CaptureError, open_capture
    from inspector.packets import Segment, Skipped, parse_packet

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


TARGETS: dict[str, Callable[[bytes], None]] = {
    "request": target_request,
    "response": target_response,
    "embedded": target_embedded,
    "envelope": target_envelope,
    "records": target_records,
    "reassembler": target_reassembler,
    "pipeline": target_pipeline,
    "capture": target_capture,
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
}
