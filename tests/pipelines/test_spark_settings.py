"""A job's Spark settings hold for its run only (``pipelines/spark_settings.py``), and the report's Parquet times are
the contract's: timestamp(us, UTC), whatever ran before it in the session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from pipelines import decode_job
from pipelines.spark_settings import UTC_MICROS, scoped

PCAPS = Path(__file__).resolve().parents[2] / "pcaps"
KEY = "spark.sql.parquet.outputTimestampType"
OUTPUTS = ("findings", "admin_audit", "clients", "rebalances", "lag", "topics", "groups")


def test_scoped_puts_back_what_was_set_and_unsets_what_was_not(spark: SparkSession) -> None:
    spark.conf.set(KEY, "INT96")
    with scoped(spark, {**UTC_MICROS, "spark.inspector.test.unset": "x"}):
        assert spark.conf.get(KEY) == "TIMESTAMP_MICROS" and spark.conf.get("spark.inspector.test.unset") == "x"
    assert spark.conf.get(KEY) == "INT96"
    assert spark.conf.get("spark.inspector.test.unset", None) is None
    spark.conf.unset(KEY)


def test_the_decode_job_leaves_the_session_as_it_found_it(spark: SparkSession, tmp_path: Path) -> None:
    before = spark.conf.get(KEY)
    assert decode_job.run(spark, [str(sorted(PCAPS.glob("*.pcap"))[0])], str(tmp_path)) > 0
    assert spark.conf.get(KEY) == before  # the next job's outputs do not depend on this one having run
    ts = pq.read_schema(next((tmp_path / "events").glob("*.parquet"))).field("ts")
    assert ts.type == pa.timestamp("us", tz="UTC")


def test_every_report_output_writes_times_as_utc_micros(batch_report: tuple[Path, list[dict[str, Any]]]) -> None:
    times = {}
    for name in OUTPUTS:
        schema = pq.read_table(batch_report[0] / f"{name}.parquet").schema
        times[name] = {f.name: f.type for f in schema if pa.types.is_timestamp(f.type)}
    assert times["findings"] and times["admin_audit"]  # the outputs that have times
    assert {t for fields in times.values() for t in fields.values()} == {pa.timestamp("us", tz="UTC")}, times
