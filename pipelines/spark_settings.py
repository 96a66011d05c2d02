"""Spark SQL settings a job sets for its run and puts back after: a session outlives a job (the tests' session, a
notebook's, ``--follow``'s), and what one job set must not change what the next writes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

#: Parquet timestamps as the events contract's ``ts``: timestamp(us, UTC). Spark's default, INT96, is deprecated
#: in Parquet and reads back (pyarrow, pandas) as a time without a zone; and a job that left this set in the
#: session made the next job's outputs change type (the report's findings written after a decode job).
UTC_MICROS = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


@contextmanager
def scoped(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` in ``spark``'s session for the block; each put back as it was (or unset) after."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in saved.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)
