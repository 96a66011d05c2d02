"""The events dataset as Spark sees it: schema, loading, and the joins every detector shares.

This module knows only the Parquet contract that ``kafka-inspector read`` writes (``contract/events.py``,
README.md "The events contract"); it never imports the decoder. Field names inside ``body`` are the Kafka spec's.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from contract import body_schemas
from contract.events import BOOL, EVENT_COLUMNS, FLOAT64, INT16, INT32, INT64, LIST_INT16, STRING, TIMESTAMP
from contract.kafka import API_VERSIONS

#: The contract's logical types as Spark types.
_SPARK_TYPES = {
    TIMESTAMP: TimestampType(),
    STRING: StringType(),
    BOOL: BooleanType(),
    INT16: ShortType(),
    INT32: IntegerType(),
    INT64: LongType(),
    FLOAT64: DoubleType(),
    LIST_INT16: ArrayType(ShortType()),
}
#: The events contract (contract/events.py) as a Spark schema (the same columns as the files' Arrow schema).
EVENTS_SCHEMA = StructType([StructField(c.name, _SPARK_TYPES[c.type], c.nullable) for c in EVENT_COLUMNS])

#: One request/response exchange inside one connection (an Envelope's inner message has its own
#: correlation id and carries the outer one in ``envelope_correlation_id``).
EXCHANGE_KEY = ("capture", "conn_id", "correlation_id", "api_key")

EVIDENCE_LIMIT = 50


def events_path(path: str) -> str:
    """``DIR`` written by ``read`` or its ``DIR/events``: the Parquet directory to load."""
    if "://" not in path and os.path.isdir(os.path.join(path, "events")):
        return os.path.join(path, "events")
    return path


def load_events(spark: SparkSession, path: str | Sequence[str]) -> DataFrame:
    """The events dataset (or several, e.g. one per tap) under the contract's schema (columns a file lacks read as
    null)."""
    paths = [path] if isinstance(path, str) else list(path)
    return spark.read.schema(EVENTS_SCHEMA).parquet(*(events_path(p) for p in paths))


def endpoint(ip: Column | str, port: Column | str) -> Column:
    """``ip:port`` (IPv6 in brackets), null when the ip is null."""
    ip_c = F.col(ip) if isinstance(ip, str) else ip
    port_c = F.col(port) if isinstance(port, str) else port
    host = F.when(F.instr(ip_c, ":") > 0, F.concat(F.lit("["), ip_c, F.lit("]"))).otherwise(ip_c)
    return F.when(ip_c.isNull(), F.lit(None).cast("string")).otherwise(
        F.concat(host, F.lit(":"), F.coalesce(port_c.cast("string"), F.lit("?")))
    )


def with_endpoints(df: DataFrame) -> DataFrame:
    return df.withColumn("client", endpoint("client_ip", "client_port")).withColumn(
        "broker", endpoint("broker_ip", "broker_port")
    )


@functools.cache
def body_type(ddl: str) -> StructType:
    """The Spark type of a body's DDL (``contract/body_schemas.py``), parsed once a process by Spark's SQL parser.
    Given the DDL text instead, each ``from_json`` has the parser read it again (docs/performance.md); given the
    type, Spark reads its JSON form."""
    parsed = DataType.fromDDL(ddl)
    if not isinstance(parsed, StructType):
        raise ValueError(f"a body's DDL is a list of fields, not {parsed.simpleString()}: {ddl}")
    return parsed


def from_body(body: Column, ddl: str) -> Column:
    """``body`` (a body's JSON text) parsed with a partial schema: ``ddl``, the fields a detector reads."""
    return F.from_json(body, body_type(ddl))


def parse_body(df: DataFrame, ddl: str, name: str = "b", column: str = "body") -> DataFrame:
    """Add column ``name``: ``column`` (a body) parsed with a partial schema (only the fields a detector reads)."""
    return df.withColumn(name, from_body(F.col(column), ddl))


def requests(events: DataFrame, api_keys: Sequence[int]) -> DataFrame:
    return events.where((F.col("direction") == "request") & F.col("api_key").isin(list(api_keys)))


def responses(events: DataFrame, api_keys: Sequence[int]) -> DataFrame:
    return events.where((F.col("direction") == "response") & F.col("api_key").isin(list(api_keys)))


class _Memo:
    """The frames ``shared`` functions made within one ``shared_frames`` block, how they are kept, and a lock
    per frame (the report runs its detectors side by side: a step asking while another makes it waits)."""

    def __init__(self, keep: Callable[[DataFrame], DataFrame]) -> None:
        self.keep = keep
        self.frames: dict[tuple[object, ...], DataFrame] = {}
        self._locks: dict[tuple[object, ...], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], make: Callable[[], DataFrame]) -> DataFrame:
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self.frames:
                self.frames[key] = self.keep(make())
            return self.frames[key]


_SHARED: _Memo | None = None

_F = TypeVar("_F", bound=Callable[..., DataFrame])


@contextmanager
def shared_frames(keep: Callable[[DataFrame], DataFrame]) -> Iterator[None]:
    """Within this block, a function marked ``shared`` called again with the same arguments (the same
    DataFrame objects, equal other values) returns the DataFrame of its first call, kept (``keep``: the report
    materialises it): the report's detectors derive the same request/response pairs, heartbeats, topic names
    ... from the same events."""
    global _SHARED
    _SHARED = _Memo(keep)
    try:
        yield
    finally:
        for df in _SHARED.frames.values():
            df.unpersist()  # a cached frame's storage (a materialised one holds none of its own)
        _SHARED = None


def shared(fn: _F) -> _F:
    """Mark ``fn`` (DataFrames and hashable values in, a DataFrame out) as computed once per arguments within
    ``shared_frames``; outside it, a plain call."""
    @functools.wraps(fn)
    def once(*args: Any) -> DataFrame:
        memo = _SHARED
        if memo is None:
            return fn(*args)
        key = (fn.__module__, fn.__qualname__, *((id(a), "df") if isinstance(a, DataFrame) else a for a in args))
        return memo.get(key, lambda: fn(*args))
    return cast(_F, once)


def exchanges(events: DataFrame, api_keys: Sequence[int], request_ddl: str | None, response_ddl: str | None
              ) -> DataFrame:
    """Requests joined with their responses (left join: a request may go unanswered).

    Request columns keep their names; response columns come as ``r_*`` (``r_ts``, ``r_error_code``,
    ``r_body``, ...), parsed bodies as ``qb`` and ``rb``. A response has no row here when its request
    is not in the capture.
    """
    return _exchanges(events, tuple(api_keys), request_ddl, response_ddl)


def api_versions(events: DataFrame) -> DataFrame:
    """ApiVersions requests with their responses (:func:`exchanges`), the advertised version ranges parsed
    (``rb``): the one such frame every detector reading ApiVersions uses, so a pass joins them once."""
    return exchanges(events, [API_VERSIONS], None, body_schemas.API_VERSIONS_RESPONSE)


@shared
def _exchanges(events: DataFrame, api_keys: tuple[int, ...], request_ddl: str | None, response_ddl: str | None
               ) -> DataFrame:
    q = requests(events, api_keys)
    if request_ddl:
        q = parse_body(q, request_ddl, "qb")
    r = responses(events, api_keys).select(
        *[F.col(k).alias(f"_k_{k}") for k in EXCHANGE_KEY],
        F.col("envelope_correlation_id").alias("_k_env"),
        *[F.col(c).alias(f"r_{c}") for c in ("ts", "error_code", "nested_error_codes", "latency_ms",
                                            "decode_status", "body", "body_version", "generation_id",
                                            "member_id", "protocol_type", "protocol_name", "cluster_id",
                                            "node_id")],
    )
    if response_ddl:
        r = parse_body(r, response_ddl, "rb", "r_body")
    cond = [q[k] == r[f"_k_{k}"] for k in EXCHANGE_KEY] + [q["envelope_correlation_id"].eqNullSafe(r["_k_env"])]
    return q.join(r, cond, "left").drop(*[f"_k_{k}" for k in EXCHANGE_KEY], "_k_env")


def evidence(conn_id: Column | str = "conn_id", correlation_id: Column | str = "correlation_id",
             capture: Column | str = "capture") -> Column:
    """One evidence entry: the message that shows the finding, named as the events dataset names it (its capture
    file, its connection, its correlation id: ``findings.EVIDENCE_STRUCT``)."""
    def col(c: Column | str) -> Column:
        return F.col(c) if isinstance(c, str) else c
    return F.struct(col(capture).cast("string").alias("capture"), col(conn_id).cast("long").alias("conn_id"),
                    col(correlation_id).cast("int").alias("correlation_id"))


def collect_evidence(entry: Column) -> Column:
    """Aggregate: distinct evidence entries, sorted, at most ``EVIDENCE_LIMIT``."""
    return F.slice(F.array_sort(F.collect_set(entry)), 1, EVIDENCE_LIMIT)


def union_sorted(arrays: Column) -> Column:
    """Aggregate: the distinct elements of the array column ``arrays`` over the group, sorted."""
    return F.array_sort(F.array_distinct(F.flatten(F.collect_list(arrays))))


def merge_evidence(evidence_arrays: Column) -> Column:
    """Aggregate: evidence arrays merged: distinct entries, sorted, at most ``EVIDENCE_LIMIT``."""
    return F.slice(union_sorted(evidence_arrays), 1, EVIDENCE_LIMIT)


def asof(
    left: DataFrame,
    right: DataFrame,
    by: Sequence[str],
    value: str,
    out: str,
    ts: str = "ts",
    fallback_next: bool = True,
) -> DataFrame:
    """Add ``out`` to ``left``: ``right.value`` at the latest ``right.ts`` <= ``left.ts`` with the same ``by``
    columns (or, with ``fallback_next``, the earliest one after when there is none before).

    Done as one sort per key (union + window), not a range join. ``value`` may be a struct column.
    """
    tag = "_asof_tag"
    rv = "_asof_value"
    lcols = left.columns
    r = right.select(*[F.col(c) for c in by], F.col(ts).alias("_asof_ts"), F.col(value).alias(rv),
                     F.lit(0).alias(tag))
    rv_type = r.schema[rv].dataType
    l_ = left.select(*[F.col(c) for c in lcols], *[F.col(c).alias(f"_asof_by_{c}") for c in by],
                     F.col(ts).alias("_asof_ts"), F.lit(None).cast(rv_type).alias(rv), F.lit(1).alias(tag))
    r_full = r.select(
        *[F.lit(None).cast(left.schema[c].dataType).alias(c) for c in lcols],
        *[F.col(c).alias(f"_asof_by_{c}") for c in by],
        "_asof_ts", rv, tag,
    )
    u = l_.unionByName(r_full)
    keys = [f"_asof_by_{c}" for c in by]
    w_prev = Window.partitionBy(*keys).orderBy("_asof_ts", tag).rowsBetween(Window.unboundedPreceding, 0)
    found = F.last(rv, ignorenulls=True).over(w_prev)
    if fallback_next:
        # the first value at or after the row: a running "last" in descending order (an unbounded-following
        # frame would be recomputed per row)
        w_next = Window.partitionBy(*keys).orderBy(F.col("_asof_ts").desc(), F.col(tag).desc()).rowsBetween(
            Window.unboundedPreceding, 0)
        found = F.coalesce(found, F.last(rv, ignorenulls=True).over(w_next))
    return u.withColumn(out, found).where(F.col(tag) == 1).select(*lcols, out)

