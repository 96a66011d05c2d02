"""Who owned a group's partition when (issue 32): the member, and its client (address, client id, principal), that
held each partition at a moment, for the lag (``lag.parquet``: which consumer is lagging, not only which group).

* A classic group's partitions are those the leader's SyncGroup gave each member for a generation
  (``groups.leader_assignments``): held from that SyncGroup until the group's next generation was assigned.
* A KIP-848 consumer group's are those the coordinator's heartbeat responses gave each member
  (``heartbeat_groups.held_assignments``): held from that response until the next change, the member's leave or
  its fencing; topic ids are named as the lag names them (``topics.topic_names``). Share groups share partitions
  and streams groups assign tasks: neither has an owner per partition.

A member's client is the client of its own requests (a classic member's JoinGroup, answered with its member id; a
heartbeat group member's heartbeats).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.events_dataset import asof
from pipelines.groups import joins, leader_assignments
from pipelines.heartbeat_groups import heartbeats, held_assignments
from pipelines.topic_ids import topic_names, with_topic_names

#: The owner columns a lag row gets (null where no assignment in the capture covers its moment).
OWNER_COLUMNS = ("member_id", "member_client", "member_client_id", "member_principal")
OWNERSHIP_COLUMNS = ("group_id", "topic", "partition", "ts", "end", *OWNER_COLUMNS)


def _classic(events: DataFrame) -> DataFrame:
    a = leader_assignments(events).where(F.col("partition").isNotNull() & F.col("member").isNotNull())
    starts = a.select("group_id", "generation", "ts").groupBy("group_id", "generation").agg(F.min("ts").alias("ts"))
    order = Window.partitionBy("group_id").orderBy("generation")
    spans = starts.withColumn("end", F.lead("ts").over(order))
    who = joins(events).select("group_id", F.coalesce(F.col("r_member_id"), F.col("member_id")).alias("member"),
                               "ts", "client", "client_id", "principal").where(
        F.col("member").isNotNull() & (F.col("member") != "")).groupBy("group_id", "member").agg(
        F.min_by(F.struct("client", "client_id", "principal"), "ts").alias("c"))
    held = a.select("group_id", "generation", "member", "topic", "partition").join(
        spans, ["group_id", "generation"]).join(who, ["group_id", "member"], "left")
    return held.select("group_id", "topic", "partition", "ts", "end", F.col("member").alias("member_id"),
                       F.col("c.client").alias("member_client"), F.col("c.client_id").alias("member_client_id"),
                       F.col("c.principal").alias("member_principal"))


def _heartbeat(events: DataFrame) -> DataFrame:
    hb = heartbeats(events).where(F.col("protocol") == "consumer")
    who = hb.where(F.col("member").isNotNull()).groupBy(F.col("group").alias("group_id"), "member").agg(
        F.min_by(F.struct("client", "client_id", "principal"), "ts").alias("c"))
    held = held_assignments(hb).select(F.col("group").alias("group_id"), "member", "start", "end",
                                       F.explode("items").alias("it")).select(
        "group_id", "member", "start", "end", F.col("it.key").alias("topic_id"),
        F.col("it.partition").alias("partition"))
    held = with_topic_names(held, topic_names(events)).join(who, ["group_id", "member"], "left")
    return held.select("group_id", "topic", "partition", F.col("start").alias("ts"), "end",
                       F.col("member").alias("member_id"), F.col("c.client").alias("member_client"),
                       F.col("c.client_id").alias("member_client_id"), F.col("c.principal").alias("member_principal"))


def ownership(events: DataFrame) -> DataFrame:
    """Each holding of a partition: group_id, topic, partition, ts (from), end (until; null: to the end of the
    capture), and the owner (``OWNER_COLUMNS``)."""
    return _classic(events).unionByName(_heartbeat(events)).select(*OWNERSHIP_COLUMNS)


def with_owners(rows: DataFrame, events: DataFrame) -> DataFrame:
    """``rows`` (group_id, topic, partition, ts, ...) with the ``OWNER_COLUMNS`` of the member that held the
    partition at ``ts``: the latest holding that began by then and had not ended."""
    held = ownership(events).select("group_id", "topic", "partition", "ts", F.struct(
        "end", *OWNER_COLUMNS).alias("holding"))
    found = asof(rows, held, ["group_id", "topic", "partition"], "holding", "_owner", fallback_next=False)
    current = F.col("_owner").isNotNull() & (F.col("_owner.end").isNull() | (F.col("ts") < F.col("_owner.end")))
    return found.select("*", *[F.when(current, F.col(f"_owner.{c}")).alias(c) for c in OWNER_COLUMNS]).drop("_owner")
