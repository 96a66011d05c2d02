"""Record decryption, sans-I/O: one direction's decryptor per key epoch, each with its sequence number.

The ciphers, HMAC and hashes are ``cryptography``'s; the record formats are written here:

- TLS 1.3 (RFC 8446 section 5.2): AEAD (AES-GCM or ChaCha20-Poly1305) with nonce = IV XOR the 64-bit
  sequence number, the record header as additional data; the inner plaintext is content, its real type,
  then zero padding.
- TLS 1.2 AES-GCM (RFC 5288): nonce = the 4-byte implicit IV + the record's 8-byte explicit nonce.
- TLS 1.2 ChaCha20-Poly1305 (RFC 7905): nonce = the 12-byte IV XOR the sequence number, no explicit part.
  Both take seq_num + type + version + plaintext length as additional data.
- TLS 1.2 AES-CBC with HMAC-SHA1/256/384: an explicit IV per record; MAC-then-encrypt (RFC 5246 section
  6.2.3.2: the MAC and the padding are inside the encryption) or encrypt-then-MAC (RFC 7366: the MAC covers
  the IV and ciphertext and follows them).

A record that fails (tag, MAC or padding) raises :class:`DecryptError` and leaves the sequence number as it
was; a decrypted record advances it.
"""

from __future__ import annotations

from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from contract.errors import InspectorError
from inspector.tls.keys import hash_algorithm, key_block, next_traffic_secret, traffic_key_iv
from inspector.tls.tls_records import Record
from inspector.tls.tls_registry import AES_CBC, AES_GCM, CHACHA20_POLY1305, CipherSuite

__all__ = [
    "CbcDecryptor",
    "DecryptError",
    "Decryptor",
    "Tls12AeadDecryptor",
    "Tls13Decryptor",
    "tls12_decryptors",
    "tls13_resync",
]

_TAG = 16


class DecryptError(InspectorError, ValueError):
    """A record that did not decrypt: wrong keys, a wrong sequence number, or a damaged record."""


class Decryptor(Protocol):
    """What the session asks of a decryptor: the next record's content type and plaintext."""

    seq: int

    def open(self, record: Record) -> tuple[int, bytes]:
        """The record's (real) content type and plaintext; the sequence number advances."""
        ...


def _aead(cipher: str | None, key: bytes) -> AESGCM | ChaCha20Poly1305:
    if cipher == AES_GCM:
        return AESGCM(key)
    if cipher == CHACHA20_POLY1305:
        return ChaCha20Poly1305(key)
    raise ValueError(f"not an AEAD cipher: {cipher}")


def _xor_seq(iv: bytes, seq: int) -> bytes:
    return (int.from_bytes(iv, "big") ^ seq).to_bytes(len(iv), "big")


def _aad12(seq: int, record: Record, length: int) -> bytes:
    return seq.to_bytes(8, "big") + record.header[:3] + length.to_bytes(2, "big")


class Tls13Decryptor:
    """A TLS 1.3 traffic secret's decryptor (one direction, one epoch)."""

    __slots__ = ("_aead", "_iv", "secret", "seq", "suite")

    def __init__(self, suite: CipherSuite, secret: bytes, seq: int = 0) -> None:
        key, iv = traffic_key_iv(suite.hash, secret, suite.key_len, 12)
        self.suite = suite
        self.secret = secret
        self.seq = seq
        self._aead = _aead(suite.cipher, key)
        self._iv = int.from_bytes(iv, "big")  # the nonce is this XOR the sequence number (12 bytes)

    def open(self, record: Record) -> tuple[int, bytes]:
        fragment = record.fragment
        if len(fragment) < _TAG + 1:
            raise DecryptError(f"record of {len(fragment)} bytes is shorter than its tag")
        try:
            inner = self._aead.decrypt((self._iv ^ self.seq).to_bytes(12, "big"), fragment, record.header)
        except InvalidTag:
            raise DecryptError(f"bad record tag (seq {self.seq})") from None
        end = len(inner) if inner[-1:] != b"\0" else len(inner.rstrip(b"\0"))  # zero padding: rare
        if end == 0:
            raise DecryptError("inner plaintext has no content type")
        self.seq += 1
        return inner[end - 1], inner[:end - 1]

    def updated(self) -> Tls13Decryptor:
        """The decryptor after a KeyUpdate of this direction: the next traffic secret, sequence 0."""
        return Tls13Decryptor(self.suite, next_traffic_secret(self.suite.hash, self.secret))


class Tls12AeadDecryptor:
    """A TLS 1.2 AES-GCM or ChaCha20-Poly1305 decryptor (one direction)."""

    __slots__ = ("_aead", "_explicit", "_iv", "seq")

    def __init__(self, suite: CipherSuite, key: bytes, iv: bytes, seq: int = 0) -> None:
        self._aead = _aead(suite.cipher, key)
        self._iv = iv
        self._explicit = suite.cipher == AES_GCM  # GCM: an 8-byte explicit nonce starts each record
        self.seq = seq

    def open(self, record: Record) -> tuple[int, bytes]:
        fragment = record.fragment
        if self._explicit:
            nonce, body = self._iv + fragment[:8], fragment[8:]
        else:
            nonce, body = _xor_seq(self._iv, self.seq), fragment
        if len(body) < _TAG or len(nonce) != 12:
            raise DecryptError(f"record of {len(fragment)} bytes is shorter than its nonce and tag")
        try:
            plaintext = self._aead.decrypt(nonce, body, _aad12(self.seq, record, len(body) - _TAG))
        except InvalidTag:
            raise DecryptError(f"bad record tag (seq {self.seq})") from None
        self.seq += 1
        return record.content_type, plaintext


class CbcDecryptor:
    """A TLS 1.2 AES-CBC + HMAC decryptor (one direction), MAC-then-encrypt or encrypt-then-MAC."""

    __slots__ = ("_hash_name", "_key", "_mac_key", "_mac_len", "encrypt_then_mac", "seq")

    def __init__(self, suite: CipherSuite, key: bytes, mac_key: bytes, encrypt_then_mac: bool, seq: int = 0) -> None:
        if suite.mac is None:
            raise ValueError(f"{suite.name} has no MAC")
        self._key = key
        self._mac_key = mac_key
        self._hash_name = suite.mac
        self._mac_len = suite.mac_len
        self.encrypt_then_mac = encrypt_then_mac
        self.seq = seq

    def _mac(self, record: Record, content: bytes) -> bytes:
        mac = hmac.HMAC(self._mac_key, hash_algorithm(self._hash_name))
        mac.update(_aad12(self.seq, record, len(content)))
        mac.update(content)
        return mac.finalize()

    def _decrypt(self, iv: bytes, ciphertext: bytes) -> bytes:
        decryptor = Cipher(algorithms.AES(self._key), modes.CBC(iv)).decryptor()
        return decryptor.update(ciphertext) + decryptor.finalize()

    def open(self, record: Record) -> tuple[int, bytes]:
        fragment = record.fragment
        mac_len = self._mac_len
        body = fragment[:-mac_len] if self.encrypt_then_mac else fragment
        if len(body) < 32 or len(body) % 16:
            raise DecryptError(f"CBC record of {len(fragment)} bytes is not an IV and whole blocks")
        if self.encrypt_then_mac and self._mac(record, body) != fragment[-mac_len:]:
            raise DecryptError(f"bad record MAC (seq {self.seq})")
        padded = self._decrypt(body[:16], body[16:])
        pad = padded[-1]
        if pad + 1 + (0 if self.encrypt_then_mac else mac_len) > len(padded) or \
                padded[-pad - 1:] != bytes([pad]) * (pad + 1):
            raise DecryptError(f"bad CBC padding (seq {self.seq})")
        plaintext = padded[:-pad - 1]
        if not self.encrypt_then_mac:
            plaintext, mac = plaintext[:-mac_len], plaintext[-mac_len:]
            if self._mac(record, plaintext) != mac:
                raise DecryptError(f"bad record MAC (seq {self.seq})")
        self.seq += 1
        return record.content_type, plaintext


def tls12_decryptors(suite: CipherSuite, master_secret: bytes, client_random: bytes, server_random: bytes,
                     encrypt_then_mac: bool) -> tuple[Decryptor, Decryptor]:
    """The client's and the server's decryptors of a TLS 1.2 connection, from its key block.
    ``encrypt_then_mac`` (both hellos had the extension) matters to CBC suites only."""
    kb = key_block(suite.hash, master_secret, client_random, server_random, suite.mac_len, suite.key_len,
                   suite.iv_len)
    if suite.cipher == AES_CBC:
        return (CbcDecryptor(suite, kb.client_key, kb.client_mac, encrypt_then_mac),
                CbcDecryptor(suite, kb.server_key, kb.server_mac, encrypt_then_mac))
    return Tls12AeadDecryptor(suite, kb.client_key, kb.client_iv), Tls12AeadDecryptor(suite, kb.server_key,
                                                                                         kb.server_iv)


def tls13_resync(suite: CipherSuite, record: Record, handshake: bytes | None, traffic: bytes | None, skipped: int,
                 limit: int) -> tuple[Tls13Decryptor, bool, tuple[int, bytes]] | None:
    """TLS 1.3, keys found after ``skipped`` records of a direction's handshake epoch went by unread: the
    record opened under the handshake secret at sequence ``skipped``, else under the traffic secret at each
    sequence it can have (the handshake epoch having ended after 1 to ``limit`` of those records). Returns
    the decryptor that opened it (at its next sequence number), whether it is the traffic secret's, and the
    record's content type and plaintext; None when no candidate opens it."""
    candidates: list[tuple[bool, bytes, int]] = []
    if handshake is not None:
        candidates.append((False, handshake, skipped))
    if traffic is not None:
        candidates.extend((True, traffic, skipped - h) for h in range(1, min(skipped, limit) + 1))
    for to_traffic, secret, seq in candidates:
        decryptor = Tls13Decryptor(suite, secret, seq)
        try:
            return decryptor, to_traffic, decryptor.open(record)
        except DecryptError:
            continue
    return None
