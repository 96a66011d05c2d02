"""The group inventory (issue 32): ``groups.parquet``, one row per group, and the ``classic_group_can_move`` finding.

A group is any group id a membership request names (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
TxnOffsetCommit, ConsumerGroupHeartbeat, ShareGroupHeartbeat, StreamsGroupHeartbeat, ShareFetch,
ShareAcknowledge) or that has rows in ``lag.parquet`` (an OffsetFetch of a monitor names it too). Its row says:

* ``protocol``: ``classic`` (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), ``consumer`` (KIP-848,
  ConsumerGroupHeartbeat), ``share`` (KIP-932: ShareGroupHeartbeat, ShareFetch, ShareAcknowledge) or ``streams``
  (KIP-1071, StreamsGroupHeartbeat); several joined by ``+`` (a group moving from classic to consumer, as Kafka 4.0
  lets it, holds both); null when only its commits or lag were seen;
* for classic groups the ``ProtocolType`` declared and the assignors offered (JoinGroup requests) and chosen
  (JoinGroup responses); for consumer groups the server assignors the members asked for (``ServerAssignor``);
* the members seen (member ids), their clients (address, client id, principal) with the software each named
  (ApiVersions v3+), the coordinators (the brokers the membership requests went to), first and last seen;
* the generations (classic) or member epochs (heartbeat groups) seen, first and last, and the rebalances: the
  generations or epochs the coordinator gave, counted as ``rebalances.parquet`` counts them (one source:
  ``rebalances.answered``, ``heartbeat_groups.epoch_given``);
* the lag where known (``lag.parquet``): the latest lag of each partition the group committed, summed, and the
  partitions still behind at their latest commit, each with the member that owned it then.

``classic_group_can_move`` (info), one per group: a classic consumer group (ProtocolType ``consumer``) with a
member whose software is known to run the consumer group protocol (``contract/consumer_protocol.py``), naming
those clients, and those that are not known to. Kafka 4.0 recommends the consumer protocol over the classic one:
the coordinator assigns, rebalances no longer stop the whole group. One per group and never for a group that
already runs the consumer protocol, so a fleet of classic groups gives one line each, not one per member.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from contract.clients import software_text
from contract.consumer_protocol import supports_consumer_protocol
from contract.kafka import (
    CONSUMER_GROUP_HEARTBEAT,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_HEARTBEAT,
    STREAMS_GROUP_HEARTBEAT,
    SYNC_GROUP,
    TXN_OFFSET_COMMIT,
)
from pipelines.events_dataset import endpoint, evidence, requests
from pipelines.findings import EVIDENCE_TYPE, as_findings
from pipelines.groups import joins
from pipelines.heartbeat_groups import epoch_given, heartbeats
from pipelines.lag import Lag
from pipelines.ownership import OWNER_COLUMNS
from pipelines.rebalances import answered
from pipelines.topic_clients import software_rows

#: Membership request API key -> the protocol it speaks (None: any group's, e.g. OffsetCommit).
PROTOCOL_OF: dict[int, str | None] = {
    JOIN_GROUP: "classic", SYNC_GROUP: "classic", HEARTBEAT: "classic", LEAVE_GROUP: "classic", OFFSET_COMMIT: None,
    TXN_OFFSET_COMMIT: None,
    CONSUMER_GROUP_HEARTBEAT: "consumer", SHARE_GROUP_HEARTBEAT: "share", SHARE_FETCH: "share",
    SHARE_ACKNOWLEDGE: "share", STREAMS_GROUP_HEARTBEAT: "streams",
}
#: Lagging partitions a group row lists at most (the most behind first).
MAX_LAGGING = 50

_CLIENT = StructType([StructField("client_ip", StringType()), StructField("client_id", StringType()),
                      StructField("principal", StringType()), StructField("software", StringType())])
_LAGGING = StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                       StructField("lag", LongType()), StructField("ts", TimestampType()),
                       *[StructField(c, StringType()) for c in OWNER_COLUMNS]])
GROUPS_SCHEMA = StructType([
    StructField("group_id", StringType()),
    StructField("protocol", StringType()),
    StructField("protocol_types", ArrayType(StringType())),
    StructField("assignors_offered", ArrayType(StringType())),
    StructField("assignors_chosen", ArrayType(StringType())),
    StructField("members", LongType()),
    StructField("clients", ArrayType(_CLIENT)),
    StructField("coordinators", ArrayType(StringType())),
    StructField("first_seen", TimestampType()),
    StructField("last_seen", TimestampType()),
    StructField("generation_first", IntegerType()),
    StructField("generation_last", IntegerType()),
    StructField("rebalances", LongType()),
    StructField("lag", LongType()),
    StructField("lagging", ArrayType(_LAGGING)),
])
_WHO = ("client_ip", "client_id", "principal")


@dataclass
class Group:
    """One group's row (see the module's docstring), with what its finding needs (``evidence`` per client)."""

    group_id: str
    protocols: set[str] = field(default_factory=set)
    protocol_types: set[str] = field(default_factory=set)
    offered: set[str] = field(default_factory=set)
    chosen: set[str] = field(default_factory=set)
    members: set[str] = field(default_factory=set)
    clients: dict[tuple[Any, ...], str | None] = field(default_factory=dict)  # who -> software text
    software: dict[tuple[Any, ...], tuple[str, str] | None] = field(default_factory=dict)
    evidence: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    coordinators: set[str] = field(default_factory=set)
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    generations: set[int] = field(default_factory=set)
    lagging: list[dict[str, Any]] = field(default_factory=list)
    lag: int | None = None

    def seen(self, first: datetime | None, last: datetime | None) -> None:
        if first is not None and (self.first_seen is None or first < self.first_seen):
            self.first_seen = first
        if last is not None and (self.last_seen is None or last > self.last_seen):
            self.last_seen = last

    @property
    def protocol(self) -> str | None:
        return "+".join(sorted(self.protocols)) or None

    def row(self) -> dict[str, Any]:
        """A ``groups.parquet`` row."""
        clients = [{"client_ip": ip, "client_id": cid, "principal": principal, "software": software}
                   for (ip, cid, principal), software in sorted(self.clients.items(), key=lambda kv: _key(kv[0]))]
        return {
            "group_id": self.group_id, "protocol": self.protocol, "protocol_types": sorted(self.protocol_types),
            "assignors_offered": sorted(self.offered), "assignors_chosen": sorted(self.chosen),
            "members": len(self.members), "clients": clients, "coordinators": sorted(self.coordinators),
            "first_seen": self.first_seen, "last_seen": self.last_seen,
            "generation_first": min(self.generations) if self.generations else None,
            "generation_last": max(self.generations) if self.generations else None,
            "rebalances": len(self.generations), "lag": self.lag,
            "lagging": sorted(self.lagging, key=lambda p: (-p["lag"], p["topic"], p["partition"]))[:MAX_LAGGING],
        }


def _key(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple("" if v is None else str(v) for v in values)


def _order(ev: dict[str, Any]) -> tuple[Any, ...]:
    """Evidence samples in the order Spark sorts their structs (capture, conn_id, correlation_id; nulls first)."""
    return tuple((ev[k] is not None, ev[k]) for k in ("capture", "conn_id", "correlation_id"))


def _membership(events: DataFrame) -> DataFrame:
    """Per group, API, client and coordinator: first and last time, member ids, one message for evidence, and the
    client's software (``topic_clients.software_rows``)."""
    member = requests(events, list(PROTOCOL_OF)).where(F.col("group_id").isNotNull() & F.col(
        "envelope_correlation_id").isNull())
    grouped = member.groupBy("group_id", "api_key", *_WHO, endpoint("broker_ip", "broker_port").alias("broker")).agg(
        F.min("ts").alias("first"), F.max("ts").alias("last"),
        F.collect_set(F.when(F.col("member_id") != "", F.col("member_id"))).alias("members"),
        F.min(evidence()).alias("ev"))
    named = software_rows(events).select(*[F.col(c).alias(f"_s_{c}") for c in _WHO], "software_name",
                                         "software_version")
    same = [grouped[c].eqNullSafe(named[f"_s_{c}"]) for c in _WHO]  # a client without a principal is one too
    return grouped.join(F.broadcast(named), same, "left").drop(*[f"_s_{c}" for c in _WHO])


def _classic(events: DataFrame) -> DataFrame:
    """Per classic group: protocol types declared, assignors offered and chosen, member ids answered, generations."""
    jg = joins(events).where(F.col("group_id").isNotNull())
    ok = F.col("r_error_code") == 0
    return jg.groupBy("group_id").agg(
        F.collect_set(F.when(F.col("qb.ProtocolType") != "", F.col("qb.ProtocolType"))).alias("types"),
        F.array_distinct(F.flatten(F.collect_list("offered"))).alias("offered"),
        F.collect_set(F.when(ok & (F.col("r_protocol_name") != ""), F.col("r_protocol_name"))).alias("chosen"),
        F.collect_set(F.when(ok & (F.col("r_member_id") != ""), F.col("r_member_id"))).alias("members"),
        F.collect_set(F.when(answered(), F.col("r_generation_id"))).alias("generations"))


def _heartbeat(events: DataFrame) -> DataFrame:
    """Per heartbeat group: the member ids the coordinator named, the epochs it gave, and the server assignors
    members asked for (a ConsumerGroupHeartbeat's ``ServerAssignor``)."""
    assignor = F.get_json_object(F.col("body"), "$.ServerAssignor")
    return heartbeats(events).groupBy(F.col("group").alias("group_id")).agg(
        F.collect_set("member").alias("members"),
        F.collect_set(F.when(epoch_given(), F.col("rb.MemberEpoch"))).alias("generations"),
        F.collect_set(F.when((F.col("protocol") == "consumer") & (assignor != ""), assignor)).alias("chosen"))


def _lagging(lag: Lag) -> DataFrame:
    """Each group's partitions at their latest commit whose lag is known (else the latest commit, lag null): topic,
    partition, lag (not below 0), ts, the owner."""
    order = F.struct(F.col("lag").isNotNull(), F.col("ts"))
    latest = lag.rows.groupBy("group_id", "topic", "partition").agg(F.max_by(F.struct(
        F.greatest(F.col("lag"), F.lit(0)).alias("lag"), "ts", *OWNER_COLUMNS), order).alias("last"))
    return latest.select("group_id", "topic", "partition", "last.*")


def inventory(events: DataFrame, lag: Lag) -> list[Group]:
    """The groups of ``events`` (the report's events; ``lag`` the report's lag): a small result, ordered by id."""
    groups: dict[str, Group] = {}

    def group(group_id: str) -> Group:
        found = groups.get(group_id)
        if found is None:
            found = groups[group_id] = Group(group_id)
        return found

    for r in _membership(events).collect():
        g = group(r.group_id)
        who = (r.client_ip, r.client_id, r.principal)
        protocol = PROTOCOL_OF.get(r.api_key)
        if protocol is not None:
            g.protocols.add(protocol)
        g.seen(r["first"], r["last"])
        g.members.update(m for m in r.members if m)
        named = (r.software_name, r.software_version or "") if r.software_name is not None else None
        g.clients[who] = software_text({"software_name": named[0], "software_version": named[1]}) if named else None
        g.software[who] = named
        if r.ev is not None:  # the client's first message of all its membership requests (not of the first row)
            ev = r.ev.asDict()
            known = g.evidence.get(who)
            if known is None or _order(ev) < _order(known):
                g.evidence[who] = ev
        if r.broker is not None:
            g.coordinators.add(r.broker)
    for r in _classic(events).collect():
        g = group(r.group_id)
        g.protocol_types.update(r.types)
        g.offered.update(x for x in r.offered if x)
        g.chosen.update(r.chosen)
        g.members.update(r.members)
        g.generations.update(r.generations)
    for r in _heartbeat(events).collect():
        g = group(r.group_id)
        g.members.update(r.members)
        g.chosen.update(r.chosen)
        g.generations.update(r.generations)
    for r in _lagging(lag).collect():
        g = group(r.group_id)
        if r.lag is None:
            continue
        g.lag = (g.lag or 0) + r.lag
        if r.lag > 0:
            g.lagging.append(_lagging_row(r))
    return [groups[k] for k in sorted(groups)]


def _lagging_row(r: Row) -> dict[str, Any]:
    return {"topic": r.topic, "partition": r.partition, "lag": r.lag, "ts": r.ts,
            **{c: r[c] for c in OWNER_COLUMNS}}


def groups_frame(events: DataFrame, groups: list[Group]) -> DataFrame:
    """``groups.parquet``'s rows."""
    return events.sparkSession.createDataFrame([g.row() for g in groups], GROUPS_SCHEMA)


_FINDING_SCHEMA = StructType([
    StructField("ts_first", TimestampType()), StructField("ts_last", TimestampType()),
    StructField("broker", StringType()), StructField("group_id", StringType()), StructField("detail", StringType()),
    StructField("evidence", EVIDENCE_TYPE),
])


def _client_text(who: tuple[Any, ...], software: str | None) -> str:
    ip, client_id, principal = who
    return (f"{client_id if client_id is not None else 'null'} ({ip}"
            f"{', ' + principal if principal else ''}; {software or 'software unknown'})")


def can_move(g: Group) -> dict[str, Any] | None:
    """The ``classic_group_can_move`` finding of a group, or None."""
    if g.protocol != "classic" or "consumer" not in g.protocol_types:
        return None
    ready = [who for who, named in g.software.items() if named and supports_consumer_protocol(*named)]
    if not ready:
        return None
    others = [who for who in g.software if who not in ready]
    listed = "; ".join(_client_text(who, g.clients[who]) for who in sorted(ready, key=_key))
    rest = ("" if not others else " Not known to support it: " + "; ".join(
        _client_text(who, g.clients[who]) for who in sorted(others, key=_key)) + ": they can stay classic members "
        "while the others move (a Kafka 4.0 group holds both), or be upgraded first.")
    detail = (f"Group {g.group_id} runs the classic group protocol (JoinGroup/SyncGroup, assignors "
              f"{', '.join(sorted(g.chosen)) or 'unknown'}), but {len(ready)} of its member client(s) run software "
              f"that supports the consumer group protocol of KIP-848: {listed}.{rest} Kafka 4.0 recommends the "
              "consumer protocol (the coordinator assigns partitions and a member joining or leaving no longer "
              "stops the whole group): with brokers on Kafka 4.0 or later, set group.protocol=consumer on these "
              "clients.")
    evidence = [g.evidence[who] for who in sorted(ready, key=_key) if who in g.evidence]
    broker = next(iter(g.coordinators)) if len(g.coordinators) == 1 else None
    return {"ts_first": g.first_seen, "ts_last": g.last_seen, "broker": broker, "group_id": g.group_id,
            "detail": detail, "evidence": evidence}


def classic_group_can_move(events: DataFrame, groups: list[Group]) -> DataFrame:
    """The ``classic_group_can_move`` findings (info) of the inventory."""
    rows = [found for g in groups if (found := can_move(g)) is not None]
    df = events.sparkSession.createDataFrame(rows, _FINDING_SCHEMA)
    return as_findings(df, "classic_group_can_move", "info", F.col("detail"), client=None, group_id="group_id")
