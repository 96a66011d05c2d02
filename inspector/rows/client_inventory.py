"""Who the clients are (issue 21), from a table of events with pyarrow only (no Spark): ``kafka-inspector clients``.

This module only groups the events into usage and error rows; what a client is and what its row says (software,
readiness for Kafka 4.0) is ``contract/clients.py``, which the report's Spark job uses too.
"""

from __future__ import annotations

import json
from dataclasses import astuple, dataclass
from typing import Any

import pyarrow as pa

from contract.clients import API_VERSIONS, SOFTWARE_FROM, Client, build_clients, old_record_format
from inspector.kafka.connection import Endpoint

#: The events columns the inventory reads.
COLUMNS = ("ts", "client_ip", "client_id", "principal", "broker_ip", "broker_port", "direction", "api_key",
           "api_name", "api_version", "error_code", "nested_error_codes", "body", "envelope_correlation_id")


@dataclass(slots=True)
class _Usage:
    """What the events of one (client, broker, direction, API, version) say, in build_clients' order."""

    count: int
    first: Any  # the first and last event's ts
    last: Any
    software: str | None = None  # the least ClientSoftwareName/Version of its ApiVersions requests
    software_version: str | None = None
    old_format: int = 0  # requests or responses carrying record sets of the old (magic 0/1) format


class Inventory:
    """The client inventory, built batch by batch: memory holds one entry per (client, broker, direction, API,
    version) and per (client, error code), whatever the number of events."""

    def __init__(self) -> None:
        self.usage: dict[tuple[Any, ...], _Usage] = {}
        self.errors: dict[tuple[Any, ...], int] = {}

    def add(self, events: pa.RecordBatch | pa.Table) -> None:
        """Count a batch of events (the events contract's columns; a column it lacks, as in an older dataset, is
        null; rows forwarded in an Envelope are left out)."""
        n = events.num_rows
        names = set(events.schema.names)
        col: dict[str, list[Any]] = {name: events.column(name).to_pylist() if name in names else [None] * n
                                     for name in COLUMNS}
        usage, errors = self.usage, self.errors
        for i in range(n):
            if col["envelope_correlation_id"][i] is not None:
                continue  # forwarded by a broker: its client is not on this wire
            who = (col["client_ip"][i], col["client_id"][i], col["principal"][i])
            ip = col["broker_ip"][i]
            broker = None if ip is None else str(Endpoint(ip, col["broker_port"][i]))  # [v6]:port, as the report
            api_key, direction, version = col["api_key"][i], col["direction"][i], col["api_version"][i]
            key = (*who, broker, direction, api_key, col["api_name"][i], version)
            ts = col["ts"][i]
            entry = usage.get(key)
            if entry is None:
                entry = usage[key] = _Usage(0, ts, ts)
            entry.count += 1
            entry.first = min(entry.first, ts)
            entry.last = max(entry.last, ts)
            body = col["body"][i]
            if direction == "request" and api_key == API_VERSIONS and (version or 0) >= SOFTWARE_FROM:
                software = software_of(body)
                if software is not None and (entry.software is None
                                             or software < (entry.software, entry.software_version or "")):
                    entry.software, entry.software_version = software
            if old_record_format(api_key, direction, body):
                entry.old_format += 1
            if direction == "response":
                codes = set(col["nested_error_codes"][i] or ())
                if col["error_code"][i]:
                    codes.add(col["error_code"][i])
                for code in codes:
                    errors[(*who, code)] = errors.get((*who, code), 0) + 1

    def clients(self) -> list[Client]:
        """The clients counted so far (``contract.clients.build_clients``)."""
        return build_clients(((*key, *astuple(usage)) for key, usage in self.usage.items()),
                             ((*key, n) for key, n in self.errors.items()))


def inventory(events: pa.Table) -> list[Client]:
    """The clients of a table of events (:class:`Inventory`, in one batch)."""
    found = Inventory()
    found.add(events)
    return found.clients()


def software_of(body: str | None) -> tuple[str, str] | None:
    """An ApiVersions v3+ request's ClientSoftwareName and ClientSoftwareVersion (the topic map reads them too)."""
    try:
        decoded = json.loads(body) if body else None
    except ValueError:
        return None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("ClientSoftwareName"), str):
        return None
    version = decoded.get("ClientSoftwareVersion")
    return decoded["ClientSoftwareName"], version if isinstance(version, str) else ""
