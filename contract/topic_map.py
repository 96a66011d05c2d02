"""The topic map (issue 32): who talks to which topic, in one place for the terminal command (``kafka-inspector
topics``, ``inspector/rows/topic_traffic.py``, pyarrow) and the report (``pipelines/topic_clients.py``, Spark).

A row is one topic × role × client: a **producer** is counted from its Produce requests; a **consumer** from its
Fetch requests (ShareFetch for a share group's members) and the responses to them. A client is its address, its
client id and its principal, with the software it named in ApiVersions v3+ (as in the client inventory,
``contract/clients.py``); a consumer also has its group (below). Each row says when the client was first and last
seen naming the topic in such a message, how many requests named it (a Fetch request of an incremental fetch
session, KIP-227, names only the partitions that changed: the responses show the rest, and count in the times,
not in ``requests``), the brokers it talked to about it, and the record bytes and records of the record sets
(Produce requests' for a producer, Fetch and ShareFetch responses' for a consumer) where the record level
decoded them: ``record_bytes`` is the sum of the record sets' sizes, ``records`` the sum of their batches'
``recordCount`` (a v0/v1 message counts one; the inner messages of a compressed v0/v1 wrapper are not counted,
its header does not say how many); each is null when no record set of the row was decoded that far
(``read --records size`` gives the sizes, not the batches).

**Topics by name.** A message's topics come from its body, each entry's name, else its topic id; an id is named
as the events' ``topics`` column names it (by what the capture had said by then,
``inspector/kafka/topic_names.py``): the column holds the distinct topics of the message in the order its body
names them, so the body's distinct references, read in that same order (:data:`SOURCES`' ``walk``), pair with the
column's entries one to one. When
the two do not pair (a body not decoded whole), the references stand as they are.

**Not clients.** Rows unwrapped from an Envelope (forwarded by a broker) and a follower's Fetch requests
(``ReplicaId``, or ``ReplicaState.ReplicaId`` from Fetch v15, of 0 or more: a broker replicating), with the
responses on that follower's connection, are left out.

**A consumer's group.** Fetch names no group. A client (address, client id, principal) is a member of the groups
its membership requests name (:data:`MEMBER_APIS`); a consumer row gets the client's group when it is in one, or
when exactly one of its groups' requests (an OffsetCommit, a heartbeat's subscription, a ShareFetch, a classic
JoinGroup's consumer subscription: :func:`subscribed_topics`) named the topic; else none (a consumer that assigns
itself partitions, or one whose address, client id and principal are shared by members of several groups that
all name the topic).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contract.kafka import (
    CONSUMER_GROUP_HEARTBEAT,
    FETCH,
    HEARTBEAT,
    JOIN_GROUP,
    OFFSET_COMMIT,
    PRODUCE,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_HEARTBEAT,
    STREAMS_GROUP_HEARTBEAT,
    SYNC_GROUP,
)

PRODUCER, CONSUMER = "producer", "consumer"
ROLES = (PRODUCER, CONSUMER)
#: Kafka's "no topic id" (older versions, or a topic the broker has no id for): it names nothing.
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True, slots=True)
class Walk:
    """One array of a body whose entries name a topic: the array, the entry's name field (None: by id only)."""

    array: str
    name: str | None
    topic_id: str = "TopicId"


@dataclass(frozen=True, slots=True)
class Source:
    """A message that makes a row: its role, the arrays that name topics in the order the ``topics`` column lists
    them (``walk``; the first is the one that counts, ``counted``), and whether it counts as a request or carries
    the record sets (``partitions``, each partition's ``Records``)."""

    role: str
    walk: tuple[Walk, ...]
    request: bool
    partitions: str | None = None

    @property
    def counted(self) -> Walk:
        return self.walk[0]


#: (api key, direction) -> how that message counts.
SOURCES: dict[tuple[int, str], Source] = {
    (PRODUCE, "request"): Source(PRODUCER, (Walk("TopicData", "Name"),), True, "PartitionData"),
    (FETCH, "request"): Source(CONSUMER, (Walk("Topics", "Topic"), Walk("ForgottenTopicsData", "Topic")), True),
    (FETCH, "response"): Source(CONSUMER, (Walk("Responses", "Topic"),), False, "Partitions"),
    (SHARE_FETCH, "request"): Source(CONSUMER, (Walk("Topics", None), Walk("ForgottenTopicsData", None)), True),
    (SHARE_FETCH, "response"): Source(CONSUMER, (Walk("Responses", None),), False, "Partitions"),
}
#: Requests that make their client a member of their ``group_id`` (and whose ``topics`` the group is tied to).
MEMBER_APIS = (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT, SHARE_GROUP_HEARTBEAT,
               STREAMS_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE)

#: The fields of a traffic row, in order: what each side's grouping yields, one per (client, topic, role, broker).
TRAFFIC_FIELDS = ("client_ip", "client_id", "principal", "topic", "role", "broker", "first_seen", "last_seen",
                  "requests", "record_bytes", "records")
#: The fields of a membership row: a client, a group its requests named, and a topic they named (or None).
MEMBER_FIELDS = ("client_ip", "client_id", "principal", "group_id", "topic")
#: The fields of a software row: a client and the software it named (``contract.clients``' rule: the least).
SOFTWARE_FIELDS = ("client_ip", "client_id", "principal", "software_name", "software_version")


def subscribed_topics(api_key: int | None, body: dict[str, Any]) -> list[str]:
    """The topics a classic JoinGroup request subscribes to: its protocols' decoded consumer subscriptions
    (``Protocols[].MetadataDecoded.value.Topics``; the ``topics`` column does not read them). Empty for other
    messages."""
    if api_key != JOIN_GROUP:
        return []
    out: dict[str, None] = {}
    for protocol in body.get("Protocols") or ():
        decoded = protocol.get("MetadataDecoded") if isinstance(protocol, dict) else None
        value = decoded.get("value") if isinstance(decoded, dict) else None
        topics = value.get("Topics") if isinstance(value, dict) else None
        for topic in topics if isinstance(topics, list) else ():
            if isinstance(topic, str) and topic:
                out.setdefault(topic)
    return list(out)


def is_replica_fetch(body: dict[str, Any]) -> bool:
    """Whether a Fetch request body is a follower's (a broker replicating), not a consumer's."""
    replica = body.get("ReplicaId")
    state = body.get("ReplicaState")
    if isinstance(state, dict) and isinstance(state.get("ReplicaId"), int):
        replica = state["ReplicaId"]
    return isinstance(replica, int) and replica >= 0


def reference(entry: dict[str, Any], walk: Walk) -> str | None:
    """An array entry's topic: its name when not empty, else its id when not the zero id."""
    name = entry.get(walk.name) if walk.name is not None else None
    if isinstance(name, str) and name:
        return name
    topic_id = entry.get(walk.topic_id)
    return topic_id if isinstance(topic_id, str) and topic_id and topic_id != ZERO_UUID else None


def batch_records(batch: dict[str, Any]) -> int | None:
    """Records a batch header says it holds: a RecordBatch's ``recordCount``; 1 for an uncompressed v0/v1 message;
    None for a compressed v0/v1 wrapper (its header does not say)."""
    count = batch.get("recordCount")
    if isinstance(count, int):
        return count
    return 1 if batch.get("magic") in (0, 1) and batch.get("compression") == "none" else None


def _add(total: int | None, value: int | None) -> int | None:
    return total if value is None else (total or 0) + value


@dataclass
class Traffic:
    """One topic of one message: the record bytes and records of its record sets (None: not decoded)."""

    topic: str
    record_bytes: int | None = None
    records: int | None = None


def message_topics(source: Source, body: dict[str, Any], topics: str | None) -> list[Traffic]:
    """The topics a message of ``source`` counts for (its ``counted`` array's), by name as ``topics`` (the events
    column) names them, with their record bytes and records summed over the message's partitions."""
    refs: dict[str, None] = {}  # distinct, in order
    counted: list[tuple[str, dict[str, Any]]] = []
    for walk in source.walk:
        entries = body.get(walk.array)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            ref = reference(entry, walk) if isinstance(entry, dict) else None
            if ref is None:
                continue
            refs.setdefault(ref)
            if walk is source.counted:
                counted.append((ref, entry))
    names = topics.split(",") if topics else []
    named = dict(zip(refs, names, strict=True)) if len(names) == len(refs) else {}
    out: dict[str, Traffic] = {}
    for ref, entry in counted:
        topic = named.get(ref, ref)
        found = out.get(topic)
        if found is None:
            found = out[topic] = Traffic(topic)
        if source.partitions is None:
            continue
        for partition in entry.get(source.partitions) or ():
            records = partition.get("Records") if isinstance(partition, dict) else None
            if not isinstance(records, dict):
                continue
            size = records.get("size")
            if isinstance(size, int):
                found.record_bytes = (found.record_bytes or 0) + size
            for batch in records.get("batches") or ():
                count = batch_records(batch) if isinstance(batch, dict) else None
                found.records = _add(found.records, count)
    return list(out.values())


def consumer_group(groups: dict[str, set[str]], topic: str) -> str | None:
    """A consumer's group for ``topic``: its one group, else the one of its groups whose requests named the topic."""
    if len(groups) == 1:
        return next(iter(groups))
    naming = [g for g, topics in groups.items() if topic in topics]
    return naming[0] if len(naming) == 1 else None


@dataclass
class TopicClient:
    """One row of the topic map (see the module's docstring)."""

    topic: str
    role: str
    client_ip: str | None
    client_id: str | None
    principal: str | None
    software_name: str | None = None
    software_version: str | None = None
    group_id: str | None = None
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    requests: int = 0
    record_bytes: int | None = None
    records: int | None = None
    brokers: set[str] = field(default_factory=set)

    def row(self) -> dict[str, Any]:
        """The row as plain values: a ``topics.parquet`` row (``ROW_FIELDS``)."""
        return {"topic": self.topic, "role": self.role, "client_ip": self.client_ip, "client_id": self.client_id,
                "principal": self.principal, "software_name": self.software_name,
                "software_version": self.software_version, "group_id": self.group_id, "first_seen": self.first_seen,
                "last_seen": self.last_seen, "requests": self.requests, "record_bytes": self.record_bytes,
                "records": self.records, "brokers": sorted(self.brokers)}


#: A ``topics.parquet`` row's fields, in order.
ROW_FIELDS = ("topic", "role", "client_ip", "client_id", "principal", "software_name", "software_version",
              "group_id", "first_seen", "last_seen", "requests", "record_bytes", "records", "brokers")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def build_topic_map(traffic: Iterable[Sequence[Any]], members: Iterable[Sequence[Any]],
                    software: Iterable[Sequence[Any]]) -> list[TopicClient]:
    """The topic map's rows from traffic, membership and software rows (``TRAFFIC_FIELDS``, ``MEMBER_FIELDS``,
    ``SOFTWARE_FIELDS`` order), ordered by topic, role, address, client id, principal."""
    groups: dict[tuple[Any, ...], dict[str, set[str]]] = {}
    for ip, client_id, principal, group_id, topic in members:
        if group_id is None:
            continue
        named = groups.setdefault((ip, client_id, principal), {}).setdefault(group_id, set())
        if topic is not None:
            named.add(topic)
    names: dict[tuple[Any, ...], tuple[str, str]] = {}
    for ip, client_id, principal, name, version in software:
        who = (ip, client_id, principal)
        if name is not None and (who not in names or (name, version or "") < names[who]):
            names[who] = (name, version or "")
    rows: dict[tuple[Any, ...], TopicClient] = {}
    for ip, client_id, principal, topic, role, broker, first, last, requests, record_bytes, records in traffic:
        key = (topic, role, ip, client_id, principal)
        row = rows.get(key)
        if row is None:
            row = rows[key] = TopicClient(topic, role, ip, client_id, principal)
        if first is not None and (row.first_seen is None or first < row.first_seen):
            row.first_seen = first
        if last is not None and (row.last_seen is None or last > row.last_seen):
            row.last_seen = last
        row.requests += requests or 0
        row.record_bytes = _add(row.record_bytes, record_bytes)
        row.records = _add(row.records, records)
        if broker is not None:
            row.brokers.add(broker)
    for (topic, role, ip, client_id, principal), row in rows.items():
        who = (ip, client_id, principal)
        if who in names:
            row.software_name, row.software_version = names[who][0], names[who][1] or None
        if role == CONSUMER:
            row.group_id = consumer_group(groups.get(who, {}), topic)
    return [rows[k] for k in sorted(rows, key=lambda k: tuple(_text(v) for v in k))]

