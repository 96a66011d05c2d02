"""Real TLS made in memory: the TLS tests' conversations and the TLS twins of plaintext captures
(``bench/tls_twin.py``).

Python's ``ssl`` drives OpenSSL: a client and a server ``SSLObject``, each on a pair of ``ssl.MemoryBIO``,
pump bytes to each other (:class:`MemoryTls`); every chunk is recorded with its direction, in the order it was
pumped (capture order). The client context writes the NSS key log (``keylog_filename``). The certificates are
a throwaway CA's, made with ``cryptography``: an RSA server certificate (so TLS 1.2 suites are ECDHE_RSA) and
an EC client certificate; test fixtures, not the secrets of anything real.

Python cannot choose TLS 1.3 cipher suites (no ``set_ciphersuites``): OpenSSL's default order makes
TLS_AES_256_GCM_SHA384 the one negotiated in process (an ``OPENSSL_CONF`` read at start-up chooses another,
as ``tests/inspector/tls/test_tls_traffic.py`` does in a child Python).
"""

from __future__ import annotations

import datetime
import functools
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

NOT_BEFORE = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
NOT_AFTER = datetime.datetime(2099, 12, 31, tzinfo=datetime.UTC)
SERVER_NAME = "broker-1.kafka.test"
OP_NO_ENCRYPT_THEN_MAC = 1 << 19  # SSL_OP_NO_ENCRYPT_THEN_MAC of OpenSSL 3 (the ssl module does not name it)

# what each conversation sends by default: a small message each way, then one that spans several records
MESSAGES: tuple[tuple[bool, bytes], ...] = (
    (True, b"\x00\x00\x00\x15kafka request number 1"),
    (False, b"\x00\x00\x00\x16kafka response number 1"),
    (True, bytes(range(256)) * 150),  # 38400 bytes: three records
    (False, b"ok"),
)


def _name(common_name: str, *extra: x509.NameAttribute) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acme"), *extra,
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@functools.cache
def _keys() -> tuple[ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey]:
    return (ec.generate_private_key(ec.SECP256R1()), rsa.generate_private_key(65537, 2048),
            ec.generate_private_key(ec.SECP256R1()))


@dataclass
class Pki:
    """A throwaway CA and the server's and client's certificates, as PEM files in ``directory``."""

    directory: Path
    ca_cert: x509.Certificate
    server_cert: x509.Certificate
    client_cert: x509.Certificate

    @property
    def ca(self) -> str:
        return str(self.directory / "ca.pem")

    @property
    def server(self) -> str:
        return str(self.directory / "server.pem")

    @property
    def client(self) -> str:
        return str(self.directory / "client.pem")


def make_pki(directory: Path) -> Pki:
    ca_key, server_key, client_key = _keys()
    ca_name = _name("Test CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(NOT_BEFORE).not_valid_after(NOT_AFTER)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))

    def leaf(subject: x509.Name, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, serial: int) -> x509.Certificate:
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(key.public_key())
                .serial_number(serial).not_valid_before(NOT_BEFORE).not_valid_after(NOT_AFTER)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME)]), critical=False)
                .sign(ca_key, hashes.SHA256()))

    server = leaf(_name(SERVER_NAME), server_key, 2)
    client = leaf(_name("alice", x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "payments")), client_key, 3)
    pem = serialization.Encoding.PEM
    pkcs8 = serialization.PrivateFormat.PKCS8
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.pem").write_bytes(ca.public_bytes(pem))
    for path, cert, key in (("server.pem", server, server_key), ("client.pem", client, client_key)):
        (directory / path).write_bytes(cert.public_bytes(pem) + key.private_bytes(pem, pkcs8,
                                                                                serialization.NoEncryption()))
    return Pki(directory, ca, server, client)


def contexts(pki: Pki, *, tls12: str | None = None, etm: bool = True, client_cert: bool = False, hrr: bool = False,
             tickets: bool = True, alpn: tuple[str, ...] = ()) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A client and a server context. ``tls12``: TLS 1.2 at most, with this OpenSSL cipher string on both
    sides; ``etm=False`` turns encrypt-then-MAC off; ``client_cert``: mutual TLS; ``hrr``: the server only
    takes secp384r1, which the client does not key-share first (a HelloRetryRequest); ``alpn``: the
    client offers these protocols and the server takes the first."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(pki.ca)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.server)
    for ctx in (client, server):
        if tls12 is not None:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            ctx.set_ciphers(tls12)
        if not etm:
            ctx.options |= OP_NO_ENCRYPT_THEN_MAC
    if not tickets:
        server.options |= ssl.OP_NO_TICKET
    if client_cert:
        client.load_cert_chain(pki.client)
        server.verify_mode = ssl.CERT_REQUIRED
        server.load_verify_locations(pki.ca)
    if hrr:
        server.set_ecdh_curve("secp384r1")
    if alpn:
        client.set_alpn_protocols(list(alpn))
        server.set_alpn_protocols(list(alpn[:1]))
    return client, server


class MemoryTls:
    """One TLS connection between two ``SSLObject``s on memory BIOs. :meth:`pump` moves what each side wrote to
    the other and records it in :attr:`chunks` as (from the client, bytes); :meth:`seal` encrypts one side's
    bytes into records without handing them to the other side (a capture's TLS twin: nobody reads them)."""

    def __init__(self, client_ctx: ssl.SSLContext, server_ctx: ssl.SSLContext, *,
                 session: ssl.SSLSession | None = None) -> None:
        self._to_client, self._client_out, self._to_server, self._server_out = (ssl.MemoryBIO() for _ in range(4))
        self.client = client_ctx.wrap_bio(self._to_client, self._client_out, server_hostname=SERVER_NAME,
                                          session=session)
        self.server = server_ctx.wrap_bio(self._to_server, self._server_out, server_side=True)
        self.chunks: list[tuple[bool, bytes]] = []

    def pump(self) -> bool:
        """Each side's pending output to the other (client first); whether anything moved."""
        moved = False
        for from_client, out, into in ((True, self._client_out, self._to_server),
                                       (False, self._server_out, self._to_client)):
            data = out.read()
            if data:
                self.chunks.append((from_client, data))
                into.write(data)
                moved = True
        return moved

    def handshake(self) -> None:
        """Both handshakes, to the end (session tickets included); ``ssl.SSLError`` when one fails."""
        done = [False, False]
        for _ in range(20):
            done = [done[0] or _step(self.client), done[1] or _step(self.server)]
            if not self.pump() and all(done):
                break

    def seal(self, from_client: bool, data: bytes | memoryview) -> bytes:
        """``data`` written by one side: the TLS records it became (not pumped, not recorded)."""
        (self.client if from_client else self.server).write(data)
        return (self._client_out if from_client else self._server_out).read()

    def close(self) -> None:
        """close_notify both ways, pumped."""
        for obj in (self.client, self.server, self.client):
            try:
                obj.unwrap()
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
            self.pump()


def _step(obj: ssl.SSLObject) -> bool:
    try:
        obj.do_handshake()
        return True
    except ssl.SSLWantReadError:
        return False


@dataclass
class Capture:
    """One conversation: its chunks in capture order, the key log's text after it, what was negotiated and
    what each side sent."""

    chunks: list[tuple[bool, bytes]]
    keylog: str
    version: str
    cipher: str
    sent: dict[bool, bytes] = field(default_factory=dict)
    session: ssl.SSLSession | None = None
    reused: bool = False

    def stream(self, from_client: bool) -> bytes:
        return b"".join(data for side, data in self.chunks if side == from_client)


def converse(client_ctx: ssl.SSLContext, server_ctx: ssl.SSLContext, keylog: Path, *,
             messages: tuple[tuple[bool, bytes], ...] = MESSAGES, session: ssl.SSLSession | None = None,
             close: bool = True, expect_failure: bool = False) -> Capture:
    """A conversation between the two contexts, pumped in memory: the handshake, each message written by its
    side and read whole by the other, then (``close``) close_notify both ways."""
    client_ctx.keylog_filename = str(keylog)
    tls = MemoryTls(client_ctx, server_ctx, session=session)
    try:
        tls.handshake()
    except ssl.SSLError:
        tls.pump()
        if not expect_failure:
            raise
        return Capture(tls.chunks, keylog.read_text() if keylog.exists() else "", "", "")
    assert not expect_failure, "the handshake was to fail"
    client, server = tls.client, tls.server
    sent: dict[bool, bytes] = {True: b"", False: b""}
    for from_client, data in messages:
        writer, reader = (client, server) if from_client else (server, client)
        writer.write(data)
        tls.pump()
        got = b""
        while len(got) < len(data):
            got += reader.read(65536)
        assert got == data
        sent[from_client] += data
    got_session = client.session
    if close:
        tls.close()
    version, cipher = client.version() or "", (client.cipher() or ("",))[0]
    return Capture(tls.chunks, keylog.read_text(), version, cipher, sent, got_session, client.session_reused)
