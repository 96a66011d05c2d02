"""One connection's TLS (inspector/tls/session.py) on real traffic: OpenSSL conversations pumped in memory
(pcaps/capture_kit/tls_memory.py) decrypted with the key log OpenSSL wrote, the application data equal to
what was sent, the connection described and every byte accounted for.

How each suite is proven:
- TLS 1.3 TLS_AES_256_GCM_SHA384: OpenSSL traffic in process (OpenSSL's default choice).
- TLS 1.3 TLS_AES_128_GCM_SHA256 and TLS_CHACHA20_POLY1305_SHA256: OpenSSL traffic made by a child Python
  whose OPENSSL_CONF restricts the Ciphersuites; TLS_AES_128_GCM_SHA256 also by RFC 8448's trace.
- TLS 1.2 ECDHE-RSA with AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305, AES-128/256-CBC-SHA, AES-128-CBC-SHA256
  and AES-256-CBC-SHA384: OpenSSL traffic in process, each with and without encrypt-then-MAC.
- KeyUpdate: records sealed here under the next secrets, following RFC 8448's trace (Python's ssl cannot send
  a KeyUpdate).
Every suite's record format is also proven on records sealed with ``cryptography`` (test_tls_cipher.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.tls.keylog import KeyLog
from inspector.tls.keys import next_traffic_secret
from inspector.tls.session import SNIFF_LEN, TlsSession, looks_like_tls
from inspector.tls.tls_events import (
    DECRYPTED,
    TlsAlert,
    TlsApplicationData,
    TlsEncrypted,
    TlsEvent,
    TlsHandshakeMessage,
)
from inspector.tls.tls_registry import CIPHER_SUITES
from pcaps.capture_kit.tls_memory import NOT_AFTER, NOT_BEFORE, SERVER_NAME, Capture, Pki, contexts, converse, make_pki
from tests.inspector.tls.test_tls_cipher import seal13
from tests.inspector.tls.test_tls_keys import (
    RFC8448_APP_DATA,
    RFC8448_CLIENT_ALERT,
    RFC8448_CLIENT_APP,
    RFC8448_CLIENT_FINISHED,
    RFC8448_CLIENT_HELLO,
    RFC8448_KEYLOG,
    RFC8448_SECRETS,
    RFC8448_SERVER_ALERT,
    RFC8448_SERVER_APP,
    RFC8448_SERVER_FLIGHT,
    RFC8448_SERVER_HELLO,
    RFC8448_SERVER_TICKET,
)
from tests.inspector.tls.test_tls_traffic import converse_with_suite

Chunks = list[tuple[bool, bytes]]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def feed(session: TlsSession, chunks: Chunks, *, pieces: list[int] | None = None, ts0: int = 0) -> list[TlsEvent]:
    """The chunks fed in order, chunk i at ts i (cut into pieces of the given sizes, cycled, if asked)."""
    events: list[TlsEvent] = []
    for i, (from_client, data) in enumerate(chunks, ts0):
        if pieces is None:
            events += session.feed(from_client, data, float(i))
            continue
        pos = k = 0
        while pos < len(data):
            size = pieces[k % len(pieces)]
            events += session.feed(from_client, data[pos:pos + size], float(i))
            pos, k = pos + size, k + 1
    return events


def app_data(events: list[TlsEvent]) -> dict[bool, bytes]:
    out = {True: b"", False: b""}
    for e in events:
        if isinstance(e, TlsApplicationData):
            out[e.from_client] += e.data
    return out


def messages(events: list[TlsEvent]) -> list[tuple[bool, str, bool]]:
    return [(e.from_client, e.name, e.decrypted) for e in events if isinstance(e, TlsHandshakeMessage)]


def assert_accounted(session: TlsSession, chunks: Chunks) -> None:
    for side in (True, False):
        counts = session.counts(side)
        assert counts.fed == sum(len(d) for s, d in chunks if s == side)
        assert counts.accounted == counts.fed, counts
    assert session.counts().accounted == session.counts().fed == sum(len(d) for _, d in chunks)


def decrypt(capture: Capture) -> tuple[TlsSession, list[TlsEvent]]:
    """The capture fed to a session with its key log: all its application data decrypted, all its bytes
    accounted, none left encrypted or malformed."""
    session = TlsSession(KeyLog(capture.keylog))
    events = feed(session, capture.chunks) + session.finish(1e9)
    assert app_data(events) == capture.sent
    assert_accounted(session, capture.chunks)
    counts = session.counts()
    assert counts.application == len(capture.sent[True]) + len(capture.sent[False])
    assert (counts.encrypted, counts.malformed, counts.pending) == (0, 0, 0)
    assert session.description.decryption == DECRYPTED
    return session, events


TLS12 = [
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-AES128-SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
    ("ECDHE-RSA-AES256-SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    ("ECDHE-RSA-AES128-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"),
    ("ECDHE-RSA-AES256-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"),
]


@pytest.mark.parametrize("etm", [True, False], ids=["etm", "no-etm"])
@pytest.mark.parametrize(("openssl", "iana"), TLS12, ids=[o for o, _ in TLS12])
def test_tls12_suites_decrypt(pki: Pki, tmp_path: Path, openssl: str, iana: str, etm: bool) -> None:
    capture = converse(*contexts(pki, tls12=openssl, etm=etm), tmp_path / "keylog.txt")
    assert (capture.version, capture.cipher) == ("TLSv1.2", openssl)
    session, events = decrypt(capture)
    desc = session.description
    assert (desc.tls_version, desc.cipher_suite, desc.sni) == ("TLSv1.2", iana, SERVER_NAME)
    assert desc.encrypt_then_mac == (etm if "CBC" in iana else None)
    assert desc.key_exchange_group == "x25519" and desc.client_cert is False and not desc.client_cert_requested
    server = desc.server_certificate
    assert server is not None and server.subject == f"CN={SERVER_NAME},O=acme,C=US"
    assert (server.issuer, server.not_before, server.not_after) == ("CN=Test CA,O=acme,C=US", NOT_BEFORE, NOT_AFTER)
    assert messages(events)[:2] == [(True, "client_hello", False), (False, "server_hello", False)]
    assert (True, "finished", True) in messages(events) and (False, "finished", True) in messages(events)
    alerts = [(e.from_client, e.name) for e in events if isinstance(e, TlsAlert)]
    assert alerts == [(True, "close_notify"), (False, "close_notify")]  # encrypted, decrypted


def test_tls13_aes256_in_process(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, alpn=("kafka", "h2")), tmp_path / "keylog.txt")
    session, events = decrypt(capture)
    desc = session.description
    assert (desc.tls_version, desc.cipher_suite, desc.key_exchange_group) == ("TLSv1.3", "TLS_AES_256_GCM_SHA384",
                                                                             "x25519")
    assert (desc.alpn_offered, desc.alpn, desc.versions_offered) == (("kafka", "h2"), "kafka", ("TLSv1.3", "TLSv1.2"))
    assert desc.resumption_offered == () and desc.resumed is False and desc.client_cert is False
    assert desc.server_certificate is not None and desc.server_certificate.subject.startswith(f"CN={SERVER_NAME}")
    assert [m for m in messages(events) if m[2]][:5] == [
        (False, "encrypted_extensions", True), (False, "certificate", True), (False, "certificate_verify", True),
        (False, "finished", True), (True, "finished", True)]
    assert (False, "new_session_ticket", True) in messages(events)


@pytest.mark.parametrize("suite", ["TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"])
def test_tls13_suites_chosen_through_openssl_conf(pki: Pki, tmp_path: Path, suite: str) -> None:
    capture = converse_with_suite(pki, suite, tmp_path, client_cert=suite.startswith("TLS_CHACHA"))
    assert capture.cipher == suite
    session, _ = decrypt(capture)
    assert session.description.cipher_suite == suite
    assert session.description.client_cert is suite.startswith("TLS_CHACHA")


def test_tls12_mutual_tls_principal_from_the_plaintext_certificate(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, tls12="ECDHE-RSA-AES128-GCM-SHA256", client_cert=True), tmp_path / "k.txt")
    session, events = decrypt(capture)
    desc = session.description
    assert desc.client_cert_requested and desc.client_cert is True
    assert desc.principal == "User:CN=alice,OU=payments,O=acme,C=US"
    assert desc.client_certificate is not None and desc.client_certificate.issuer == "CN=Test CA,O=acme,C=US"
    assert (True, "certificate", False) in messages(events)  # TLS 1.2: in the clear


def test_tls13_mutual_tls_principal_from_the_decrypted_handshake(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, client_cert=True), tmp_path / "k.txt")
    session, events = decrypt(capture)
    desc = session.description
    assert desc.client_cert_requested and desc.client_cert is True
    assert desc.principal == "User:CN=alice,OU=payments,O=acme,C=US"
    assert desc.client_certificate is not None and desc.client_certificate.not_after == NOT_AFTER
    assert (True, "certificate", True) in messages(events) and (False, "certificate_request", True) in messages(events)
    cols = desc.columns()
    assert cols["client_cert_subject"] == "CN=alice,OU=payments,O=acme,C=US" and cols["client_cert"] is True
    assert cols["server_cert_not_before"] == NOT_BEFORE and cols["decryption"] == DECRYPTED


def test_tls13_resumption_with_a_psk(pki: Pki, tmp_path: Path) -> None:
    client_ctx, server_ctx = contexts(pki)
    first = converse(client_ctx, server_ctx, tmp_path / "keylog.txt")
    second = converse(client_ctx, server_ctx, tmp_path / "keylog.txt", session=first.session)
    assert second.reused
    session, events = decrypt(second)  # the key log holds both connections
    desc = session.description
    assert "psk" in desc.resumption_offered and desc.resumed is True
    assert desc.server_certificate is None and (False, "certificate", True) not in messages(events)
    assert decrypt(first)[0].description.resumed is False


@pytest.mark.parametrize("tickets", [True, False], ids=["ticket", "session-id"])
def test_tls12_resumption(pki: Pki, tmp_path: Path, tickets: bool) -> None:
    client_ctx, server_ctx = contexts(pki, tls12="ECDHE-RSA-AES256-GCM-SHA384", tickets=tickets)
    first = converse(client_ctx, server_ctx, tmp_path / "keylog.txt")
    second = converse(client_ctx, server_ctx, tmp_path / "keylog.txt", session=first.session)
    assert second.reused
    session, events = decrypt(second)
    desc = session.description
    assert ("session_ticket" in desc.resumption_offered) is tickets and "session_id" in desc.resumption_offered
    assert desc.resumed is True and desc.server_certificate is None
    assert [m[1] for m in messages(events) if not m[0]][:1] == ["server_hello"]  # abbreviated: no certificate


def test_hello_retry_request(pki: Pki, tmp_path: Path) -> None:
    session, events = decrypt(converse(*contexts(pki, hrr=True), tmp_path / "keylog.txt"))
    assert session.description.hello_retry and session.description.key_exchange_group == "secp384r1"
    assert messages(events)[:4] == [(True, "client_hello", False), (False, "hello_retry_request", False),
                                    (True, "client_hello", False), (False, "server_hello", False)]


def rfc8448_chunks() -> Chunks:
    h = bytes.fromhex
    return [(True, h(RFC8448_CLIENT_HELLO)), (False, h(RFC8448_SERVER_HELLO) + h(RFC8448_SERVER_FLIGHT)),
            (True, h(RFC8448_CLIENT_FINISHED)), (False, h(RFC8448_SERVER_TICKET)), (True, h(RFC8448_CLIENT_APP)),
            (False, h(RFC8448_SERVER_APP)), (False, h(RFC8448_SERVER_ALERT)), (True, h(RFC8448_CLIENT_ALERT))]


def test_rfc8448_simple_1rtt_handshake() -> None:
    session = TlsSession(KeyLog(RFC8448_KEYLOG))
    chunks = rfc8448_chunks()
    events = feed(session, chunks)
    assert app_data(events) == {True: RFC8448_APP_DATA, False: RFC8448_APP_DATA}
    assert messages(events) == [
        (True, "client_hello", False), (False, "server_hello", False), (False, "encrypted_extensions", True),
        (False, "certificate", True), (False, "certificate_verify", True), (False, "finished", True),
        (True, "finished", True), (False, "new_session_ticket", True)]
    assert [(e.from_client, e.level, e.name) for e in events if isinstance(e, TlsAlert)] == [
        (False, 1, "close_notify"), (True, 1, "close_notify")]
    desc = session.description
    assert (desc.sni, desc.cipher_suite, desc.tls_version, desc.client_cert) == (
        "server", "TLS_AES_128_GCM_SHA256", "TLSv1.3", False)
    assert desc.server_certificate is not None and desc.server_certificate.subject == "CN=rsa"
    assert_accounted(session, chunks)
    counts = session.counts()
    assert (counts.application, counts.overhead) == (100, 2 * (72 - 50))  # 5 header + 1 type + 16 tag a record


def test_key_update_after_rfc8448() -> None:
    """Records sealed here continue RFC 8448's connection: each side sends a KeyUpdate (the client asking
    the server to update too), then application data under the next traffic secret; the client updates
    twice."""
    suite = CIPHER_SUITES[0x1301]
    client0 = bytes.fromhex(RFC8448_SECRETS["CLIENT_TRAFFIC_SECRET_0"])
    server0 = bytes.fromhex(RFC8448_SECRETS["SERVER_TRAFFIC_SECRET_0"])
    client1, server1 = next_traffic_secret("sha256", client0), next_traffic_secret("sha256", server0)
    client2 = next_traffic_secret("sha256", client1)
    key_update = b"\x18\x00\x00\x01"
    chunks = rfc8448_chunks()[:6] + [
        (True, seal13(suite, client0, 1, 22, key_update + b"\x01")),  # update_requested
        (True, seal13(suite, client1, 0, 23, b"under client secret 1")),
        (False, seal13(suite, server0, 2, 22, key_update + b"\x00")),
        (False, seal13(suite, server1, 0, 23, b"under server secret 1", padding=10)),
        (True, seal13(suite, client1, 1, 22, key_update + b"\x00") + seal13(suite, client2, 0, 23, b"secret 2")),
        (True, seal13(suite, client2, 1, 21, b"\x01\x00")),
    ]
    session = TlsSession(KeyLog(RFC8448_KEYLOG))
    events = feed(session, chunks)
    assert app_data(events) == {True: RFC8448_APP_DATA + b"under client secret 1secret 2",
                                False: RFC8448_APP_DATA + b"under server secret 1"}
    assert [m for m in messages(events) if m[1] == "key_update"] == [(True, "key_update", True),
                                                                      (False, "key_update", True),
                                                                      (True, "key_update", True)]
    assert session.description.decryption == DECRYPTED
    assert session.description.last_alert == "client warning close_notify"
    assert_accounted(session, chunks)


def test_looks_like_tls() -> None:
    hello = bytes.fromhex(RFC8448_CLIENT_HELLO)
    assert SNIFF_LEN == 6 and TlsSession.looks_like_tls(hello) is True and looks_like_tls(hello[:6]) is True
    assert [looks_like_tls(hello[:n]) for n in range(6)] == [None] * 6  # every byte so far agrees
    assert looks_like_tls(b"\x00\x00\x00\x2a\x00\x12") is False  # a Kafka frame (size 42, ApiVersions)
    assert looks_like_tls(b"\x00") is False and looks_like_tls(b"\x16\x02") is False
    assert looks_like_tls(bytes.fromhex(RFC8448_SERVER_HELLO)) is False  # a ServerHello: not a client's start
    assert looks_like_tls(b"\x16\x03\x01\x00\x00\x01") is False  # an empty record
    assert looks_like_tls(b"\x16\x03\x01\xff\xff\x01") is False  # over the record maximum
    assert looks_like_tls(b"GET / HTTP/1.1\r\n") is False


@pytest.mark.parametrize("pieces", [[1], [3, 1, 7, 250, 4], [16389]], ids=["bytewise", "odd", "records"])
def test_the_same_events_whatever_the_chunks(pki: Pki, tmp_path: Path, pieces: list[int]) -> None:
    for capture in (converse(*contexts(pki, client_cert=True), tmp_path / "a.txt"),
                    converse(*contexts(pki, tls12="ECDHE-RSA-AES128-SHA256", etm=False), tmp_path / "b.txt")):
        whole = TlsSession(KeyLog(capture.keylog))
        expected = feed(whole, capture.chunks)
        cut = TlsSession(KeyLog(capture.keylog))
        got = feed(cut, capture.chunks, pieces=pieces)
        assert got == expected and cut.description == whole.description and cut.counts() == whole.counts()
        assert not any(isinstance(e, TlsEncrypted) for e in got)
        garbage = b"\x00\x00\x00\x10not tls at all"  # trailing garbage: the same events, then one malformed
        tail = feed(cut, [(True, garbage)], pieces=pieces, ts0=99)
        assert [type(e).__name__ for e in tail] == ["TlsMalformed"] and cut.counts(True).malformed == len(garbage)
        assert_accounted(cut, capture.chunks + [(True, garbage)])
