"""A TLS connection between TCP reassembly and its Kafka framers, sans-I/O.

The pipeline (:class:`~inspector.kafka.pipeline.Inspector`) decides once per connection, from its first stream bytes,
whether it is TLS (:func:`inspector.tls.sniff.sniff`): a ClientHello (on any port), or, when the capture
started after the connection did, TLS record headers. The stream bytes of a TLS connection then come here
instead of going to its :class:`~inspector.kafka.connection.KafkaConnection`: a :class:`TlsStream` feeds them to a
:class:`~inspector.tls.session.TlsSession`, and the plaintext it decrypts to the connection's framers, so the
decrypted Kafka messages are those of a plaintext capture of the same traffic (their ``frame_offset`` counts
the plaintext stream), marked ``tls`` and, with no SASL on the connection, given the client certificate's
principal (``User:CN=...``, as Kafka's default SSL principal builder).

What is not decrypted is counted, never reported as undecodable: records without keys, after decryption
stopped or failed, and every byte of a side whose record boundaries are lost (a TCP gap, bytes released to
stay under ``--max-held``, a connection seen from its middle, whose records are never read). A hole in a
direction's plaintext (records it could not decrypt between records it did) makes its framer resync.

Byte accounting, per side: the stream bytes delivered (``wire``) are the TLS session's bytes fed (its
:class:`~inspector.tls.tls_events.ByteCounts`: control, application, overhead, encrypted, malformed, pending)
plus the bytes not fed (``unread``); the application bytes are what the KafkaConnection saw (framed or
skipped). :meth:`TlsStream.bytes` gives the connection's row its parts.
"""

from __future__ import annotations

from typing import Final

from inspector.kafka.connection import ConnectionEvent, KafkaConnection, KafkaMessage
from inspector.tls.keylog import KeyLog
from inspector.tls.session import TlsSession
from inspector.tls.tls_events import MID_CONNECTION, TlsApplicationData, TlsEncrypted, TlsEvent

__all__ = ["STOPPED_GAP", "STOPPED_RELEASED", "TlsStream"]

STOPPED_GAP: Final = "stopped: TCP gap (record boundaries lost)"
STOPPED_RELEASED: Final = "stopped: incomplete record released (--max-held)"

#: TlsDescription.columns() keys that connections.parquet takes, each as ``tls_`` + the key.
_DESCRIPTION_COLUMNS: Final = (
    "tls_version", "sni", "alpn", "cipher_suite", "resumed", "client_cert", "decryption", "last_alert",
    *(f"{side}_cert_{what}" for side in ("server", "client") for what in ("subject", "issuer", "not_before",
                                                                            "not_after")),
)


class TlsStream:
    """One TLS connection: its session, and which side is the client. ``readable``: the connection was seen from
    its start (a ClientHello); else no record is read and every byte is counted encrypted."""

    __slots__ = ("client_side", "conn", "holes", "lost", "session", "unread", "wire")

    def __init__(self, conn: KafkaConnection, keylog: KeyLog | None, client_side: int, readable: bool) -> None:
        self.conn = conn
        self.session = TlsSession(keylog)
        self.client_side = client_side
        self.lost = [not readable, not readable]  # per side: its record boundaries are lost, its bytes not read
        self.holes = [False, False]  # per side: records not decrypted since its last plaintext
        self.unread = [0, 0]  # per side: bytes not fed to the session
        self.wire = [0, 0]  # per side: stream bytes delivered
        if not readable:
            self.session.description.decryption = MID_CONNECTION

    @property
    def held(self) -> int:
        """Bytes the session holds (incomplete records and handshake messages)."""
        return self.session.held()

    @property
    def wire_bytes(self) -> int:
        return self.wire[0] + self.wire[1]

    @property
    def decrypted(self) -> bool:
        """Whether any application data was decrypted (the content could be judged Kafka or not)."""
        return bool(self.session.counts().application)

    def data(self, side: int, ts: float, data: memoryview | bytes) -> list[ConnectionEvent]:
        """Stream bytes of ``side``: the Kafka events of the plaintext they complete."""
        self.wire[side] += len(data)
        if self.lost[side]:
            self.unread[side] += len(data)
            return []
        return self._plaintext(self.session.feed(side == self.client_side, data, ts))

    def gap(self, side: int, ts: float, length: int, reason: str) -> list[ConnectionEvent]:
        """A TCP gap: the record boundaries of ``side`` are lost, decryption stops; the gap is the
        connection's as in plaintext (its framer resyncs; no more plaintext will come)."""
        self._lose(side, ts, STOPPED_GAP)
        return self._mark(self.conn.gap(side, ts, length, reason))

    def release(self, ts: float, reason: str) -> list[ConnectionEvent]:
        """Free what is held: a side whose session holds an incomplete record loses its record boundaries
        (decryption stops); the framers release their incomplete frames."""
        for side in (0, 1):
            if self.session.held(side == self.client_side):
                self._lose(side, ts, STOPPED_RELEASED)
        return self._mark(self.conn.release(ts, reason))

    def finish(self, ts: float) -> list[ConnectionEvent]:
        """The connection ended: a truncated last record is malformed; the framers report what they hold."""
        self.session.finish(ts)
        return self._mark(self.conn.finish(ts))

    def bytes(self, side: int) -> tuple[int, int, int, int]:
        """(stream bytes delivered, encrypted, TLS overhead, malformed) of ``side``: the delivered bytes are the
        KafkaConnection's plaintext (framed + skipped) + encrypted + overhead + malformed (+ an incomplete
        record while the connection is open)."""
        counts = self.session.counts(side == self.client_side)
        return (self.wire[side], counts.encrypted + self.unread[side], counts.control + counts.overhead,
                counts.malformed + counts.pending)

    def columns(self) -> dict[str, object]:
        """The connection's TLS columns for connections.parquet (``tls_`` + the description's names)."""
        described = self.session.description.columns()
        return {"tls": True, **{key if key.startswith("tls_") else f"tls_{key}": described[key]
                                for key in _DESCRIPTION_COLUMNS}}

    @property
    def principal(self) -> str | None:
        """Kafka's principal for the client certificate (``User:`` + its subject), when one was seen."""
        return self.session.description.principal

    # -- internals ----------------------------------------------------------------------------------------

    def _lose(self, side: int, ts: float, reason: str) -> None:
        if not self.lost[side]:
            self.lost[side] = True
            self.session.lost(side == self.client_side, ts, reason)

    def _plaintext(self, events: list[TlsEvent]) -> list[ConnectionEvent]:
        conn = self.conn
        out: list[ConnectionEvent] = []
        for ev in events:
            if isinstance(ev, TlsApplicationData):
                side = self.client_side if ev.from_client else 1 - self.client_side
                if self.holes[side]:  # its plaintext resumes after records not decrypted: resync
                    self.holes[side] = False
                    out.extend(conn.resync(side, ev.ts))
                out.extend(conn.data(side, ev.ts, ev.data))
            elif isinstance(ev, TlsEncrypted):
                self.holes[self.client_side if ev.from_client else 1 - self.client_side] = True
        return self._mark(out)

    def _mark(self, events: list[ConnectionEvent]) -> list[ConnectionEvent]:
        """The Kafka messages marked as carried by TLS; with no SASL on the connection, the client certificate's
        principal is theirs (a SASL principal over TLS wins)."""
        principal = self.session.description.principal
        for ev in events:
            if isinstance(ev, KafkaMessage):
                ev.tls = True
                if principal is not None and ev.principal is None and ev.sasl_mechanism is None:
                    ev.principal = principal
        return events
