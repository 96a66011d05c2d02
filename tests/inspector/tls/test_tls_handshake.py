"""Handshake parsing and certificates (inspector/tls/handshake.py, inspector/tls/tls_registry.py): RFC 8448's
hellos, a real OpenSSL ClientHello with SNI and ALPN, a hand-built HelloRetryRequest, both Certificate forms,
truncated messages (an error, never another exception), the cipher suite table, and Kafka's principal of a
certificate subject (RFC 2253 as Java writes it) next to cryptography's RFC 4514 string."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from inspector.tls.handshake import (
    HRR_RANDOM,
    HandshakeError,
    describe_certificate,
    kafka_principal,
    parse_certificate,
    parse_client_hello,
    parse_encrypted_extensions,
    parse_key_update,
    parse_server_hello,
    rfc2253,
)
from inspector.tls.keys import transcript_hash
from inspector.tls.tls_registry import (
    AES_CBC,
    AES_GCM,
    CHACHA20_POLY1305,
    alert_name,
    group_name,
    handshake_name,
    suite,
    suite_name,
    version_name,
)
from pcaps.capture_kit.tls_memory import NOT_AFTER, NOT_BEFORE, SERVER_NAME, Pki, contexts, converse, make_pki
from tests.inspector.tls.test_tls_keys import RFC8448_CLIENT_HELLO, RFC8448_SERVER_HELLO


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def ext(ext_type: int, data: bytes) -> bytes:
    return ext_type.to_bytes(2, "big") + len(data).to_bytes(2, "big") + data


def server_hello(random: bytes, suite_id: int, *extensions: bytes, session_id: bytes = b"") -> bytes:
    block = b"".join(extensions)
    return (b"\x03\x03" + random + bytes([len(session_id)]) + session_id + suite_id.to_bytes(2, "big") + b"\x00"
            + len(block).to_bytes(2, "big") + block)


def test_hrr_random_is_sha256_of_hello_retry_request() -> None:
    assert transcript_hash("sha256", b"HelloRetryRequest") == HRR_RANDOM


def test_rfc8448_client_hello() -> None:
    hello = parse_client_hello(bytes.fromhex(RFC8448_CLIENT_HELLO)[9:])
    assert hello.random.hex().startswith("cb34ecb1") and hello.session_id == b""
    assert hello.cipher_suites == (0x1301, 0x1303, 0x1302) and hello.versions == (0x0304,)
    assert hello.sni == "server" and hello.alpn == () and hello.key_share_groups == (0x001D,)
    assert not (hello.session_ticket or hello.psk or hello.early_data or hello.encrypt_then_mac)


def test_rfc8448_server_hello() -> None:
    sh = parse_server_hello(bytes.fromhex(RFC8448_SERVER_HELLO)[9:])
    assert (sh.version, sh.cipher_suite, sh.key_share_group) == (0x0304, 0x1301, 0x001D)
    assert sh.legacy_version == 0x0303 and not sh.hello_retry and not sh.psk


def test_hello_retry_request_is_recognised_by_its_random() -> None:
    versions, key_share = ext(43, b"\x03\x04"), ext(51, b"\x00\x18")  # HRR's key_share: the group alone
    hrr = parse_server_hello(server_hello(HRR_RANDOM, 0x1302, versions, key_share))
    assert hrr.hello_retry and hrr.version == 0x0304 and group_name(hrr.key_share_group or 0) == "secp384r1"
    assert not parse_server_hello(server_hello(b"\x01" * 32, 0x1302, versions, ext(51, b"\x00\x18\x00\x01\x00"))
                                  ).hello_retry


def test_tls12_server_hello_extensions() -> None:
    alpn = ext(16, b"\x00\x06\x05kafka")
    sh = parse_server_hello(server_hello(b"\x02" * 32, 0xC013, ext(22, b""), ext(23, b""), ext(35, b""), alpn,
                                         session_id=b"\x09" * 32))
    assert (sh.version, sh.alpn, sh.session_id) == (0x0303, "kafka", b"\x09" * 32)
    assert sh.encrypt_then_mac and sh.extended_master_secret and sh.session_ticket and sh.key_share_group is None
    bare = parse_server_hello(server_hello(b"\x02" * 32, 0x002F)[:-2])  # no extensions block at all
    assert bare.version == 0x0303 and not bare.encrypt_then_mac


def test_real_client_hello_with_sni_and_alpn(pki: Pki, tmp_path: Path) -> None:
    capture = converse(*contexts(pki, alpn=("kafka", "h2")), tmp_path / "keylog.txt")
    hello = parse_client_hello(capture.chunks[0][1][9:])
    assert hello.sni == SERVER_NAME and hello.alpn == ("kafka", "h2")
    assert hello.versions == (0x0304, 0x0303) and 0x1302 in hello.cipher_suites
    assert len(hello.session_id) == 32  # TLS 1.3 middlebox compatibility: a random legacy session id
    assert hello.key_share_groups == (0x001D,) and hello.encrypt_then_mac and hello.extended_master_secret


def test_every_prefix_of_a_message_parses_or_raises_handshake_error() -> None:
    body = bytes.fromhex(RFC8448_CLIENT_HELLO)[9:]
    for end in range(len(body)):
        try:
            parse_client_hello(body[:end])
        except HandshakeError:
            pass
    sh = bytes.fromhex(RFC8448_SERVER_HELLO)[9:]
    for end in range(len(sh)):
        try:
            parse_server_hello(sh[:end])
        except HandshakeError:
            pass
    with pytest.raises(HandshakeError, match="truncated"):
        parse_certificate(b"\x00\x00\x10\x00\x00\x0d", tls13=False)


def test_certificate_message_forms(pki: Pki) -> None:
    ders = [c.public_bytes(serialization.Encoding.DER) for c in (pki.server_cert, pki.ca_cert)]
    tls12 = b"".join(len(d).to_bytes(3, "big") + d for d in ders)
    tls13 = b"".join(len(d).to_bytes(3, "big") + d + b"\x00\x05" + ext(5, b"x")[:5] for d in ders)
    assert parse_certificate(len(tls12).to_bytes(3, "big") + tls12, tls13=False) == ders
    assert parse_certificate(b"\x02ab" + len(tls13).to_bytes(3, "big") + tls13, tls13=True) == ders
    assert parse_certificate(b"\x00\x00\x00\x00", tls13=True) == []  # a client with no certificate
    assert parse_certificate(b"\x00\x00\x00", tls13=False) == []


def test_encrypted_extensions_and_key_update() -> None:
    block = ext(16, b"\x00\x06\x05kafka") + ext(0, b"")
    ee = parse_encrypted_extensions(len(block).to_bytes(2, "big") + block)
    assert ee.alpn == "kafka" and ee.server_name_ack and not ee.early_data
    assert parse_key_update(b"\x01") is True and parse_key_update(b"\x00") is False
    with pytest.raises(HandshakeError):
        parse_key_update(b"\x02")


def test_describe_certificate(pki: Pki) -> None:
    info = describe_certificate(pki.client_cert.public_bytes(serialization.Encoding.DER))
    assert info is not None
    assert info.subject == "CN=alice,OU=payments,O=acme,C=US" == pki.client_cert.subject.rfc4514_string()
    assert info.issuer == "CN=Test CA,O=acme,C=US"
    assert (info.not_before, info.not_after) == (NOT_BEFORE, NOT_AFTER)
    assert info.principal == "User:CN=alice,OU=payments,O=acme,C=US"
    assert describe_certificate(b"\x30\x03\x02\x01\x00") is None


def _cert_name(*rdns: list[x509.NameAttribute]) -> x509.Name:
    """A name as a certificate would carry it (encoded and read back), RDNs most general first."""
    return x509.load_der_x509_certificate(_self_signed(x509.Name([x509.RelativeDistinguishedName(r) for r in rdns]))
                                          ).subject


def _self_signed(name: x509.Name) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(7).not_valid_before(now).not_valid_after(now).sign(key, hashes.SHA256())
            .public_bytes(serialization.Encoding.DER))


def test_kafka_principal_is_rfc2253_most_specific_first() -> None:
    a = x509.NameAttribute
    name = _cert_name([a(NameOID.ORGANIZATION_NAME, "acme")], [a(NameOID.COMMON_NAME, "alice")])
    # X.509 order is O then CN; both RFC 2253 (Java, Kafka) and RFC 4514 (cryptography) write CN first
    assert [rdn.rfc4514_string() for rdn in name.rdns] == ["O=acme", "CN=alice"]
    assert name.rfc4514_string() == "CN=alice,O=acme"
    assert kafka_principal(name) == "User:CN=alice,O=acme"


def test_kafka_principal_writes_oid_attributes_and_escapes_as_java() -> None:
    a = x509.NameAttribute
    name = _cert_name([a(NameOID.COUNTRY_NAME, "US")], [a(NameOID.ORGANIZATION_NAME, "a,b+c=d")],
                      [a(NameOID.EMAIL_ADDRESS, "alice@acme.test")], [a(NameOID.COMMON_NAME, " #alice ")])
    # emailAddress has no RFC 2253 keyword: Java writes the OID and the DER of the value (IA5String, tag 22)
    email = "1.2.840.113549.1.9.1=#16" + bytes([15]).hex() + b"alice@acme.test".hex()
    assert rfc2253(name) == rf"CN=\ \#alice\ ,{email},O=a\,b\+c\=d,C=US"
    assert name.rfc4514_string() == r"CN=\ #alice\ ,1.2.840.113549.1.9.1=alice@acme.test,O=a\,b\+c=d,C=US"
    multi = _cert_name([a(NameOID.DOMAIN_COMPONENT, "test")], [a(NameOID.ORGANIZATIONAL_UNIT_NAME, "ops"),
                                                               a(NameOID.USER_ID, "u1")])
    assert rfc2253(multi) in ("OU=ops+UID=u1,DC=test", "UID=u1+OU=ops,DC=test")  # the DER's SET order


def test_cipher_suite_table() -> None:
    expected = {
        0x1301: ("TLS_AES_128_GCM_SHA256", True, AES_GCM, 16, 12, None, "sha256"),
        0x1302: ("TLS_AES_256_GCM_SHA384", True, AES_GCM, 32, 12, None, "sha384"),
        0x1303: ("TLS_CHACHA20_POLY1305_SHA256", True, CHACHA20_POLY1305, 32, 12, None, "sha256"),
        0xC02F: ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", False, AES_GCM, 16, 4, None, "sha256"),
        0xC030: ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", False, AES_GCM, 32, 4, None, "sha384"),
        0xCCA8: ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", False, CHACHA20_POLY1305, 32, 12, None, "sha256"),
        0xC013: ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", False, AES_CBC, 16, 0, "sha1", "sha256"),
        0xC014: ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", False, AES_CBC, 32, 0, "sha1", "sha256"),
        0xC027: ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", False, AES_CBC, 16, 0, "sha256", "sha256"),
        0xC028: ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", False, AES_CBC, 32, 0, "sha384", "sha384"),
        0x1304: ("TLS_AES_128_CCM_SHA256", True, None, 0, 0, None, "sha256"),
        0x000A: ("TLS_RSA_WITH_3DES_EDE_CBC_SHA", False, None, 0, 0, None, "sha256"),
    }
    for suite_id, fields in expected.items():
        s = suite(suite_id)
        assert s is not None
        assert (s.name, s.tls13, s.cipher, s.key_len, s.iv_len, s.mac, s.hash) == fields
    assert suite(0x1234) is None and suite_name(0x1234) == "0x1234" and suite_name(0xC030).endswith("GCM_SHA384")


def test_registry_names() -> None:
    assert (version_name(0x0304), version_name(0x0303), version_name(0x7F1C)) == ("TLSv1.3", "TLSv1.2", "0x7F1C")
    assert (alert_name(0), alert_name(40), alert_name(200)) == ("close_notify", "handshake_failure", "alert_200")
    assert (handshake_name(24), handshake_name(99)) == ("key_update", "handshake_99")
    assert group_name(0x001D) == "x25519"
