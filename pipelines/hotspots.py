"""Error-code and latency hot spots per API and broker.

* ``error_hotspot``: an API on a broker whose responses carry errors (top-level or nested) at a high
  rate; routine protocol steps (MEMBER_ID_REQUIRED, ApiVersions' UNSUPPORTED_VERSION downgrade) do
  not count;
* ``latency_hotspot``: an API on a broker whose p99 latency is far above the same API on the other
  brokers, or (except long polls, which wait on purpose) above an absolute bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contract.kafka import API_VERSIONS, UNSUPPORTED_VERSION
from pipelines.events_dataset import collect_evidence, evidence, with_endpoints
from pipelines.findings import as_findings, error_label
from pipelines.kafka_rules import LONG_POLL_APIS, ROUTINE_ERRORS


@dataclass(frozen=True, slots=True)
class Thresholds:
    min_errors: int = 3  # at least this many failing responses
    error_rate: float = 0.10  # and at least this share of the responses
    error_rate_severe: float = 0.5
    min_samples: int = 5  # latency: responses needed to judge a p99
    p99_absolute_ms: float = 1000.0  # non-long-poll APIs: p99 above this is a hot spot
    peer_factor: float = 5.0  # p99 this many times the API's median p99 over brokers ...
    peer_margin_ms: float = 100.0  # ... and at least this much above it


def _error_codes() -> Column:
    """The response's non-routine error codes (top-level and nested)."""
    codes = F.concat(F.array(F.col("error_code")),
                     F.coalesce(F.col("nested_error_codes"), F.array().cast("array<short>")))
    routine = F.lit(list(ROUTINE_ERRORS)) if ROUTINE_ERRORS else F.array().cast("array<int>")

    def keep(c: Column) -> Column:
        return (c.isNotNull() & (c != 0) & ~F.array_contains(routine, c.cast("int"))
                & ~((F.col("api_key") == API_VERSIONS) & (c == UNSUPPORTED_VERSION)))

    return F.array_distinct(F.filter(codes, keep))


def error_hotspot(events: DataFrame, t: Thresholds = Thresholds()) -> DataFrame:
    r = with_endpoints(events.where(F.col("direction") == "response")).withColumn("codes", _error_codes())
    failed = F.size("codes") > 0
    # per connection first (bounded evidence: the first failing exchange of each connection), then per broker
    per_conn = r.groupBy("api_name", "broker", "capture", "conn_id").agg(
        F.count(F.lit(1)).alias("n"), F.sum(failed.cast("int")).alias("errors"),
        F.min(F.when(failed, F.col("ts"))).alias("ts_first"), F.max(F.when(failed, F.col("ts"))).alias("ts_last"),
        F.min(F.when(failed, F.col("correlation_id"))).alias("first_failed"))
    per = per_conn.groupBy("api_name", "broker").agg(
        F.sum("n").alias("n"), F.sum("errors").alias("errors"), F.min("ts_first").alias("ts_first"),
        F.max("ts_last").alias("ts_last"),
        collect_evidence(F.when(F.col("first_failed").isNotNull(), evidence("conn_id", "first_failed")))
        .alias("evidence"))
    per = per.withColumn("rate", F.col("errors") / F.col("n")).where(
        (F.col("errors") >= t.min_errors) & (F.col("rate") >= t.error_rate))
    top = r.select("api_name", "broker", F.explode("codes").alias("code")).groupBy("api_name", "broker", "code").agg(
        F.count(F.lit(1)).alias("k"))
    w = Window.partitionBy("api_name", "broker").orderBy(F.col("k").desc(), "code")
    top = top.withColumn("_r", F.row_number().over(w)).where(F.col("_r") <= 3).groupBy("api_name", "broker").agg(
        F.array_join(F.transform(F.array_sort(F.collect_list(F.struct((-F.col("k")).alias("nk"), "code"))),
                                 lambda s: F.concat(error_label(s["code"]), F.lit(" x"), (-s["nk"]).cast("string"))),
                     ", ").alias("top"))
    agg = per.join(top, ["api_name", "broker"], "left")
    detail = F.concat(
        F.col("api_name"), F.lit(" on "), F.col("broker"), F.lit(": "), F.col("errors").cast("string"),
        F.lit(" of "), F.col("n").cast("string"), F.lit(" responses ("),
        F.format_number(F.col("rate") * 100, 0), F.lit("%) carry errors; most frequent: "),
        F.coalesce(F.col("top"), F.lit("?")), F.lit(". Look at this broker's logs and the clients' handling of it."),
    )
    sev = F.when(F.col("rate") >= t.error_rate_severe, F.lit("error")).otherwise(F.lit("warning"))
    return as_findings(agg, "error_hotspot", sev, detail, client=None, subject="api_name")


def _slowest_first() -> Column:
    """The order in which a response is the slowest: its latency, then (among equals) the earliest, then the
    lowest connection and correlation id; whatever order the rows come in."""
    return F.struct(F.col("latency_ms"), -F.unix_micros("ts"), -F.col("conn_id"), -F.col("correlation_id"))


def latency_hotspot(events: DataFrame, t: Thresholds = Thresholds()) -> DataFrame:
    r = with_endpoints(events.where((F.col("direction") == "response") & F.col("latency_ms").isNotNull()))
    per = r.groupBy("api_name", "broker").agg(
        F.count(F.lit(1)).alias("n"),
        F.percentile_approx("latency_ms", 0.5, 1000).alias("p50"),
        F.percentile_approx("latency_ms", 0.99, 1000).alias("p99"),
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"),
        F.max_by(evidence(), _slowest_first()).alias("slowest")).where(F.col("n") >= t.min_samples)
    peers = per.groupBy("api_name").agg(F.count(F.lit(1)).alias("brokers"),
                                        F.percentile_approx("p99", 0.5, 1000).alias("peer_p99"))
    j = per.join(peers, "api_name")
    long_poll = F.col("api_name").isin(sorted(LONG_POLL_APIS))
    vs_peers = (F.col("brokers") >= 2) & (F.col("p99") > F.col("peer_p99") * t.peer_factor) & (
        F.col("p99") - F.col("peer_p99") >= t.peer_margin_ms)
    absolute = ~long_poll & (F.col("p99") >= t.p99_absolute_ms)
    hot = j.where(vs_peers | absolute).withColumn("vs_peers", vs_peers)
    detail = F.concat(
        F.col("api_name"), F.lit(" on "), F.col("broker"), F.lit(": p99 "), F.format_number("p99", 1),
        F.lit(" ms, p50 "), F.format_number("p50", 1), F.lit(" ms over "), F.col("n").cast("string"),
        F.lit(" responses"),
        F.when(F.col("vs_peers"), F.concat(F.lit(", against a median p99 of "), F.format_number("peer_p99", 1),
                                           F.lit(" ms on the "), F.col("brokers").cast("string"),
                                           F.lit(" brokers serving it"))).otherwise(
            F.lit(f" (above {t.p99_absolute_ms:.0f} ms for a request that should not wait)")),
        F.lit(". The slowest is in the evidence; check this broker's load, disks and request queue."),
    )
    return as_findings(hot, "latency_hotspot", "warning", detail, client=None, evidence=F.array("slowest"),
                       subject="api_name")
