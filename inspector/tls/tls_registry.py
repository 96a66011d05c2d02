"""The TLS registries this inspector names things from: cipher suites (IANA id -> name and the parameters
decryption needs), protocol versions, named groups, alerts and handshake message types.

A cipher suite's parameters are read from its IANA name, which spells them out: ``TLS_AES_128_GCM_SHA256``
(TLS 1.3: AEAD and HKDF hash), ``TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384`` (TLS 1.2: key exchange, bulk
cipher, MAC hash; the PRF is SHA-256 unless the suite names SHA-384). The key exchange does not matter to
decryption: the NSS key log gives the master secret (TLS 1.2) or the traffic secrets (TLS 1.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "AES_CBC",
    "AES_GCM",
    "CHACHA20_POLY1305",
    "CIPHER_SUITES",
    "TLS12",
    "TLS13",
    "CipherSuite",
    "alert_name",
    "group_name",
    "handshake_name",
    "suite",
    "suite_name",
    "version_name",
]

AES_GCM: Final = "AES-GCM"
AES_CBC: Final = "AES-CBC"
CHACHA20_POLY1305: Final = "CHACHA20-POLY1305"

TLS12: Final = 0x0303
TLS13: Final = 0x0304

_HASH_LEN: Final = {"sha1": 20, "sha256": 32, "sha384": 48}


@dataclass(frozen=True, slots=True)
class CipherSuite:
    """A cipher suite: ``tls13`` (a TLS 1.3 suite, else one for TLS 1.2 and before), ``cipher`` (one of
    :data:`AES_GCM`, :data:`AES_CBC`, :data:`CHACHA20_POLY1305`, or None for a bulk cipher this inspector
    does not decrypt), ``key_len``, ``iv_len`` (the IV the key schedule derives: TLS 1.3's 12 bytes; TLS
    1.2's implicit part, 4 for GCM, 12 for ChaCha20-Poly1305, none for CBC whose IVs are explicit),
    ``mac`` (the HMAC hash of a CBC suite) and ``hash`` (TLS 1.3's HKDF hash, TLS 1.2's PRF hash)."""

    id: int
    name: str
    tls13: bool
    cipher: str | None
    key_len: int
    iv_len: int
    mac: str | None
    hash: str

    @property
    def mac_len(self) -> int:
        """The length of the MAC of a CBC suite's records (0 for an AEAD suite)."""
        return _HASH_LEN[self.mac] if self.mac else 0


def _parse(suite_id: int, name: str) -> CipherSuite:
    """The parameters of a suite, read from its IANA name."""
    tls13 = suite_id >> 8 == 0x13
    bulk = name[4:] if tls13 else name.split("_WITH_", 1)[-1]
    prf = "sha384" if name.endswith("_SHA384") else "sha256"
    if bulk.startswith(("AES_128_GCM", "AES_256_GCM")):
        return CipherSuite(suite_id, name, tls13, AES_GCM, int(bulk[4:7]) // 8, 12 if tls13 else 4, None, prf)
    if bulk.startswith("CHACHA20_POLY1305"):
        return CipherSuite(suite_id, name, tls13, CHACHA20_POLY1305, 32, 12, None, prf)
    if bulk.startswith(("AES_128_CBC", "AES_256_CBC")):
        mac = {"SHA": "sha1", "SHA256": "sha256", "SHA384": "sha384"}[bulk.rsplit("_", 1)[1]]
        return CipherSuite(suite_id, name, tls13, AES_CBC, int(bulk[4:7]) // 8, 0, mac, prf)
    return CipherSuite(suite_id, name, tls13, None, 0, 0, None, prf)


_SUITES: Final = {
    0x1301: "TLS_AES_128_GCM_SHA256",
    0x1302: "TLS_AES_256_GCM_SHA384",
    0x1303: "TLS_CHACHA20_POLY1305_SHA256",
    0x1304: "TLS_AES_128_CCM_SHA256",
    0x1305: "TLS_AES_128_CCM_8_SHA256",
    0x000A: "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    0x002F: "TLS_RSA_WITH_AES_128_CBC_SHA",
    0x0033: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
    0x0035: "TLS_RSA_WITH_AES_256_CBC_SHA",
    0x0039: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
    0x003C: "TLS_RSA_WITH_AES_128_CBC_SHA256",
    0x003D: "TLS_RSA_WITH_AES_256_CBC_SHA256",
    0x0067: "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
    0x006B: "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
    0x009C: "TLS_RSA_WITH_AES_128_GCM_SHA256",
    0x009D: "TLS_RSA_WITH_AES_256_GCM_SHA384",
    0x009E: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
    0x009F: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
    0x00A8: "TLS_PSK_WITH_AES_128_GCM_SHA256",
    0x00A9: "TLS_PSK_WITH_AES_256_GCM_SHA384",
    0x00FF: "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
    0x5600: "TLS_FALLBACK_SCSV",
    0xC009: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    0xC00A: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    0xC012: "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    0xC013: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    0xC014: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    0xC023: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    0xC024: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
    0xC027: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    0xC028: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    0xC02B: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    0xC02C: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    0xC02F: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    0xC030: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    0xCCA8: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    0xCCA9: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    0xCCAA: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

CIPHER_SUITES: Final[dict[int, CipherSuite]] = {i: _parse(i, n) for i, n in _SUITES.items()}

_VERSIONS: Final = {0x0300: "SSLv3", 0x0301: "TLSv1", 0x0302: "TLSv1.1", TLS12: "TLSv1.2", TLS13: "TLSv1.3"}

_GROUPS: Final = {
    0x0017: "secp256r1", 0x0018: "secp384r1", 0x0019: "secp521r1", 0x001D: "x25519", 0x001E: "x448",
    0x0100: "ffdhe2048", 0x0101: "ffdhe3072", 0x0102: "ffdhe4096", 0x0103: "ffdhe6144", 0x0104: "ffdhe8192",
    0x11EC: "X25519MLKEM768", 0x6399: "X25519Kyber768Draft00",
}

_ALERTS: Final = {
    0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 22: "record_overflow",
    40: "handshake_failure", 42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked",
    45: "certificate_expired", 46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca",
    49: "access_denied", 50: "decode_error", 51: "decrypt_error", 70: "protocol_version",
    71: "insufficient_security", 80: "internal_error", 86: "inappropriate_fallback", 90: "user_canceled",
    100: "no_renegotiation", 109: "missing_extension", 110: "unsupported_extension", 112: "unrecognized_name",
    113: "bad_certificate_status_response", 115: "unknown_psk_identity", 116: "certificate_required",
    120: "no_application_protocol",
}

_HANDSHAKES: Final = {
    0: "hello_request", 1: "client_hello", 2: "server_hello", 4: "new_session_ticket", 5: "end_of_early_data",
    8: "encrypted_extensions", 11: "certificate", 12: "server_key_exchange", 13: "certificate_request",
    14: "server_hello_done", 15: "certificate_verify", 16: "client_key_exchange", 20: "finished",
    22: "certificate_status", 24: "key_update", 254: "message_hash",
}


def suite(suite_id: int) -> CipherSuite | None:
    """The cipher suite of an IANA id, None when this inspector does not know it."""
    return CIPHER_SUITES.get(suite_id)


def suite_name(suite_id: int) -> str:
    """The IANA name of a cipher suite, ``0xHHHH`` when unknown."""
    known = CIPHER_SUITES.get(suite_id)
    return known.name if known else f"0x{suite_id:04X}"


def version_name(version: int) -> str:
    """``TLSv1.2``, ``TLSv1.3`` (Kafka's ssl.enabled.protocols names), ``0xHHHH`` when unknown."""
    return _VERSIONS.get(version, f"0x{version:04X}")


def group_name(group: int) -> str:
    """The name of a named group (key exchange), ``0xHHHH`` when unknown."""
    return _GROUPS.get(group, f"0x{group:04X}")


def alert_name(description: int) -> str:
    """The name of an alert description, ``alert_N`` when unknown."""
    return _ALERTS.get(description, f"alert_{description}")


def handshake_name(msg_type: int) -> str:
    """The name of a handshake message type, ``handshake_N`` when unknown."""
    return _HANDSHAKES.get(msg_type, f"handshake_{msg_type}")
