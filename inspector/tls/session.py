"""One TCP connection's TLS, sans-I/O: fed each direction's bytes with their timestamps, it reports events
(:mod:`inspector.tls.tls_events`): the decrypted application data for the Kafka framer, what was not decrypted,
and what happened; it describes the connection (:class:`~inspector.tls.tls_events.TlsDescription`) and accounts
for every byte (:class:`~inspector.tls.tls_events.ByteCounts`). It never opens a file or a socket nor reads a
clock: keys come from a :class:`~inspector.tls.keylog.KeyLog` that the caller feeds.

TLS is recognised by content: :meth:`TlsSession.looks_like_tls` (a ClientHello record at the start of the
client's stream: it answers from :data:`SNIFF_LEN` = 6 bytes, and says None while fewer agree). The caller
must feed the two directions in capture order (the ServerHello before the client's encrypted records, as
TCP's causality gives them).

Decryption (RFC 8446 / RFC 5246): the keys are looked up lazily by the ClientHello's random, each time an
encrypted record arrives and keys are missing, so keys written to the log after a connection's first records
still decrypt the records that follow. Sequence numbers are counted per direction whether or not a record
was decrypted. In TLS 1.2 the ChangeCipherSpec marks where encryption starts; in TLS 1.3 the switch from
the handshake keys to the traffic keys is seen in the decrypted handshake (the Finished), and when records
of the handshake epoch went by without keys, the first record after the keys appear is tried under the
handshake keys and under the traffic keys at the sequence numbers it can have (up to :data:`MAX_RESYNC`).
A record that fails (tag, MAC, padding) stops decryption of the connection: its status says why and the
bytes after are counted as encrypted; so does a renegotiation (TLS 1.2). 0-RTT early data is not decrypted
(the key log's early secret is not used).

Memory: each direction holds at most one incomplete record and one incomplete handshake message (capped).
"""

from __future__ import annotations

from typing import Final

from inspector.tls.cipher import DecryptError, Decryptor, Tls13Decryptor, tls12_decryptors, tls13_resync
from inspector.tls.handshake import (
    HRR_RANDOM,
    ClientHello,
    HandshakeError,
    ServerHello,
    describe_certificate,
    parse_certificate,
    parse_client_hello,
    parse_encrypted_extensions,
    parse_key_update,
    parse_server_hello,
)
from inspector.tls.keylog import KeyLog, Secrets
from inspector.tls.tls_events import (
    DECRYPTED,
    MID_CONNECTION,
    NO_KEYS,
    PENDING,
    ByteCounts,
    TlsAlert,
    TlsApplicationData,
    TlsDecryptionStopped,
    TlsDescription,
    TlsEncrypted,
    TlsEvent,
    TlsHandshakeMessage,
    TlsMalformed,
    TlsNoKeys,
    TlsRenegotiation,
    merge_encrypted,
)
from inspector.tls.tls_records import (
    ALERT,
    APPLICATION_DATA,
    CHANGE_CIPHER_SPEC,
    HANDSHAKE,
    SNIFF_LEN,
    HandshakeMessage,
    HandshakeReassembler,
    Record,
    RecordSplitter,
    looks_like_tls,
)
from inspector.tls.tls_registry import (
    TLS12,
    TLS13,
    CipherSuite,
    alert_name,
    group_name,
    handshake_name,
    suite,
)

__all__ = ["MAX_RESYNC", "SNIFF_LEN", "TlsSession", "looks_like_tls"]  # the last two from tls_records

MAX_RESYNC: Final = 32  # TLS 1.3: handshake records a direction may have sent before keys appeared

_PLAIN, _HANDSHAKE_KEYS, _TRAFFIC_KEYS = 0, 1, 2  # a direction's phase: TLS 1.2 goes from plain to traffic

_CLIENT_HELLO, _SERVER_HELLO, _HELLO_REQUEST = 1, 2, 0
_ENCRYPTED_EXTENSIONS, _CERTIFICATE, _SERVER_KEY_EXCHANGE, _CERTIFICATE_REQUEST = 8, 11, 12, 13
_FINISHED, _KEY_UPDATE = 20, 24


class _Direction:
    """One direction's record layer, handshake reassembly, key phase and byte counters."""

    __slots__ = ("application", "control", "decryptor", "encrypted", "fed", "from_client", "key_update",
                 "messages", "overhead", "phase", "reported", "seq", "splitter", "started", "uncertain")

    def __init__(self, from_client: bool) -> None:
        self.from_client = from_client
        self.splitter = RecordSplitter()
        self.messages = HandshakeReassembler()
        self.fed = self.control = self.application = self.overhead = self.encrypted = 0
        self.phase = _PLAIN
        self.decryptor: Decryptor | None = None
        self.seq = 0  # records of the current key epoch (decrypted or not)
        self.uncertain = False  # TLS 1.3: handshake-epoch records went by without keys
        self.key_update = False  # a KeyUpdate was read: the keys change after its record
        self.started = False
        self.reported: set[str] = set()  # malformed conditions already reported

    def counts(self) -> ByteCounts:
        return ByteCounts(self.fed, self.control, self.application, self.overhead, self.encrypted,
                          self.splitter.malformed_bytes, self.splitter.pending)


class TlsSession:
    """The TLS of one TCP connection (see the module docstring). ``description`` is kept up to date."""

    __slots__ = ("_blind", "_client", "_hello", "_keylog", "_no_keys_reported", "_renegotiated", "_secrets",
                 "_secrets_generation", "_server", "_server_hello", "_stopped", "_suite", "_tls12", "_version",
                 "description")

    def __init__(self, keylog: KeyLog | None = None) -> None:
        self._keylog = keylog
        self._client = _Direction(True)
        self._server = _Direction(False)
        self._hello: ClientHello | None = None
        self._server_hello: ServerHello | None = None
        self._version: int | None = None
        self._suite: CipherSuite | None = None
        self._stopped = False  # no more decryption (status says why)
        self._blind = False  # the start was not a handshake: no record is interpreted
        self._renegotiated = False
        self._no_keys_reported = False
        self._secrets: Secrets | None = None
        self._secrets_generation = -1
        self._tls12: tuple[Decryptor, Decryptor] | None = None
        self.description = TlsDescription()

    looks_like_tls = staticmethod(looks_like_tls)

    def feed(self, from_client: bool, data: bytes | memoryview, ts: float) -> list[TlsEvent]:
        """The next bytes of one direction (``ts``: when they were captured): the events they complete."""
        d = self._client if from_client else self._server
        d.fed += len(data)
        out: list[TlsEvent] = []
        for record in d.splitter.feed(data, ts):
            self._record(d, record, out)
        if d.splitter.error is not None:
            self._check_splitter(d, ts, out)
        return merge_encrypted(out) if len(out) > 1 else out

    def finish(self, ts: float) -> list[TlsEvent]:
        """The connection ended: a truncated last record of either direction is reported malformed."""
        out: list[TlsEvent] = []
        for d in (self._client, self._server):
            d.splitter.finish()
            self._check_splitter(d, ts, out, at_end=True)
        return out

    def lost(self, from_client: bool, ts: float, reason: str) -> list[TlsEvent]:
        """One direction's record boundaries are lost (a TCP gap, its bytes released to free memory): decryption
        stops with ``reason`` (unless the key log never had keys: the status stays "no keys"), the direction's
        incomplete record is counted malformed and its incomplete handshake message dropped. The caller feeds
        that direction no more."""
        d = self._client if from_client else self._server
        d.splitter.finish()
        d.messages.lose()
        out: list[TlsEvent] = []
        if self.description.decryption == NO_KEYS:
            self._stopped = True
        else:
            self._stop(d, ts, out, reason)
        return out

    def held(self, from_client: bool | None = None) -> int:
        """Bytes held (an incomplete record and an incomplete handshake message) by one direction, or both."""
        if from_client is None:
            c, s = self._client, self._server
            return c.splitter.pending + c.messages.pending + s.splitter.pending + s.messages.pending
        d = self._client if from_client else self._server
        return d.splitter.pending + d.messages.pending

    def counts(self, from_client: bool | None = None) -> ByteCounts:
        """The byte accounting of one direction, or of both (None)."""
        if from_client is None:
            return self._client.counts() + self._server.counts()
        return (self._client if from_client else self._server).counts()

    # -- records ------------------------------------------------------------------------------------------

    def _check_splitter(self, d: _Direction, ts: float, out: list[TlsEvent], at_end: bool = False) -> None:
        error = d.splitter.error
        if error is not None and "splitter" not in d.reported:
            d.reported.add("splitter")
            out.append(TlsMalformed(d.from_client, ts, error))
            if not d.started and not at_end:  # the very first bytes are not a TLS record
                d.started = True
                self._blind = True
                self._stop(d, ts, out, MID_CONNECTION)

    def _record(self, d: _Direction, rec: Record, out: list[TlsEvent]) -> None:
        ct = rec.content_type
        if not d.started:
            d.started = True
            first = rec.fragment[:1]
            if not (ct == HANDSHAKE and first == (b"\x01" if d.from_client else b"\x02")
                    or ct == ALERT and not d.from_client):
                self._blind = True
                self._stop(d, rec.ts, out, MID_CONNECTION)
        if self._blind:
            self._undecrypted(d, rec, out)
        elif d.phase != _PLAIN and (self._version != TLS13 or ct == APPLICATION_DATA):
            self._protected(d, rec, out)
        elif ct == APPLICATION_DATA:  # before encryption: 0-RTT early data
            self._undecrypted(d, rec, out)
        else:
            d.control += rec.size
            if ct == HANDSHAKE:
                self._handshake(d, rec.fragment, rec.ts, out, False)
            elif ct == ALERT:
                self._alerts(d, rec.fragment, rec.ts, out)
            elif ct == CHANGE_CIPHER_SPEC and self._version is not None and self._version != TLS13:
                d.phase = _TRAFFIC_KEYS  # TLS 1.2: this direction is encrypted from the next record
                d.seq = 0
                d.decryptor = None
                d.messages.restart()
                if d.from_client and self.description.client_cert is None:
                    self.description.client_cert = False

    def _undecrypted(self, d: _Direction, rec: Record, out: list[TlsEvent]) -> None:
        d.encrypted += rec.size
        out.append(TlsEncrypted(d.from_client, rec.ts, rec.size, 1))

    def _protected(self, d: _Direction, rec: Record, out: list[TlsEvent]) -> None:
        """A record under this direction's keys."""
        ct = rec.content_type
        if self._version != TLS13 and ct == CHANGE_CIPHER_SPEC:
            self._renegotiation(d, rec.ts, out)  # TLS 1.2: a second ChangeCipherSpec
        if self._stopped:
            self._undecrypted(d, rec, out)
            return
        try:
            opened = self._open13(d, rec) if self._version == TLS13 else self._open12(d, rec)
        except DecryptError as e:
            self._stop(d, rec.ts, out, f"failed: {e}")
            self._undecrypted(d, rec, out)
            return
        if opened is None:
            self._no_keys(d, rec, out)
            return
        if self.description.decryption in (PENDING, NO_KEYS):
            self.description.decryption = DECRYPTED
        content_type, plaintext = opened
        if content_type == APPLICATION_DATA:
            d.application += len(plaintext)
            d.overhead += rec.size - len(plaintext)
            if plaintext:
                out.append(TlsApplicationData(d.from_client, rec.ts, plaintext))
            return
        d.control += rec.size
        if content_type == HANDSHAKE:
            if d.messages.lost and d.phase == _TRAFFIC_KEYS:
                d.messages.restart()  # after a record not read: assume a message starts this record
            self._handshake(d, plaintext, rec.ts, out, True)
            if d.key_update:
                d.key_update = False
                if isinstance(d.decryptor, Tls13Decryptor):
                    d.decryptor = d.decryptor.updated()
                d.seq = 0
        elif content_type == ALERT:
            self._alerts(d, plaintext, rec.ts, out)

    def _no_keys(self, d: _Direction, rec: Record, out: list[TlsEvent]) -> None:
        """A record that could not be decrypted for want of keys: counted, and its sequence number too."""
        if not self._no_keys_reported:
            self._no_keys_reported = True
            out.append(TlsNoKeys(rec.ts, self.description.client_random or ""))
            if self.description.decryption == PENDING:
                self.description.decryption = NO_KEYS
        d.seq += 1
        d.messages.lose()
        if d.phase == _HANDSHAKE_KEYS:
            d.uncertain = True
        if rec.content_type == ALERT:
            out.append(TlsAlert(d.from_client, rec.ts, None, None, "encrypted alert"))
            self.description.last_alert = f"{'client' if d.from_client else 'server'} encrypted alert"
        self._undecrypted(d, rec, out)

    def _lookup(self) -> Secrets | None:
        """The key log's secrets for this connection (looked up again when the log has grown)."""
        log = self._keylog
        if log is None or self._hello is None:
            return None
        if log.generation != self._secrets_generation:
            self._secrets_generation = log.generation
            self._secrets = log.lookup(self._hello.random)
        return self._secrets

    def _open12(self, d: _Direction, rec: Record) -> tuple[int, bytes] | None:
        if d.decryptor is None:
            if self._tls12 is None:
                secrets = self._lookup()
                if secrets is None or secrets.master_secret is None or self._suite is None or \
                        self._hello is None or self._server_hello is None:
                    return None
                etm = bool(self.description.encrypt_then_mac)
                self._tls12 = tls12_decryptors(self._suite, secrets.master_secret, self._hello.random,
                                               self._server_hello.random, etm)
            d.decryptor = self._tls12[0 if d.from_client else 1]
            d.decryptor.seq = d.seq
        opened = d.decryptor.open(rec)
        d.seq = d.decryptor.seq
        return opened

    def _open13(self, d: _Direction, rec: Record) -> tuple[int, bytes] | None:
        cs = self._suite
        if cs is None:  # not reached: a direction is protected only after a decryptable ServerHello
            return None
        if d.decryptor is not None:  # its keys were found: the key log is looked up again only if they fail
            try:
                return d.decryptor.open(rec)
            except DecryptError:
                secrets = self._lookup()
                traffic = None if secrets is None else \
                    secrets.client_traffic if d.from_client else secrets.server_traffic
                if d.phase != _HANDSHAKE_KEYS or not d.messages.lost or traffic is None:
                    raise
            # the Finished was in a record not read: the traffic keys may have begun
            decryptor = Tls13Decryptor(cs, traffic)
            opened = decryptor.open(rec)
            self._enter_traffic(d, decryptor)
            return opened
        secrets = self._lookup()
        handshake, traffic = None, None
        if secrets is not None:
            handshake = secrets.client_handshake if d.from_client else secrets.server_handshake
            traffic = secrets.client_traffic if d.from_client else secrets.server_traffic
        if d.phase == _TRAFFIC_KEYS or not d.uncertain:
            secret = traffic if d.phase == _TRAFFIC_KEYS else handshake
            if secret is None:
                return None
            d.decryptor = Tls13Decryptor(cs, secret, d.seq)
            return d.decryptor.open(rec)
        # handshake-epoch records went by without keys: the traffic keys may have begun among them
        found = tls13_resync(cs, rec, handshake, traffic, d.seq, MAX_RESYNC)
        if found is None:
            if handshake is None or traffic is None:
                return None  # what is missing may be the key of this record
            raise DecryptError("no key opened the record: wrong keys, or keys too late to resynchronise")
        decryptor, to_traffic, opened = found
        d.uncertain = False
        if to_traffic:
            self._enter_traffic(d, decryptor)
        else:
            d.decryptor = decryptor
        return opened

    def _enter_traffic(self, d: _Direction, decryptor: Tls13Decryptor | None) -> None:
        """TLS 1.3: this direction's handshake epoch ended; its traffic keys follow."""
        d.phase = _TRAFFIC_KEYS
        d.decryptor = decryptor
        d.seq = decryptor.seq if decryptor else 0
        d.messages.restart()

    def _stop(self, d: _Direction, ts: float, out: list[TlsEvent], reason: str) -> None:
        if not self._stopped:
            self._stopped = True
            self.description.decryption = reason
            out.append(TlsDecryptionStopped(d.from_client, ts, reason))

    def _renegotiation(self, d: _Direction, ts: float, out: list[TlsEvent]) -> None:
        if not self._renegotiated:
            self._renegotiated = True
            out.append(TlsRenegotiation(d.from_client, ts))
            self._stop(d, ts, out, "stopped: renegotiation")

    def _alerts(self, d: _Direction, payload: bytes, ts: float, out: list[TlsEvent]) -> None:
        for i in range(0, len(payload) - 1, 2):
            level, description = payload[i], payload[i + 1]
            name = alert_name(description)
            out.append(TlsAlert(d.from_client, ts, level, description, name))
            self.description.last_alert = (f"{'client' if d.from_client else 'server'} "
                                           f"{'fatal' if level == 2 else 'warning'} {name}")

    # -- handshake ----------------------------------------------------------------------------------------

    def _handshake(self, d: _Direction, fragment: bytes, ts: float, out: list[TlsEvent], decrypted: bool) -> None:
        for message in d.messages.feed(fragment):
            name = handshake_name(message.msg_type)
            if message.msg_type == _SERVER_HELLO and message.body[2:34] == HRR_RANDOM:
                name = "hello_retry_request"
            out.append(TlsHandshakeMessage(d.from_client, ts, message.msg_type, name, decrypted))
            try:
                self._message(d, message, ts, out)
            except HandshakeError as e:
                out.append(TlsMalformed(d.from_client, ts, f"{name}: {e}"))
        if d.messages.error is not None and "handshake" not in d.reported:
            d.reported.add("handshake")
            out.append(TlsMalformed(d.from_client, ts, d.messages.error))

    def _message(  # noqa: C901 - a flat dispatch on the handshake message's type
            self, d: _Direction, message: HandshakeMessage, ts: float, out: list[TlsEvent]) -> None:
        desc = self.description
        t, body = message.msg_type, message.body
        tls13 = self._version == TLS13
        if t == _CLIENT_HELLO and d.from_client:
            if d.phase != _PLAIN and not tls13:
                self._renegotiation(d, ts, out)
            elif self._hello is None:
                self._hello = parse_client_hello(body)
                desc.client_hello(self._hello)
        elif t == _HELLO_REQUEST and not d.from_client and d.phase != _PLAIN:
            self._renegotiation(d, ts, out)
        elif t == _SERVER_HELLO and not d.from_client and self._server_hello is None:
            self._server_hello_message(d, parse_server_hello(body), ts, out)
        elif t == _ENCRYPTED_EXTENSIONS and not d.from_client:
            desc.alpn = parse_encrypted_extensions(body).alpn
        elif t == _SERVER_KEY_EXCHANGE and not d.from_client and desc.cipher_suite and "_ECDHE_" in desc.cipher_suite:
            if len(body) >= 3 and body[0] == 3:  # ECParameters: named_curve, then the group
                desc.key_exchange_group = group_name(int.from_bytes(body[1:3], "big"))
        elif t == _CERTIFICATE_REQUEST and not d.from_client:
            desc.client_cert_requested = True
        elif t == _CERTIFICATE:
            certs = parse_certificate(body, tls13)
            info = describe_certificate(certs[0]) if certs else None
            if d.from_client:
                desc.client_cert = bool(certs)
                desc.client_certificate = info
                desc.principal = info.principal if info else None
            else:
                desc.server_certificate = info
        elif t == _FINISHED:
            if d.from_client and desc.client_cert is None:
                desc.client_cert = False
            if tls13 and d.phase == _HANDSHAKE_KEYS:
                self._enter_traffic(d, None)
        elif t == _KEY_UPDATE and tls13:
            parse_key_update(body)
            d.key_update = d.phase == _TRAFFIC_KEYS

    def _server_hello_message(self, d: _Direction, sh: ServerHello, ts: float, out: list[TlsEvent]) -> None:
        desc = self.description
        desc.server_hello(sh, self._hello)
        if sh.hello_retry:
            return
        self._server_hello = sh
        hello = self._hello
        cs = suite(sh.cipher_suite)
        self._version, self._suite = sh.version, cs
        if sh.version not in (TLS12, TLS13):
            self._stop(d, ts, out, f"not decryptable: {desc.tls_version}")
        elif cs is None or cs.cipher is None or cs.tls13 != (sh.version == TLS13):
            self._stop(d, ts, out, f"not decryptable: cipher suite {desc.cipher_suite}")
        elif hello is None:
            self._stop(d, ts, out, "not decryptable: no ClientHello seen")
        if sh.version == TLS13:
            for x in (self._client, self._server):
                x.phase = _HANDSHAKE_KEYS
                x.seq = 0
                x.decryptor = None
                x.messages.restart()
