"""Who a connection authenticated as, from its SASL exchange (sans-I/O: fed the connection's decoded messages).

A connection's principal comes from what the wire shows, as Kafka's default principal builder names it:
SASL PLAIN's authorization id, else its user; SCRAM's ``n=`` user of the client-first message; OAUTHBEARER's
JWT ``sub`` claim (read, not verified; an opaque token gives none); GSSAPI shows no principal in clear (the
mechanism alone is known). What the decoder kept of each SaslAuthenticate message (``AuthBytesDecoded``, see
``decoders/redaction.py``; the secrets are already redacted) is all this reads.

The principal is set when a SaslAuthenticate response succeeds (SCRAM: its final round) and holds for every
message of the connection from then on, that response included; a re-authentication (KIP-368) replaces it
when it succeeds, and a failed one leaves no principal. A SCRAM server-final message with an error (``e=``)
fails the exchange whatever the response's ErrorCode (Tansu answers ``e=unknown-user`` with ErrorCode 0).
``outcome`` says how the last exchange ended: ``ok``, ``in progress``, ``failed: NAME (code)`` or
``failed: SCRAM ERROR`` (the server-final message's error).

The legacy exchange (KIP-152): after a successful SaslHandshake v0 response, ``tokens`` is set: the frames
that follow are SASL tokens with no Kafka header (``decoders.sasl_tokens``), fed to :meth:`SaslState.token`,
until the exchange completes. PLAIN and OAUTHBEARER complete with the broker's first answer, SCRAM with its
server-final message; GSSAPI's end is not visible in its tokens: the connection ends it at the first client
frame that is a Kafka request. The broker closes the connection when a legacy exchange fails.
"""

from __future__ import annotations

from typing import Any, Final

from contract.apis import ApiKey
from contract.kafka import error_name

SASL_HANDSHAKE: Final = ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE: Final = ApiKey.SASL_AUTHENTICATE


class SaslState:
    """The SASL state of one connection."""

    __slots__ = ("authentications", "claimed", "client_id", "issuer", "mechanism", "outcome", "principal",
                 "session_lifetime_ms", "tokens")

    def __init__(self) -> None:
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.outcome: str | None = None
        self.session_lifetime_ms: int | None = None
        self.authentications = 0  # successful exchanges (more than one: re-authentication)
        self.tokens = False  # the next frames are legacy SASL tokens (after SaslHandshake v0)
        self.client_id: str | None = None  # the client id of the SaslHandshake v0 request (its tokens have none)
        self.claimed: str | None = None  # who the current or last exchange claimed to be, whether or not it succeeded
        self.issuer: str | None = None  # OAUTHBEARER: the ``iss`` claim of that exchange's token (not verified)

    def request(self, api_key: int, body: dict[str, Any] | None) -> None:
        """A SaslHandshake or SaslAuthenticate request of the connection."""
        if body is None:
            return
        if api_key == SASL_HANDSHAKE:
            mechanism = body.get("Mechanism")
            if isinstance(mechanism, str):
                self.mechanism = mechanism
            self.outcome = "in progress"
            self.claimed = self.issuer = None
            return
        self._client(body.get("AuthBytesDecoded"))

    def response(self, api_key: int, api_version: int, body: dict[str, Any] | None) -> None:
        """The response to a SaslHandshake or SaslAuthenticate request of the connection."""
        if body is None:
            return
        code = body.get("ErrorCode")
        if isinstance(code, int) and code != 0:
            self.outcome = f"failed: {error_name(code)} ({code})"
            if api_key == SASL_AUTHENTICATE:
                self.principal = None  # the broker closes the connection: nothing after is authenticated
            return
        if api_key != SASL_AUTHENTICATE:
            self.tokens = api_version == 0  # v0: the mechanism's tokens follow, with no Kafka header
            return
        if self._server(body.get("AuthBytesDecoded")):
            lifetime = body.get("SessionLifetimeMs") if self.outcome == "ok" else None
            self.session_lifetime_ms = lifetime if isinstance(lifetime, int) and lifetime > 0 else None

    def token(self, kind: str, body: dict[str, Any]) -> None:
        """A legacy SASL token (``kind``: "request" from the client, "response" from the broker)."""
        decoded = body.get("AuthBytesDecoded")
        if kind == "request":
            self._client(decoded)
        elif self.mechanism != "GSSAPI" and self._server(decoded):
            self.tokens = False  # done: Kafka frames follow

    def _client(self, decoded: object) -> None:
        """A client's SASL message (what the decoder kept of it)."""
        if not isinstance(decoded, dict):
            return
        self.outcome = "in progress"
        mechanism = decoded.get("mechanism")
        if self.mechanism is None and isinstance(mechanism, str):
            self.mechanism = mechanism  # no handshake seen: what the bytes show (SCRAM: not which hash)
        candidate = _principal(decoded)
        if candidate is not None or decoded.get("message") != "client-final":
            self.claimed = candidate  # SCRAM's final round names nobody: its first round's user stays
            claims = decoded.get("claims")
            issuer = claims.get("iss") if isinstance(claims, dict) else None
            self.issuer = issuer if isinstance(issuer, str) else None

    def _server(self, decoded: object) -> bool:
        """A broker's SASL answer with no error code: whether the exchange ended with it."""
        if isinstance(decoded, dict):
            if decoded.get("message") == "server-first":
                return False  # SCRAM goes on: the client's proof comes next
            if decoded.get("message") == "server-final" and "error" in decoded:
                self.outcome = f"failed: SCRAM {decoded['error']}"
                self.principal = None
                return True
        self.outcome = "ok"
        self.authentications += 1
        self.principal = self.claimed
        return True


def _principal(decoded: dict[str, Any]) -> str | None:
    """``User:NAME`` of a SaslAuthenticate request's decoded AuthBytes, when they name one."""
    mechanism = decoded.get("mechanism")
    name: object = None
    if mechanism == "PLAIN":
        name = decoded.get("authzid") or decoded.get("user")
    elif mechanism == "SCRAM":
        name = decoded.get("user")
    elif mechanism == "OAUTHBEARER":
        claims = decoded.get("claims")
        name = (claims.get("sub") if isinstance(claims, dict) else None) or decoded.get("authzid")
    return f"User:{name}" if isinstance(name, str) and name else None
