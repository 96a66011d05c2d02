"""The topic map (issue 32) from events with pyarrow only (no Spark): ``kafka-inspector topics``.

This module only groups the events, batch by batch, into traffic, membership and software rows; what a row of the
map is and says is ``contract/topic_map.py``, which the report's Spark job (``pipelines/topic_clients.py``) uses
too. Memory holds one entry per (client, topic, role, broker), per (client, group, topic), per client and per
follower connection, whatever the number of events.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from contract.clients import API_VERSIONS, SOFTWARE_FROM
from contract.kafka import FETCH, JOIN_GROUP
from contract.topic_map import (
    MEMBER_APIS,
    SOURCES,
    TopicClient,
    build_topic_map,
    is_replica_fetch,
    message_topics,
    subscribed_topics,
)
from inspector.kafka.connection import Endpoint
from inspector.rows.client_inventory import software_of

#: The events columns the map reads.
COLUMNS = ("ts", "capture", "conn_id", "client_ip", "client_id", "principal", "broker_ip", "broker_port",
           "direction", "api_key", "api_version", "group_id", "topics", "body", "envelope_correlation_id")


class TopicMap:
    """The topic map, built batch by batch (:meth:`add`), then :meth:`rows`."""

    def __init__(self) -> None:
        self.traffic: dict[tuple[Any, ...], list[Any]] = {}
        self.members: set[tuple[Any, ...]] = set()
        self.software: dict[tuple[Any, ...], tuple[str, str]] = {}
        self.followers: set[tuple[Any, Any]] = set()  # (capture, conn_id) of a follower's Fetch connection

    def add(self, events: pa.RecordBatch | pa.Table) -> None:
        """Count a batch of events (the events contract's columns; a column it lacks is null)."""
        n = events.num_rows
        names = set(events.schema.names)
        col: dict[str, list[Any]] = {name: events.column(name).to_pylist() if name in names else [None] * n
                                     for name in COLUMNS}
        for i in range(n):
            if col["envelope_correlation_id"][i] is not None:
                continue  # forwarded by a broker: its client is not on this wire
            api_key, direction = col["api_key"][i], col["direction"][i]
            who = (col["client_ip"][i], col["client_id"][i], col["principal"][i])
            if direction == "request" and api_key == API_VERSIONS and (col["api_version"][i] or 0) >= SOFTWARE_FROM:
                named_software = software_of(col["body"][i])
                if named_software is not None and (who not in self.software or named_software < self.software[who]):
                    self.software[who] = named_software
            source = SOURCES.get((api_key, direction))
            body = _body(col["body"][i]) if source is not None or api_key == JOIN_GROUP else {}
            found = message_topics(source, body, col["topics"][i]) if source is not None else []
            if direction == "request" and api_key in MEMBER_APIS and col["group_id"][i] is not None:
                group = col["group_id"][i]
                self.members.add((*who, group, None))
                # a ShareFetch names its group's topics as it counts them; the others, by the topics column, and a
                # JoinGroup by its subscriptions too
                named = [t.topic for t in found] if source is not None else (col["topics"][i] or "").split(",")
                for topic in [*named, *subscribed_topics(api_key, body)]:
                    if topic:
                        self.members.add((*who, group, topic))
            if source is None:
                continue
            conn = (col["capture"][i], col["conn_id"][i])
            if api_key == FETCH and direction == "request" and is_replica_fetch(body):
                self.followers.add(conn)
            if conn in self.followers:
                continue
            ip = col["broker_ip"][i]
            broker = None if ip is None else str(Endpoint(ip, col["broker_port"][i]))
            ts = col["ts"][i]
            for t in found:
                key = (*who, t.topic, source.role, broker)
                entry = self.traffic.get(key)
                if entry is None:
                    entry = self.traffic[key] = [ts, ts, 0, None, None]
                entry[0] = min(entry[0], ts)
                entry[1] = max(entry[1], ts)
                entry[2] += 1 if source.request else 0
                if t.record_bytes is not None:
                    entry[3] = (entry[3] or 0) + t.record_bytes
                if t.records is not None:
                    entry[4] = (entry[4] or 0) + t.records

    def rows(self) -> list[TopicClient]:
        """The map's rows so far (``contract.topic_map.build_topic_map``)."""
        return build_topic_map(((*key, *values) for key, values in self.traffic.items()), self.members,
                               ((*who, name, version) for who, (name, version) in self.software.items()))


def _body(text: str | None) -> dict[str, Any]:
    try:
        decoded = json.loads(text) if text else None
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}
