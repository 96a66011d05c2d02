"""What a TLS session (:mod:`inspector.tls.session`) reports: its events, the description of its connection
(what its hellos, certificates and alerts showed) and its byte accounting.

Events are small frozen dataclasses, in the order their bytes were fed, each with the timestamp of the bytes
that completed its record. :class:`TlsApplicationData` carries decrypted application data (for the Kafka
framer); :class:`TlsEncrypted` the size of records that were not decrypted (contiguous ones of one direction
merged into one event); the others say what happened to the connection.

Byte accounting (:class:`ByteCounts`): every byte fed to a direction is counted exactly once, in one of

- ``control``: whole records of the handshake, ChangeCipherSpec, alerts and heartbeats, plaintext or
  decrypted (their headers and encryption overhead included);
- ``application``: the decrypted application data delivered;
- ``overhead``: the rest of the decrypted application_data records (the 5-byte header, the explicit nonce,
  the tag or MAC and padding, TLS 1.3's inner content type and padding) — ``application + overhead`` is
  the application records' bytes on the wire;
- ``encrypted``: whole records that were not decrypted (no keys, decryption stopped or failed);
- ``malformed``: the bytes the record layer could not split (from a header that cannot be TLS on, or a
  truncated last record at the end);
- ``pending``: the incomplete record held at this moment (at :meth:`TlsSession.finish` it becomes malformed).

so ``fed == control + application + overhead + encrypted + malformed + pending`` at all times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inspector.frozen_init import fast_frozen_init
from inspector.tls.handshake import CertInfo, ClientHello, ServerHello
from inspector.tls.tls_registry import AES_CBC, TLS13, group_name, suite, suite_name, version_name

__all__ = [
    "DECRYPTED",
    "MID_CONNECTION",
    "NO_KEYS",
    "PENDING",
    "ByteCounts",
    "TlsAlert",
    "TlsApplicationData",
    "TlsDecryptionStopped",
    "TlsDescription",
    "TlsEncrypted",
    "TlsEvent",
    "TlsHandshakeMessage",
    "TlsMalformed",
    "TlsNoKeys",
    "TlsRenegotiation",
    "merge_encrypted",
]

# TlsDescription.decryption: one of these, or "not decryptable: WHY", "failed: WHY", "stopped: WHY"
PENDING: Final = "pending"  # no encrypted record yet
DECRYPTED: Final = "decrypted"  # keys found: the records are decrypted (ByteCounts say if some were not)
NO_KEYS: Final = "no keys"  # the key log has no keys for the connection (yet)
MID_CONNECTION: Final = "not decryptable: no handshake at the start (capture started mid-connection)"


@dataclass(frozen=True)  # compiled, an extension type (tls_events.pxd); from source, the slots below
class TlsApplicationData:
    """Decrypted application data of one record, in order per direction."""

    __slots__ = ("from_client", "ts", "data")

    from_client: bool
    ts: float
    data: bytes


@dataclass(frozen=True)  # compiled, an extension type (tls_events.pxd); from source, the slots below
class TlsEncrypted:
    """``size`` bytes in ``records`` records that were not decrypted (a hole in the application stream
    when they carried application data)."""

    __slots__ = ("from_client", "ts", "size", "records")

    from_client: bool
    ts: float
    size: int
    records: int


@dataclass(frozen=True, slots=True)
class TlsNoKeys:
    """An encrypted record arrived and the key log had no keys for the connection (reported once)."""

    ts: float
    client_random: str


@dataclass(frozen=True, slots=True)
class TlsDecryptionStopped:
    """Decryption of the connection stopped (both directions): ``reason`` is the new decryption status."""

    from_client: bool
    ts: float
    reason: str


@dataclass(frozen=True, slots=True)
class TlsAlert:
    """An alert: ``level`` 1 (warning) or 2 (fatal) and ``description``, None both when the alert was
    encrypted and not decrypted (TLS 1.2 shows its record type); ``name`` as in RFC 8446."""

    from_client: bool
    ts: float
    level: int | None
    description: int | None
    name: str


@dataclass(frozen=True, slots=True)
class TlsHandshakeMessage:
    """A handshake message read, in plaintext or from a decrypted record (``decrypted``)."""

    from_client: bool
    ts: float
    msg_type: int
    name: str
    decrypted: bool


@dataclass(frozen=True, slots=True)
class TlsMalformed:
    """Something could not be read: a record header that is not TLS or a truncated record (the direction's
    record parsing stops), an over-long or unparsable handshake message."""

    from_client: bool
    ts: float
    reason: str


@dataclass(frozen=True, slots=True)
class TlsRenegotiation:
    """A TLS 1.2 renegotiation (HelloRequest, a second ClientHello, or a second ChangeCipherSpec)."""

    from_client: bool
    ts: float


for _cls in (TlsApplicationData, TlsEncrypted, TlsNoKeys, TlsDecryptionStopped, TlsAlert, TlsHandshakeMessage,
             TlsMalformed, TlsRenegotiation):
    fast_frozen_init(_cls)

TlsEvent = (TlsApplicationData | TlsEncrypted | TlsNoKeys | TlsDecryptionStopped | TlsAlert | TlsHandshakeMessage
            | TlsMalformed | TlsRenegotiation)


@dataclass(frozen=True, slots=True)
class ByteCounts:
    """The byte accounting of a direction (or of both): see the module docstring."""

    fed: int = 0
    control: int = 0
    application: int = 0
    overhead: int = 0
    encrypted: int = 0
    malformed: int = 0
    pending: int = 0

    @property
    def accounted(self) -> int:
        """The sum of the categories: equal to ``fed``."""
        return self.control + self.application + self.overhead + self.encrypted + self.malformed + self.pending

    def __add__(self, other: ByteCounts) -> ByteCounts:
        return ByteCounts(self.fed + other.fed, self.control + other.control, self.application + other.application,
                          self.overhead + other.overhead, self.encrypted + other.encrypted,
                          self.malformed + other.malformed, self.pending + other.pending)


@dataclass(slots=True)
class TlsDescription:
    """One connection's TLS, as far as its bytes showed it (None: not known). ``resumption_offered`` lists
    ``session_id`` / ``session_ticket`` / ``psk`` as the ClientHello offered them; ``resumed`` says whether
    the server accepted (TLS 1.3: its pre_shared_key; TLS 1.2: it echoed the session id). ``client_cert``:
    the client sent a non-empty Certificate (TLS 1.3: known only when the handshake was decrypted).
    ``principal`` is Kafka's for the client certificate (``User:`` + its subject in RFC 2253 form)."""

    client_random: str | None = None
    tls_version: str | None = None
    versions_offered: tuple[str, ...] = ()
    sni: str | None = None
    alpn_offered: tuple[str, ...] = ()
    alpn: str | None = None
    cipher_suite: str | None = None
    key_exchange_group: str | None = None
    hello_retry: bool = False
    encrypt_then_mac: bool | None = None
    resumption_offered: tuple[str, ...] = ()
    resumed: bool | None = None
    client_cert_requested: bool = False
    client_cert: bool | None = None
    server_certificate: CertInfo | None = None
    client_certificate: CertInfo | None = None
    principal: str | None = None
    last_alert: str | None = None
    decryption: str = PENDING

    def client_hello(self, hello: ClientHello) -> None:
        """What the ClientHello tells. A session id counts as a resumption offered only when TLS 1.3 is not
        offered (offering it, clients send a random one for middlebox compatibility)."""
        self.client_random = hello.random.hex()
        self.versions_offered = tuple(version_name(v) for v in hello.versions)
        self.sni = hello.sni
        self.alpn_offered = hello.alpn
        offered = []
        if hello.session_id and TLS13 not in hello.versions:
            offered.append("session_id")
        if hello.session_ticket:
            offered.append("session_ticket")
        if hello.psk:
            offered.append("psk")
        self.resumption_offered = tuple(offered)

    def server_hello(self, sh: ServerHello, hello: ClientHello | None) -> None:
        """What the ServerHello (or HelloRetryRequest) tells, with the ClientHello it answers."""
        if sh.key_share_group is not None:
            self.key_exchange_group = group_name(sh.key_share_group)
        if sh.hello_retry:
            self.hello_retry = True
            return
        self.tls_version = version_name(sh.version)
        self.cipher_suite = suite_name(sh.cipher_suite)
        cs = suite(sh.cipher_suite)
        if sh.version == TLS13:
            self.resumed = sh.psk
        else:
            self.resumed = bool(hello and hello.session_id and sh.session_id == hello.session_id)
            self.alpn = sh.alpn
            if cs is not None and cs.cipher == AES_CBC:
                self.encrypt_then_mac = bool(hello and hello.encrypt_then_mac and sh.encrypt_then_mac)

    def columns(self) -> dict[str, object]:
        """The description flattened to columns (what connections.parquet can take)."""
        out: dict[str, object] = {
            "tls_version": self.tls_version, "sni": self.sni, "alpn": self.alpn,
            "alpn_offered": ",".join(self.alpn_offered) or None, "cipher_suite": self.cipher_suite,
            "key_exchange_group": self.key_exchange_group, "hello_retry": self.hello_retry,
            "resumption_offered": ",".join(self.resumption_offered) or None, "resumed": self.resumed,
            "client_cert_requested": self.client_cert_requested, "client_cert": self.client_cert,
            "principal": self.principal, "last_alert": self.last_alert, "decryption": self.decryption,
        }
        for side, cert in (("server", self.server_certificate), ("client", self.client_certificate)):
            out[f"{side}_cert_subject"] = cert.subject if cert else None
            out[f"{side}_cert_issuer"] = cert.issuer if cert else None
            out[f"{side}_cert_not_before"] = cert.not_before if cert else None
            out[f"{side}_cert_not_after"] = cert.not_after if cert else None
        return out


def merge_encrypted(events: list[TlsEvent]) -> list[TlsEvent]:
    """Contiguous TlsEncrypted events of one direction merged into one."""
    out: list[TlsEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, TlsEncrypted) and isinstance(last, TlsEncrypted) and last.from_client == event.from_client:
            out[-1] = TlsEncrypted(event.from_client, event.ts, last.size + event.size, last.records + event.records)
        else:
            out.append(event)
    return out
