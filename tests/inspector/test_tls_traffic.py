"""Real TLS traffic made in memory for the TLS tests (inspector/tls_*.py), and the checks that it is what
each scenario asks for.

Python's ``ssl`` drives OpenSSL: a client and a server ``SSLObject``, each on a pair of ``ssl.MemoryBIO``,
pump bytes to each other; every chunk is recorded with its direction, in the order it was pumped (capture
order). The client context writes the NSS key log (``keylog_filename``, a file in pytest's tmp_path: the
tests' only file I/O besides the certificates). The certificates are a throwaway CA's, made with
``cryptography``: an RSA server certificate (so TLS 1.2 suites are ECDHE_RSA) and an EC client certificate.

Python cannot choose TLS 1.3 cipher suites (no ``set_ciphersuites``): OpenSSL's default order makes
TLS_AES_256_GCM_SHA384 the one negotiated in process. The other two are negotiated in a child Python whose
OpenSSL reads ``OPENSSL_CONF`` (a ``Ciphersuites`` line in the system_default section) at start-up:
:func:`converse_with_suite`.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import ssl
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from inspector.tls_handshake import parse_client_hello

REPO = Path(__file__).resolve().parents[2]
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
    """A conversation between the two contexts, pumped in memory (see the module docstring)."""
    client_ctx.keylog_filename = str(keylog)
    to_client_in, client_out, to_server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_ctx.wrap_bio(to_client_in, client_out, server_hostname=SERVER_NAME, session=session)
    server = server_ctx.wrap_bio(to_server_in, server_out, server_side=True)
    chunks: list[tuple[bool, bytes]] = []

    def pump() -> bool:
        moved = False
        for from_client, out, into in ((True, client_out, to_server_in), (False, server_out, to_client_in)):
            data = out.read()
            if data:
                chunks.append((from_client, data))
                into.write(data)
                moved = True
        return moved

    def step(obj: ssl.SSLObject) -> bool:
        try:
            obj.do_handshake()
            return True
        except ssl.SSLWantReadError:
            return False

    done = [False, False]
    try:
        for _ in range(20):
            done = [done[0] or step(client), done[1] or step(server)]
            if not pump() and all(done):
                break
    except ssl.SSLError:
        pump()
        if not expect_failure:
            raise
        return Capture(chunks, keylog.read_text() if keylog.exists() else "", "", "")
    assert not expect_failure, "the handshake was to fail"
    sent: dict[bool, bytes] = {True: b"", False: b""}
    for from_client, data in messages:
        writer, reader = (client, server) if from_client else (server, client)
        writer.write(data)
        pump()
        got = b""
        while len(got) < len(data):
            got += reader.read(65536)
        assert got == data
        sent[from_client] += data
    got_session = client.session
    if close:
        for obj in (client, server, client):
            try:
                obj.unwrap()
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
            pump()
    version, cipher = client.version() or "", (client.cipher() or ("",))[0]
    return Capture(chunks, keylog.read_text(), version, cipher, sent, got_session, client.session_reused)


_CHILD = """
import json, sys
from pathlib import Path
from tests.inspector.test_tls_traffic import Pki, contexts, converse
from cryptography import x509
d = Path(sys.argv[1])
pem = lambda n: x509.load_pem_x509_certificate((d / n).read_bytes())
pki = Pki(d, pem("ca.pem"), pem("server.pem"), pem("client.pem"))
c = converse(*contexts(pki, client_cert=sys.argv[3] == "1"), Path(sys.argv[2]))
print(json.dumps({"chunks": [[s, b.hex()] for s, b in c.chunks], "version": c.version, "cipher": c.cipher,
                  "sent": {str(k): v.hex() for k, v in c.sent.items()}}))
"""


def converse_with_suite(pki: Pki, suite: str, directory: Path, *, client_cert: bool = False) -> Capture:
    """A default conversation negotiating the TLS 1.3 suite ``suite``, in a child Python whose OpenSSL
    reads an OPENSSL_CONF that restricts its Ciphersuites."""
    conf = directory / f"openssl-{suite}.cnf"
    conf.write_text("openssl_conf = openssl_init\n[openssl_init]\nssl_conf = ssl_sect\n[ssl_sect]\n"
                    "system_default = system_default_sect\n[system_default_sect]\n"
                    f"Ciphersuites = {suite}\n")
    keylog = directory / f"keylog-{suite}.txt"
    env = dict(os.environ, OPENSSL_CONF=str(conf))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(pki.directory), str(keylog), "1" if client_cert else "0"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout)
    return Capture([(bool(s), bytes.fromhex(h)) for s, h in out["chunks"]], keylog.read_text(), out["version"],
                   out["cipher"], {k == "True": bytes.fromhex(v) for k, v in out["sent"].items()})


# -- the harness makes what each scenario asks for ---------------------------------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_default_conversation_is_tls13_aes256(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki), tmp_path / "keylog.txt")
    assert (capture.version, capture.cipher) == ("TLSv1.3", "TLS_AES_256_GCM_SHA384")
    assert "CLIENT_TRAFFIC_SECRET_0" in capture.keylog and capture.sent[True].endswith(bytes(range(256)))
    assert capture.chunks[0][0] is True and capture.chunks[0][1][:1] == b"\x16"


# converse_with_suite's choice of suite is checked where its traffic is decrypted (test_tls_session.py)


def test_tls12_cipher_strings_and_encrypt_then_mac_switch(pki: Pki, tmp_path: Path) -> None:
    with_etm = converse(*contexts(pki, tls12="ECDHE-RSA-AES128-SHA"), tmp_path / "a.txt")
    without = converse(*contexts(pki, tls12="ECDHE-RSA-AES128-SHA", etm=False), tmp_path / "b.txt")
    assert (with_etm.version, with_etm.cipher) == ("TLSv1.2", "ECDHE-RSA-AES128-SHA")
    hellos = [parse_client_hello(c.chunks[0][1][9:]) for c in (with_etm, without)]
    assert [h.encrypt_then_mac for h in hellos] == [True, False]
    assert with_etm.keylog.splitlines()[-1].startswith("CLIENT_RANDOM ")


def test_hello_retry_request_is_made(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, hrr=True), tmp_path / "keylog.txt")
    server_first = next(data for side, data in capture.chunks if not side)
    assert bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c") in server_first
