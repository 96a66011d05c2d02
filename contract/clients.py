"""The client inventory (issue 21): what a client is and what its row says, in one place for the terminal command
(``inspector/rows/client_inventory.py``, pyarrow) and the report (``pipelines/client_usage.py``, Spark).

Each of them only groups the events into *usage* (per client, broker, direction, API and version: messages,
first and last time, the software named in ApiVersions v3+, record sets in message format v0/v1) and *errors*
(per client and error code: responses); :func:`build_clients` makes the rows from those.

A client is its address, its client id and its principal. Its row holds the software it named in ApiVersions
v3+ (``ClientSoftwareName``/``ClientSoftwareVersion``; else "software unknown"), when it was first and last
seen, the brokers it talked to, every (API, version) it used with how many requests, the error codes of its
responses with counts, and its readiness for Kafka 4.0 (KIP-896): each (API, version) it used that the newest
Kafka removed, with the lowest version it must move to (:func:`move_to`, from the specs: ``REMOVED_VERSIONS``
and ``REMOVED_APIS``, recorded by the spec converter), and the record sets in message format v0/v1
(MessageSet) it produced or fetched, which Kafka 4.0 no longer writes (KIP-724).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contract.apis import REMOVED_APIS, REMOVED_VERSIONS
from contract.kafka import error_name

#: The fields of a usage row, in order (what each side's grouping yields).
USAGE_FIELDS = ("client_ip", "client_id", "principal", "broker", "direction", "api_key", "api_name", "api_version",
                "messages", "first_seen", "last_seen", "software_name", "software_version", "old_record_sets")
#: The fields of an error row, in order.
ERROR_FIELDS = ("client_ip", "client_id", "principal", "error_code", "responses")
#: ApiVersions: its requests from v3 on name the client's software.
API_VERSIONS, SOFTWARE_FROM = 18, 3
PRODUCE, FETCH = 0, 1
#: A record set in message format v0/v1 in a body's JSON text, as the body writer writes the batches' headers
#: (a JSON string escapes its quotes: no string value can hold this text).
OLD_RECORD_FORMAT = ('"magic":0', '"magic":1')

UNGONE = -1  # move_to's "not removed"


def move_to(api_key: int | None, version: int | None) -> int | None:
    """For a request Kafka 4.0 removed: the lowest version of its API the newest Kafka has, or None when the API
    itself is gone (keys 4-7). For any other request: ``UNGONE``."""
    removed = REMOVED_VERSIONS.get(api_key) if api_key is not None else None
    if removed is None or version is None or not removed[0] <= version <= removed[1]:
        return UNGONE
    return None if api_key in REMOVED_APIS else removed[1] + 1


def old_record_format(api_key: int | None, direction: str, body: str | None) -> bool:
    """Whether a Produce request or a Fetch response carries record sets in message format v0/v1."""
    wanted = (api_key == PRODUCE and direction == "request") or (api_key == FETCH and direction == "response")
    return bool(wanted and body and any(text in body for text in OLD_RECORD_FORMAT))


@dataclass
class Client:
    """One client's inventory row (see the module's docstring)."""

    client_ip: str | None
    client_id: str | None
    principal: str | None
    software_name: str | None = None
    software_version: str | None = None
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    brokers: set[str] = field(default_factory=set)
    apis: dict[tuple[str, int | None], int] = field(default_factory=dict)  # (api name, version) -> requests
    api_keys: dict[str, int | None] = field(default_factory=dict)  # api name -> api key
    errors: dict[int, int] = field(default_factory=dict)  # error code -> responses carrying it
    message_sets: dict[str, int] = field(default_factory=dict)  # "produced"/"fetched" -> messages in v0/v1

    @property
    def software(self) -> str:
        return software_text({"software_name": self.software_name, "software_version": self.software_version})

    def removed(self) -> list[dict[str, Any]]:
        """Per API, the versions this client used that Kafka 4.0 removed, their requests, and the lowest version
        it must move to (None: the API itself is gone)."""
        out: dict[str, dict[str, Any]] = {}
        for (name, version), n in sorted(self.apis.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            key = self.api_keys.get(name)
            target = move_to(key, version)
            if target == UNGONE:
                continue
            entry = out.setdefault(name, {"api_name": name, "api_key": key, "versions": [], "requests": 0,
                                          "move_to": target})
            entry["versions"].append(version)
            entry["requests"] += n
        return list(out.values())

    def row(self) -> dict[str, Any]:
        """The row as plain values (lists sorted): a ``clients.parquet`` row."""
        return {
            "client_ip": self.client_ip, "client_id": self.client_id, "principal": self.principal,
            "software_name": self.software_name, "software_version": self.software_version,
            "first_seen": self.first_seen, "last_seen": self.last_seen, "brokers": sorted(self.brokers),
            "apis": [{"api_name": name, "api_version": version, "requests": n}
                     for (name, version), n in sorted(self.apis.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))],
            "requests": sum(self.apis.values()),
            "errors": [{"error_code": code, "error_name": error_name(code), "responses": n}
                       for code, n in sorted(self.errors.items())],
            "removed_in_kafka_4": self.removed(),
            "message_set_produced": self.message_sets.get("produced", 0),
            "message_set_fetched": self.message_sets.get("fetched", 0),
        }


def software_text(row: dict[str, Any]) -> str:
    """A client row's software (ApiVersions v3+), or "software unknown"."""
    if row["software_name"] is None:
        return "software unknown"
    return f"{row['software_name']} {row['software_version'] or ''}".strip()


def apis_text(row: dict[str, Any]) -> str:
    """A client row's APIs: ``Produce v9 ×12, SaslToken ×2`` (a legacy SASL token has no version)."""
    def one(api: dict[str, Any]) -> str:
        version = "" if api["api_version"] is None else f" v{api['api_version']}"
        return f"{api['api_name']}{version} ×{api['requests']}"

    return ", ".join(one(a) for a in row["apis"])


def errors_text(row: dict[str, Any]) -> str:
    """A client row's error codes: ``NOT_LEADER_OR_FOLLOWER (6) ×2``."""
    return ", ".join(f"{e['error_name']} ({e['error_code']}) ×{e['responses']}" for e in row["errors"])


def readiness(row: dict[str, Any]) -> list[str]:
    """What in a client's row (:meth:`Client.row`) stands between it and Kafka 4.0, one text per thing; empty
    when it is ready."""
    out = [f"{r['api_name']} v{'/'.join(map(str, r['versions']))} ×{r['requests']} "
           + ("(the API is gone)" if r["move_to"] is None else f"(needs v{r['move_to']}+)")
           for r in row["removed_in_kafka_4"]]
    for what in ("produced", "fetched"):
        if row[f"message_set_{what}"]:
            out.append(f"MessageSet v0/v1 {what} ×{row[f'message_set_{what}']}")
    return out


def build_clients(usage: Iterable[Sequence[Any]], errors: Iterable[Sequence[Any]]) -> list[Client]:
    """The clients of the usage and error rows (``USAGE_FIELDS``, ``ERROR_FIELDS`` order), ordered by address,
    client id and principal."""
    clients: dict[tuple[Any, Any, Any], Client] = {}

    def client(key: tuple[Any, Any, Any]) -> Client:
        found = clients.get(key)
        if found is None:
            found = clients[key] = Client(*key)
        return found

    for (ip, client_id, principal, broker, direction, api_key, api_name, version, messages, first, last,
         software_name, software_version, old_sets) in usage:
        c = client((ip, client_id, principal))
        if first is not None and (c.first_seen is None or first < c.first_seen):
            c.first_seen = first
        if last is not None and (c.last_seen is None or last > c.last_seen):
            c.last_seen = last
        if broker is not None:
            c.brokers.add(broker)
        if software_name is not None and (c.software_name is None or (software_name, software_version or "")
                                          < (c.software_name, c.software_version or "")):
            c.software_name, c.software_version = software_name, software_version or None  # the same everywhere
        if old_sets:
            what = "produced" if direction == "request" else "fetched"
            c.message_sets[what] = c.message_sets.get(what, 0) + old_sets
        if direction == "request":
            name = api_name or f"key {api_key}"
            c.apis[name, version] = c.apis.get((name, version), 0) + messages
            c.api_keys[name] = api_key
    for ip, client_id, principal, code, responses in errors:
        c = client((ip, client_id, principal))
        c.errors[code] = c.errors.get(code, 0) + responses
    return [clients[k] for k in sorted(clients, key=lambda k: tuple("" if v is None else str(v) for v in k))]
