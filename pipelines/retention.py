"""What ``report --follow`` keeps of earlier traffic between micro-batches: the detectors' state, bounded.

Each micro-batch runs the report's detectors (``detectors.DETECTORS``, unchanged) over the new events together
with the events kept from before. What is kept is bounded two ways:

* **the horizon**: every event of the last ``horizon`` seconds of traffic (default 10 minutes, the rebalance
  storm's window, ``rebalances.STORM_WINDOW_S``), at most ``MAX_RECENT`` of them (the newest);
* **the facts** (:data:`FACTS`): beyond the horizon, the latest few exchanges per key of the APIs whose
  statements stay true until said again — a broker's identity learned from a Metadata response an hour ago, the
  versions a connection's ApiVersions advertised, a group's last generations, a member's last heartbeat, a
  producer's last batches, a transaction's requests, a group's last commits — each at most ``MAX_FACTS`` exchanges.

A fact is a whole exchange (the request and its response): the detectors pair them (``events.exchanges``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from contract.kafka import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    DESCRIBE_GROUPS,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    PRODUCE,
    SYNC_GROUP,
    TXN_OFFSET_COMMIT,
)
from pipelines import heartbeat_groups
from pipelines.events_dataset import EXCHANGE_KEY

#: Events of the horizon kept at most (the newest).
MAX_RECENT = 500_000
#: Exchanges kept per fact rule at most (the newest).
MAX_FACTS = 100_000


@dataclass(frozen=True, slots=True)
class Fact:
    """Keep the ``latest`` exchanges of ``api_keys`` per value of ``by``, the latest by their ``side`` (the
    ``response`` where it is the answer that states the fact: an identity, the versions advertised, a log end;
    else the ``request``)."""

    name: str
    api_keys: tuple[int, ...]
    by: tuple[str, ...]
    latest: int
    #: the detectors that read it (documentation: pipelines/README.md lists the same)
    serves: str
    side: str = "request"


FACTS: tuple[Fact, ...] = (
    Fact("broker identity", (METADATA, DESCRIBE_CLUSTER, FIND_COORDINATOR), ("broker_ip", "broker_port", "api_key"), 2,
         "misrouted_api_versions, endpoint_identity_changed, unassigned_partitions (partition counts), topic names, "
         "each connection's cluster (lag)", "response"),
    Fact("advertised versions, per connection", (API_VERSIONS,), ("capture", "conn_id"), 1,
         "unadvertised_version", "response"),
    Fact("advertised versions, per broker", (API_VERSIONS,), ("broker_ip", "broker_port"), 1,
         "unadvertised_version (connections that did not ask)", "response"),
    Fact("classic group generations", (JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS), ("group_id",), 200,
         "inconsistent_group_protocol, group_protocol_mismatch, group_protocol_not_offered, overlapping_assignment, "
         "unassigned_partitions, rebalances"),
    Fact("group members' heartbeats", tuple(heartbeat_groups.PROTOCOLS), ("group_id", "member_id"), 2,
         "overlapping_heartbeat_assignment, unassigned_heartbeat_partitions, group_member_errors, rebalances"),
    Fact("producers' last batches", (PRODUCE,), ("capture", "conn_id"), 2, "producer_sequence_gap"),
    Fact("transactions", (ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN), ("capture", "conn_id"), 20,
         "transaction_anomaly"),
    Fact("committed offsets", (OFFSET_COMMIT, TXN_OFFSET_COMMIT, OFFSET_FETCH), ("group_id",), 50,
         "consumer_lag_growing"),
    Fact("log ends", (FETCH, LIST_OFFSETS), ("capture", "conn_id"), 1, "consumer_lag_growing", "response"),
)


def _fact_keys(events: DataFrame, fact: Fact) -> DataFrame:
    """The exchange keys of ``fact``'s latest exchanges per key, at most ``MAX_FACTS``."""
    q = events.where((F.col("direction") == fact.side) & F.col("api_key").isin(list(fact.api_keys)))
    newest = Window.partitionBy(*fact.by).orderBy(F.col("ts").desc(), F.col("correlation_id").desc())
    latest = q.withColumn("_n", F.row_number().over(newest)).where(F.col("_n") <= fact.latest)
    return latest.orderBy(F.col("ts").desc()).limit(MAX_FACTS).select(*EXCHANGE_KEY)


def retain(events: DataFrame, since_us: int) -> DataFrame:
    """What is kept of ``events`` (slimmed, as the report keeps them): every event at or after ``since_us``
    (microseconds since the epoch; at most ``MAX_RECENT``, the newest) and every event of an exchange a
    :data:`FACTS` rule keeps."""
    recent = events.where(F.unix_micros("ts") >= since_us)
    recent = recent.orderBy(F.col("ts").desc()).limit(MAX_RECENT)
    keys = None
    for fact in FACTS:
        k = _fact_keys(events, fact)
        keys = k if keys is None else keys.unionByName(k)
    assert keys is not None
    facts = events.join(keys.distinct(), [events[c].eqNullSafe(keys[c]) for c in EXCHANGE_KEY], "left_semi")
    return recent.unionByName(facts).distinct()
