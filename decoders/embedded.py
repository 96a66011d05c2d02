"""Protocols carried inside Kafka messages, decoded statelessly from the message itself.

* Group member metadata and assignments (JoinGroup, SyncGroup, DescribeGroups) are decoded by the
  ProtocolType/ProtocolName the same message carries (KIP-559): "consumer" uses
  ConsumerProtocolSubscription/Assignment, "connect" uses Kafka Connect's worker protocol. Where a
  version does not carry the type, the consumer schema is tried and the result marked inferred.
* Envelope requests (KIP-590) are unwrapped into the complete inner request, its principal and
  client address; an EnvelopeResponse's ResponseData is decoded once the inner request is known.

Decoded values are added next to the raw bytes as ``<Field>Decoded``; raw bytes are kept.
"""

from __future__ import annotations

import dataclasses
import importlib
import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from decoders.element_budget import ElementBudget
from decoders.generated import registry
from decoders.generated_modules import reader_module

if TYPE_CHECKING:  # a type only: decoders.api imports this module, never the reverse
    from decoders.api import DecodedMessage


#: How the note on a message starts when embedded structures of it (group metadata and assignments, an
#: Envelope's principal) stopped at the element budget (this module writes it).
EMBEDDED_LIMIT_NOTE = "embedded: "


def embedded_limit_hit(msg: DecodedMessage) -> bool:
    """Whether some embedded structure of ``msg`` stopped at the element budget (its notes say so)."""
    return any(note.startswith(EMBEDDED_LIMIT_NOTE) for note in msg.notes)


#: ``decoders.api.decode_request_within`` and ``decode_response_within``, as this module calls them (an Envelope's
#: contents, decoded within the Envelope's element budget).
DecodeRequest = Callable[..., "DecodedMessage"]
DecodeResponse = Callable[..., "DecodedMessage"]
_EMBEDDED_LIMIT_TEXT = (EMBEDDED_LIMIT_NOTE + "{} structure(s) not decoded: more array elements than the "
                        "message's budget (--max-elements); their ...Decoded status names the array")

#: Embedded schema names by protocol type and role.
SCHEMAS: dict[str, dict[str, str]] = {
    "consumer": {"subscription": "ConsumerProtocolSubscription", "assignment": "ConsumerProtocolAssignment"},
    "connect": {"subscription": "ConnectProtocolWorkerState", "assignment": "ConnectProtocolAssignment"},
}


#: A compiled reader's quiet entry: ``(frame, position, budget) -> (value, position after it)``, or None when it
#: failed, its status then given by ``last_failure()`` (decoders/accel/_where.pyx).
QuietReader = Callable[[bytes, int, ElementBudget], "tuple[Any, int] | None"]
#: ``() -> (status text, whether the decode stopped at the element budget)`` of the failure last noted.
LastFailure = Callable[[], tuple[str, bool]]

# schema -> (its compiled readers' quiet entries by version, the newest version, their failure's status). The
# embedded structures' readers are always compiled (registry.ACCEL_MODULES holds every data module).
_versions_cache: dict[str, tuple[dict[int, QuietReader], int, LastFailure]] = {}


def _schema_versions(schema: str) -> tuple[dict[int, QuietReader], int, LastFailure]:
    entry = _versions_cache.get(schema)
    if entry is None:
        readers: dict[int, QuietReader] = reader_module(registry.DATA_MODULES[schema]).QUIET_VERSIONS
        last_failure: LastFailure = importlib.import_module("decoders.accel._where").last_failure
        entry = _versions_cache[schema] = (readers, max(readers), last_failure)
    return entry


def decode_versioned(schema: str, raw: bytes, budget: ElementBudget) -> dict[str, Any]:
    """Decode a version-prefixed (int16) structure such as ConsumerProtocolSubscription, spending ``budget`` (the
    message's that carries it); one that stops at the budget is counted in ``budget.stops``. Decoded once: the
    reader that fails says where."""
    size = len(raw)
    if size < 2:
        return {"schema": schema, "status": f"truncated: {size} bytes, no version"}
    version = ((raw[0] ^ 0x80) - 0x80) * 256 + raw[1]  # int16, the high byte sign-extended (compiled: C reads)
    entry = _versions_cache.get(schema) or _schema_versions(schema)
    readers = entry[0]
    known = entry[1]
    result: dict[str, Any] = {"schema": schema, "version": version}
    layout = version
    if version not in readers:
        if version < 0:
            result["status"] = f"invalid: negative version {version}"
            return result
        if version < known:
            result["status"] = f"unknown version {version} of {schema}"
            return result
        layout = known  # like Kafka's deserializers, a newer version is read with the newest layout
    read = readers[layout](raw, 2, budget)  # a failure is noted, not raised: a garbage subscription costs little
    if read is None:
        status, spent = entry[2]()
        result["status"] = status
        if spent:
            budget.stops += 1  # noted on the message by its postprocessor (_noted)
        return result
    value, end = read
    result["value"] = value
    if end != size and version <= known:
        result["status"] = f"trailing bytes: {size - end} after the body (offset {end})"
        return _versioned_value(schema, result, budget)
    result["status"] = "ok"
    return _versioned_value(schema, result, budget) if schema == _WORKER_STATE else result


#: The one embedded schema whose value carries another version-prefixed structure (its Allocation).
_WORKER_STATE = "ConnectProtocolWorkerState"


def _versioned_value(schema: str, result: dict[str, Any], budget: ElementBudget) -> dict[str, Any]:
    value = result["value"]
    if schema == _WORKER_STATE and isinstance(value.get("Allocation"), bytes):
        # The worker's previous assignment, serialised as a complete (version-prefixed) assignment.
        value["AllocationDecoded"] = decode_versioned("ConnectProtocolAssignment", value["Allocation"], budget)
    return result


def decode_group_bytes(protocol_type: str | None, role: str, raw: bytes | None,
                       budget: ElementBudget) -> dict[str, Any] | None:
    """Decode member metadata (role "subscription") or an assignment by the declared protocol type, spending
    ``budget``."""
    if raw is None:
        return None
    if protocol_type is None:
        result: dict[str, Any] = (
            decode_versioned(SCHEMAS["consumer"][role], raw, budget) if raw else {"status": "empty"})
        result["inferred"] = True
        return result
    schemas = SCHEMAS.get(protocol_type)
    if schemas is None:
        return {"status": f"not decoded: no embedded schema for protocol type {protocol_type!r}",
                "protocolType": protocol_type}
    if not raw:
        return {"schema": schemas[role], "status": "empty", "inferred": False}
    result = decode_versioned(schemas[role], raw, budget)
    result["inferred"] = False
    return result


#: A postprocessor: ``(message, inner request's (api key, version) or None, the message's budget) -> message``.
_Post = Callable[["DecodedMessage", "tuple[int, int] | None", ElementBudget], "DecodedMessage"]


def _decode_each_metadata(ptype: str | None, items: Any, budget: ElementBudget) -> None:
    """Each item's ``Metadata`` decoded into ``MetadataDecoded`` (JoinGroup's protocols, or its members).

    The same bytes often come several times in one message: a consumer offers each assignor the same
    subscription, and the members of a group subscribe alike. Bytes equal to one of the first
    :data:`_REPEATS_KEPT` decoded in this message are not decoded again: the repeat gets a result dict of its
    own around the same decoded value and is charged the elements the first decode spent, exactly what
    decoding again would spend and give; unless the budget has less left (or the first decode stopped at it),
    when it is decoded again and stops where it must. (Compared, not hashed: a few ``memcmp`` cost less than
    hashing each member's bytes.)
    """
    seen: list[tuple[bytes, dict[str, Any], int]] = []
    for item in items:
        raw = item.get("Metadata")
        if raw:
            for hit in seen:
                if hit[0] == raw and budget.left >= hit[2]:
                    budget.left -= hit[2]
                    first = hit[1]
                    item["MetadataDecoded"] = first.copy()
                    break
            else:
                left = budget.left
                stops = budget.stops
                result = decode_group_bytes(ptype, "subscription", raw, budget)
                if budget.stops == stops and result is not None and len(seen) < _REPEATS_KEPT:
                    seen.append((raw, result, left - budget.left))
                item["MetadataDecoded"] = result
        else:
            item["MetadataDecoded"] = decode_group_bytes(ptype, "subscription", raw, budget)


#: How many distinct metadata byte strings :func:`_decode_each_metadata` remembers per message.
_REPEATS_KEPT = 4


def _join_group_request(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
    body = msg.body or {}
    _decode_each_metadata(body.get("ProtocolType"), body.get("Protocols") or (), budget)
    return _noted(msg, budget)


def _join_group_response(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
    body = msg.body or {}
    _decode_each_metadata(body.get("ProtocolType") if "ProtocolType" in body else None, body.get("Members") or (),
                          budget)
    return _noted(msg, budget)


def _sync_group_request(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
    body = msg.body or {}
    ptype = body.get("ProtocolType") if "ProtocolType" in body else None
    for assignment in body.get("Assignments") or ():
        assignment["AssignmentDecoded"] = decode_group_bytes(ptype, "assignment", assignment.get("Assignment"),
                                                             budget)
    return _noted(msg, budget)


def _sync_group_response(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
    body = msg.body or {}
    ptype = body.get("ProtocolType") if "ProtocolType" in body else None
    if "Assignment" in body:
        body["AssignmentDecoded"] = decode_group_bytes(ptype, "assignment", body.get("Assignment"), budget)
    return _noted(msg, budget)


def _describe_groups_response(msg: DecodedMessage, inner: tuple[int, int] | None,
                              budget: ElementBudget) -> DecodedMessage:
    for group in (msg.body or {}).get("Groups") or ():
        ptype = group.get("ProtocolType") or None
        for member in group.get("Members") or ():
            member["MemberMetadataDecoded"] = decode_group_bytes(
                ptype, "subscription", member.get("MemberMetadata"), budget)
            member["MemberAssignmentDecoded"] = decode_group_bytes(
                ptype, "assignment", member.get("MemberAssignment"), budget)
    return _noted(msg, budget)


def message_dict(msg: DecodedMessage) -> dict[str, Any]:
    """A decoded message as a plain dict (used for messages nested inside an Envelope)."""
    out: dict[str, Any] = {
        "apiKey": msg.api_key,
        "apiName": msg.api_name,
        "apiVersion": msg.api_version,
        "correlationId": msg.correlation_id,
        "status": msg.status,
    }
    if msg.kind == "request":
        out["clientId"] = msg.client_id
    out["header"] = msg.header
    out["body"] = msg.body
    return out


def decode_principal(raw: bytes | None, budget: ElementBudget) -> dict[str, Any] | None:
    """Envelope RequestPrincipal: a version-prefixed DefaultPrincipalData."""
    if raw is None:
        return None
    return decode_versioned("DefaultPrincipalData", raw, budget)


def format_address(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    if len(raw) in (4, 16):
        return str(ipaddress.ip_address(raw))
    return None


def _envelope_request(msg: DecodedMessage, decode_request: DecodeRequest, budget: ElementBudget) -> DecodedMessage:
    body = msg.body or {}
    data = body.get("RequestData")
    inner_msg = None
    if isinstance(data, bytes):
        # Kafka forwards a request once; an Envelope inside an Envelope is not unwrapped further
        # (which also bounds the work a crafted frame can cause).
        nested = len(data) >= 2 and data[:2] == b"\x00\x3a"
        inner_budget = ElementBudget(budget.left)  # what is left of the Envelope's, its stops counted apart
        inner_msg = decode_request(data, not nested, inner_budget)
        budget.left = inner_budget.left
        if nested:
            inner_msg.notes = inner_msg.notes + ("Envelope inside an Envelope: not unwrapped further",)
    if inner_msg is not None:
        body["RequestDataDecoded"] = message_dict(inner_msg)
    body["RequestPrincipalDecoded"] = decode_principal(body.get("RequestPrincipal"), budget)
    address = body.get("ClientHostAddress")
    body["ClientHostAddressDecoded"] = format_address(address)
    if isinstance(address, bytes) and body["ClientHostAddressDecoded"] is None:
        body["ClientHostAddressDecoded"] = f"invalid address of {len(address)} bytes"
    return dataclasses.replace(msg, inner=inner_msg)


def _envelope_response(msg: DecodedMessage, inner: tuple[int, int] | None, decode_response: DecodeResponse,
                       budget: ElementBudget) -> DecodedMessage:
    body = msg.body or {}
    data = body.get("ResponseData")
    if not isinstance(data, bytes):
        return msg
    if inner is None:
        body["ResponseDataDecoded"] = None
        return dataclasses.replace(msg, notes=msg.notes + ("inner request unknown: ResponseData kept raw",))
    inner_budget = ElementBudget(budget.left)
    inner_msg = decode_response(data, inner[0], inner[1], None, True, inner_budget)
    budget.left = inner_budget.left
    body["ResponseDataDecoded"] = message_dict(inner_msg)
    return dataclasses.replace(msg, inner=inner_msg)


def _noted(msg: DecodedMessage, budget: ElementBudget) -> DecodedMessage:
    """``msg``, with a note when embedded structures its postprocessor decoded stopped at the element budget
    (a message nested in it, as an Envelope's, has a budget of its own and is noted on its own)."""
    stops = budget.stops
    if stops:
        return dataclasses.replace(msg, notes=(*msg.notes, _EMBEDDED_LIMIT_TEXT.format(stops)))
    return msg


def postprocessors(decode_request: DecodeRequest, decode_response: DecodeResponse) -> dict[tuple[str, int], _Post]:
    """The postprocessors by (kind, api key), for ``decoders.api``; an Envelope's inner message is decoded with
    ``decode_request`` / ``decode_response`` (the api's own, given by it: this module does not import it)."""

    def envelope_request(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
        return _noted(_envelope_request(msg, decode_request, budget), budget)

    def envelope_response(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
        return _noted(_envelope_response(msg, inner, decode_response, budget), budget)

    return {
        ("request", 11): _join_group_request,
        ("response", 11): _join_group_response,
        ("request", 14): _sync_group_request,
        ("response", 14): _sync_group_response,
        ("response", 15): _describe_groups_response,
        ("request", 58): envelope_request,
        ("response", 58): envelope_response,
    }
