"""One TCP connection seen as Kafka: which side is the client, frames, and correlation (sans-I/O).

The only state kept is what the protocol itself needs: the two framers, which side is the
client, and the requests still waiting for their response (correlation id -> api key/version,
client id, time). A response whose request was not captured is decoded by trying candidates.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from contract.events import Direction
from contract.kafka import PRODUCE
from contract.limits import DEFAULT_LIMITS, DecodeLimits
from decoders import OK, decode_request
from decoders.api import DecodedMessage, be32, decode_request_bytes, decode_response_bytes
from decoders.api import hit_elements_limit as hit_elements_limit  # the inspector's name for it too
from decoders.generated import registry
from decoders.guess import guess_response
from decoders.sasl_tokens import decode_token, looks_like_token
from decoders.status import StatusKind
from inspector.kafka.framing import Frame, Framer, Oversized, Skipped, Verdict
from inspector.kafka.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslState

_HEAD = struct.Struct(">ihhi").unpack_from  # length, api key, version, correlation id
_CORR = struct.Struct(">ii").unpack_from  # length, correlation id

#: Frames kept while it is not yet known which side is the client.
MAX_UNDECIDED_FRAMES = 64
_REQUEST, _RESPONSE = Direction.REQUEST, Direction.RESPONSE  # (compiled: module globals, not class look-ups)
_ROUNDER = 6755399441055744.0  # 1.5 * 2**52: x + it - it is x rounded half to even (see _latency_ms)


def _latency_ms(sent: float, answered: float) -> float:
    """Milliseconds from ``sent`` to ``answered``, to the microsecond: round(x * 1e6) / 1e3, round(x, 3) being ten
    times slower. The microseconds are rounded half to even by adding and taking away 1.5 * 2**52 (a double has
    no fraction bits left at that size), which is exact below 2**51 µs (71 years) and, compiled (an inline C
    function, connection.pxd), C arithmetic rather than a call of round() (docs/performance.md)."""
    micros = (answered - sent) * 1_000_000.0
    return ((micros + _ROUNDER) - _ROUNDER) / 1000.0


def is_kafka(msg: DecodedMessage) -> bool:
    """Whether ``msg`` is evidence of Kafka: it decoded, or it stopped only at the element budget (its header
    and every field before the big array decoded, and that array's count fits in the frame)."""
    return msg.ok or hit_elements_limit(msg)


@dataclass(frozen=True)  # compiled, an extension type (connection.pxd); from source, the slots below
class Endpoint:
    __slots__ = ("ip", "port")

    ip: str
    port: int

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


@dataclass  # compiled, an extension type (connection.pxd), as KafkaMessage
class PendingRequest:
    api_key: int
    api_version: int
    ts: float
    client_id: str | None
    inner: tuple[int, int] | None  # Envelope: the inner request's api key and version
    inner_correlation_id: int | None


@dataclass  # compiled, an extension type (connection.pxd): its fields live in the object, read from C
class KafkaMessage:
    """A decoded frame with its connection context: what becomes an event row."""

    ts: float
    conn_id: int
    client: Endpoint
    broker: Endpoint
    direction: Direction
    frame_offset: int
    message: DecodedMessage
    client_id: str | None
    latency_ms: float | None = None
    request_missing: bool = False
    candidates: tuple[tuple[int, int], ...] = ()
    confidence: float | None = None
    principal: str | None = None  # who the connection authenticated as (SASL), when the message was seen
    sasl_mechanism: str | None = None
    tls: bool | None = None  # carried by TLS (decrypted); set by inspector.kafka.tls_stream


@dataclass(frozen=True)  # compiled, an extension type (connection.pxd); from source, the slots below
class StreamIssue:
    """Bytes of a stream that did not become a frame (skipped, oversized, or lost in a gap)."""

    __slots__ = ("ts", "conn_id", "side", "offset", "length", "kind", "reason")

    ts: float
    conn_id: int
    side: int
    offset: int
    length: int
    kind: str  # "skipped" | "oversized" | "gap"
    reason: str


ConnectionEvent = KafkaMessage | StreamIssue


def _new_message(ts: float, conn_id: int, client: Endpoint, broker: Endpoint, direction: Direction, frame_offset: int,
                 message: DecodedMessage, client_id: str | None, latency_ms: float | None, request_missing: bool,
                 candidates: tuple[tuple[int, int], ...], confidence: float | None, principal: str | None,
                 sasl_mechanism: str | None) -> KafkaMessage:
    """KafkaMessage(...) for the hot path, every field positionally: compiled, stored from C (the class's own
    ``__init__`` parses its twelve arguments as a Python call: docs/performance.md)."""
    m = KafkaMessage.__new__(KafkaMessage)
    m.ts = ts
    m.conn_id = conn_id
    m.client = client
    m.broker = broker
    m.direction = direction
    m.frame_offset = frame_offset
    m.message = message
    m.client_id = client_id
    m.latency_ms = latency_ms
    m.request_missing = request_missing
    m.candidates = candidates
    m.confidence = confidence
    m.principal = principal
    m.sasl_mechanism = sasl_mechanism
    return m


@dataclass
class ConnectionStats:
    """Per side (0, 1): ``bytes_seen`` is stream data delivered (gaps are in ``bytes_gap``); once finished
    every delivered byte was framed or skipped: ``bytes_seen == bytes_framed + bytes_skipped``.
    ``bytes_retransmitted`` (duplicate TCP payload, delivered once) is set from the reassembler at close."""

    bytes_seen: list[int] = field(default_factory=lambda: [0, 0])
    bytes_framed: list[int] = field(default_factory=lambda: [0, 0])
    bytes_gap: list[int] = field(default_factory=lambda: [0, 0])
    bytes_skipped: list[int] = field(default_factory=lambda: [0, 0])
    bytes_retransmitted: list[int] = field(default_factory=lambda: [0, 0])
    frames: list[int] = field(default_factory=lambda: [0, 0])
    decode_failures: int = 0
    requests_missing: int = 0
    responses_missing: int = 0
    pending_dropped: int = 0  # requests given up (and counted in responses_missing) beyond max_pending


class KafkaConnection:
    """Feed stream data and gaps per side (0 or 1); get KafkaMessage and StreamIssue events."""

    def __init__(
        self,
        conn_id: int,
        a: Endpoint,
        b: Endpoint,
        *,
        client_side: int | None = None,
        synced: bool = True,
        limits: DecodeLimits = DEFAULT_LIMITS,
        body_text: bool = False,
    ) -> None:
        self.conn_id = conn_id
        # The limits this connection uses, unpacked: read per message on the hot path.
        self.max_pending = limits.max_pending  # requests kept waiting for a response; beyond, the oldest given up
        self.max_elements = limits.max_elements  # array elements one message may decode (--max-elements)
        # Whether Produce/Fetch bodies come as JSON text written from the frame, with a partial body (decoders.api's
        # ``text`` mode: for a consumer that only writes the text, the events table).
        self.body_text = body_text
        self.endpoints = (a, b)
        self.client_side = client_side
        self.pending: dict[int, PendingRequest] = {}
        self.seen_versions: set[tuple[int, int]] = set()
        self.last_correlation_id: int | None = None
        self.stats = ConnectionStats()
        self.sasl: SaslState | None = None  # made when the connection's first SASL message is seen
        max_frame = limits.max_frame
        self.framers = (
            # min_frame: a response holds at least its correlation id (a request header is longer);
            # scan_window: plausible() judges a position by the 12 bytes from it
            Framer(self._plausible_for(0), self._confirm_for(0), max_frame=max_frame, synced=synced, min_frame=4,
                   scan_window=12),
            Framer(self._plausible_for(1), self._confirm_for(1), max_frame=max_frame, synced=synced, min_frame=4,
                   scan_window=12),
        )
        self._undecided: list[tuple[int, Frame]] = []
        self._request_failures = [0, 0]
        # Whether frames may be legacy SASL tokens (no Kafka header): after a SaslHandshake v0 response, and at
        # the start of a capture that begins mid-connection (perhaps in the middle of the exchange).
        self._tokens = not synced
        self._token_ts: float | None = None  # when the last client token was sent

    # -- input -----------------------------------------------------------------------------

    def data(self, side: int, ts: float, view: memoryview | bytes) -> list[ConnectionEvent]:
        self.stats.bytes_seen[side] += len(view)
        framer = self.framers[side]
        return self._handle(side, framer.data(ts, view))

    def gap(self, side: int, ts: float, length: int, reason: str) -> list[ConnectionEvent]:
        self.stats.bytes_gap[side] += length
        out = self._handle(side, self.framers[side].gap(ts, length))
        offset = self.framers[side].offset - length
        out.append(StreamIssue(ts, self.conn_id, side, offset, length, "gap", reason))
        return out

    def resync(self, side: int, ts: float) -> list[ConnectionEvent]:
        """Bytes of ``side``'s stream that will not come and are not counted here went by (TLS records not
        decrypted between records that were): its incomplete frame is skipped and its framer resyncs."""
        return self._handle(side, self.framers[side].gap(ts, 0))

    def release(self, ts: float, reason: str) -> list[ConnectionEvent]:
        """Free the bytes both framers hold (incomplete frames): reported as skipped with ``reason``; each
        side resyncs at the next plausible frame start."""
        out: list[ConnectionEvent] = []
        for side in (0, 1):
            if self.framers[side].buffered:
                out.extend(self._handle(side, self.framers[side].release(ts, reason)))
        return out

    @property
    def buffered(self) -> int:
        """Bytes held by both framers (incomplete frames, bytes still being scanned)."""
        return self.framers[0].buffered + self.framers[1].buffered

    def finish(self, ts: float) -> list[ConnectionEvent]:
        out: list[ConnectionEvent] = []
        for side in (0, 1):
            out.extend(self._handle(side, self.framers[side].finish(ts)))
        if self._undecided:
            self._decide_by_majority()
            out.extend(self._flush_undecided())
        self.stats.responses_missing += len(self.pending)
        self.pending.clear()
        return out

    # -- role ------------------------------------------------------------------------------

    @property
    def client(self) -> Endpoint:
        return self._roles()[0]

    @property
    def broker(self) -> Endpoint:
        return self._roles()[1]

    def _roles(self) -> tuple[Endpoint, Endpoint]:
        """(client, broker): side 0 is the client until the content says otherwise."""
        side = self.client_side or 0
        return self.endpoints[side], self.endpoints[1 - side]

    def _handle(self, side: int, events: list[Frame | Skipped | Oversized]) -> list[ConnectionEvent]:
        out: list[ConnectionEvent] = []
        for ev in events:
            if isinstance(ev, Frame):
                self._framed(side, ev, out)
            elif isinstance(ev, Skipped):
                self.stats.bytes_skipped[side] += ev.length
                out.append(StreamIssue(ev.ts, self.conn_id, side, ev.offset, ev.length, "skipped", ev.reason))
            else:
                out.append(StreamIssue(ev.ts, self.conn_id, side, ev.offset, 4, "oversized",
                                       f"frame length {ev.length} outside 0..{self.framers[side].max_frame}"))
        return out

    def _framed(self, side: int, frame: Frame, out: list[ConnectionEvent]) -> None:
        """A frame of ``side``: counted, and its message appended to ``out`` (once the roles are known)."""
        self.stats.frames[side] += 1
        self.stats.bytes_framed[side] += 4 + len(frame.data)
        if self.client_side is None:
            self._undecided.append((side, frame))
            self._try_decide(side, frame)
            if self.client_side is not None or len(self._undecided) >= MAX_UNDECIDED_FRAMES:
                if self.client_side is None:
                    self._decide_by_majority()
                out.extend(self._flush_undecided())
            return
        out.append(self._frame(side, frame))

    def _try_decide(self, side: int, frame: Frame) -> None:
        if self._tokens:
            seen = looks_like_token(frame.data)
            if seen is not None:  # a client's or a broker's SASL token: no Kafka frame looks like one
                self.client_side = side if seen == "request" else 1 - side
                return
        if is_kafka(decode_request(frame.data, postprocess=False, max_elements=self.max_elements)):
            # A side whose frames decode as requests is the client, unless the other side's do too.
            self.client_side = side
        else:
            self._request_failures[side] += 1
            if self._request_failures[side] >= 2:
                self.client_side = 1 - side

    def _decide_by_majority(self) -> None:
        ok = [0, 0]
        max_elements = self.max_elements
        for side, frame in self._undecided:
            if is_kafka(decode_request(frame.data, postprocess=False, max_elements=max_elements)):
                ok[side] += 1
        self.client_side = 0 if ok[0] >= ok[1] else 1

    def _flush_undecided(self) -> list[ConnectionEvent]:
        frames, self._undecided = self._undecided, []
        return [self._frame(side, frame) for side, frame in frames]

    # -- frames ----------------------------------------------------------------------------

    def _frame(self, side: int, frame: Frame) -> KafkaMessage:
        if self._tokens:
            token = self._token(side, frame)
            if token is not None:
                return token
        if side == self.client_side:
            return self._request(frame)
        return self._response(frame)

    def _token(self, side: int, frame: Frame) -> KafkaMessage | None:
        """A legacy SASL token's message, or None when ``frame`` is not one (``inspector.kafka.sasl``)."""
        data = frame.data
        client = side == self.client_side
        sasl = self.sasl
        if sasl is None or not sasl.tokens:
            # No SaslHandshake v0 seen: the capture started mid-connection. Only an unmistakable token is one,
            # and only before the first Kafka frame.
            seen = looks_like_token(data)
            if seen is None or (seen == "request") != client:
                self._tokens = False
                return None
            if sasl is None:
                sasl = self.sasl = SaslState()
            sasl.tokens = True
        elif client and looks_like_token(data) is None and decode_request(
                data, postprocess=False, max_elements=self.max_elements).ok:
            sasl.tokens = self._tokens = False  # a Kafka request: the exchange is over (GSSAPI's end is unseen)
            return None
        kind = "request" if client else "response"
        msg = decode_token(kind, data)
        sasl.token(kind, msg.body or {})
        if not sasl.tokens:
            self._tokens = False
        latency = None
        if client:
            self._token_ts = frame.ts
        elif self._token_ts is not None:
            latency = _latency_ms(self._token_ts, frame.ts)
        c, b = self._roles()
        return _new_message(frame.ts, self.conn_id, c, b, _REQUEST if client else _RESPONSE, frame.offset, msg,
                            sasl.client_id, latency, False,
                            (), None, sasl.principal, sasl.mechanism)

    def _request(self, frame: Frame) -> KafkaMessage:
        msg = decode_request_bytes(frame.data, True, self.max_elements, self.body_text)
        if msg.status != OK:  # not msg.ok (a property call)
            self.stats.decode_failures += 1
        if msg.correlation_id is not None:
            self.last_correlation_id = msg.correlation_id
        if msg.api_key is not None and msg.api_version is not None and msg.header is not None:
            self.seen_versions.add((msg.api_key, msg.api_version))
            if not _expects_no_response(msg):
                inner = msg.inner
                # PendingRequest(...), its fields stored from C when compiled (the class call parses six
                # arguments: docs/performance.md).
                pending = PendingRequest.__new__(PendingRequest)
                pending.api_key = msg.api_key
                pending.api_version = msg.api_version
                pending.ts = frame.ts
                pending.client_id = msg.client_id
                pending.inner = ((inner.api_key, inner.api_version) if inner is not None
                                 and inner.api_key is not None and inner.api_version is not None else None)
                pending.inner_correlation_id = inner.correlation_id if inner is not None else None
                self.pending[msg.correlation_id or 0] = pending
                if len(self.pending) > self.max_pending:
                    oldest = next(iter(self.pending))
                    del self.pending[oldest]
                    self.stats.responses_missing += 1
                    self.stats.pending_dropped += 1
        key = msg.api_key
        sasl = self.sasl
        if key == SASL_HANDSHAKE or key == SASL_AUTHENTICATE:
            if sasl is None:
                sasl = self.sasl = SaslState()
            sasl.request(key, msg.body)
        client, broker = self._roles()
        principal = mechanism = None
        if sasl is not None:
            principal, mechanism = sasl.principal, sasl.mechanism
        return _new_message(frame.ts, self.conn_id, client, broker, _REQUEST, frame.offset, msg,
                            msg.client_id, None, False, (), None, principal, mechanism)

    def _response(self, frame: Frame) -> KafkaMessage:
        data = frame.data
        corr = be32(data, 0) if len(data) >= 4 else None
        req = self.pending.pop(corr, None) if corr is not None else None
        if req is not None:
            msg = decode_response_bytes(data, req.api_key, req.api_version, req.inner, True, self.max_elements,
                                        self.body_text)
            if msg.status != OK:  # not msg.ok (a property call)
                self.stats.decode_failures += 1
            latency = _latency_ms(req.ts, frame.ts)
            client, broker = self._roles()
            sasl = self.sasl
            principal = mechanism = None
            if sasl is not None:
                if req.api_key == SASL_HANDSHAKE or req.api_key == SASL_AUTHENTICATE:
                    sasl.response(req.api_key, req.api_version, msg.body)
                    if sasl.tokens:
                        self._tokens = True
                        sasl.client_id = req.client_id
                principal, mechanism = sasl.principal, sasl.mechanism
            return _new_message(frame.ts, self.conn_id, client, broker, _RESPONSE, frame.offset, msg,
                                req.client_id, latency, False, (), None, principal, mechanism)
        self.stats.requests_missing += 1
        guess = guess_response(data, preferred=self.seen_versions, max_elements=self.max_elements)
        if guess.message is not None:
            msg = guess.message  # decoded exactly, or stopped at the element budget (--max-elements)
            if msg.status != OK:
                self.stats.decode_failures += 1
        else:
            msg = DecodedMessage("response", None, None, corr,  # its api is not known: no layout decodes it
                                 "request missing: no api key/version decodes this response", None, len(data),
                                 status_kind=StatusKind.UNKNOWN_API)
            self.stats.decode_failures += 1
        if corr is not None:
            self.last_correlation_id = corr
        sasl = self.sasl
        return KafkaMessage(frame.ts, self.conn_id, self.client, self.broker, _RESPONSE, frame.offset, msg, None,
                            request_missing=True, candidates=guess.candidates, confidence=guess.confidence,
                            principal=sasl.principal if sasl is not None else None,
                            sasl_mechanism=sasl.mechanism if sasl is not None else None)

    # -- resynchronisation -----------------------------------------------------------------

    def _plausible_for(self, side: int):  # type: ignore[no-untyped-def]
        def plausible(buf: bytes, pos: int) -> int:
            is_client = self.client_side == side if self.client_side is not None else None
            at_start = self.framers[side].offset + pos == 0
            if at_start and self._tokens:
                return Verdict.MAYBE  # perhaps a SASL token (no Kafka header): confirm() tells
            if len(buf) - pos >= 12 and is_client is not False:
                length, key, version, _ = _HEAD(buf, pos)
                rng = registry.VERSION_RANGES.get(key)
                if length >= 8 and rng is not None and rng[0] <= version <= rng[1]:
                    return Verdict.MAYBE
            if len(buf) - pos >= 8 and is_client is not True:
                length, corr = _CORR(buf, pos)
                if length >= 4 and corr in self.pending:
                    return Verdict.YES
                last = self.last_correlation_id
                if length >= 4 and (at_start or (last is not None and abs(corr - last) <= 1000)):
                    return Verdict.MAYBE
            return Verdict.NO
        return plausible

    def _confirm_for(self, side: int):  # type: ignore[no-untyped-def]
        def confirm(frame: bytes) -> bool:
            is_client = self.client_side == side if self.client_side is not None else None
            if self._tokens and looks_like_token(frame) is not None:
                return True
            if is_client is not False and is_kafka(decode_request(frame, postprocess=False,
                                                                  max_elements=self.max_elements)):
                return True
            if is_client is not True:
                return guess_response(frame, api_keys={k for k, _ in self.seen_versions} or None,
                                      max_elements=self.max_elements).message is not None
            return False
        return confirm


def _expects_no_response(msg: DecodedMessage) -> bool:
    """Produce with acks=0 gets no response."""
    if msg.api_key != PRODUCE:
        return False
    body = msg.body
    return body is not None and body.get("Acks") == 0
