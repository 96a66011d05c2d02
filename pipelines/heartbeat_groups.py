"""Groups whose coordinator assigns in heartbeat responses: KIP-848 consumer groups (ConsumerGroupHeartbeat),
KIP-1071 streams groups (StreamsGroupHeartbeat) and KIP-932 share groups (ShareGroupHeartbeat).

A member heartbeats with its member epoch (0 to join, -1 to leave, -2 for a static member leaving for now); the
coordinator answers with the member's epoch and, when it changed, the member's whole assignment: partitions by
topic id (``Assignment.TopicPartitions``), or a streams member's active tasks by subtopology (``ActiveTasks``).
A null assignment means "unchanged". So a member holds an assignment from the response that gave it until the
next response that changes it, its leave, or its fencing (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).

Findings:

* ``overlapping_assignment``: the coordinator gave a partition (a streams group: an active task) to a member
  while another member still held it, and that other member went on heartbeating with it. KIP-848 revokes a
  partition from its owner, and waits for the owner to acknowledge, before it assigns it to someone else.
  Share groups (KIP-932) share partitions by design: no finding.
* ``group_member_errors``: FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID and UNRELEASED_INSTANCE_ID answers, counted
  per group, member and error.

``heartbeat_rebalances``: the member-epoch bumps of each group as rebalances (``rebalances.REBALANCE_COLUMNS``).
An epoch's rebalance starts with the first response carrying it and ends when every member has acknowledged it (a
heartbeat request with that epoch or a later one) before the next epoch began; a member still heartbeating with an
older epoch then leaves it incomplete.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import (
    CONSUMER_GROUP_HEARTBEAT,
    FENCED_MEMBER_EPOCH,
    SHARE_GROUP_HEARTBEAT,
    STREAMS_GROUP_HEARTBEAT,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
)
from pipelines.events_dataset import EVIDENCE_LIMIT, collect_evidence, evidence, exchanges, shared, with_endpoints
from pipelines.findings import as_findings, error_label, listed
from pipelines.topic_ids import topic_names, with_topic_names

PROTOCOLS = {CONSUMER_GROUP_HEARTBEAT: "consumer", STREAMS_GROUP_HEARTBEAT: "streams", SHARE_GROUP_HEARTBEAT: "share"}
REQUEST_DDL = body_schemas.GROUP_HEARTBEAT_REQUEST
RESPONSE_DDL = body_schemas.GROUP_HEARTBEAT_RESPONSE
#: The errors ``group_member_errors`` counts, and what each means for the member.
MEMBER_ERRORS = {
    FENCED_MEMBER_EPOCH: "its member epoch was stale: the coordinator had fenced it (it missed heartbeats for the "
                         "session timeout, or fell behind a rebalance); it rejoins with epoch 0 and its partitions "
                         "are revoked meanwhile",
    UNKNOWN_MEMBER_ID: "the coordinator no longer knew the member (removed after a session timeout, or the "
                       "coordinator moved); it rejoins from scratch",
    UNRELEASED_INSTANCE_ID: "a static member (group.instance.id) joined while the coordinator still held the "
                            "instance's previous member: two processes may share one group.instance.id, or the old "
                            "one never left",
}
_NEVER = "9999-12-31 00:00:00"  # a time after every capture
_EVIDENCE = "array<struct<capture:string,conn_id:bigint,correlation_id:int>>"


def _or_never(end: Column) -> Column:
    """An end time, or a time after every capture for an open end (null)."""
    return F.coalesce(end, F.lit(_NEVER).cast("timestamp"))


def _nonempty(c: Column) -> Column:
    return F.when(c != "", c)


@shared
def heartbeats(events: DataFrame) -> DataFrame:
    """The heartbeat exchanges of the three kinds (``exchanges``), with endpoints, ``protocol``, ``group`` and
    ``member`` (the response's MemberId, else the request's: a KIP-848 v0 coordinator names a new member)."""
    hb = with_endpoints(exchanges(events, list(PROTOCOLS), REQUEST_DDL, RESPONSE_DDL))
    names = F.create_map(*[x for k, v in PROTOCOLS.items() for x in (F.lit(k), F.lit(v))])
    return hb.select(
        "*", names[F.col("api_key")].alias("protocol"),
        F.coalesce(F.col("group_id"), F.col("qb.GroupId")).alias("group"),
        F.coalesce(_nonempty(F.col("rb.MemberId")), _nonempty(F.col("qb.MemberId"))).alias("member"),
    ).where(F.col("group").isNotNull())


def _items(by_key: Column, key: str) -> Column:
    """An assignment (array of {key, Partitions}) flattened to {key, partition} items."""
    return F.flatten(F.transform(F.coalesce(by_key, F.array()), lambda t: F.transform(
        F.coalesce(t["Partitions"], F.array().cast("array<int>")),
        lambda p: F.struct(t[key].alias("key"), p.alias("partition")))))


def held_assignments(hb: DataFrame) -> DataFrame:
    """Each assignment a response gave, with how long the member held it: protocol, group, member, epoch, start
    (the response's time), end (the next change, leave or fencing; null: held to the end of the capture),
    items (array of {key: topic id or subtopology, partition}), and the response's endpoints and evidence."""
    streams = F.col("protocol") == "streams"
    given = hb.where((F.col("r_error_code") == 0) & F.col("member").isNotNull() & F.when(
        streams, F.col("rb.ActiveTasks").isNotNull()).otherwise(F.col("rb.Assignment").isNotNull()))
    assigned = given.select(
        "protocol", "group", "member", F.col("rb.MemberEpoch").alias("epoch"), F.col("r_ts").alias("ts"),
        F.when(streams, _items(F.col("rb.ActiveTasks"), "SubtopologyId"))
        .otherwise(_items(F.col("rb.Assignment.TopicPartitions"), "TopicId")).alias("items"),
        "client", "broker", "client_id", "capture", "conn_id", evidence().alias("ev"), F.lit(1).alias("_kind"))
    leaves = hb.where(F.col("qb.MemberEpoch") < 0).select("protocol", "group", "member", "ts")
    fenced = hb.where(F.col("r_error_code").isin(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)).select(
        "protocol", "group", "member", F.col("r_ts").alias("ts"))
    stops = leaves.unionByName(fenced).where(F.col("member").isNotNull() & F.col("ts").isNotNull()).select(
        "*", F.lit(None).cast("int").alias("epoch"),
        F.lit(None).cast("array<struct<key:string,partition:int>>").alias("items"),
        F.lit(None).cast("string").alias("client"), F.lit(None).cast("string").alias("broker"),
        F.lit(None).cast("string").alias("client_id"), F.lit(None).cast("string").alias("capture"),
        F.lit(None).cast("long").alias("conn_id"),
        F.lit(None).cast(_EVIDENCE[len("array<"):-1]).alias("ev"), F.lit(0).alias("_kind"))
    timeline = assigned.unionByName(stops)
    w = Window.partitionBy("protocol", "group", "member").orderBy("ts", "_kind")
    return timeline.withColumn("end", F.lead("ts").over(w)).where(F.col("_kind") == 1).select(
        "protocol", "group", "member", "epoch", F.col("ts").alias("start"), "end", "items", "client", "broker",
        "client_id", "capture", "conn_id", "ev")


def overlapping_assignment(events: DataFrame) -> DataFrame:
    """A partition (a streams group's active task) given to a member while another still held it and kept
    heartbeating with it (consumer and streams groups; share groups share partitions by design)."""
    hb = heartbeats(events)
    held = held_assignments(hb).where(F.col("protocol") != "share").drop("capture", "conn_id").select(
        "*", F.explode("items").alias("it")).select(
        "protocol", "group", "member", "epoch", "start", "end", "client", "broker", "client_id", "ev",
        F.col("it.key").alias("key"), F.col("it.partition").alias("partition"))
    a = held.select(*[F.col(c).alias(f"a_{c}") for c in held.columns])
    b = held.select(*[F.col(c).alias(f"b_{c}") for c in held.columns])
    pairs = a.join(b, (F.col("a_protocol") == F.col("b_protocol")) & (F.col("a_group") == F.col("b_group"))
                   & (F.col("a_key") == F.col("b_key")) & (F.col("a_partition") == F.col("b_partition"))
                   & (F.col("a_member") != F.col("b_member")) & (F.col("a_start") <= F.col("b_start"))
                   & (F.col("b_start") < _or_never(F.col("a_end"))))
    # the earlier holder heard from after the other got the partition, still holding it: a whole exchange of its
    # own between the other's assignment and the end of its own (not a leave)
    seen = hb.where((F.col("qb.MemberEpoch") >= 0) & F.col("r_ts").isNotNull()).select(
        F.col("protocol").alias("s_protocol"), F.col("group").alias("s_group"), F.col("member").alias("s_member"),
        F.col("ts").alias("s_ts"), F.col("r_ts").alias("s_r_ts"))
    pairs = pairs.join(seen, (F.col("s_protocol") == F.col("a_protocol")) & (F.col("s_group") == F.col("a_group"))
                       & (F.col("s_member") == F.col("a_member")) & (F.col("s_ts") > F.col("b_start"))
                       & (F.col("s_r_ts") <= _or_never(F.col("a_end"))), "left_semi")
    pairs = with_topic_names(pairs.withColumn("topic_id", F.when(F.col("a_protocol") != "streams", F.col("a_key"))),
                             topic_names(events))
    label = F.when(F.col("a_protocol") == "streams", F.concat(F.lit("task "), F.col("a_key")))\
        .otherwise(F.col("topic"))
    line = F.concat(label, F.lit("-"), F.col("a_partition").cast("string"), F.lit(" -> "), F.col("a_member"),
                    F.lit(" (epoch "), F.col("a_epoch").cast("string"), F.lit(") + "), F.col("b_member"),
                    F.lit(" (epoch "), F.col("b_epoch").cast("string"), F.lit(")"))
    agg = pairs.groupBy(F.col("a_protocol").alias("protocol"), F.col("a_group").alias("group_id"),
                        F.col("b_member").alias("member"), F.col("b_epoch").alias("epoch")).agg(
        F.min("b_start").alias("ts_first"), F.max("b_start").alias("ts_last"),
        # the connection that started the epoch's heartbeats (a member may reconnect within an epoch)
        F.min_by("b_client", F.struct("b_start", "b_client")).alias("client"),
        F.min_by("b_broker", F.struct("b_start", "b_broker")).alias("broker"),
        F.array_sort(F.collect_set(line)).alias("dups"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list(F.array("a_ev", "b_ev"))))).alias("evidence"))
    what = F.when(F.col("protocol") == "streams", F.lit("active task(s)")).otherwise(F.lit("partition(s)"))
    api = F.when(F.col("protocol") == "streams", F.lit("StreamsGroupHeartbeat"))\
        .otherwise(F.lit("ConsumerGroupHeartbeat"))
    detail = F.concat(
        F.lit("The coordinator "), F.col("broker"), F.lit(" gave member "), F.col("member"), F.lit(" ("),
        F.col("client"), F.lit(") of "), F.col("protocol"), F.lit(" group "), F.col("group_id"), F.lit(", at epoch "),
        F.col("epoch").cast("string"), F.lit(", "), F.size("dups").cast("string"), F.lit(" "), what,
        F.lit(" that another member still held and went on heartbeating with ("), api, F.lit(" responses): "),
        listed("dups", 10, "; "),
        F.lit(". The coordinator must revoke a partition from its owner, and wait for the owner to acknowledge, "
              "before it assigns it again (KIP-848): these were consumed twice."),
    )
    return as_findings(agg, "overlapping_assignment", "error", detail, group_id="group_id",
                       evidence=F.slice(F.col("evidence"), 1, EVIDENCE_LIMIT),
                       subject=F.concat(F.col("protocol"), F.lit(" group member "), F.col("member")))


def group_member_errors(events: DataFrame) -> DataFrame:
    """FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID and UNRELEASED_INSTANCE_ID answers per group, member and error."""
    hb = heartbeats(events).where(F.col("r_error_code").isin(list(MEMBER_ERRORS)))
    agg = hb.groupBy("protocol", F.col("group").alias("group_id"), "member", "client", "broker",
                     F.col("r_error_code").alias("code")).agg(
        F.count(F.lit(1)).alias("n"), F.min("r_ts").alias("ts_first"), F.max("r_ts").alias("ts_last"),
        F.min("client_id").alias("client_id"), F.min("api_name").alias("api"),
        collect_evidence(evidence()).alias("evidence"))
    meaning = F.create_map(*[x for k, v in MEMBER_ERRORS.items() for x in (F.lit(k), F.lit(v))])
    detail = F.concat(
        F.lit("The coordinator "), F.col("broker"), F.lit(" answered "), F.col("n").cast("string"), F.lit(" "),
        F.col("api"), F.lit(" request(s) of member "), F.coalesce(F.col("member"), F.lit("?")), F.lit(" ("),
        F.col("client"), F.lit(", client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") of "),
        F.col("protocol"), F.lit(" group "), F.col("group_id"), F.lit(" with "), error_label(F.col("code")),
        F.lit(": "), meaning[F.col("code")], F.lit("."),
    )
    return as_findings(agg, "group_member_errors", "warning", detail, group_id="group_id",
                       subject=F.concat(F.col("protocol"), F.lit(" group member "), F.coalesce(F.col("member"), F.lit(
                           "?")), F.lit(": "), error_label(F.col("code"))))


def epoch_given() -> Column:
    """A heartbeat answered with a member epoch: one rebalance per group and ``rb.MemberEpoch`` (the group
    inventory counts them so)."""
    return (F.col("r_error_code") == 0) & (F.col("rb.MemberEpoch") > 0)


def heartbeat_rebalances(events: DataFrame) -> DataFrame:
    """One row per member epoch of each heartbeat group, as ``rebalances.REBALANCE_COLUMNS``."""
    hb = heartbeats(events)
    epochs = hb.where(epoch_given()).groupBy(
        "protocol", F.col("group").alias("group_id"), F.col("rb.MemberEpoch").alias("generation")).agg(
        F.min("r_ts").alias("start"), F.min_by("broker", "r_ts").alias("broker"),
        collect_evidence(evidence()).alias("evidence"))
    order = Window.partitionBy("protocol", "group_id").orderBy("generation")
    epochs = epochs.withColumn("until", F.lead("start").over(order))
    # what each member said of its epoch: its requests (kind 1) and the coordinator's answers (kind 0)
    said = hb.where(F.col("member").isNotNull()).select(
        "protocol", "group", "member", F.array(
            F.struct(F.lit(1).alias("kind"), F.col("ts").alias("ts"), F.col("qb.MemberEpoch").alias("epoch"),
                     evidence().alias("ev")),
            F.struct(F.lit(0).alias("kind"), F.col("r_ts").alias("ts"),
                     F.when(F.col("r_error_code") == 0, F.col("rb.MemberEpoch")).alias("epoch"),
                     evidence().alias("ev"))).alias("said"))
    said = said.select(F.col("protocol").alias("s_protocol"), F.col("group").alias("s_group"), "member",
                       F.explode("said").alias("s")).where(F.col("s.ts").isNotNull() & F.col("s.epoch").isNotNull())
    during = epochs.join(said, (F.col("s_protocol") == F.col("protocol")) & (F.col("s_group") == F.col("group_id"))
                         & (F.col("s.ts") >= F.col("start")) & (F.col("s.ts") < _or_never(F.col("until"))))
    ack = (F.col("s.kind") == 1) & (F.col("s.epoch") >= F.col("generation"))
    per_member = during.groupBy("protocol", "group_id", "generation", "member").agg(
        F.max("s.epoch").alias("highest"), F.min(F.when(ack, F.col("s.ts"))).alias("acked"),
        F.max(((F.col("s.kind") == 1) & (F.col("s.epoch") > 0) & (F.col("s.epoch") < F.col("generation")))
              .cast("int")).alias("behind"),
        F.max(((F.col("s.kind") == 1) & (F.col("s.epoch") < 0)).cast("int")).alias("leaving"),
        F.min_by("s.ev", F.when(ack, F.col("s.ts"))).alias("ack_ev"))
    # members: those the epoch reached (an answer or request with it or a later one), each to acknowledge it;
    # pending: those that went on heartbeating with an older epoch and neither acknowledged nor left before the next
    # epoch began
    members = per_member.groupBy("protocol", "group_id", "generation").agg(
        F.array_sort(F.collect_set(F.when(F.col("highest") >= F.col("generation"), F.col("member")))).alias("members"),
        F.array_sort(F.collect_set(F.when((F.col("behind") == 1) & F.col("acked").isNull() & (F.col("leaving") == 0),
                                          F.col("member")))).alias("pending"),
        F.count(F.when((F.col("highest") >= F.col("generation")) & F.col("acked").isNull(), 1)).alias("unacked"),
        F.max("acked").alias("acked"), F.collect_list("ack_ev").alias("ack_evs"))
    r = epochs.join(members, ["protocol", "group_id", "generation"], "left")
    previous = F.coalesce(F.lag("members").over(order), F.array().cast("array<string>"))
    current = F.coalesce(F.col("members"), F.array().cast("array<string>"))
    complete = (F.size(current) > 0) & (F.col("unacked") == 0) & (F.size(F.col("pending")) == 0)
    end = F.when(complete, F.col("acked"))
    return r.select(
        "protocol", "group_id", "generation", "start", end.alias("end"),
        ((F.unix_micros(end) - F.unix_micros("start")) / 1000.0).alias("duration_ms"), complete.alias("complete"),
        current.alias("members"), F.array_except(current, previous).alias("joined"),
        F.array_except(previous, current).alias("left"), F.array().cast("array<string>").alias("reasons"), "broker",
        F.slice(F.array_sort(F.array_distinct(F.concat("evidence", F.coalesce(F.col("ack_evs"), F.array().cast(
            _EVIDENCE))))), 1, EVIDENCE_LIMIT).alias("evidence"))


