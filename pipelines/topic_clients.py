"""The topic map in the report (issue 32): ``topics.parquet``, one row per topic × role × client.

What a row is, which messages count, how a consumer's group is found: ``contract/topic_map.py``, which
``kafka-inspector topics`` (``inspector/topic_traffic.py``, pyarrow) uses too, so ``topics.parquet`` equals what that
command prints.

* :func:`traffic` is a column of the report's slimmed events (``report_job.slim``), made while the bodies are
  there: for each Produce, Fetch and ShareFetch message, the topics it counts for with their record bytes and
  records (ids named as the ``topics`` column names them), and whether a Fetch request is a follower's; for each
  membership request, the topics it names;
* :func:`traffic_rows`, :func:`member_rows` and :func:`software_rows` group the events per client, topic, role and
  broker, per client, group and topic, and per client: three small results that
  ``contract.topic_map.build_topic_map`` turns into the rows (:func:`topic_map`).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType, TimestampType

from contract.kafka import FETCH
from contract.topic_map import (
    MEMBER_APIS,
    MEMBER_FIELDS,
    SOFTWARE_FIELDS,
    SOURCES,
    TRAFFIC_FIELDS,
    ZERO_UUID,
    Source,
    TopicClient,
    Walk,
    build_topic_map,
)
from pipelines.clients import software
from pipelines.events import endpoint

TOPICS_SCHEMA = StructType([
    StructField("topic", StringType()),
    StructField("role", StringType()),
    StructField("client_ip", StringType()),
    StructField("client_id", StringType()),
    StructField("principal", StringType()),
    StructField("software_name", StringType()),
    StructField("software_version", StringType()),
    StructField("group_id", StringType()),
    StructField("first_seen", TimestampType()),
    StructField("last_seen", TimestampType()),
    StructField("requests", LongType()),
    StructField("record_bytes", LongType()),
    StructField("records", LongType()),
    StructField("brokers", ArrayType(StringType())),
])
_WHO = ("client_ip", "client_id", "principal")
_ITEM = "struct<topic:string,record_bytes:bigint,records:bigint>"
#: The ``topic_traffic`` column's type.
TRAFFIC_TYPE = f"struct<replica:boolean,topics:array<{_ITEM}>>"
_RECORDS = "Records: STRUCT<size: BIGINT, batches: ARRAY<STRUCT<recordCount: INT, magic: INT, compression: STRING>>>"


def _ddl(api_key: int, direction: str, source: Source) -> str:
    """The part of a body the map reads."""
    fields = []
    for walk in source.walk:
        names = [f"{walk.name}: STRING"] if walk.name else []
        if walk is source.counted and source.partitions:
            names.append(f"{source.partitions}: ARRAY<STRUCT<{_RECORDS}>>")
        fields.append(f"{walk.array} ARRAY<STRUCT<{', '.join([*names, f'{walk.topic_id}: STRING'])}>>")
    if (api_key, direction) == (FETCH, "request"):
        fields.append("ReplicaId INT, ReplicaState STRUCT<ReplicaId: INT>")
    return ", ".join(fields)


def _reference(entry: Column, walk: Walk) -> Column:
    """``contract.topic_map.reference``: the entry's name when not empty, else its id when not the zero id."""
    topic_id = entry[walk.topic_id]
    by_id = F.when(topic_id.isNotNull() & (topic_id != "") & (topic_id != ZERO_UUID), topic_id)
    if walk.name is None:
        return by_id
    return F.when(entry[walk.name].isNotNull() & (entry[walk.name] != ""), entry[walk.name]).otherwise(by_id)


def _referencing(walk: Walk) -> Callable[[Column], Column]:
    """:func:`_reference` of ``walk``'s entries, as a one-argument function (``F.transform`` passes the index to a
    second)."""
    return lambda entry: _reference(entry, walk)


def _sum_known(values: Column) -> Column:
    """The sum of an array's non-null numbers; null when none is known (``contract.topic_map._add``)."""
    return F.aggregate(values, F.lit(None).cast("bigint"),
                       lambda acc, v: F.when(v.isNull(), acc).otherwise(F.coalesce(acc, F.lit(0)) + v))


def _batch_records(batch: Column) -> Column:
    """``contract.topic_map.batch_records``."""
    return F.coalesce(batch["recordCount"].cast("bigint"), F.when(
        batch["magic"].isin(0, 1) & (batch["compression"] == "none"), F.lit(1).cast("bigint")))


def _message(api_key: int, direction: str, source: Source) -> Column:
    """``contract.topic_map.message_topics`` of one source's messages, as a ``TRAFFIC_TYPE`` value."""
    b = F.from_json(F.col("body"), _ddl(api_key, direction, source))
    none = F.array().cast("array<string>")
    refs = F.array_distinct(F.filter(F.flatten(F.array(*[
        F.coalesce(F.transform(b[w.array], _referencing(w)), none) for w in source.walk])),
        lambda r: r.isNotNull()))
    names = F.coalesce(F.split(F.col("topics"), ","), F.array().cast("array<string>"))
    paired = F.size(names) == F.size(refs)

    def named(ref: Column) -> Column:
        return F.when(paired, F.element_at(names, F.array_position(refs, ref).cast("int"))).otherwise(ref)

    counted = source.counted

    def item(e: Column) -> Column:
        parts = e[source.partitions] if source.partitions else None
        size = _sum_known(F.transform(parts, lambda p: p["Records"]["size"])) if parts is not None else None
        records = (_sum_known(F.transform(parts, lambda p: _sum_known(F.transform(
            p["Records"]["batches"], _batch_records)))) if parts is not None else None)
        return F.struct(named(_reference(e, counted)).alias("topic"),
                        (size if size is not None else F.lit(None)).cast("bigint").alias("record_bytes"),
                        (records if records is not None else F.lit(None)).cast("bigint").alias("records"))

    entries = F.filter(F.transform(b[counted.array], item), lambda x: x["topic"].isNotNull())
    merged = F.transform(F.array_distinct(F.transform(entries, lambda x: x["topic"])), lambda t: F.struct(
        t.alias("topic"),
        _sum_known(F.transform(F.filter(entries, lambda x: x["topic"] == t), lambda x: x["record_bytes"]))
        .alias("record_bytes"),
        _sum_known(F.transform(F.filter(entries, lambda x: x["topic"] == t), lambda x: x["records"]))
        .alias("records")))
    replica = (F.coalesce(b["ReplicaState"]["ReplicaId"], b["ReplicaId"]) >= 0 if (api_key, direction) ==
               (FETCH, "request") else F.lit(False))
    return F.struct(F.coalesce(replica, F.lit(False)).alias("replica"), merged.alias("topics"))


def _named_topics() -> Column:
    """A membership request's topics (the ``topics`` column), as a ``TRAFFIC_TYPE`` value."""
    names = F.filter(F.coalesce(F.split(F.col("topics"), ","), F.array().cast("array<string>")), lambda t: t != "")
    return F.struct(F.lit(False).alias("replica"), F.transform(names, lambda t: F.struct(
        t.alias("topic"), F.lit(None).cast("bigint").alias("record_bytes"),
        F.lit(None).cast("bigint").alias("records"))).alias("topics"))


def traffic() -> Column:
    """The ``topic_traffic`` column (``TRAFFIC_TYPE``) of the report's events, read from ``body`` and ``topics``
    before ``report_job.slim`` drops them; null on the rows the map does not read."""
    out = None
    for (api_key, direction), source in SOURCES.items():
        cond = (F.col("api_key") == api_key) & (F.col("direction") == direction)
        value = _message(api_key, direction, source)
        out = F.when(cond, value) if out is None else out.when(cond, value)
    assert out is not None
    member = (F.col("direction") == "request") & F.col("api_key").isin(list(MEMBER_APIS)) & F.col(
        "group_id").isNotNull()
    return out.when(member, _named_topics()).cast(TRAFFIC_TYPE)


def _source_map(attribute: str) -> Column:
    pairs = [x for (key, direction), source in SOURCES.items()
             for x in (F.lit(f"{key}:{direction}"), F.lit(getattr(source, attribute)))]
    return F.create_map(*pairs)[F.concat(F.col("api_key").cast("string"), F.lit(":"), F.col("direction"))]


def _direct(events: DataFrame) -> DataFrame:
    return events.where(F.col("envelope_correlation_id").isNull() & F.col("topic_traffic").isNotNull())


def traffic_rows(events: DataFrame) -> DataFrame:
    """Per client, topic, role and broker: first and last time, requests, record bytes and records
    (``TRAFFIC_FIELDS``); a follower's connections left out."""
    ev = _direct(events)
    followers = ev.where(F.col("topic_traffic.replica")).select("capture", "conn_id").distinct()
    sourced = ev.where(_source_map("role").isNotNull()).join(F.broadcast(followers), ["capture", "conn_id"],
                                                             "left_anti")
    items = sourced.select(*_WHO, endpoint("broker_ip", "broker_port").alias("broker"), "ts",
                           _source_map("role").alias("role"), _source_map("request").cast("long").alias("request"),
                           F.explode("topic_traffic.topics").alias("t"))
    grouped = items.groupBy(*_WHO, F.col("t.topic").alias("topic"), "role", "broker").agg(
        F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"), F.sum("request").alias("requests"),
        F.sum("t.record_bytes").alias("record_bytes"), F.sum("t.records").alias("records"))
    return grouped.select(*TRAFFIC_FIELDS)


def member_rows(events: DataFrame) -> DataFrame:
    """Each client, group its membership requests named, and topic they named (null: none) (``MEMBER_FIELDS``)."""
    member = _direct(events).where((F.col("direction") == "request") & F.col("api_key").isin(list(MEMBER_APIS))
                                   & F.col("group_id").isNotNull())
    return member.select(*_WHO, "group_id", F.explode_outer("topic_traffic.topics").alias("t")).select(
        *_WHO, "group_id", F.col("t.topic").alias("topic")).distinct().select(*MEMBER_FIELDS)


def software_rows(events: DataFrame) -> DataFrame:
    """Each client and the least software it named (``SOFTWARE_FIELDS``)."""
    named = events.where(F.col("envelope_correlation_id").isNull()).withColumn("software", software()).where(
        F.col("software").isNotNull()).groupBy(*_WHO).agg(F.min("software").alias("software"))
    return named.select(*_WHO, F.col("software.name").alias("software_name"),
                        F.col("software.v").alias("software_version")).select(*SOFTWARE_FIELDS)


def topic_map(events: DataFrame) -> list[TopicClient]:
    """The topic map of ``events`` (the report's slimmed events, with ``topic_traffic``): a small result."""
    return build_topic_map([tuple(r) for r in traffic_rows(events).collect()],
                           [tuple(r) for r in member_rows(events).collect()],
                           [tuple(r) for r in software_rows(events).collect()])


def topics_frame(spark: SparkSession, rows: list[TopicClient]) -> DataFrame:
    """``topics.parquet``'s rows."""
    return spark.createDataFrame([r.row() for r in rows], TOPICS_SCHEMA)
