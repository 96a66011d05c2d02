"""Record decryption (inspector/tls/cipher.py): records sealed here with ``cryptography``'s ciphers directly
(independent of the decryptors) for every decryptable suite of the registry — TLS 1.3 AEAD, TLS 1.2 GCM and
ChaCha20-Poly1305, CBC with MAC-then-encrypt and encrypt-then-MAC — opened at the right sequence number,
refused at a wrong one or damaged; and RFC 8448's application records."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from inspector.tls.cipher import CbcDecryptor, DecryptError, Tls12AeadDecryptor, Tls13Decryptor, tls12_decryptors
from inspector.tls.keys import hash_algorithm, key_block, next_traffic_secret, traffic_key_iv
from inspector.tls.tls_records import Record, RecordSplitter
from inspector.tls.tls_registry import AES_CBC, AES_GCM, CHACHA20_POLY1305, CIPHER_SUITES, CipherSuite
from tests.inspector.tls.test_tls_keys import RFC8448_APP_DATA, RFC8448_CLIENT_APP, RFC8448_SECRETS, RFC8448_SERVER_APP

TLS13_SUITES = [s for s in CIPHER_SUITES.values() if s.tls13 and s.cipher]
TLS12_SUITES = [s for s in CIPHER_SUITES.values() if not s.tls13 and s.cipher]


def header(content_type: int, length: int) -> bytes:
    return bytes([content_type, 3, 3]) + length.to_bytes(2, "big")


def _aead(cipher: str | None, key: bytes) -> AESGCM | ChaCha20Poly1305:
    return AESGCM(key) if cipher == AES_GCM else ChaCha20Poly1305(key)


def seal13(suite: CipherSuite, secret: bytes, seq: int, content_type: int, plaintext: bytes, padding: int = 0) -> bytes:
    """A TLS 1.3 record (RFC 8446 section 5.2) under a traffic secret."""
    key, iv = traffic_key_iv(suite.hash, secret, suite.key_len)
    inner = plaintext + bytes([content_type]) + bytes(padding)
    head = header(23, len(inner) + 16)
    nonce = (int.from_bytes(iv, "big") ^ seq).to_bytes(12, "big")
    return head + _aead(suite.cipher, key).encrypt(nonce, inner, head)


def seal12(suite: CipherSuite, key: bytes, iv: bytes, mac_key: bytes, seq: int, content_type: int, plaintext: bytes,
           etm: bool = True, record_iv: bytes = b"\x42" * 16) -> bytes:
    """A TLS 1.2 record (RFC 5246 6.2.3, RFC 5288, RFC 7905, RFC 7366)."""
    def aad(length: int) -> bytes:
        return seq.to_bytes(8, "big") + bytes([content_type, 3, 3]) + length.to_bytes(2, "big")

    def mac(data: bytes, length: int) -> bytes:
        assert suite.mac is not None
        h = hmac.HMAC(mac_key, hash_algorithm(suite.mac))
        h.update(aad(length) + data)
        return h.finalize()

    if suite.cipher == AES_GCM:
        explicit = seq.to_bytes(8, "big")[::-1]  # any 8 bytes: the record carries them
        body = explicit + AESGCM(key).encrypt(iv + explicit, plaintext, aad(len(plaintext)))
    elif suite.cipher == CHACHA20_POLY1305:
        nonce = (int.from_bytes(iv, "big") ^ seq).to_bytes(12, "big")
        body = ChaCha20Poly1305(key).encrypt(nonce, plaintext, aad(len(plaintext)))
    else:
        inner = plaintext if etm else plaintext + mac(plaintext, len(plaintext))
        pad = 15 - len(inner) % 16
        encryptor = Cipher(algorithms.AES(key), modes.CBC(record_iv)).encryptor()
        body = record_iv + encryptor.update(inner + bytes([pad]) * (pad + 1)) + encryptor.finalize()
        if etm:
            body += mac(body, len(body))
    return header(content_type, len(body)) + body


def parse(raw: bytes) -> Record:
    (record,) = RecordSplitter().feed(raw, 0.0)
    return record


@pytest.mark.parametrize("suite", TLS13_SUITES, ids=lambda s: s.name)
def test_tls13_records_open_at_their_sequence_number(suite: CipherSuite) -> None:
    secret = bytes(range(48))[:32 if suite.hash == "sha256" else 48]
    decryptor = Tls13Decryptor(suite, secret)
    for seq, (content_type, data, padding) in enumerate([(23, b"kafka", 0), (22, b"\x18\x00\x00\x01\x00", 7),
                                                         (21, b"\x01\x00", 0), (23, b"", 3)]):
        assert decryptor.open(parse(seal13(suite, secret, seq, content_type, data, padding))) == (content_type, data)
    assert decryptor.seq == 4
    with pytest.raises(DecryptError, match="bad record tag"):
        decryptor.open(parse(seal13(suite, secret, 7, 23, b"out of order")))
    assert decryptor.seq == 4  # a failure leaves the sequence number
    damaged = bytearray(seal13(suite, secret, 4, 23, b"damaged"))
    damaged[-1] ^= 1
    with pytest.raises(DecryptError):
        decryptor.open(parse(bytes(damaged)))
    with pytest.raises(DecryptError, match="no content type"):
        decryptor.open(parse(seal13(suite, secret, 4, 0, b"")))  # inner plaintext all zeros
    with pytest.raises(DecryptError, match="shorter than its tag"):
        decryptor.open(parse(header(23, 3) + b"abc"))


@pytest.mark.parametrize("suite", TLS13_SUITES, ids=lambda s: s.name)
def test_tls13_key_update_moves_to_the_next_secret(suite: CipherSuite) -> None:
    secret = b"\x07" * (32 if suite.hash == "sha256" else 48)
    updated = Tls13Decryptor(suite, secret, seq=9).updated()
    following = next_traffic_secret(suite.hash, secret)
    assert updated.secret == following and updated.seq == 0
    assert updated.open(parse(seal13(suite, following, 0, 23, b"after"))) == (23, b"after")


@pytest.mark.parametrize("etm", [True, False], ids=["etm", "mte"])
@pytest.mark.parametrize("suite", TLS12_SUITES, ids=lambda s: s.name)
def test_tls12_records_from_the_key_block(suite: CipherSuite, etm: bool) -> None:
    master, client_random, server_random = b"m" * 48, b"c" * 32, b"s" * 32
    kb = key_block(suite.hash, master, client_random, server_random, suite.mac_len, suite.key_len, suite.iv_len)
    client, server = tls12_decryptors(suite, master, client_random, server_random, etm)
    for decryptor, key, iv, mac_key in ((client, kb.client_key, kb.client_iv, kb.client_mac),
                                        (server, kb.server_key, kb.server_iv, kb.server_mac)):
        for seq, data in enumerate([b"\x14\x00\x00\x0c" + b"f" * 12, b"x" * 1000, b"", b"y" * 16383]):
            content_type = 22 if seq == 0 else 23
            record = seal12(suite, key, iv, mac_key, seq, content_type, data, etm)
            assert decryptor.open(parse(record)) == (content_type, data)
        with pytest.raises(DecryptError):
            decryptor.open(parse(seal12(suite, key, iv, mac_key, 99, 23, b"wrong seq", etm)))
        damaged = bytearray(seal12(suite, key, iv, mac_key, 4, 23, b"z" * 40, etm))
        damaged[30] ^= 0x80
        with pytest.raises(DecryptError):
            decryptor.open(parse(bytes(damaged)))
        assert decryptor.seq == 4


def test_cbc_padding_and_lengths_are_checked() -> None:
    suite = CIPHER_SUITES[0xC013]  # TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA
    assert (suite.cipher, suite.mac, suite.mac_len, suite.hash) == (AES_CBC, "sha1", 20, "sha256")
    key, mac_key = b"k" * 16, b"m" * 20
    decryptor = CbcDecryptor(suite, key, mac_key, encrypt_then_mac=False)
    encryptor = Cipher(algorithms.AES(key), modes.CBC(bytes(16))).encryptor()
    bad_padding = bytes(16) + encryptor.update(b"a" * 30 + b"\x05\x01") + encryptor.finalize()
    with pytest.raises(DecryptError, match="bad CBC padding"):
        decryptor.open(parse(header(23, len(bad_padding)) + bad_padding))
    with pytest.raises(DecryptError, match="whole blocks"):
        decryptor.open(parse(header(23, 40) + bytes(40)))
    with pytest.raises(DecryptError, match="whole blocks"):
        CbcDecryptor(suite, key, mac_key, encrypt_then_mac=True).open(parse(header(23, 20) + bytes(20)))


def test_gcm_and_chacha_tls12_need_their_nonce_and_tag() -> None:
    for suite_id in (0xC02F, 0xCCA8):
        suite = CIPHER_SUITES[suite_id]
        decryptor = Tls12AeadDecryptor(suite, b"k" * suite.key_len, b"i" * suite.iv_len)
        with pytest.raises(DecryptError, match="shorter"):
            decryptor.open(parse(header(23, 10) + bytes(10)))


def test_rfc8448_application_records() -> None:
    suite = CIPHER_SUITES[0x1301]
    client = Tls13Decryptor(suite, bytes.fromhex(RFC8448_SECRETS["CLIENT_TRAFFIC_SECRET_0"]))
    assert client.open(parse(bytes.fromhex(RFC8448_CLIENT_APP))) == (23, RFC8448_APP_DATA)
    server = Tls13Decryptor(suite, bytes.fromhex(RFC8448_SECRETS["SERVER_TRAFFIC_SECRET_0"]), seq=1)  # after a ticket
    assert server.open(parse(bytes.fromhex(RFC8448_SERVER_APP))) == (23, RFC8448_APP_DATA)
    # the same record sealed here is the RFC's, byte for byte
    assert seal13(suite, client.secret, 0, 23, RFC8448_APP_DATA).hex() == RFC8448_CLIENT_APP
