"""Group rebalances, one row each, and the ``rebalance_storm`` finding.

A classic group's rebalance is a generation: it starts with the first JoinGroup request answered with that
generation and ends with the last successful SyncGroup response of that generation (the last JoinGroup
response when no SyncGroup of it is in the capture). Its members are the member ids the coordinator answered;
those not in the previous generation joined, those of the previous one missing left. JoinGroup v8+ carries the
member's ``Reason``, LeaveGroup v5+ each leaving member's (counted for the first generation after the leave,
as ``LeaveGroup: REASON``). A heartbeat group's rebalance (KIP-848 consumer, KIP-1071 streams, KIP-932 share groups) is
a member epoch: ``heartbeat_groups.heartbeat_rebalances``. ``protocol`` says which: ``classic``, ``consumer``,
``streams`` or ``share``; ``generation`` is the generation or the epoch.

``rebalance_storm``: at least ``STORM_REBALANCES`` rebalances of one group within ``STORM_WINDOW_S`` seconds (for a
heartbeat group, epochs that a member left: one joining member bumps the epoch once, so a group starting up is no
storm):
members keep joining and leaving (session timeouts, ``max.poll.interval.ms`` exceeded, crash loops), and while a
classic group rebalances nobody consumes; a heartbeat group keeps consuming what does not move, but every
epoch revokes and reassigns partitions.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import LEAVE_GROUP
from pipelines.events_dataset import collect_evidence, evidence, merge_evidence, parse_body, requests, union_sorted
from pipelines.findings import as_findings, listed
from pipelines.groups import joins, syncs
from pipelines.heartbeat_groups import heartbeat_rebalances

STORM_REBALANCES = 5
STORM_WINDOW_S = 600
#: The storms of one group a ``rebalance_storm`` detail tells one by one (the rest are counted).
MAX_STORMS_TOLD = 10
REBALANCE_COLUMNS = ("protocol", "group_id", "generation", "start", "end", "duration_ms", "complete", "members",
                     "joined", "left", "reasons", "broker", "evidence")


def answered() -> Column:
    """A JoinGroup exchange that made a generation (answered without error): one rebalance per group and
    ``r_generation_id`` (the group inventory counts them so)."""
    return (F.col("r_error_code") == 0) & (F.col("r_generation_id") >= 0) & F.col("group_id").isNotNull()


def classic_rebalances(events: DataFrame) -> DataFrame:
    """One row per group generation (``REBALANCE_COLUMNS``)."""
    jg = joins(events).where(answered())
    gens = jg.groupBy("group_id", F.col("r_generation_id").alias("generation")).agg(
        F.min("ts").alias("start"), F.max("r_ts").alias("joined"),
        F.array_sort(F.collect_set(F.coalesce("r_member_id", "member_id"))).alias("members"),
        F.array_sort(F.collect_set(F.when(F.col("qb.Reason") != "", F.col("qb.Reason")))).alias("reasons"),
        F.min_by("broker", "ts").alias("broker"), collect_evidence(evidence()).alias("evidence"))
    synced = syncs(events).where(
        (F.col("r_error_code") == 0) & F.col("generation_id").isNotNull()).groupBy(
        "group_id", F.col("generation_id").alias("generation")).agg(F.max("r_ts").alias("synced"))
    r = gens.join(synced, ["group_id", "generation"], "left")
    left_why = _leave_reasons(events).join(r.select("group_id", "generation", F.col("start").alias("g_start")),
                                           "group_id").where(F.col("g_start") >= F.col("ts"))
    first_after = left_why.groupBy("group_id", "ts", "reason").agg(F.min("generation").alias("generation"))
    why = first_after.groupBy("group_id", "generation").agg(F.collect_set("reason").alias("leave_reasons"))
    r = r.join(why, ["group_id", "generation"], "left").withColumn("reasons", F.array_sort(F.array_union(
        "reasons", F.coalesce(F.col("leave_reasons"), F.array().cast("array<string>")))))
    w = Window.partitionBy("group_id").orderBy("generation")
    previous = F.lag("members").over(w)
    end = F.coalesce(F.col("synced"), F.col("joined"))
    return r.select(
        F.lit("classic").alias("protocol"), "group_id", "generation", "start", end.alias("end"),
        ((F.unix_micros(end) - F.unix_micros("start")) / 1000.0).alias("duration_ms"),
        F.col("synced").isNotNull().alias("complete"), "members",
        F.array_except(F.col("members"), F.coalesce(previous, F.array().cast("array<string>"))).alias("joined"),
        F.array_except(F.coalesce(previous, F.array().cast("array<string>")), F.col("members")).alias("left"),
        "reasons", "broker", "evidence")


def _leave_reasons(events: DataFrame) -> DataFrame:
    """group_id, ts, reason: each LeaveGroup v5+ member's non-empty ``Reason``, as ``LeaveGroup: REASON``."""
    leaves = parse_body(requests(events, [LEAVE_GROUP]), body_schemas.LEAVE_GROUP_REQUEST)
    return leaves.select(F.coalesce(F.col("group_id"), F.col("b.GroupId")).alias("group_id"), "ts",
                         F.explode("b.Members").alias("m")).where(
        F.col("m.Reason").isNotNull() & (F.col("m.Reason") != "")).select(
        "group_id", "ts", F.concat(F.lit("LeaveGroup: "), F.col("m.Reason")).alias("reason"))


def rebalances(events: DataFrame) -> DataFrame:
    """Every rebalance of every group, classic and heartbeat (``REBALANCE_COLUMNS``)."""
    return classic_rebalances(events).unionByName(heartbeat_rebalances(events)).select(*REBALANCE_COLUMNS)


def rebalance_storm(events: DataFrame) -> DataFrame:
    """Groups that rebalanced ``STORM_REBALANCES`` times or more within ``STORM_WINDOW_S`` seconds."""
    # A heartbeat group bumps its epoch once per member that joins, so a group starting up is not a storm: there,
    # the epochs that count are those a member left (churn).
    r = rebalances(events).where((F.col("protocol") == "classic") | (F.size("left") > 0))
    w = Window.partitionBy("protocol", "group_id").orderBy(F.unix_micros("start")).rangeBetween(
        -STORM_WINDOW_S * 1_000_000, 0)
    stormy = (r.withColumn("recent", F.count(F.lit(1)).over(w))
              .withColumn("win_start", F.min("start").over(w)).withColumn("win_gen", F.min("generation").over(w))
              .withColumn("win_joined", F.flatten(F.collect_list("joined").over(w)))
              .withColumn("win_reasons", F.flatten(F.collect_list("reasons").over(w)))
              .withColumn("win_evidence", F.flatten(F.collect_list("evidence").over(w)))
              .where(F.col("recent") >= STORM_REBALANCES))
    # one storm: stormy rows whose windows overlap (a row's window reaches back to a stormy row before it)
    by_start = Window.partitionBy("protocol", "group_id").orderBy(F.unix_micros("start"), "generation")
    begins = F.coalesce((F.col("win_start") > F.lag("start").over(by_start)).cast("int"), F.lit(1))
    stormy = stormy.withColumn("storm", F.sum(begins).over(by_start.rowsBetween(Window.unboundedPreceding, 0)))
    storms = stormy.groupBy("protocol", "group_id", "storm").agg(
        F.min("win_start").alias("ts_first"), F.max(F.coalesce("end", "start")).alias("ts_last"),
        F.max("recent").alias("most"), F.min("win_gen").alias("gen_first"), F.max("generation").alias("gen_last"),
        union_sorted(F.col("win_joined")).alias("joined"), union_sorted(F.col("win_reasons")).alias("reasons"),
        F.min_by("broker", "start").alias("broker"), merge_evidence(F.col("win_evidence")).alias("evidence"))
    agg = storms.groupBy("protocol", "group_id").agg(
        F.min("ts_first").alias("ts_first"), F.max("ts_last").alias("ts_last"),
        F.array_sort(F.collect_list(F.struct("ts_first", "most", "gen_first", "gen_last"))).alias("storms"),
        union_sorted(F.col("joined")).alias("joined"), union_sorted(F.col("reasons")).alias("reasons"),
        F.min_by("broker", "ts_first").alias("broker"), merge_evidence(F.col("evidence")).alias("evidence"))
    generations = F.when(F.col("protocol") == "classic", F.lit("generations ")).otherwise(
        F.concat(F.col("protocol"), F.lit(" group, member epochs ")))

    def told(s: Column) -> Column:
        """One storm: how many rebalances within the window, which generations."""
        return F.concat(s["most"].cast("string"), F.lit(f" times within {STORM_WINDOW_S // 60} minutes ("),
                        generations, s["gen_first"].cast("string"), F.lit(" to "), s["gen_last"].cast("string"))

    each = listed("storms", MAX_STORMS_TOLD, ", ", lambda s: F.concat(
        told(s), F.lit(", from "), F.date_format(s["ts_first"], "yyyy-MM-dd HH:mm:ss.SSS"), F.lit(")")))
    detail = F.concat(
        F.lit("Group "), F.col("group_id"), F.lit(" rebalanced "),
        F.when(F.size("storms") == 1, F.concat(told(F.element_at("storms", 1)), F.lit(")"))).otherwise(F.concat(
            F.lit("in "), F.size("storms").cast("string"), F.lit(" storms: "), each)),
        F.lit("; members joining: "),
        listed("joined", 5, ", "),
        F.when(F.size("reasons") > 0, F.concat(F.lit("; their reasons: "), F.array_join(F.slice("reasons", 1, 5),
                                                                                       "; "))).otherwise(F.lit("")),
        F.lit(f". {STORM_REBALANCES} or more rebalances in {STORM_WINDOW_S // 60} minutes is a storm: "),
        F.when(F.col("protocol") == "classic", F.lit("nobody consumes while a classic group rebalances.")).otherwise(
            F.lit("every epoch revokes and reassigns partitions.")),
        F.lit(" Look for members exceeding max.poll.interval.ms or "
              "session.timeout.ms, crash loops, or static membership (group.instance.id) to ride out restarts."),
    )
    return as_findings(agg, "rebalance_storm", "warning", detail, client=None, group_id="group_id",
                       subject=F.concat(F.col("protocol"), F.lit(" group")))
