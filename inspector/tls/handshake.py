"""TLS handshake messages, sans-I/O: what this inspector reads of a connection's handshake, and the X.509
description of its certificates.

Parsed here: ClientHello and ServerHello (RFC 8446 section 4.1; a HelloRetryRequest is a ServerHello with
the special random of section 4.1.3), EncryptedExtensions, Certificate (TLS 1.2's list of DER certificates
and TLS 1.3's entries with a request context and per-entry extensions) and KeyUpdate, with the extensions
that describe a connection: server_name, application_layer_protocol_negotiation, supported_versions,
session_ticket, pre_shared_key, early_data, encrypt_then_mac (RFC 7366), extended_master_secret and key_share.
A message that does not parse raises :class:`HandshakeError` (a ValueError), which the session turns into
data.

Certificates are read with the ``cryptography`` package (``x509.load_der_x509_certificate``). The principal
Kafka's default principal builder gives a client certificate is ``User:`` + ``X500Principal.getName()``,
the RFC 2253 form: :func:`rfc2253` writes it as Java does. Like ``x509.Name.rfc4514_string()`` it lists the
RDNs from the most specific (``CN=alice,O=acme``: the reverse of their order in the certificate); it differs
in the attributes RFC 2253 has no keyword for (emailAddress...), which Java writes as the dotted OID and
``#`` + the hex of the value's DER encoding (cryptography writes the value as a string), and in escaping
``=`` and ``#`` anywhere in a value.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Final

from cryptography import x509

from contract.errors import InspectorError

__all__ = [
    "HRR_RANDOM",
    "CertInfo",
    "ClientHello",
    "EncryptedExtensions",
    "HandshakeError",
    "ServerHello",
    "describe_certificate",
    "kafka_principal",
    "parse_certificate",
    "parse_client_hello",
    "parse_encrypted_extensions",
    "parse_key_update",
    "parse_server_hello",
    "rfc2253",
]

# The random of a HelloRetryRequest: SHA-256("HelloRetryRequest"), RFC 8446 section 4.1.3.
HRR_RANDOM: Final = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")

EXT_SERVER_NAME: Final = 0
EXT_ALPN: Final = 16
EXT_ENCRYPT_THEN_MAC: Final = 22
EXT_EXTENDED_MASTER_SECRET: Final = 23
EXT_SESSION_TICKET: Final = 35
EXT_PRE_SHARED_KEY: Final = 41
EXT_EARLY_DATA: Final = 42
EXT_SUPPORTED_VERSIONS: Final = 43
EXT_KEY_SHARE: Final = 51


class HandshakeError(InspectorError, ValueError):
    """A handshake message that does not parse."""


class _Reader:
    """Big-endian fields and length-prefixed vectors of a handshake message, bounds-checked."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise HandshakeError(f"truncated: {n} bytes wanted at offset {self.pos} of {len(self.data)}")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def vec(self, n: int) -> bytes:
        """A vector with an ``n``-byte length prefix."""
        return self.take(self.uint(n))

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def _extensions(r: _Reader) -> dict[int, bytes]:
    """The extensions block at the end of a hello (absent: none). The first of duplicates is kept."""
    out: dict[int, bytes] = {}
    if not r.left:
        return out
    block = _Reader(r.vec(2))
    while block.left:
        ext_type = block.uint(2)
        out.setdefault(ext_type, block.vec(2))
    return out


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _alpn_list(data: bytes) -> tuple[str, ...]:
    r = _Reader(_Reader(data).vec(2))
    names: list[str] = []
    while r.left:
        names.append(_text(r.vec(1)))
    return tuple(names)


def _server_name(data: bytes) -> str | None:
    r = _Reader(_Reader(data).vec(2))
    while r.left:
        name_type = r.uint(1)
        name = r.vec(2)
        if name_type == 0:
            return _text(name)
    return None


def _is_grease(value: int) -> bool:
    return value & 0x0F0F == 0x0A0A and value >> 8 == value & 0xFF


@dataclass(frozen=True, slots=True)
class ClientHello:
    """What a ClientHello offers. ``versions`` are the supported_versions offered (else the legacy
    version); ``session_ticket`` is a non-empty session_ticket extension (a ticket offered for
    resumption); ``psk`` a pre_shared_key extension (TLS 1.3 resumption offered)."""

    legacy_version: int
    random: bytes
    session_id: bytes
    cipher_suites: tuple[int, ...]
    versions: tuple[int, ...]
    sni: str | None
    alpn: tuple[str, ...]
    session_ticket: bool
    psk: bool
    early_data: bool
    encrypt_then_mac: bool
    extended_master_secret: bool
    key_share_groups: tuple[int, ...]


def parse_client_hello(body: bytes) -> ClientHello:
    """A ClientHello's body (after the 4-byte handshake header)."""
    r = _Reader(body)
    legacy_version = r.uint(2)
    random = r.take(32)
    session_id = r.vec(1)
    raw_suites = r.vec(2)
    suites = tuple(int.from_bytes(raw_suites[i:i + 2], "big") for i in range(0, len(raw_suites) - 1, 2))
    r.vec(1)  # compression methods
    ext = _extensions(r)
    versions: tuple[int, ...] = (legacy_version,)
    if EXT_SUPPORTED_VERSIONS in ext:
        raw = _Reader(ext[EXT_SUPPORTED_VERSIONS]).vec(1)
        versions = tuple(v for v in (int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw) - 1, 2))
                         if not _is_grease(v))
    groups: list[int] = []
    if EXT_KEY_SHARE in ext:
        shares = _Reader(_Reader(ext[EXT_KEY_SHARE]).vec(2))
        while shares.left:
            group = shares.uint(2)
            shares.vec(2)
            if not _is_grease(group):
                groups.append(group)
    return ClientHello(
        legacy_version=legacy_version, random=random, session_id=session_id, cipher_suites=suites,
        versions=versions,
        sni=_server_name(ext[EXT_SERVER_NAME]) if ext.get(EXT_SERVER_NAME) else None,
        alpn=_alpn_list(ext[EXT_ALPN]) if EXT_ALPN in ext else (),
        session_ticket=bool(ext.get(EXT_SESSION_TICKET)), psk=EXT_PRE_SHARED_KEY in ext,
        early_data=EXT_EARLY_DATA in ext, encrypt_then_mac=EXT_ENCRYPT_THEN_MAC in ext,
        extended_master_secret=EXT_EXTENDED_MASTER_SECRET in ext, key_share_groups=tuple(groups))


@dataclass(frozen=True, slots=True)
class ServerHello:
    """What a ServerHello (or HelloRetryRequest, ``hello_retry``) selects. ``version`` is the negotiated
    version (supported_versions, else the legacy version); ``psk`` a pre_shared_key extension (TLS 1.3: the
    server accepted the offered PSK, the connection resumes); ``session_ticket`` an (empty) session_ticket
    extension (TLS 1.2: the server will send a NewSessionTicket); ``alpn`` the protocol selected (TLS 1.2:
    here; TLS 1.3: in EncryptedExtensions)."""

    legacy_version: int
    random: bytes
    session_id: bytes
    cipher_suite: int
    version: int
    hello_retry: bool
    psk: bool
    session_ticket: bool
    encrypt_then_mac: bool
    extended_master_secret: bool
    alpn: str | None
    key_share_group: int | None


def parse_server_hello(body: bytes) -> ServerHello:
    """A ServerHello's body (after the 4-byte handshake header)."""
    r = _Reader(body)
    legacy_version = r.uint(2)
    random = r.take(32)
    session_id = r.vec(1)
    cipher_suite = r.uint(2)
    r.uint(1)  # compression method
    ext = _extensions(r)
    version = legacy_version
    if EXT_SUPPORTED_VERSIONS in ext:
        version = _Reader(ext[EXT_SUPPORTED_VERSIONS]).uint(2)
    alpn = _alpn_list(ext[EXT_ALPN]) if EXT_ALPN in ext else ()
    group = _Reader(ext[EXT_KEY_SHARE]).uint(2) if EXT_KEY_SHARE in ext else None
    return ServerHello(
        legacy_version=legacy_version, random=random, session_id=session_id, cipher_suite=cipher_suite,
        version=version, hello_retry=random == HRR_RANDOM, psk=EXT_PRE_SHARED_KEY in ext,
        session_ticket=EXT_SESSION_TICKET in ext, encrypt_then_mac=EXT_ENCRYPT_THEN_MAC in ext,
        extended_master_secret=EXT_EXTENDED_MASTER_SECRET in ext, alpn=alpn[0] if alpn else None,
        key_share_group=group)


@dataclass(frozen=True, slots=True)
class EncryptedExtensions:
    """What a TLS 1.3 server's EncryptedExtensions say: the ALPN protocol selected, whether it acknowledged
    the server name, and whether it accepted 0-RTT data."""

    alpn: str | None
    server_name_ack: bool
    early_data: bool


def parse_encrypted_extensions(body: bytes) -> EncryptedExtensions:
    """An EncryptedExtensions body."""
    ext = _extensions(_Reader(body))
    alpn = _alpn_list(ext[EXT_ALPN]) if EXT_ALPN in ext else ()
    return EncryptedExtensions(alpn=alpn[0] if alpn else None, server_name_ack=EXT_SERVER_NAME in ext,
                               early_data=EXT_EARLY_DATA in ext)


def parse_certificate(body: bytes, tls13: bool) -> list[bytes]:
    """The DER certificates of a Certificate message, the end-entity first; TLS 1.3's form (a request
    context, then entries that carry extensions) when ``tls13``. An empty list: no certificate (a client
    declining a CertificateRequest)."""
    r = _Reader(body)
    if tls13:
        r.vec(1)  # certificate_request_context
    entries = _Reader(r.vec(3))
    certs: list[bytes] = []
    while entries.left:
        certs.append(entries.vec(3))
        if tls13:
            entries.vec(2)  # the entry's extensions
    return certs


def parse_key_update(body: bytes) -> bool:
    """A KeyUpdate body: whether the sender asks its peer to update its keys too (update_requested)."""
    if len(body) != 1 or body[0] > 1:
        raise HandshakeError(f"bad KeyUpdate body {body.hex()}")
    return body[0] == 1


# Java's RFC 2253 keywords (AVAKeyword's rfc2253-compliant ones); other attribute types are written as OIDs.
_RFC2253_KEYWORDS: Final = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
    "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}
_STRING_TAGS: Final = {12: "utf-8", 19: "latin-1", 20: "latin-1", 22: "latin-1", 27: "latin-1", 30: "utf-16-be"}
_ESCAPED: Final = ',=+<>#;"\\'


def _der_value(attr: x509.NameAttribute) -> bytes:
    """The DER encoding (tag, length, contents) of an attribute's value."""
    asn1_type = getattr(attr, "_type", None)  # cryptography keeps the value's ASN.1 string type here
    tag = int(getattr(asn1_type, "value", 12))
    value = attr.value
    if isinstance(value, str):
        content = value.encode(_STRING_TAGS.get(tag, "utf-8"), "replace")
    else:
        content = bytes(value)
    n = len(content)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes(
        (n.bit_length() + 7) // 8, "big")
    return bytes([tag]) + length + content


def _ava(attr: x509.NameAttribute) -> str:
    """One attribute as Java's AVA.toRFC2253String writes it."""
    oid = attr.oid.dotted_string
    keyword = _RFC2253_KEYWORDS.get(oid)
    tag = int(getattr(getattr(attr, "_type", None), "value", 12))
    if keyword is None or tag not in _STRING_TAGS or not isinstance(attr.value, str):
        return f"{keyword or oid}=#{_der_value(attr).hex()}"
    chars = ["\\00" if c == "\0" else ("\\" + c if c in _ESCAPED else c) for c in attr.value]
    lead = 0
    while lead < len(chars) and chars[lead] in (" ", "\r"):
        lead += 1
    trail = len(chars) - 1
    while trail >= 0 and chars[trail] in (" ", "\r"):
        trail -= 1
    value = "".join("\\" + c if i < lead or i > trail else c for i, c in enumerate(chars))
    return f"{keyword}={value}"


def rfc2253(name: x509.Name) -> str:
    """A name as Java's ``X500Principal.getName()`` (RFC 2253) writes it: the most specific RDN first."""
    return ",".join("+".join(_ava(a) for a in rdn) for rdn in reversed(name.rdns))


def kafka_principal(name: x509.Name) -> str:
    """The principal Kafka's default principal builder gives a client certificate with this subject."""
    return "User:" + rfc2253(name)


@dataclass(frozen=True, slots=True)
class CertInfo:
    """An X.509 certificate as a connection describes it: subject and issuer (``rfc4514_string()``),
    validity (UTC), and ``principal``, the Kafka principal the certificate gives as a client's."""

    subject: str
    issuer: str
    not_before: datetime.datetime
    not_after: datetime.datetime
    principal: str


def describe_certificate(der: bytes) -> CertInfo | None:
    """A DER certificate described, None when ``cryptography`` cannot read it."""
    try:
        cert = x509.load_der_x509_certificate(der)
        return CertInfo(subject=cert.subject.rfc4514_string(), issuer=cert.issuer.rfc4514_string(),
                        not_before=cert.not_valid_before_utc, not_after=cert.not_valid_after_utc,
                        principal=kafka_principal(cert.subject))
    except ValueError:
        return None
