"""Secrets on the wire, replaced in decoded bodies before anything is written (issue 18).

Every decoded message goes through these redactors (``decoders.api`` adds them to the postprocessors), so no
output (events, JSONL, ``show``, the tap, reports) ever holds a secret: each is replaced, where it sits in the
body, by a marker that keeps only its kind and length, ``{"redacted": "sasl-plain-password", "bytes": 13}``.
Never a hash: a short secret's hash can be brute-forced offline.

* SaslAuthenticate (36): a request's and a response's ``AuthBytes`` become a marker, and what is safe in them
  is kept beside it as ``AuthBytesDecoded`` (told apart by their content, statelessly): PLAIN's authorization
  id and user (the password redacted); SCRAM's user and nonce (client-first), iteration count (server-first)
  or error (server-final), the proof, salt and server signature redacted; OAUTHBEARER's JWT header and claims
  (``sub``, ``iss``, ...), the signature redacted (an opaque token is redacted whole); anything else (GSSAPI's
  Kerberos tokens, a mechanism's later rounds) is a redacted token.
* AlterUserScramCredentials (51): each upsertion's ``Salt`` and ``SaltedPassword``.
* Delegation tokens: the ``Hmac`` of CreateDelegationToken and DescribeDelegationToken responses and of
  RenewDelegationToken and ExpireDelegationToken requests (38-41).
* Configs: the ``Value`` of a sensitive config (:func:`sensitive_config`, or one DescribeConfigs marks
  ``IsSensitive``) in CreateTopics requests and responses, AlterConfigs and IncrementalAlterConfigs requests
  and DescribeConfigs responses (their synonyms too).
* Envelope (58): the inner request or response is decoded (and redacted) on its own; when it held a secret,
  the Envelope's raw ``RequestData``/``ResponseData`` is redacted too.

A message with something redacted gets a note (:data:`REDACTED_NOTE`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contract.apis import ApiKey
from decoders.element_budget import ElementBudget

if TYPE_CHECKING:  # a type only: decoders.api imports this module, never the reverse
    from decoders.api import DecodedMessage

#: How the note on a message with redacted secrets starts.
REDACTED_NOTE = "redacted: "

_Post = Callable[["DecodedMessage", "tuple[int, int] | None", ElementBudget], "DecodedMessage"]


def marker(kind: str, secret: bytes | str | None) -> dict[str, Any]:
    """What stands in a body for a secret: its kind and its length in bytes, nothing of its content."""
    size = len(secret.encode("utf-8", "backslashreplace") if isinstance(secret, str) else secret or b"")
    return {"redacted": kind, "bytes": size}


# -- config values ---------------------------------------------------------------------------------------


def sensitive_config(name: object) -> bool:
    """Whether a config of this name holds a secret: Kafka's password-type keys (``*.password``, JAAS configs,
    private keys, client secrets), listener- and mechanism-prefixed ones included."""
    if not isinstance(name, str):
        return False
    key = name.lower()
    return (key.endswith("password") or key.endswith("sasl.jaas.config") or "ssl.key" in key
            or "secret" in key or key.endswith("private.key") or key.endswith("credentials"))


def _redact_configs(configs: Any) -> int:
    count = 0
    for config in configs or ():
        if not isinstance(config, dict):
            continue
        sensitive = config.get("IsSensitive") is True or sensitive_config(config.get("Name"))
        if sensitive and isinstance(config.get("Value"), str):
            config["Value"] = marker("config-value", config["Value"])
            count += 1
        for synonym in config.get("Synonyms") or ():
            if (sensitive or sensitive_config(synonym.get("Name"))) and isinstance(synonym.get("Value"), str):
                synonym["Value"] = marker("config-value", synonym["Value"])
                count += 1
    return count


def _topics_configs(body: dict[str, Any]) -> int:
    return sum(_redact_configs(topic.get("Configs")) for topic in body.get("Topics") or ())


def _resources_configs(body: dict[str, Any]) -> int:
    return sum(_redact_configs(resource.get("Configs")) for resource in body.get("Resources") or ())


def _results_configs(body: dict[str, Any]) -> int:
    return sum(_redact_configs(result.get("Configs")) for result in body.get("Results") or ())


# -- SCRAM credentials and delegation tokens --------------------------------------------------------------


def _fields(items: Any, kinds: dict[str, str]) -> int:
    """Each item's bytes fields named in ``kinds``, replaced by a marker of that kind."""
    count = 0
    for item in items or ():
        if not isinstance(item, dict):
            continue
        for name, kind in kinds.items():
            if isinstance(item.get(name), (bytes, bytearray, memoryview)):
                item[name] = marker(kind, bytes(item[name]))
                count += 1
    return count


def _scram_credentials(body: dict[str, Any]) -> int:
    return _fields(body.get("Upsertions"), {"Salt": "scram-salt", "SaltedPassword": "scram-salted-password"})


def _hmac(body: dict[str, Any]) -> int:
    return _fields((body,), {"Hmac": "delegation-token-hmac"})


def _token_hmacs(body: dict[str, Any]) -> int:
    return _fields(body.get("Tokens"), {"Hmac": "delegation-token-hmac"})


# -- SASL -------------------------------------------------------------------------------------------------


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _scram_attributes(text: str) -> dict[str, str]:
    """SCRAM's ``k=v,k=v`` attributes (RFC 5802)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if eq and len(key) == 1 and key not in out:
            out[key] = value
    return out


def _scram_name(value: str) -> str:
    return value.replace("=2C", ",").replace("=3D", "=")


def _b64url_json(part: str) -> Any:
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, binascii.Error):
        return None
    return value if isinstance(value, dict) else None


def _oauthbearer(authz: str, rest: str) -> dict[str, Any]:
    """OAUTHBEARER's initial response (RFC 7628) after its GS2 header (``authz``: its ``a=`` part):
    ``\\x01auth=Bearer TOKEN\\x01key=value...\\x01\\x01``."""
    out: dict[str, Any] = {"mechanism": "OAUTHBEARER"}
    authzid = _scram_attributes(authz).get("a")
    if authzid:
        out["authzid"] = _scram_name(authzid)
    token = ""
    extensions: dict[str, str] = {}
    for item in rest.split("\x01"):
        key, eq, value = item.partition("=")
        if not eq:
            continue
        if key == "auth":
            scheme, _, token = value.partition(" ")
            out["scheme"] = scheme
        else:
            extensions[key] = value
    if extensions:
        out["extensions"] = {key: marker("sasl-extension", value) for key, value in extensions.items()}
    parts = token.split(".")
    header = _b64url_json(parts[0]) if len(parts) == 3 else None
    claims = _b64url_json(parts[1]) if len(parts) == 3 else None
    if header is None or claims is None:
        out["token"] = marker("oauthbearer-token", token)  # opaque: no principal to read
        return out
    out["header"] = header
    out["claims"] = claims
    out["signature"] = marker("oauthbearer-signature", parts[2])
    return out


def sasl_request(raw: bytes) -> dict[str, Any]:
    """What is safe in a SaslAuthenticate request's ``AuthBytes``, told apart by content."""
    text = _text(raw)
    if text[:2] in ("n,", "y,") or text.startswith("p="):  # a GS2 header: SCRAM client-first or OAUTHBEARER
        _, _, rest = text.partition(",")
        authz, _, rest = rest.partition(",")
        if rest.startswith("\x01"):
            return _oauthbearer(authz, rest)
        attributes = _scram_attributes(rest)
        if "n" in attributes and "r" in attributes:
            return {"mechanism": "SCRAM", "message": "client-first", "user": _scram_name(attributes["n"]),
                    "nonce": attributes["r"]}
    if text.startswith("c=") and ",p=" in text:
        attributes = _scram_attributes(text)
        return {"mechanism": "SCRAM", "message": "client-final", "nonce": attributes.get("r"),
                "proof": marker("scram-client-proof", attributes.get("p", ""))}
    if raw.count(b"\0") == 2:
        authzid, user, password = raw.split(b"\0")
        out: dict[str, Any] = {"mechanism": "PLAIN", "user": _text(user)}
        if authzid:
            out["authzid"] = _text(authzid)
        out["password"] = marker("sasl-plain-password", password)
        return out
    return {"mechanism": None, "token": marker("sasl-token", raw)}


def sasl_response(raw: bytes) -> dict[str, Any]:
    """What is safe in a SaslAuthenticate response's ``AuthBytes``."""
    text = _text(raw)
    attributes = _scram_attributes(text)
    if text.startswith("r=") and "s" in attributes and "i" in attributes:
        return {"mechanism": "SCRAM", "message": "server-first", "nonce": attributes["r"],
                "salt": marker("scram-salt", attributes["s"]),
                "iterations": int(attributes["i"]) if attributes["i"].isdigit() else attributes["i"]}
    if text.startswith("v="):
        return {"mechanism": "SCRAM", "message": "server-final",
                "signature": marker("scram-server-signature", attributes["v"])}
    if text.startswith("e="):
        return {"mechanism": "SCRAM", "message": "server-final", "error": attributes["e"]}
    return {"mechanism": None, "token": marker("sasl-token", raw)}


def _sasl(decode: Callable[[bytes], dict[str, Any]]) -> Callable[[dict[str, Any]], int]:
    def redact(body: dict[str, Any]) -> int:
        raw = body.get("AuthBytes")
        if not isinstance(raw, (bytes, bytearray, memoryview)) or not raw:
            return 0
        raw = bytes(raw)
        body["AuthBytes"] = marker("sasl-auth-bytes", raw)
        body["AuthBytesDecoded"] = decode(raw)
        return 1
    return redact


# -- Envelope ---------------------------------------------------------------------------------------------


def _redacted(msg: DecodedMessage | None) -> bool:
    return msg is not None and any(note.startswith(REDACTED_NOTE) for note in msg.notes)


def _envelope(field: str) -> Callable[[DecodedMessage], int]:
    def redact(msg: DecodedMessage) -> int:
        body = msg.body or {}
        raw = body.get(field)
        if _redacted(msg.inner) and isinstance(raw, (bytes, bytearray, memoryview)):
            body[field] = marker("envelope-data", bytes(raw))
            return 1
        return 0
    return redact


#: The body redactors by (kind, api key): each replaces the secrets of a body in place and returns how many.
REDACTORS: dict[tuple[str, int], Callable[[dict[str, Any]], int]] = {
    ("request", ApiKey.CREATE_TOPICS): _topics_configs,
    ("response", ApiKey.CREATE_TOPICS): _topics_configs,
    ("response", ApiKey.DESCRIBE_CONFIGS): _results_configs,
    ("request", ApiKey.ALTER_CONFIGS): _resources_configs,
    ("request", ApiKey.SASL_AUTHENTICATE): _sasl(sasl_request),
    ("response", ApiKey.SASL_AUTHENTICATE): _sasl(sasl_response),
    ("response", ApiKey.CREATE_DELEGATION_TOKEN): _hmac,
    ("request", ApiKey.RENEW_DELEGATION_TOKEN): _hmac,
    ("request", ApiKey.EXPIRE_DELEGATION_TOKEN): _hmac,
    ("response", ApiKey.DESCRIBE_DELEGATION_TOKEN): _token_hmacs,
    ("request", ApiKey.INCREMENTAL_ALTER_CONFIGS): _resources_configs,
    ("request", ApiKey.ALTER_USER_SCRAM_CREDENTIALS): _scram_credentials,
}
#: Envelope's: the raw inner message, when the decoded one held a secret.
_ENVELOPE = {("request", ApiKey.ENVELOPE): _envelope("RequestData"),
             ("response", ApiKey.ENVELOPE): _envelope("ResponseData")}


def redacted_notes(count: int) -> tuple[str, ...]:
    """The note of a message with ``count`` secrets redacted (none when nothing was)."""
    return (f"{REDACTED_NOTE}{count} secret(s) replaced by markers",) if count else ()


def _noted(msg: DecodedMessage, count: int) -> DecodedMessage:
    if not count:
        return msg
    return dataclasses.replace(msg, notes=(*msg.notes, *redacted_notes(count)))


def with_redaction(post: dict[tuple[str, int], _Post]) -> dict[tuple[str, int], _Post]:
    """``post`` (the postprocessors by kind and api key), each message's secrets redacted after it."""
    out = dict(post)
    for key, redact in REDACTORS.items():
        out[key] = _then(post.get(key), _of_body(redact))
    for key, redact_msg in _ENVELOPE.items():
        out[key] = _then(post.get(key), redact_msg)
    return out


def _of_body(redact: Callable[[dict[str, Any]], int]) -> Callable[[DecodedMessage], int]:
    """A body redactor, applied to a message (one without a body has nothing to redact)."""
    def run(msg: DecodedMessage) -> int:
        return redact(msg.body) if msg.body is not None else 0
    return run


def _then(handler: _Post | None, redact: Callable[[DecodedMessage], int]) -> _Post:
    """``handler`` (if any), then ``redact`` on what it made, noted on the message."""
    def run(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
        if handler is not None:
            msg = handler(msg, inner, budget)
        return _noted(msg, redact(msg))
    return run
