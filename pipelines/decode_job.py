"""Decode many capture files in parallel into the events dataset, so a cluster can take over from ``read``.

One Spark task per capture file: the task runs the inspector's own reader (``inspector.read.reader.iter_capture``
+ ``inspector.rows.event_table.EventTable``) and hands Arrow record batches with
``inspector.rows.event_table.SCHEMA`` to Spark
through ``mapInArrow`` (or as rows through ``mapPartitions`` where pandas, which PySpark's
``mapInArrow`` needs, is not installed); Spark writes them as ``OUTPUT/events/*.parquet``. The rows are
those ``kafka-inspector read`` writes: file *i* numbers its connections in block *i* (from
``i * 2**32 + 1``, ``inspector.rows.conn_ids``), as ``read`` numbers its *i*-th file, which keeps ids unique
without the tasks talking to each other, and ``show FILE --filter conn_id=N`` finds connection N. With
``--tls-keylog FILE`` (a path every executor can read, as the captures are) the reader decrypts the TLS
connections whose secrets it holds, as ``read --tls-keylog`` does.

This is the one pipelines module that imports ``inspector`` (the decoder runs inside the tasks); the
executors need the ``inspector`` and ``decoders`` packages and their dependencies (see pipelines/README.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from contract.limits import DEFAULT_LIMITS, DecodeLimits
from pipelines.events_dataset import EVENTS_SCHEMA
from pipelines.spark_settings import UTC_MICROS, scoped

#: conn_id ranges per file: file i numbers its connections from i * CONN_ID_STRIDE + 1 (``inspector.rows.conn_ids``).
CONN_ID_STRIDE = 2**32

FILES_SCHEMA = StructType([StructField("index", IntegerType(), False), StructField("path", StringType(), False)])


def decode_files(batches: Iterator[pa.RecordBatch], ports: Sequence[int] = (), keylog: str | None = None,
                 limits: DecodeLimits = DEFAULT_LIMITS) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: (index, path) rows in, event record batches out (``keylog``: the TLS key log's
    path)."""
    from inspector.read.reader import BATCH_ROWS, ReadOptions, iter_capture
    from inspector.rows.event_table import EventTable
    from inspector.rows.summary import Summary

    options = ReadOptions(ports=frozenset(ports), limits=limits, tls_keylog=keylog)
    for batch in batches:
        for index, path in zip(batch.column("index").to_pylist(), batch.column("path").to_pylist(), strict=True):
            summary = Summary()
            table = EventTable(capture=Path(path).name, records=options.records, limits=options.limits)
            for ev in iter_capture(path, summary, options, conn_id_base=index * CONN_ID_STRIDE):
                table.add(ev)
                if len(table) >= BATCH_ROWS:
                    yield table.take()
            if len(table):
                yield table.take()


def files_frame(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """One row per capture file, one partition per file (each file is one task)."""
    rows = [(i, p) for i, p in enumerate(paths)]
    rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    return spark.createDataFrame(rdd, FILES_SCHEMA)


def _rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[object, ...]]:
    for batch in batches:
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        yield from zip(*columns, strict=True)


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def decode(spark: SparkSession, paths: Sequence[str], ports: Sequence[int] = (), arrow: bool | None = None,
           keylog: str | None = None, limits: DecodeLimits = DEFAULT_LIMITS) -> DataFrame:
    """The events of ``paths`` as a DataFrame (``EVENTS_SCHEMA``), decoded by the executors.

    With ``arrow`` (default: when pandas is installed, which PySpark's ``mapInArrow`` requires) the batches
    go to Spark as Arrow; otherwise through ``mapPartitions`` as rows (slower, no extra dependency).
    """
    port_list = list(ports)
    files = files_frame(spark, paths)
    if arrow if arrow is not None else _has_pandas():

        def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return decode_files(batches, port_list, keylog, limits)

        return files.mapInArrow(fn, EVENTS_SCHEMA)

    def rows(part: Iterable[Any]) -> Iterable[tuple[Any, ...]]:
        items = list(part)
        batch = pa.RecordBatch.from_pydict({"index": [r[0] for r in items], "path": [r[1] for r in items]})
        return _rows(decode_files(iter([batch]), port_list, keylog, limits))

    return spark.createDataFrame(files.rdd.mapPartitions(rows), EVENTS_SCHEMA)


def run(spark: SparkSession, input: Sequence[str], output: str, ports: Sequence[int] = (),
        keylog: str | None = None, limits: DecodeLimits = DEFAULT_LIMITS) -> int:
    """Decode the capture files ``input`` into ``OUTPUT/events``; returns the number of events written."""
    events = decode(spark, input, ports, keylog=keylog, limits=limits)
    path = output.rstrip("/") + "/events"
    with scoped(spark, UTC_MICROS):  # the contract's ts
        events.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path).count()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Decode capture files into the events dataset with Spark")
    ap.add_argument("captures", nargs="+", help="capture files, as paths every executor can read")
    ap.add_argument("--output", required=True, help="output directory (events go to OUTPUT/events)")
    ap.add_argument("--port", type=int, action="append", default=[], help="only this broker port is Kafka")
    ap.add_argument("--tls-keylog", metavar="FILE",
                    help="TLS key log (NSS format) to decrypt TLS connections with, as a path every executor can read")
    args = ap.parse_args(argv)
    spark = SparkSession.builder.appName("kafka-inspector-decode").getOrCreate()
    try:
        n = run(spark, args.captures, args.output, args.port, args.tls_keylog)
    finally:
        spark.stop()
    print(f"wrote {n} events to {args.output}/events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
