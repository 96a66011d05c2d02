"""SASL tokens with no Kafka header: the legacy exchange after a SaslHandshake v0 (KIP-152), decoded and redacted.

After a successful SaslHandshake v0 response, the client and the broker exchange the mechanism's tokens as plain
length-prefixed frames, with no request or response header, until authentication completes; then Kafka frames
follow. (SaslHandshake v1 wraps the same tokens in SaslAuthenticate requests instead.) Each such frame is a
message of its own named ``SaslToken``: no api key, no correlation id, and a body shaped as SaslAuthenticate's,
``AuthBytes`` (a redaction marker: a token may hold a password) and ``AuthBytesDecoded`` (what is safe in it, as
:mod:`decoders.redaction` reads SaslAuthenticate's). Which frames are tokens is the connection's business
(``inspector.kafka.sasl``); this module decodes one, and tells whether bytes look like one (a capture may start in the
middle of the exchange, with no handshake to say so).
"""

from __future__ import annotations

import re
from typing import Any

from contract.apis import ApiKey
from decoders.api import DecodedMessage
from decoders.redaction import REDACTORS, redacted_notes

#: The ``api_name`` of a legacy SASL token.
SASL_TOKEN = "SaslToken"

#: Tokens longer than this are not taken for SASL tokens when nothing else says the frame is one.
_MAX_SNIFFED = 16 * 1024
# What SCRAM's messages (RFC 5802) look like: printable, attributes ``k=value`` separated by commas.
_PRINTABLE = re.compile(rb"[\x20-\x7e]+")
_SCRAM_CLIENT_FIRST = re.compile(rb"[ny],[^,]*,n=[^,]+,r=[^,]+(,.*)?")
_SCRAM_CLIENT_FINAL = re.compile(rb"c=[A-Za-z0-9+/=]+,r=[^,]+(,[^,]*)*,p=[A-Za-z0-9+/=]+")
_SCRAM_SERVER_FIRST = re.compile(rb"r=[^,]+,s=[A-Za-z0-9+/=]+,i=[0-9]+(,.*)?")
_SCRAM_SERVER_FINAL = re.compile(rb"(v=[A-Za-z0-9+/=]+|e=[a-z0-9-]+)(,.*)?")
_OAUTHBEARER = re.compile(rb"[ny],[^,\x01]*,\x01auth=[^\x01]+\x01.*", re.DOTALL)


def decode_token(kind: str, data: bytes) -> DecodedMessage:
    """One legacy SASL token frame (``kind``: "request" from the client, "response" from the broker)."""
    body: dict[str, Any] = {"AuthBytes": data}  # redacted as SaslAuthenticate's; empty: PLAIN, OAUTHBEARER succeeded
    count = REDACTORS[kind, ApiKey.SASL_AUTHENTICATE](body)
    return DecodedMessage(kind, None, None, None, "ok", body, len(data), notes=redacted_notes(count), name=SASL_TOKEN)


def looks_like_token(data: bytes) -> str | None:
    """"request" or "response" when ``data`` is unmistakably a client's or a broker's SASL token (PLAIN, SCRAM,
    OAUTHBEARER), else None: what tells a token frame with no handshake before it from a Kafka frame."""
    if not data or len(data) > _MAX_SNIFFED:
        return None
    if _OAUTHBEARER.fullmatch(data):
        return "request"
    if _PRINTABLE.fullmatch(data):
        if _SCRAM_CLIENT_FIRST.fullmatch(data) or _SCRAM_CLIENT_FINAL.fullmatch(data):
            return "request"
        if _SCRAM_SERVER_FIRST.fullmatch(data) or _SCRAM_SERVER_FINAL.fullmatch(data):
            return "response"
        return None
    parts = data.split(b"\0")
    if len(parts) == 3 and parts[1] and parts[2] and all(_text(p) for p in parts):
        return "request"  # PLAIN: [authzid] NUL user NUL password
    return None


def _text(part: bytes) -> bool:
    """Whether ``part`` is empty or printable UTF-8 text (a PLAIN name or password)."""
    try:
        return part.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False
