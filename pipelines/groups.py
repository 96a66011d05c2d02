"""Classic consumer-group protocol checks (KIP-559 and beyond the broker).

Per group and generation, the members' JoinGroup requests declare a ProtocolType and offer protocols
(assignors); the coordinator selects one (JoinGroup response ``ProtocolName``, ``ProtocolType`` v7+),
SyncGroup v5+ repeats both, DescribeGroups reports them. Findings:

* ``inconsistent_group_protocol``: responses with INCONSISTENT_GROUP_PROTOCOL (23);
* ``group_protocol_not_offered``: the coordinator selected a protocol a member did not offer;
* ``group_protocol_mismatch``: one generation declared with more than one protocol type or name;
* ``undecodable_group_metadata``: member metadata or assignments that do not decode under the declared
  protocol type;
* ``overlapping_assignment``: the leader's SyncGroup assignments give one partition to two members;
* ``unassigned_partitions``: partitions of subscribed topics (partition counts from Metadata responses)
  that the leader's assignment leaves to nobody.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import DESCRIBE_GROUPS, INCONSISTENT_GROUP_PROTOCOL, JOIN_GROUP, METADATA, SYNC_GROUP
from pipelines.events_dataset import (
    asof,
    collect_evidence,
    evidence,
    exchanges,
    merge_evidence,
    parse_body,
    responses,
    shared,
    union_sorted,
    with_endpoints,
)
from pipelines.findings import as_findings, error_label, listed
from pipelines.identity import identity_observations

JOIN_REQUEST_DDL = body_schemas.JOIN_GROUP_REQUEST
JOIN_RESPONSE_DDL = body_schemas.JOIN_GROUP_RESPONSE
SYNC_REQUEST_DDL = body_schemas.SYNC_GROUP_REQUEST
SYNC_RESPONSE_DDL = body_schemas.SYNC_GROUP_RESPONSE
DESCRIBE_GROUPS_RESPONSE_DDL = body_schemas.DESCRIBE_GROUPS_RESPONSE
METADATA_TOPICS_DDL = body_schemas.METADATA_TOPICS_RESPONSE

TIME_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"


def _nonempty(c: Column) -> Column:
    return c.isNotNull() & (c != "")


def joins(events: DataFrame) -> DataFrame:
    """JoinGroup exchanges (``exchanges``, shared by the group detectors, the rebalances and the plots), with
    endpoints and the protocols each member ``offered``."""
    jg = with_endpoints(exchanges(events, [JOIN_GROUP], JOIN_REQUEST_DDL, JOIN_RESPONSE_DDL))
    return jg.withColumn("offered", F.transform(F.coalesce(F.col("qb.Protocols"), F.array()), lambda p: p["Name"]))


def syncs(events: DataFrame) -> DataFrame:
    """SyncGroup exchanges (``exchanges``, shared as ``joins``), with endpoints."""
    return with_endpoints(exchanges(events, [SYNC_GROUP], SYNC_REQUEST_DDL, SYNC_RESPONSE_DDL))


def inconsistent_group_protocol(events: DataFrame) -> DataFrame:
    """INCONSISTENT_GROUP_PROTOCOL (23) answers to JoinGroup/SyncGroup, with what the group was using."""
    jg = joins(events)
    sg = syncs(events)
    rejected = jg.where(F.col("r_error_code") == INCONSISTENT_GROUP_PROTOCOL).select(
        "group_id", "client", "broker", "client_id", "ts", "r_ts", "capture", "conn_id", "correlation_id",
        "api_name",
        F.col("qb.ProtocolType").alias("ptype"), "offered",
    ).unionByName(
        sg.where(F.col("r_error_code") == INCONSISTENT_GROUP_PROTOCOL).select(
            "group_id", "client", "broker", "client_id", "ts", "r_ts", "capture", "conn_id", "correlation_id",
        "api_name",
            F.col("qb.ProtocolType").alias("ptype"),
            F.when(_nonempty(F.col("qb.ProtocolName")), F.array(F.col("qb.ProtocolName")))
            .otherwise(F.array().cast("array<string>")).alias("offered"),
        )
    )
    in_use = jg.where((F.col("r_error_code") == 0) & _nonempty(F.col("r_protocol_name"))).groupBy("group_id").agg(
        F.array_sort(F.collect_set("r_protocol_name")).alias("selected"),
        F.array_sort(F.collect_set("qb.ProtocolType")).alias("types"))
    rejected = rejected.withColumn("offer", F.array_join(F.array_sort("offered"), ", ")).withColumn(
        "declared", F.coalesce(F.col("ptype"), F.lit("")))
    agg = rejected.groupBy("group_id", "client", "broker", "api_name", "declared", "offer").agg(
        F.min("ts").alias("ts_first"), F.max(F.coalesce("r_ts", "ts")).alias("ts_last"),
        F.count(F.lit(1)).alias("n"), F.min("client_id").alias("client_id"),
        union_sorted(F.col("offered")).alias("offered"),
        F.array_sort(F.collect_set("ptype")).alias("ptypes"),
        collect_evidence(evidence()).alias("evidence"),
    ).join(in_use, "group_id", "left")
    detail = F.concat(
        F.lit("The coordinator "), F.col("broker"), F.lit(" rejected "), F.col("n").cast("string"), F.lit(" "),
        F.col("api_name"), F.lit(" request(s) of "), F.col("client"), F.lit(" (client id "),
        F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") for group "), F.col("group_id"),
        F.lit(" with "), error_label(F.lit(INCONSISTENT_GROUP_PROTOCOL)),
        F.lit(": the member declares protocol type ["),
        F.array_join(F.col("ptypes"), ", "), F.lit("] offering ["), F.array_join(F.col("offered"), ", "),
        F.lit("]"),
        F.when(F.size("selected") > 0, F.concat(
            F.lit(", while the group's members run ["), F.array_join(F.col("selected"), ", "),
            F.lit("] (type ["), F.array_join(F.col("types"), ", "), F.lit("])"))).otherwise(F.lit("")),
        F.lit(". Give every member at least one assignor in common (and the same protocol type), or use separate "
              "group ids."),
    )
    subject = F.concat(F.col("api_name"), F.lit(" protocol type ["), F.col("declared"), F.lit("] offering ["),
                       F.col("offer"), F.lit("]"))
    return as_findings(agg, "inconsistent_group_protocol", "error", detail, group_id="group_id", subject=subject)


def group_protocol_not_offered(events: DataFrame) -> DataFrame:
    """A successful JoinGroup whose selected protocol is not among the ones the member offered."""
    jg = joins(events).where(
        (F.col("r_error_code") == 0) & _nonempty(F.col("r_protocol_name")) & (F.size("offered") > 0)
        & ~F.array_contains(F.col("offered"), F.col("r_protocol_name")))
    agg = jg.groupBy("group_id", "client", "broker", F.col("r_protocol_name").alias("selected"),
                     F.array_join(F.array_sort("offered"), ", ").alias("offer")).agg(
        F.min("ts").alias("ts_first"), F.max("r_ts").alias("ts_last"),
        F.array_sort(F.collect_set("r_generation_id")).alias("generations"),
        F.array_sort(F.collect_set(F.coalesce(F.col("r_member_id"), F.col("member_id")))).alias("members"),
        collect_evidence(evidence()).alias("evidence"))
    detail = F.concat(
        F.lit("The coordinator "), F.col("broker"), F.lit(" selected protocol "), F.col("selected"),
        F.when(F.size("generations") == 1, F.lit(" for generation ")).otherwise(F.lit(" for generations ")),
        F.array_join(F.col("generations"), ", "), F.lit(" of group "),
        F.col("group_id"), F.when(F.size("members") > 1, F.lit(", but members ")).otherwise(F.lit(", but member ")),
        F.when(F.size("members") > 0, F.array_join("members", ", ")).otherwise(F.lit("?")), F.lit(" ("),
        F.col("client"), F.lit(") offered only ["), F.col("offer"),
        F.lit("]: this member cannot run the group's assignor; the coordinator should have answered "
              "INCONSISTENT_GROUP_PROTOCOL (23)."),
    )
    subject = F.concat(F.lit("selected "), F.col("selected"), F.lit(", offered ["), F.col("offer"), F.lit("]"))
    return as_findings(agg, "group_protocol_not_offered", "error", detail, group_id="group_id", subject=subject)


def _declarations(events: DataFrame) -> DataFrame:
    """Every statement of a group's protocol type/name: group_id, generation (nullable), ts, source, client,
    broker, conn_id, correlation_id, ptype, pname."""
    cols = ["group_id", "generation", "ts", "source", "client", "broker", "capture", "conn_id", "correlation_id",
            "ptype", "pname"]
    jg = joins(events).where(F.col("r_error_code") == 0)
    join_req = jg.select("group_id", F.col("r_generation_id").alias("generation"), "ts",
                         F.lit("JoinGroup request").alias("source"), "client", "broker", "capture", "conn_id",
                         "correlation_id",
                         F.col("qb.ProtocolType").alias("ptype"), F.lit(None).cast("string").alias("pname"))
    join_resp = jg.select("group_id", F.col("r_generation_id").alias("generation"), F.col("r_ts").alias("ts"),
                          F.lit("JoinGroup response").alias("source"), "client", "broker", "capture", "conn_id",
                          "correlation_id", F.col("rb.ProtocolType").alias("ptype"),
                          F.col("rb.ProtocolName").alias("pname"))
    sg = syncs(events)
    sync_req = sg.select("group_id", F.col("generation_id").alias("generation"), "ts",
                         F.lit("SyncGroup request").alias("source"), "client", "broker", "capture", "conn_id",
                         "correlation_id",
                         F.col("qb.ProtocolType").alias("ptype"), F.col("qb.ProtocolName").alias("pname"))
    sync_resp = sg.where(F.col("r_error_code") == 0).select(
        "group_id", F.col("generation_id").alias("generation"), F.col("r_ts").alias("ts"),
        F.lit("SyncGroup response").alias("source"), "client", "broker", "capture", "conn_id",
        "correlation_id",
        F.col("rb.ProtocolType").alias("ptype"), F.col("rb.ProtocolName").alias("pname"))
    dg = parse_body(with_endpoints(responses(events, [DESCRIBE_GROUPS])), DESCRIBE_GROUPS_RESPONSE_DDL, "rb")
    describe = dg.select("ts", "client", "broker", "capture", "conn_id", "correlation_id",
                         F.explode("rb.Groups").alias("g")).where(
        (F.col("g.ErrorCode") == 0) & F.col("g.GroupState").isin("Stable", "CompletingRebalance")).select(
        F.col("g.GroupId").alias("group_id"), F.lit(None).cast("int").alias("generation"), "ts",
        F.lit("DescribeGroups response").alias("source"), "client", "broker", "capture", "conn_id",
        "correlation_id",
        F.col("g.ProtocolType").alias("ptype"), F.col("g.ProtocolData").alias("pname"))
    out = join_req.unionByName(join_resp).unionByName(sync_req).unionByName(sync_resp).unionByName(describe)
    out = out.where(F.col("group_id").isNotNull() & (_nonempty(F.col("ptype")) | _nonempty(F.col("pname"))))
    # DescribeGroups names no generation: it describes the latest one seen for the group
    w = Window.partitionBy("group_id").orderBy("ts").rowsBetween(Window.unboundedPreceding, 0)
    out = out.withColumn("generation", F.coalesce(F.col("generation"), F.last("generation", True).over(w)))
    return out.where(F.col("generation").isNotNull()).select(*cols)


def group_protocol_mismatch(events: DataFrame) -> DataFrame:
    """One group generation declared with different protocol types or names by its messages."""
    d = _declarations(events)
    parts = []
    for field, label in (("ptype", "protocol type"), ("pname", "protocol name")):
        per_value = d.where(_nonempty(F.col(field))).groupBy("group_id", "generation", F.col(field).alias("value")).agg(
            F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"),
            F.array_sort(F.collect_set(F.concat(F.col("source"), F.lit(" of "), F.col("client")))).alias("who"),
            F.min("broker").alias("broker"), collect_evidence(evidence()).alias("evidence"))
        agg = per_value.groupBy("group_id", "generation").agg(
            F.countDistinct("value").alias("n"), F.min("ts_first").alias("ts_first"), F.max("ts_last").alias("ts_last"),
            F.array_sort(F.collect_list(F.concat(
                F.lit("'"), F.col("value"), F.lit("' ("), listed("who", 4, "; "), F.lit(")")))).alias("values"),
            F.slice(F.array_sort(F.flatten(F.collect_list("evidence"))), 1, 50).alias("evidence"),
            F.min("broker").alias("broker"), F.array_sort(F.collect_list("value")).alias("declared"),
        ).where(F.col("n") > 1)
        detail = F.concat(
            F.lit("Generation "), F.col("generation").cast("string"), F.lit(" of group "), F.col("group_id"),
            F.lit(f" is declared with {label}s "), F.array_join(F.col("values"), ", "),
            F.lit(": members and coordinator disagree on how the group's metadata and assignments are encoded "
                  "(KIP-559); a coordinator should reject the odd member with INCONSISTENT_GROUP_PROTOCOL (23)."),
        )
        subject = F.concat(F.lit(f"{label}s "), F.array_join(F.transform("declared", lambda v: F.concat(
            F.lit("'"), v, F.lit("'"))), " vs "))
        parts.append(as_findings(agg, "group_protocol_mismatch", "error", detail, client=None, group_id="group_id",
                                 subject=subject))
    return parts[0].unionByName(parts[1])


def undecodable_group_metadata(events: DataFrame) -> DataFrame:
    """Member metadata / assignments that do not decode under the group's declared protocol type."""
    jg = joins(events)
    sg = syncs(events)
    base = ["group_id", "client", "broker", "client_id", "capture", "conn_id", "correlation_id"]
    join_req = jg.select(*base, "ts", F.lit("JoinGroup request metadata").alias("what"),
                         F.col("qb.ProtocolType").alias("ptype"),
                         F.explode("qb.Protocols").alias("x")).select(
        *base, "ts", "what", "ptype", _status("x.MetadataDecoded"))
    join_resp = jg.select(*base, F.col("r_ts").alias("ts"), F.lit("JoinGroup response member metadata").alias("what"),
                          F.col("rb.ProtocolType").alias("ptype"), F.explode("rb.Members").alias("x")).select(
        *base, "ts", "what", "ptype", _status("x.MetadataDecoded"))
    sync_req = sg.select(*base, "ts", F.lit("SyncGroup request assignment").alias("what"),
                         F.col("qb.ProtocolType").alias("ptype"), F.explode("qb.Assignments").alias("x")).select(
        *base, "ts", "what", "ptype", _status("x.AssignmentDecoded"))
    sync_resp = sg.select(*base, F.col("r_ts").alias("ts"), F.lit("SyncGroup response assignment").alias("what"),
                          F.col("rb.ProtocolType").alias("ptype"), _status("rb.AssignmentDecoded"))
    dg = parse_body(with_endpoints(responses(events, [DESCRIBE_GROUPS])), DESCRIBE_GROUPS_RESPONSE_DDL, "rb")
    groups = dg.select("client", "broker", "client_id", "capture", "conn_id", "correlation_id", "ts",
                       F.explode("rb.Groups").alias("g"))
    members = groups.select("client", "broker", "client_id", "capture", "conn_id", "correlation_id", "ts",
                            F.col("g.GroupId").alias("group_id"), F.col("g.ProtocolType").alias("ptype"),
                            F.explode("g.Members").alias("m"))
    desc_meta = members.select(*base, "ts", F.lit("DescribeGroups member metadata").alias("what"), "ptype",
                               _status("m.MemberMetadataDecoded"))
    desc_assign = members.select(*base, "ts", F.lit("DescribeGroups member assignment").alias("what"), "ptype",
                                 _status("m.MemberAssignmentDecoded"))
    blobs = join_req.unionByName(join_resp).unionByName(sync_req).unionByName(sync_resp).unionByName(
        desc_meta).unionByName(desc_assign)
    status = F.col("d.status")
    bad = blobs.where(status.isNotNull() & ~status.isin("ok", "empty") & ~status.startswith("not decoded"))
    # Without a declared type the decoder tried the consumer layout ("inferred"): only a failure if the
    # group declares "consumer" elsewhere.
    declared = jg.where(_nonempty(F.col("qb.ProtocolType"))).groupBy("group_id").agg(
        F.collect_set("qb.ProtocolType").alias("declared"))
    bad = bad.join(declared, "group_id", "left").where(
        ~F.coalesce(F.col("d.inferred"), F.lit(False))
        | F.array_contains(F.coalesce(F.col("declared"), F.array().cast("array<string>")), "consumer"))
    key = ["group_id", "client", "broker", "what", "ptype"]
    per_status = bad.withColumn("ptype", F.coalesce(F.col("ptype"), F.lit("consumer"))).groupBy(
        *key, status.alias("status")).agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.min("client_id").alias("client_id"), collect_evidence(evidence()).alias("evidence"))
    # every way the blobs failed, with how many did so (the most frequent first)
    agg = per_status.groupBy(*key).agg(
        F.min("ts_first").alias("ts_first"), F.max("ts_last").alias("ts_last"), F.sum("n").alias("n"),
        F.min("client_id").alias("client_id"),
        F.array_join(F.transform(F.array_sort(F.collect_list(F.struct((-F.col("n")).alias("k"), "status"))),
                                 lambda c: F.concat(c["status"], F.lit(" ("), (-c["k"]).cast("string"), F.lit(")"))),
                     ", ").alias("status"),
        merge_evidence(F.col("evidence")).alias("evidence"))
    detail = F.concat(
        F.col("n").cast("string"), F.lit(" "), F.col("what"), F.lit(" blob(s) of group "),
        F.coalesce(F.col("group_id"), F.lit("?")), F.lit(" on the connection "), F.col("client"), F.lit(" -> "),
        F.col("broker"), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")),
        F.lit(") do not decode as protocol type '"), F.col("ptype"), F.lit("': "), F.col("status"),
        F.lit(". A member embeds another format than the type it declares, so the other members' assignors "
              "cannot read it."),
    )
    return as_findings(agg, "undecodable_group_metadata", "warning", detail, group_id="group_id",
                       subject=F.concat(F.col("what"), F.lit(" as '"), F.col("ptype"), F.lit("'")))


def _status(decoded: str) -> Column:
    return F.struct(F.col(f"{decoded}.status").alias("status"), F.col(f"{decoded}.inferred").alias("inferred")
                    ).alias("d")


def leader_assignments(events: DataFrame) -> DataFrame:
    """The last leader SyncGroup request per group generation, exploded to (member, topic, partition) (also who
    owned a partition when, for the lag: ``ownership``)."""
    sg = syncs(events).where(F.size(F.coalesce(F.col("qb.Assignments"), F.array())) > 0)
    w = Window.partitionBy("group_id", "generation_id").orderBy(F.col("ts").desc(), F.col("conn_id").desc())
    last = sg.withColumn("_rank", F.row_number().over(w)).where(F.col("_rank") == 1)
    a = last.select("group_id", F.col("generation_id").alias("generation"), "ts", "client", "broker", "broker_ip",
                    "broker_port", "capture", "conn_id", "correlation_id",
                    F.coalesce(F.col("qb.ProtocolName"), F.lit("")).alias("pname"),
                    F.explode("qb.Assignments").alias("a"))
    a = a.where(F.col("a.AssignmentDecoded.status") == "ok")
    t = a.select("*", F.col("a.MemberId").alias("member"),
                 F.explode_outer("a.AssignmentDecoded.value.AssignedPartitions").alias("tp"))
    return t.select("group_id", "generation", "ts", "client", "broker", "broker_ip", "broker_port", "capture",
                    "conn_id", "correlation_id", "pname", "member", F.col("tp.Topic").alias("topic"),
                    F.explode_outer("tp.Partitions").alias("partition"))


def overlapping_assignment(events: DataFrame) -> DataFrame:
    """One partition given to two or more members in one generation's assignment."""
    a = leader_assignments(events).where(F.col("partition").isNotNull())
    per_tp = a.groupBy("group_id", "generation", "topic", "partition").agg(
        F.array_sort(F.collect_set("member")).alias("members"), F.min("ts").alias("ts"),
        F.min("client").alias("client"), F.min("broker").alias("broker"),
        F.min(evidence()).alias("ev"), F.min("pname").alias("pname"),
    ).where(F.size("members") > 1)
    agg = per_tp.groupBy("group_id", "generation").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.min("client").alias("client"),
        F.min("broker").alias("broker"), F.min("pname").alias("pname"), F.count(F.lit(1)).alias("n"),
        F.array_sort(F.collect_list(F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                                             F.lit(" -> "), F.array_join("members", " + ")))).alias("dups"),
        F.array_sort(F.collect_set("ev")).alias("evidence"))
    detail = F.concat(
        F.lit("The leader's SyncGroup ("), F.col("client"), F.lit(") for generation "),
        F.col("generation").cast("string"), F.lit(" of group "), F.col("group_id"), F.lit(" gives "),
        F.col("n").cast("string"), F.lit(" partition(s) to more than one member: "),
        listed("dups", 10, "; "),
        F.lit(". Those partitions are consumed twice; the leader's assignor ("),
        F.when(F.col("pname") != "", F.col("pname")).otherwise(F.lit("unknown")),
        F.lit(") is broken or the members' libraries disagree on the assignment format."),
    )
    return as_findings(agg, "overlapping_assignment", "error", detail, group_id="group_id",
                       subject=F.concat(F.lit("assignor "), F.when(F.col("pname") != "", F.col("pname")).otherwise(
                           F.lit("unknown"))))


@shared
def partition_counts(events: DataFrame) -> DataFrame:
    """Partition counts per topic over time: cluster_key, topic, ts, partitions."""
    md = parse_body(responses(events, [METADATA]).where(F.col("body").isNotNull()), METADATA_TOPICS_DDL, "rb")
    t = md.select("ts", F.coalesce(F.col("rb.ClusterId"), F.col("capture")).alias("cluster_key"),
                  F.explode("rb.Topics").alias("t")).where(
        (F.col("t.ErrorCode") == 0) & _nonempty(F.col("t.Name")) & (F.size("t.Partitions") > 0))
    return t.select("cluster_key", F.col("t.Name").alias("topic"), "ts",
                    F.size("t.Partitions").alias("partitions"))


def unassigned_partitions(events: DataFrame, observations: DataFrame | None = None) -> DataFrame:
    """Partitions of the generation's subscribed topics that the leader assigned to nobody."""
    obs = observations if observations is not None else identity_observations(events)
    a = leader_assignments(events)
    gens = a.select("group_id", "generation", "ts", "client", "broker", "broker_ip", "broker_port", "capture",
                    "conn_id", "correlation_id", "pname").dropDuplicates(["group_id", "generation"])
    # the generation's subscriptions: the leader's JoinGroup response lists every member's metadata
    jg = joins(events).where((F.col("r_error_code") == 0) & (F.size(F.coalesce(F.col("rb.Members"), F.array())) > 0))
    subs = jg.select("group_id", F.col("r_generation_id").alias("generation"),
                     F.explode("rb.Members").alias("m")).where(F.col("m.MetadataDecoded.status") == "ok").select(
        "group_id", "generation", F.explode("m.MetadataDecoded.value.Topics").alias("topic")).distinct()
    # which cluster the coordinator belongs to, to read that cluster's partition counts
    clusters = obs.where(F.col("cluster_id").isNotNull()).select(
        F.col("ip").alias("broker_ip"), F.col("port").alias("broker_port"), "ts", "cluster_id")
    gens = asof(gens, clusters, ["broker_ip", "broker_port"], "cluster_id", "cluster_id")
    gens = gens.withColumn("cluster_key", F.coalesce(F.col("cluster_id"), F.col("capture")))
    wanted = gens.join(subs, ["group_id", "generation"])
    counts = partition_counts(events)
    wanted = asof(wanted, counts, ["cluster_key", "topic"], "partitions", "partitions")
    expected = wanted.where(F.col("partitions").isNotNull()).withColumn(
        "partition", F.explode(F.sequence(F.lit(0), F.col("partitions") - 1)))
    assigned = a.where(F.col("partition").isNotNull()).select("group_id", "generation", "topic", "partition")
    missing = expected.join(assigned, ["group_id", "generation", "topic", "partition"], "left_anti")
    # cooperative rebalancing revokes first and assigns in the next generation: that is not a gap
    next_gen = assigned.select("group_id", (F.col("generation") - 1).alias("generation"), "topic", "partition")
    coop = missing.where(F.lower(F.col("pname")).contains("cooperative")).join(
        next_gen, ["group_id", "generation", "topic", "partition"], "left_anti")
    missing = missing.where(~F.lower(F.col("pname")).contains("cooperative")).unionByName(coop)
    per_topic = missing.groupBy("group_id", "generation", "topic").agg(
        F.array_sort(F.collect_set("partition")).alias("parts"), F.min("partitions").alias("of"),
        F.min("ts").alias("ts"), F.min("client").alias("client"), F.min("broker").alias("broker"),
        F.min(evidence()).alias("ev"))
    agg = per_topic.groupBy("group_id", "generation").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.min("client").alias("client"),
        F.min("broker").alias("broker"),
        F.array_sort(F.collect_list(F.concat(
            F.col("topic"), F.lit(" ["), F.array_join(F.transform("parts", lambda p: p.cast("string")), ","),
            F.lit("] of "), F.col("of").cast("string")))).alias("gaps"),
        F.array_sort(F.collect_set("topic")).alias("topics"),
        F.array_sort(F.collect_set("ev")).alias("evidence"))
    detail = F.concat(
        F.lit("The leader's SyncGroup ("), F.col("client"), F.lit(") for generation "),
        F.col("generation").cast("string"), F.lit(" of group "), F.col("group_id"),
        F.lit(" leaves subscribed partitions unassigned: "), F.array_join("gaps", "; "),
        F.lit(" (partition counts from Metadata responses). Nobody consumes them until the next rebalance; "
              "check the leader's assignor and whether its metadata was stale."),
    )
    return as_findings(agg, "unassigned_partitions", "warning", detail, group_id="group_id",
                       subject=F.concat(F.lit("topics "), F.array_join("topics", ", ")))
