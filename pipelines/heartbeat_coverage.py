"""``unassigned_partitions`` for KIP-848 consumer groups: subscribed partitions no member owns once the group is
stable.

KIP-848 moves partitions incrementally: a partition revoked from one member reaches another a heartbeat or two
later, so a gap right after a change is normal. A group counts as stable when its assignments have not changed
(no new assignment, leave or fencing) for ``STABLE_S`` seconds while it went on heartbeating; at the start of each
such quiet period, the partitions of the topics its members subscribe to by name (their latest
``SubscribedTopicNames``; a regex subscription is not evaluated) are compared with what the members hold. Topic ids
are named through ``topics.topic_names``; partition counts come from Metadata responses of the coordinator's
cluster (``groups.partition_counts``) as of that moment. A topic whose id no response named is left out.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.events_dataset import asof, merge_evidence
from pipelines.findings import as_findings
from pipelines.groups import partition_counts
from pipelines.heartbeat_groups import heartbeats, held_assignments
from pipelines.lag import connection_clusters
from pipelines.topic_ids import topic_names

#: Seconds without an assignment change (while the group heartbeats) before a KIP-848 group counts as stable.
STABLE_S = 10


def unassigned_partitions(events: DataFrame, observations: DataFrame) -> DataFrame:
    """Subscribed partitions that no member of a stable KIP-848 consumer group holds."""
    hb = heartbeats(events).where(F.col("protocol") == "consumer")
    held = held_assignments(hb)
    changes = held.select("group", F.col("start").alias("ts")).unionByName(
        held.where(F.col("end").isNotNull()).select("group", F.col("end").alias("ts"))).distinct()
    last_seen = hb.groupBy("group").agg(F.max("ts").alias("last_seen"))
    quiet = changes.withColumn("next", F.lead("ts").over(Window.partitionBy("group").orderBy("ts"))).join(
        last_seen, "group").withColumn("until", F.coalesce(F.col("next"), F.col("last_seen"))).where(
        F.unix_micros("until") - F.unix_micros("ts") >= STABLE_S * 1_000_000).select(
        "group", F.col("ts").alias("at"), "until")
    # what each member holds at the start of a quiet period: its latest assignment then, unless that ended (one
    # sort per member, not every quiet period against every assignment of the group)
    at_members = quiet.join(held.select("group", "member").distinct(), "group")
    holding = held.where(F.col("end").isNull() | (F.col("end") > F.col("start"))).select(
        "group", "member", F.col("start").alias("ts"),
        F.struct("end", "items", "capture", "conn_id", "broker", "ev").alias("h"))
    now = asof(at_members.withColumn("ts", F.col("at")), holding, ["group", "member"], "h", "h",
               fallback_next=False).where(
        F.col("h").isNotNull() & (F.col("h.end").isNull() | (F.col("h.end") > F.col("at")))).select(
        "group", "at", "member", "h.*")
    owned = now.select("group", "at", "member", F.explode("items").alias("it")).select(
        "group", "at", F.col("it.key").alias("topic_id"), F.col("it.partition").alias("partition"))
    names = topic_names(events)
    owned = owned.join(F.broadcast(names), "topic_id").select("group", "at", "topic", "partition")
    # what its members subscribe to by name (their latest subscription before), in its coordinator's cluster
    subscribed = hb.where(F.col("qb.SubscribedTopicNames").isNotNull()).select(
        "group", "member", "ts", F.col("qb.SubscribedTopicNames").alias("names"))
    members = now.select("group", "at", "member", "capture", "conn_id", "broker", "ev")
    latest = asof(members.withColumn("ts", F.col("at")), subscribed, ["group", "member"], "names", "names",
                  fallback_next=False).where(F.col("names").isNotNull())
    clusters = connection_clusters(events, observations)
    wanted = latest.join(F.broadcast(clusters), ["capture", "conn_id"], "left").select(
        "group", "at", F.coalesce(F.col("cluster_key"), F.col("capture")).alias("cluster_key"), "broker",
        "ev", F.explode("names").alias("topic")).join(F.broadcast(names.select("topic").distinct()), "topic")
    per_topic = wanted.groupBy("group", "at", "cluster_key", "topic").agg(
        F.min("broker").alias("broker"), F.collect_set("ev").alias("evidence"))
    counted = asof(per_topic.withColumn("ts", F.col("at")), partition_counts(events), ["cluster_key", "topic"],
                   "partitions", "partitions").where(F.col("partitions").isNotNull())
    expected = counted.select("*", F.explode(F.sequence(F.lit(0), F.col("partitions") - 1)).alias("partition"))
    missing = expected.join(owned, ["group", "at", "topic", "partition"], "left_anti")
    per_gap = missing.groupBy("group", "at", "topic", "partitions").agg(
        F.array_sort(F.collect_set("partition")).alias("parts"), F.min("broker").alias("broker"),
        merge_evidence(F.col("evidence")).alias("evidence"))
    agg = per_gap.groupBy(F.col("group").alias("group_id"), "at").agg(
        F.min("at").alias("ts_first"), F.max("at").alias("ts_last"), F.min("broker").alias("broker"),
        F.array_sort(F.collect_list(F.concat(
            F.col("topic"), F.lit(" ["), F.array_join(F.transform("parts", lambda p: p.cast("string")), ","),
            F.lit("] of "), F.col("partitions").cast("string")))).alias("gaps"),
        F.array_sort(F.collect_set("topic")).alias("topics"), merge_evidence(F.col("evidence")).alias("evidence"))
    detail = F.concat(
        F.lit("KIP-848 consumer group "), F.col("group_id"), F.lit(" was stable (no assignment change for "),
        F.lit(f"{STABLE_S} s or more from "), F.date_format("at", "HH:mm:ss.SSS"),
        F.lit(") while subscribed partitions were held by no member: "), F.array_join("gaps", "; "),
        F.lit(" (partition counts from Metadata responses). Nobody consumes them; the coordinator's assignor "
              "(or the target assignment it reconciles towards) leaves them out."),
    )
    # the gap is the group's (its coordinator's assignor's), not one member's: no client
    return as_findings(agg, "unassigned_partitions", "warning", detail, client=None, group_id="group_id",
                       subject=F.concat(F.lit("topics "), F.array_join("topics", ", ")))
