"""Who the clients are (issue 21): one row per client, from the events, with pyarrow only (no Spark).

A client is its address, its client id and its principal (where the connection authenticated). Its row holds
the software it named in ApiVersions v3+ (``ClientSoftwareName``/``ClientSoftwareVersion``; a client that never
sent one is "software unknown"), when it was first and last seen, the brokers it talked to, every (API,
version) it used with how many requests, and the error codes its responses carried, with counts. Pure: a table
of events in, rows out; ``kafka-inspector clients`` reads captures or events datasets and prints them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from contract.kafka import error_name

#: The events columns the inventory reads.
COLUMNS = ("ts", "client_ip", "client_id", "principal", "broker_ip", "broker_port", "direction", "api_key",
           "api_name", "api_version", "error_code", "nested_error_codes", "body", "envelope_correlation_id")
API_VERSIONS = 18


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
        }


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
        if columns["direction"][i] == "request":
            client.apis[name, version] = client.apis.get((name, version), 0) + 1
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
