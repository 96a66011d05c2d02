"""A row's time read as the instant it is, whatever the host's local time zone: PySpark gives collected timestamps
as naive datetimes in the Python process's local time. Run here at UTC+5:30 (the process's zone set for the test,
put back after; the horizon's test at UTC too)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from pipelines import follow_output, follow_state, html, row_time
from pipelines.findings import episode_id
from pipelines.follow import Follower

INSTANT = datetime(2026, 11, 22, 4, 54, 56, 796000, tzinfo=UTC)
US = 1795323296796000


def _zone(name: str) -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def kolkata() -> Iterator[None]:
    yield from _zone("Asia/Kolkata")


@pytest.fixture(params=["UTC", "Asia/Kolkata"])
def any_zone(request: pytest.FixtureRequest) -> Iterator[None]:
    yield from _zone(request.param)


@pytest.fixture
def row(spark: SparkSession, kolkata: None) -> Row:
    """A timestamp as PySpark collects it, with Spark's own microseconds of it."""
    df = spark.sql("select timestamp'2026-11-22 04:54:56.796' as ts")  # the session's zone: UTC
    collected: Row = df.select("ts", F.unix_micros("ts").alias("us")).collect()[0]
    return collected


def test_a_collected_time_is_its_instant(row: Row) -> None:
    assert row.us == US
    assert row.ts.tzinfo is None and row.ts.hour == 10  # PySpark's: naive, local time (UTC+5:30)
    assert row_time.micros(row.ts) == US  # was read as UTC: 5 h 30 min late
    assert row_time.utc(row.ts) == INSTANT
    assert row_time.from_micros(US) == row.ts


def test_the_page_and_follows_outputs_say_utc(row: Row, tmp_path: Path) -> None:
    assert html._ts(row.ts) == "2026-11-22 04:54:56.796"
    finding = {"id": "x", "update": False, "pass": "p", "kind": "k", "severity": "info", "ts_first": row.ts,
               "ts_last": row.ts, "occurrences": 1, "client": None, "broker": None, "group_id": None,
               "subject": None, "detail": "d", "evidence": []}
    follow_output.append(tmp_path, [finding])
    line = json.loads((tmp_path / follow_output.JSONL).read_text())
    assert line["ts_first"] == "2026-11-22T04:54:56.796000"
    written = follow_output.write_parquet(tmp_path, "pass-0-0", [finding])
    assert written is not None and pq.read_table(written).to_pylist()[0]["ts_first"] == INSTANT


def test_an_occurrence_grown_across_the_horizon_is_counted_as_its_episodes(spark: SparkSession, any_zone: None
                                                                         ) -> None:
    """An occurrence starting before the traffic the previous pass kept whole and overlapping a counted one is that
    one, grown: its first time the counted one's (this raised TypeError, naive against aware datetimes, and stopped
    the stream)."""
    key = {"kind": "error_hotspot", "severity": "error", "client": None, "broker": "b:1", "group_id": None,
           "subject": "s"}
    first = spark.sql("select timestamp'2026-11-22 04:54:56.796' as ts").collect()[0].ts
    counted_first = row_time.from_micros(US + 5_000_000)
    occurrence = Row(**key, ts_first=first, ts_last=row_time.from_micros(US + 60_000_000), detail="d",
                     evidence=[Row(capture="c", conn_id=1, correlation_id=2)])
    eid = episode_id(key)
    seen = {(eid, US + 5_000_000): US + 30_000_000}
    prev = follow_state.Meta(batch=0, settled_us=US + 30_000_000, kept_from_us=US + 10_000_000)
    partial_rows, touched = Follower._partials([occurrence], seen, prev, set())
    assert touched == {eid}
    (partial,) = partial_rows
    assert partial[len(key)] == 0  # not counted again: grown
    assert partial[len(key) + 1] == counted_first
    assert seen[(eid, US + 5_000_000)] == US + 60_000_000
