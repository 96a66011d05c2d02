"""Consumer lag from the wire, per group, topic and partition over time, and ``consumer_lag_growing``.

A group's committed offsets come from OffsetCommit and TxnOffsetCommit requests whose response accepts the
partition (ErrorCode 0; the time is the response's), and from OffsetFetch responses (what the coordinator
reports committed; -1, nothing committed, is skipped). A partition's log end comes from Fetch responses'
HighWatermark and from ListOffsets responses to a latest-offset query (Timestamp -1), whoever asked: it is the
broker's, not the consumer's. The lag at a commit is the partition's latest log end known at that moment (the
first one after it when none came before; ``log_end_ts`` says which) minus the committed offset.

Each row also names the member that owned the partition at the commit's time, and its client (address, client
id, principal): ``ownership.with_owners``, from the classic groups' SyncGroup assignments and the KIP-848 groups'
heartbeat assignments (null where no assignment in the capture covers that moment).

Topics are matched by name; ids (OffsetCommit v10+, Fetch v13+) are named through ``topics.topic_names`` where a
response named them. Partitions are keyed by their cluster: the broker's cluster id as the traffic stated it at
that time (``identity`` observations), else the capture.

``group_lag``: a group's total lag on a topic at ``TREND_POINTS`` moments from its first commit to its last (the
sum over its partitions of the latest log end minus the latest committed offset, as known at each moment: a
partition nobody consumes grows there even while the group commits elsewhere). ``consumer_lag_growing``: a group
that keeps committing on a topic (``MIN_COMMITS`` commits or more, of as many different offsets) while that total
grows: ``MIN_GROWTH`` records or more from the first moment to the last, lag and time correlated
(``MIN_CORRELATION``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import FETCH, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, TXN_OFFSET_COMMIT
from pipelines.events_dataset import (
    EXCHANGE_KEY,
    asof,
    collect_evidence,
    evidence,
    exchanges,
    parse_body,
    responses,
    shared,
    with_endpoints,
)
from pipelines.findings import as_findings
from pipelines.ownership import OWNER_COLUMNS, with_owners
from pipelines.topic_ids import topic_names, with_topic_names

LAG_COLUMNS = ("group_id", "topic", "partition", "ts", "committed_offset", "log_end_offset", "log_end_ts", "lag",
               "source", "client", "broker", "capture", "conn_id", "correlation_id", *OWNER_COLUMNS)
MIN_COMMITS = 3
MIN_GROWTH = 100
MIN_CORRELATION = 0.5
TREND_POINTS = 20

COMMIT_REQUEST_DDL = body_schemas.OFFSET_COMMIT_REQUEST
COMMIT_RESPONSE_DDL = body_schemas.OFFSET_COMMIT_RESPONSE
FETCHED_OFFSETS_DDL = body_schemas.OFFSET_FETCH_RESPONSE
FETCH_RESPONSE_DDL = body_schemas.FETCH_RESPONSE
LIST_OFFSETS_RESPONSE_DDL = body_schemas.LIST_OFFSETS_RESPONSE


def _topic_key(name: Column, topic_id: Column) -> Column:
    """A topic's name, else its id (named later where a response named it)."""
    return F.coalesce(F.when(name != "", name), topic_id)


@shared
def connection_clusters(events: DataFrame, observations: DataFrame) -> DataFrame:
    """capture, conn_id, cluster_key: each connection's cluster, the broker's cluster id as the traffic stated it
    when the connection began (a broker's cluster cannot change under an open connection), else the capture."""
    conns = events.groupBy("capture", "conn_id", "broker_ip", "broker_port").agg(F.min("ts").alias("ts"))
    clusters = observations.where(F.col("cluster_id").isNotNull()).select(
        F.col("ip").alias("broker_ip"), F.col("port").alias("broker_port"), "ts", "cluster_id")
    conns = asof(conns, clusters, ["broker_ip", "broker_port"], "cluster_id", "cluster_id")
    return conns.select("capture", "conn_id", F.coalesce(F.col("cluster_id"), F.col("capture")).alias("cluster_key"))


def _with_cluster(df: DataFrame, clusters: DataFrame) -> DataFrame:
    return df.join(F.broadcast(clusters), ["capture", "conn_id"], "left").withColumn(
        "cluster_key", F.coalesce(F.col("cluster_key"), F.col("capture")))


def commits(events: DataFrame) -> DataFrame:
    """Committed offsets: group_id, topic_key, partition, ts, offset, source, and the message's endpoints."""
    ex = with_endpoints(exchanges(events, [OFFSET_COMMIT, TXN_OFFSET_COMMIT], COMMIT_REQUEST_DDL,
                                  COMMIT_RESPONSE_DDL)).where(F.col("r_ts").isNotNull())
    base = [*EXCHANGE_KEY, "envelope_correlation_id", "client", "broker", "broker_ip", "broker_port",
            "client_id", "api_name"]
    asked = ex.select(*base, F.coalesce(F.col("group_id"), F.col("qb.GroupId")).alias("group_id"), "r_ts",
                      F.explode("qb.Topics").alias("t")).select(
        *base, "group_id", "r_ts", _topic_key(F.col("t.Name"), F.col("t.TopicId")).alias("topic_key"),
        F.explode("t.Partitions").alias("p")).select(
        *base, "group_id", "r_ts", "topic_key", F.col("p.PartitionIndex").alias("partition"),
        F.col("p.CommittedOffset").alias("offset"))
    answered = ex.select(*[F.col(k).alias(f"_{k}") for k in EXCHANGE_KEY],
                         F.explode("rb.Topics").alias("t")).select(
        *[f"_{k}" for k in EXCHANGE_KEY], _topic_key(F.col("t.Name"), F.col("t.TopicId")).alias("_topic"),
        F.explode("t.Partitions").alias("p")).where(F.col("p.ErrorCode") == 0).select(
        *[f"_{k}" for k in EXCHANGE_KEY], "_topic", F.col("p.PartitionIndex").alias("_partition"))
    cond = [F.col(k) == F.col(f"_{k}") for k in EXCHANGE_KEY] + [
        F.col("topic_key") == F.col("_topic"), F.col("partition") == F.col("_partition")]
    committed = asked.join(answered, cond, "left_semi").select(
        "group_id", "topic_key", "partition", F.col("r_ts").alias("ts"), "offset", F.col("api_name").alias("source"),
        "client", "broker", "broker_ip", "broker_port", "capture", "conn_id", "correlation_id")
    fetched = with_endpoints(exchanges(events, [OFFSET_FETCH], None, FETCHED_OFFSETS_DDL)).where(
        F.col("r_ts").isNotNull())
    where = ["r_ts", "client", "broker", "broker_ip", "broker_port", "capture", "conn_id", "correlation_id"]
    old = fetched.select(*where, F.col("group_id").alias("g"), F.explode("rb.Topics").alias("t")).select(
        *where, "g", _topic_key(F.col("t.Name"), F.lit(None).cast("string")).alias("topic_key"),
        F.col("t.Partitions").alias("parts"))
    new = fetched.select(*where, F.explode("rb.Groups").alias("gr")).select(
        *where, F.col("gr.GroupId").alias("g"), F.explode("gr.Topics").alias("t")).select(
        *where, "g", _topic_key(F.col("t.Name"), F.col("t.TopicId")).alias("topic_key"),
        F.col("t.Partitions").alias("parts"))
    reported = old.unionByName(new).select(*where, "g", "topic_key", F.explode("parts").alias("p")).where(
        (F.col("p.ErrorCode") == 0) & (F.col("p.CommittedOffset") >= 0) & F.col("g").isNotNull()).select(
        F.col("g").alias("group_id"), "topic_key", F.col("p.PartitionIndex").alias("partition"),
        F.col("r_ts").alias("ts"), F.col("p.CommittedOffset").alias("offset"), F.lit("OffsetFetch").alias("source"),
        "client", "broker", "broker_ip", "broker_port", "capture", "conn_id", "correlation_id")
    return committed.unionByName(reported)


def log_ends(events: DataFrame) -> DataFrame:
    """Log end offsets: ts, capture, conn_id, topic_key, partition, log_end."""
    keep = ["ts", "capture", "conn_id"]
    fetch = parse_body(responses(events, [FETCH]).where(F.col("body").isNotNull()), FETCH_RESPONSE_DDL, "rb")
    fetched = fetch.select(*keep, F.explode("rb.Responses").alias("t")).select(
        *keep, _topic_key(F.col("t.Topic"), F.col("t.TopicId")).alias("topic_key"),
        F.explode("t.Partitions").alias("p")).where(
        (F.col("p.ErrorCode") == 0) & (F.col("p.HighWatermark") >= 0)).select(
        *keep, "topic_key", F.col("p.PartitionIndex").alias("partition"),
        F.col("p.HighWatermark").alias("log_end"))
    listed = parse_body(responses(events, [LIST_OFFSETS]).where(F.col("body").isNotNull()),
                        LIST_OFFSETS_RESPONSE_DDL, "rb")
    latest = listed.select(*keep, F.explode("rb.Topics").alias("t")).select(
        *keep, F.col("t.Name").alias("topic_key"), F.explode("t.Partitions").alias("p")).where(
        (F.col("p.ErrorCode") == 0) & (F.col("p.Timestamp") == -1) & (F.col("p.Offset") >= 0)).select(
        *keep, "topic_key", F.col("p.PartitionIndex").alias("partition"), F.col("p.Offset").alias("log_end"))
    return fetched.unionByName(latest)


@dataclass(frozen=True, slots=True)
class Lag:
    """What the lag outputs are made of, computed once: ``rows``, each committed offset with its cluster, the
    partition's log end then and the lag; ``ends``, the named log ends; ``points``, ``group_lag``'s."""

    rows: DataFrame
    ends: DataFrame
    points: DataFrame


def lag_of(events: DataFrame, observations: DataFrame,
           keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> Lag:
    """The committed offsets, log ends and group totals of ``events`` (``observations``: the broker identity).
    ``keep``: what to do with ``rows`` and ``ends`` before the totals are made of them, and with the totals (the
    report materialises each, so that the totals and every reader start from their data, not their plans)."""
    names = topic_names(events)
    clusters = connection_clusters(events, observations)
    done = with_topic_names(_with_cluster(commits(events), clusters), names, "topic_key")
    ends = with_topic_names(_with_cluster(log_ends(events), clusters), names, "topic_key").select(
        "cluster_key", "topic", "partition", "ts", "log_end")
    ends_at = ends.select("cluster_key", "topic", "partition", "ts",
                          F.struct(F.col("log_end").alias("offset"), F.col("ts").alias("ts")).alias("end"))
    rows = asof(done, ends_at, ["cluster_key", "topic", "partition"], "end", "end").select(
        "group_id", "topic", "partition", "ts", F.col("offset").alias("committed_offset"),
        F.col("end.offset").alias("log_end_offset"), F.col("end.ts").alias("log_end_ts"),
        (F.col("end.offset") - F.col("offset")).alias("lag"), "source", "client", "broker", "capture", "conn_id",
        "correlation_id", "cluster_key")
    rows, ends = keep(with_owners(rows, events)), keep(ends)
    return Lag(rows, ends, keep(group_lag(rows, ends)))


def consumer_lag(lag: Lag) -> DataFrame:
    """One row per committed offset seen, with the partition's log end then and the lag (``LAG_COLUMNS``)."""
    return lag.rows.select(*LAG_COLUMNS)


def group_lag(rows: DataFrame, ends: DataFrame) -> DataFrame:
    """Each group's total lag on each topic at ``TREND_POINTS`` moments evenly spread from its first commit to its
    last: group_id, topic, point, ts, lag (the sum over the partitions it committed of the latest log end minus
    the latest committed offset, each as known then), partitions, commits (commits up to then)."""
    committing = F.col("source").isin("OffsetCommit", "TxnOffsetCommit")
    spans = rows.groupBy("group_id", "topic", "cluster_key").agg(
        F.min(F.unix_micros("ts")).alias("t0"), F.max(F.unix_micros("ts")).alias("t1"))
    parts = rows.select("group_id", "topic", "cluster_key", "partition").distinct()
    grid = spans.join(parts, ["group_id", "topic", "cluster_key"]).select(
        "*", F.explode(F.sequence(F.lit(1), F.lit(TREND_POINTS))).alias("point"))
    grid = grid.withColumn("ts", F.timestamp_micros(
        (F.col("t0") + (F.col("t1") - F.col("t0")) * F.col("point") / TREND_POINTS).cast("long")))
    grid = asof(grid, rows.where(committing).select(
        "group_id", "topic", "partition", "ts", F.struct("committed_offset", F.lit(1).alias("n")).alias("c")),
        ["group_id", "topic", "partition"], "c", "committed", fallback_next=False)
    grid = asof(grid, ends, ["cluster_key", "topic", "partition"], "log_end", "log_end", fallback_next=False)
    counted = rows.where(committing).select("group_id", "topic", F.unix_micros("ts").alias("t"))
    per_point = grid.groupBy("group_id", "topic", "point", "ts").agg(
        F.sum(F.greatest(F.col("log_end") - F.col("committed.committed_offset"), F.lit(0))).alias("lag"),
        F.count(F.col("committed")).alias("partitions"))
    commits_so_far = per_point.join(counted, ["group_id", "topic"], "left").where(
        F.col("t") <= F.unix_micros("ts")).groupBy("group_id", "topic", "point").agg(
        F.count(F.lit(1)).alias("commits"))
    return per_point.join(commits_so_far, ["group_id", "topic", "point"], "left").select(
        "group_id", "topic", "point", "ts", "lag", "partitions", F.coalesce("commits", F.lit(0)).alias("commits"))


def consumer_lag_growing(lag: Lag) -> DataFrame:
    """Groups whose total lag on a topic grows through the capture while they keep committing."""
    points = lag.points.where(F.col("partitions") > 0)
    rows = lag.rows.where(F.col("source").isin("OffsetCommit", "TxnOffsetCommit"))
    progress = rows.groupBy("group_id", "topic").agg(
        F.count(F.lit(1)).alias("n"), F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"),
        F.countDistinct("partition", "committed_offset").alias("offsets"),
        F.max_by("client", "ts").alias("client"), F.max_by("broker", "ts").alias("broker"),
        collect_evidence(evidence()).alias("evidence"))
    trend = points.groupBy("group_id", "topic").agg(
        F.min_by("lag", "point").alias("lag_first"), F.max_by("lag", "point").alias("lag_last"),
        F.max("lag").alias("lag_peak"), F.max("partitions").alias("partitions"),
        F.corr(F.col("point").cast("double"), F.col("lag").cast("double")).alias("trend"))
    growing = progress.join(trend, ["group_id", "topic"]).where(
        (F.col("n") >= MIN_COMMITS) & (F.col("offsets") >= MIN_COMMITS)
        & (F.col("lag_last") - F.col("lag_first") >= MIN_GROWTH) & (F.col("trend") >= MIN_CORRELATION))
    detail = F.concat(
        F.lit("Group "), F.col("group_id"), F.lit(" keeps committing on topic "), F.col("topic"), F.lit(" ("),
        F.col("n").cast("string"), F.lit(" commits on "), F.col("partitions").cast("string"),
        F.lit(" partition(s)) while its lag grows: "), F.col("lag_first").cast("string"), F.lit(" records behind "),
        F.lit("early on, "), F.col("lag_last").cast("string"), F.lit(" at its last commit (lag per partition and "
                                                                     "commit in lag.parquet). It consumes more "
                                                                     "slowly than the topic is written: add members "
                                                                     "(up to the partition count), speed up "
                                                                     "processing, or look for a slow member."),
    )
    return as_findings(growing, "consumer_lag_growing", "warning", detail, group_id="group_id",
                       subject=F.concat(F.lit("topic "), F.col("topic")))
