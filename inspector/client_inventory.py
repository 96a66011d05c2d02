"""Who the clients are (issue 21): one row per client, from the events, with pyarrow only (no Spark).

A client is its address, its client id and its principal (where the connection authenticated). Its row holds
the software it named in ApiVersions v3+ (``ClientSoftwareName``/``ClientSoftwareVersion``; a client that never
sent one is "software unknown"), when it was first and last seen, the brokers it talked to, every (API,
version) it used with how many requests, and the error codes its responses carried, with counts. Pure: a table
of events in, rows out; ``kafka-inspector clients`` reads captures or events datasets and prints them.

Readiness for Kafka 4.0 (KIP-896): the (API, version) pairs a client used that the newest Kafka removed, each
with the lowest version it must move to, from the specs (``contract.apis.REMOVED_VERSIONS``/``REMOVED_APIS``,
recorded by the spec converter from the two spec generations), never typed by hand. Also the record sets in
message format v0/v1 (MessageSet, magic 0 or 1) a client produced or fetched, which Kafka 4.0 no longer writes
(KIP-724); the ZooKeeper-era keys 4-7 (ControlledShutdown v0 among them) are removed APIs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from contract.apis import REMOVED_APIS, REMOVED_VERSIONS
from contract.kafka import error_name

#: The events columns the inventory reads.
COLUMNS = ("ts", "client_ip", "client_id", "principal", "broker_ip", "broker_port", "direction", "api_key",
           "api_name", "api_version", "error_code", "nested_error_codes", "body", "envelope_correlation_id")
API_VERSIONS = 18
PRODUCE, FETCH = 0, 1
#: A record set in message format v0/v1, as the body's JSON writes its batches (a JSON string escapes its quotes:
#: no string value can hold this text).
_OLD_FORMAT = ('"magic":0', '"magic":1')


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
    message_sets: dict[str, int] = field(default_factory=dict)  # "produced"/"fetched" -> messages in format v0/v1
    errors: dict[int, int] = field(default_factory=dict)  # error code -> responses carrying it

    @property
    def software(self) -> str:
        if self.software_name is None:
            return "software unknown"
        return f"{self.software_name} {self.software_version or ''}".strip()

    def row(self) -> dict[str, Any]:
        """The row as plain values (lists sorted), as ``clients.parquet`` and the tests take it."""
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

    def removed(self) -> list[dict[str, Any]]:
        """Per API, the versions this client used that Kafka 4.0 removed, their requests, and the lowest version
        it must move to (None: the API itself is gone)."""
        out: dict[str, dict[str, Any]] = {}
        for (name, version), n in sorted(self.apis.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            key = self.api_keys.get(name)
            removed = REMOVED_VERSIONS.get(key) if key is not None else None
            if removed is None or version is None or not removed[0] <= version <= removed[1]:
                continue
            entry = out.setdefault(name, {"api_name": name, "api_key": key, "versions": [], "requests": 0,
                                          "move_to": None if key in REMOVED_APIS else removed[1] + 1})
            entry["versions"].append(version)
            entry["requests"] += n
        return list(out.values())


def inventory(events: pa.Table) -> list[Client]:
    """The clients of ``events`` (the events contract's columns), ordered by address, client id, principal."""
    columns = {name: events.column(name).to_pylist() for name in COLUMNS}
    clients: dict[tuple[str | None, str | None, str | None], Client] = {}
    for i in range(events.num_rows):
        if columns["envelope_correlation_id"][i] is not None:
            continue  # forwarded by a broker: its client is not on this wire
        key = (columns["client_ip"][i], columns["client_id"][i], columns["principal"][i])
        client = clients.get(key)
        if client is None:
            client = clients[key] = Client(*key)
        ts = columns["ts"][i]
        if client.first_seen is None or ts < client.first_seen:
            client.first_seen = ts
        if client.last_seen is None or ts > client.last_seen:
            client.last_seen = ts
        if columns["broker_ip"][i] is not None:
            client.brokers.add(f"{columns['broker_ip'][i]}:{columns['broker_port'][i]}")
        name = columns["api_name"][i] or f"key {columns['api_key'][i]}"
        version = columns["api_version"][i]
        api_key = columns["api_key"][i]
        request = columns["direction"][i] == "request"
        if (api_key == PRODUCE and request) or (api_key == FETCH and not request):
            body = columns["body"][i]
            if body and any(text in body for text in _OLD_FORMAT):
                what = "produced" if request else "fetched"
                client.message_sets[what] = client.message_sets.get(what, 0) + 1
        if request:
            client.apis[name, version] = client.apis.get((name, version), 0) + 1
            client.api_keys[name] = api_key
            if columns["api_key"][i] == API_VERSIONS and (version or 0) >= 3 and client.software_name is None:
                _software(client, columns["body"][i])
            continue
        codes = set(columns["nested_error_codes"][i] or ())
        if columns["error_code"][i]:
            codes.add(columns["error_code"][i])
        for code in codes:
            client.errors[code] = client.errors.get(code, 0) + 1
    return [clients[k] for k in sorted(clients, key=lambda k: tuple("" if v is None else str(v) for v in k))]


def _software(client: Client, body: str | None) -> None:
    try:
        decoded = json.loads(body) if body else None
    except ValueError:
        return
    if isinstance(decoded, dict) and isinstance(decoded.get("ClientSoftwareName"), str):
        client.software_name = decoded["ClientSoftwareName"]
        version = decoded.get("ClientSoftwareVersion")
        client.software_version = version if isinstance(version, str) else None
