"""The shared joins: request/response pairing and the as-of lookup."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.events_dataset import asof, events_path, exchanges
from tests.pipelines.rows import at, events, exchange, row


def test_exchanges_pair_by_connection_correlation_and_envelope(spark: SparkSession) -> None:
    df = events(
        spark,
        exchange(3, 12, {"Topics": []}, {"ClusterId": "a"}, conn=1, corr=5),
        exchange(3, 12, {"Topics": []}, {"ClusterId": "b"}, conn=2, corr=5),  # same correlation id, other conn
        exchange(3, 12, {"Topics": []}, None, conn=3, corr=1, answered=False),
        # an Envelope's inner request/response carry the outer correlation id
        [row(conn_id=4, correlation_id=9, api_key=3, api_version=12, envelope_correlation_id=77, body={}),
         row(conn_id=4, correlation_id=9, api_key=3, api_version=12, direction="response",
             envelope_correlation_id=77, body={"ClusterId": "inner"}),
         row(conn_id=4, correlation_id=9, api_key=3, api_version=12, direction="response",
             envelope_correlation_id=78, body={"ClusterId": "other envelope"})],
    )
    got = exchanges(df, [3], None, "ClusterId STRING").select("conn_id", "correlation_id", F.col("rb.ClusterId"))
    assertDataFrameEqual(got, spark.createDataFrame(
        [(1, 5, "a"), (2, 5, "b"), (3, 1, None), (4, 9, "inner")],
        "conn_id long, correlation_id int, ClusterId string"))


def test_asof_takes_the_latest_before_else_the_first_after(spark: SparkSession) -> None:
    left = spark.createDataFrame([("x", at(0)), ("x", at(10)), ("x", at(20)), ("y", at(5)), ("z", at(5))],
                                 "k string, ts timestamp")
    right = spark.createDataFrame([("x", at(5), 1), ("x", at(10), 2), ("y", at(9), 3)],
                                  "k string, ts timestamp, v int")
    got = asof(left, right, ["k"], "v", "v").select("k", F.unix_seconds("ts").alias("t"), "v")
    t0 = int(at(0).timestamp())
    assertDataFrameEqual(got, spark.createDataFrame(
        [("x", t0, 1), ("x", t0 + 10, 2), ("x", t0 + 20, 2), ("y", t0 + 5, 3), ("z", t0 + 5, None)],
        "k string, t long, v int"))
    strict = asof(left, right, ["k"], "v", "v", fallback_next=False).where(F.col("v").isNull()).count()
    assert strict == 3  # x@0, y@5 (nothing before) and z


def test_events_path_accepts_the_read_directory_or_its_events(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    assert events_path(str(tmp_path)) == str(tmp_path / "events")
    assert events_path(str(tmp_path / "events")) == str(tmp_path / "events")
    assert events_path("hdfs:///kafka/events") == "hdfs:///kafka/events"
