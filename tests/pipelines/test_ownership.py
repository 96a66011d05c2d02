"""Who owned a partition when (pipelines/ownership.py), for the lag: a classic group's SyncGroup assignments per
generation, each held until the next generation's, and the member's client from its own JoinGroup."""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.ownership import OWNER_COLUMNS, with_owners
from tests.pipelines.rows import CLIENT, at, events
from tests.pipelines.test_groups import GROUP, join, sync


def test_each_moment_gets_the_generation_then_in_force(spark: SparkSession) -> None:
    a, b = "member-a", "member-b"
    df = events(spark,
                join(1, 1, a, ["range"], gen=1), join(1.5, 2, b, ["range"], gen=1),
                sync(10, 1, a, 1, {a: {"orders": [0, 1]}, b: {"orders": [2]}}),
                join(19, 1, a, ["range"], gen=2), join(19.5, 2, b, ["range"], gen=2),
                sync(20, 2, b, 2, {a: {}, b: {"orders": [0, 1, 2]}}))
    moments = spark.createDataFrame(
        [(GROUP, "orders", p, at(t).replace(tzinfo=None)) for p, t in ((0, 5), (0, 15), (2, 15), (0, 25), (1, 25))],
        "group_id string, topic string, partition int, ts timestamp")
    got = {(r["partition"], r["ts"]): tuple(r[c] for c in OWNER_COLUMNS)
           for r in with_owners(moments, df).collect()}
    client_a, client_b = f"{CLIENT}:41001", f"{CLIENT}:41002"
    assert got[(0, at(5).replace(tzinfo=None))] == (None, None, None, None)  # before any assignment
    assert got[(0, at(15).replace(tzinfo=None))] == (a, client_a, "test-client", None)
    assert got[(2, at(15).replace(tzinfo=None))] == (b, client_b, "test-client", None)
    assert got[(0, at(25).replace(tzinfo=None))] == (b, client_b, "test-client", None)  # generation 2 moved it
    assert got[(1, at(25).replace(tzinfo=None))] == (b, client_b, "test-client", None)
