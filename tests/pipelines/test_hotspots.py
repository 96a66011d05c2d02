"""Error-rate and latency hot spots per API and broker."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from pipelines import hotspots
from tests.pipelines.rows import B1, B2, B3, details, events, exchange, expected, project


def calls(key: int, broker: str, errors: list[int], latency: float = 1.0, start: int = 0,
          nested: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, err in enumerate(errors):
        resp_cols = {"nested_error_codes": [err]} if nested and err else {}
        body = {"ErrorCode": 0 if nested else err}
        out += exchange(key, 4, {}, body, t=start + i, conn=start + i, corr=1, broker=broker, latency_ms=latency,
                        resp_cols=resp_cols)
    return out


def test_error_hotspot(spark: SparkSession) -> None:
    df = events(
        spark,
        calls(12, B1, [27] * 5 + [0] * 5, start=0),  # Heartbeat on B1: 50% REBALANCE_IN_PROGRESS
        calls(12, B2, [27] + [0] * 9, start=100),  # 10%, but one error only
        calls(11, B1, [79] * 6, start=200),  # JoinGroup MEMBER_ID_REQUIRED: routine
        calls(18, B1, [35] * 6, start=300),  # ApiVersions downgrade: routine
        calls(0, B2, [6] * 4 + [0] * 6, start=400, nested=True),  # Produce, per-partition errors: 40%
    )
    out = hotspots.error_hotspot(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("error_hotspot", "error", None, f"{B1}:9092", None, [(i, 1) for i in range(5)]),
        ("error_hotspot", "warning", None, f"{B2}:9092", None, [(i, 1) for i in range(400, 404)]),
    ]))
    text = " ".join(details(out))
    assert "Heartbeat on 198.51.100.1:9092: 5 of 10 responses (50%)" in text
    assert "REBALANCE_IN_PROGRESS (27) x5" in text and "NOT_LEADER_OR_FOLLOWER (6) x4" in text


def test_latency_hotspot(spark: SparkSession) -> None:
    df = events(
        spark,
        calls(3, B1, [0] * 5, latency=2000.0, start=0),  # Metadata at 2 s: absolute
        calls(1, B1, [0] * 5, latency=600.0, start=100),  # Fetch long poll on its own broker: fine
        calls(2, B1, [0] * 5, latency=1.0, start=200),  # ListOffsets on three brokers, one slow
        calls(2, B2, [0] * 5, latency=1.5, start=300),
        calls(2, B3, [0] * 5, latency=600.0, start=400),
        calls(12, B1, [0] * 3, latency=5000.0, start=500),  # too few samples
    )
    out = hotspots.latency_hotspot(df)
    got = sorted((r["detail"].split(" on ")[0], r["broker"]) for r in out.collect())
    assert got == [("ListOffsets", f"{B3}:9092"), ("Metadata", f"{B1}:9092")]
    assert all(r["kind"] == "latency_hotspot" and len(r["evidence"]) == 1 for r in out.collect())
    text = " ".join(details(out))
    assert "ListOffsets on 198.51.100.3:9092: p99 600.0 ms" in text and "median p99 of 1.5 ms on the 3 brokers" in text
    assert "Metadata on 198.51.100.1:9092: p99 2,000.0 ms" in text and "above 1000 ms" in text
