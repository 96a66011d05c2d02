"""Episodes: a detector's repeated rows become one finding with how often, when, and evidence samples."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.events import EVIDENCE_LIMIT
from pipelines.findings import FINDING_COLUMNS, as_findings, episodes
from tests.pipelines.rows import T0


def _rows(spark: SparkSession, rows: list[tuple[object, ...]]) -> DataFrame:
    df = spark.createDataFrame(rows, "kind string, severity string, ts timestamp, client string, broker string, "
                                     "group_id string, detail string, conn bigint")
    return as_findings(df, F.col("kind"), F.col("severity"), F.col("detail"), ts_first="ts", ts_last="ts",
                       group_id="group_id", evidence=F.array(F.struct(F.col("conn").alias("conn_id"),
                                                                        F.lit(7).alias("correlation_id"))))


def test_repeats_become_one_episode_with_count_span_and_samples(spark: SparkSession) -> None:
    many = [("misrouted", "error", T0 + timedelta(seconds=i), "10.0.0.1:5000", "10.0.0.9:9092", None,
             f"asks for node {i}", 100 - i) for i in range(120)]
    other = [("misrouted", "warning", T0, "10.0.0.1:5000", "10.0.0.9:9092", None, "caught", 1),  # severity
             ("misrouted", "error", T0, "10.0.0.2:5000", "10.0.0.9:9092", None, "another client", 2),
             ("unassigned", "warning", T0, None, "10.0.0.9:9092", "g1", "gap", 3),
             ("unassigned", "warning", T0, None, "10.0.0.9:9092", "g2", "gap", 4)]  # group
    out = episodes(_rows(spark, many + other)).collect()
    assert tuple(out[0].asDict()) == FINDING_COLUMNS
    assert len(out) == 5
    (e,) = [r for r in out if r["occurrences"] > 1]
    assert e["occurrences"] == 120 and e["severity"] == "error" and e["client"] == "10.0.0.1:5000"
    assert e["ts_last"] - e["ts_first"] == timedelta(seconds=119)
    assert e["detail"].startswith("asks for node 0 Seen 120 times from ")  # the first occurrence, then how often
    assert len(e["evidence"]) == EVIDENCE_LIMIT
    samples = [{"conn_id": c, "correlation_id": 7} for c in range(-19, -19 + EVIDENCE_LIMIT)]
    assert [x.asDict() for x in e["evidence"]] == samples  # the lowest distinct ones
    singles = sorted((r["kind"], r["severity"], r["client"], r["group_id"], r["detail"]) for r in out
                     if r["occurrences"] == 1)
    assert singles == [("misrouted", "error", "10.0.0.2:5000", None, "another client"),
                       ("misrouted", "warning", "10.0.0.1:5000", None, "caught"),
                       ("unassigned", "warning", None, "g1", "gap"), ("unassigned", "warning", None, "g2", "gap")]
