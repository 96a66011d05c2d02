"""The TLS key schedules, sans-I/O, written here on top of ``cryptography``'s HMAC.

TLS 1.3 (RFC 8446 section 7): HKDF-Extract and HKDF-Expand (RFC 5869), HKDF-Expand-Label and Derive-Secret
(section 7.1), the traffic key and IV of a traffic secret (section 7.3) and the next secret of a KeyUpdate
("traffic upd", section 7.2). The NSS key log gives the traffic secrets themselves, so a passive decryptor
needs only the last three; the others are here for the RFC 8448 checks.

TLS 1.2 (RFC 5246 section 5 and 6.3): the PRF's P_hash and the key block (``key expansion``, keyed by the
master secret and seeded with server random + client random), cut into the MAC keys, the write keys and the
implicit IVs of each side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cryptography.hazmat.primitives import hashes, hmac

__all__ = [
    "KeyBlock",
    "derive_secret",
    "hash_algorithm",
    "hash_len",
    "hkdf_expand",
    "hkdf_expand_label",
    "hkdf_extract",
    "key_block",
    "next_traffic_secret",
    "prf",
    "traffic_key_iv",
    "transcript_hash",
]

_HASHES: Final[dict[str, type[hashes.HashAlgorithm]]] = {
    "sha1": hashes.SHA1, "sha256": hashes.SHA256, "sha384": hashes.SHA384,
}


def hash_algorithm(hash_name: str) -> hashes.HashAlgorithm:
    """A new ``cryptography`` hash object of a hash name (``sha1``, ``sha256``, ``sha384``)."""
    return _HASHES[hash_name]()


def hash_len(hash_name: str) -> int:
    """The output length of a hash (``sha1``, ``sha256``, ``sha384``)."""
    return _HASHES[hash_name]().digest_size


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    mac = hmac.HMAC(key, _HASHES[hash_name]())
    mac.update(data)
    return mac.finalize()


def transcript_hash(hash_name: str, messages: bytes) -> bytes:
    """The hash of handshake messages (their concatenated bytes)."""
    digest = hashes.Hash(_HASHES[hash_name]())
    digest.update(messages)
    return digest.finalize()


def hkdf_extract(hash_name: str, salt: bytes, ikm: bytes) -> bytes:
    """HKDF-Extract (RFC 5869 section 2.2); an empty salt is a string of zeros of the hash's length."""
    return _hmac(hash_name, salt or bytes(hash_len(hash_name)), ikm)


def hkdf_expand(hash_name: str, prk: bytes, info: bytes, length: int) -> bytes:
    """HKDF-Expand (RFC 5869 section 2.3)."""
    out = b""
    block = b""
    counter = 1
    while len(out) < length:
        block = _hmac(hash_name, prk, block + info + bytes([counter]))
        out += block
        counter += 1
    return out[:length]


def hkdf_expand_label(hash_name: str, secret: bytes, label: str, context: bytes, length: int) -> bytes:
    """HKDF-Expand-Label (RFC 8446 section 7.1): the HkdfLabel is the length, ``"tls13 " + label`` and the
    context, each length-prefixed."""
    full = b"tls13 " + label.encode("ascii")
    info = length.to_bytes(2, "big") + bytes([len(full)]) + full + bytes([len(context)]) + context
    return hkdf_expand(hash_name, secret, info, length)


def derive_secret(hash_name: str, secret: bytes, label: str, messages: bytes) -> bytes:
    """Derive-Secret (RFC 8446 section 7.1): HKDF-Expand-Label of the transcript hash of ``messages``."""
    return hkdf_expand_label(hash_name, secret, label, transcript_hash(hash_name, messages), hash_len(hash_name))


def traffic_key_iv(hash_name: str, secret: bytes, key_len: int, iv_len: int = 12) -> tuple[bytes, bytes]:
    """The write key and IV of a TLS 1.3 traffic secret (RFC 8446 section 7.3)."""
    return (hkdf_expand_label(hash_name, secret, "key", b"", key_len),
            hkdf_expand_label(hash_name, secret, "iv", b"", iv_len))


def next_traffic_secret(hash_name: str, secret: bytes) -> bytes:
    """The traffic secret after a KeyUpdate (RFC 8446 section 7.2): application_traffic_secret_N+1."""
    return hkdf_expand_label(hash_name, secret, "traffic upd", b"", hash_len(hash_name))


def prf(hash_name: str, secret: bytes, label: bytes, seed: bytes, length: int) -> bytes:
    """The TLS 1.2 PRF (RFC 5246 section 5): P_hash(secret, label + seed) cut to ``length`` bytes, where
    P_hash = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ..., A(0) = seed, A(i) =
    HMAC(secret, A(i-1))."""
    seed = label + seed
    out = b""
    a = seed
    while len(out) < length:
        a = _hmac(hash_name, secret, a)
        out += _hmac(hash_name, secret, a + seed)
    return out[:length]


@dataclass(frozen=True, slots=True)
class KeyBlock:
    """The TLS 1.2 key block cut into each side's MAC key, write key and implicit IV (RFC 5246 section
    6.3; a CBC suite has no implicit IV, an AEAD suite no MAC key)."""

    client_mac: bytes
    server_mac: bytes
    client_key: bytes
    server_key: bytes
    client_iv: bytes
    server_iv: bytes


def key_block(hash_name: str, master_secret: bytes, client_random: bytes, server_random: bytes, mac_len: int,
              key_len: int, iv_len: int) -> KeyBlock:
    """The TLS 1.2 key block: PRF(master_secret, "key expansion", server_random + client_random)."""
    sizes = (mac_len, mac_len, key_len, key_len, iv_len, iv_len)
    block = prf(hash_name, master_secret, b"key expansion", server_random + client_random, sum(sizes))
    parts: list[bytes] = []
    pos = 0
    for size in sizes:
        parts.append(block[pos:pos + size])
        pos += size
    return KeyBlock(*parts)
