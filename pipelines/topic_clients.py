"""The topic map in the report (issue 32): ``topics.parquet``, one row per topic × role × client.

What a row is, which messages count, how a consumer's group is found: ``contract/topic_map.py``, which
``kafka-inspector topics`` (``inspector/rows/topic_traffic.py``, pyarrow) uses too, so ``topics.parquet`` equals
what that command prints.

* :func:`with_traffic` adds a column to the report's slimmed events (``report_job.slim``), made while the bodies
  are there: for each Produce, Fetch and ShareFetch message, the topics it counts for with their record bytes and
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

from contract import body_schemas
from contract.kafka import FETCH, JOIN_GROUP
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
from pipelines.client_usage import software
from pipelines.events_dataset import endpoint, from_body

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
_RECORDS = f"Records: {body_schemas.RECORD_SET_SUMMARY}"


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


def _is(api_key: int, direction: str) -> Column:
    return (F.col("api_key") == api_key) & (F.col("direction") == direction)


def _by_source(value: Callable[[Source], Column]) -> Column:
    """``value`` of each row's source (null on other rows)."""
    out: Column | None = None
    for (api_key, direction), source in SOURCES.items():
        out = (F.when if out is None else out.when)(_is(api_key, direction), value(source))
    assert out is not None
    return out


_PARTS = f"array<struct<{_RECORDS}>>"


def _walked(source: Source) -> Column:
    """A message's arrays that name topics, in the order the ``topics`` column lists them, as one array of
    (name, id, partitions, counted) entries: every source the same shape, read by one expression after."""
    b = F.col("_tm_body")
    arrays = []
    for walk in source.walk:
        counted = walk is source.counted

        def entry(e: Column, walk: Walk = walk, counted: bool = counted) -> Column:
            name = e[walk.name] if walk.name else F.lit(None).cast("string")
            parts = e[source.partitions] if counted and source.partitions else F.lit(None)
            return F.struct(name.alias("name"), e[walk.topic_id].alias("id"), parts.cast(_PARTS).alias("parts"),
                            F.lit(counted).alias("counted"))

        arrays.append(F.coalesce(F.transform(b[walk.array], _one_argument(entry)), F.array().cast(_WALKED)))
    return F.concat(*arrays) if len(arrays) > 1 else arrays[0]


def _one_argument(fn: Callable[..., Column]) -> Callable[[Column], Column]:
    """``fn`` as a one-argument function (``F.transform`` passes the index to a second)."""
    return lambda e: fn(e)


_ANY = Walk("", "name", "id")  # the walked entries' fields
_WALKED = f"array<struct<name:string,id:string,parts:{_PARTS},counted:boolean>>"


def _refs() -> Column:
    """The distinct topic references of a message's body, in the order the ``topics`` column lists them."""
    return F.array_distinct(F.filter(F.transform(F.col("_tm_walked"), _referencing(_ANY)), lambda r: r.isNotNull()))


def _entries() -> Column:
    """The counted entries as (topic, record_bytes, records), topics named as the ``topics`` column names them when
    its entries pair with the references."""
    refs, names = F.col("_tm_refs"), F.col("_tm_names")
    paired = F.size(names) == F.size(refs)

    def item(e: Column) -> Column:
        ref = _reference(e, _ANY)
        topic = F.when(paired, F.element_at(names, F.array_position(refs, ref).cast("int"))).otherwise(ref)
        size = _sum_known(F.transform(e["parts"], lambda p: p["Records"]["size"]))
        records = _sum_known(F.transform(e["parts"], lambda p: _sum_known(F.transform(p["Records"]["batches"],
                                                                                     _batch_records))))
        return F.struct(topic.alias("topic"), size.cast("bigint").alias("record_bytes"),
                        records.cast("bigint").alias("records"))

    counted = F.filter(F.col("_tm_walked"), lambda e: e["counted"])
    return F.filter(F.transform(counted, item), lambda x: x["topic"].isNotNull())


#: A JoinGroup request's consumer subscriptions (``contract.topic_map.subscribed_topics``).
_SUBSCRIPTIONS = body_schemas.JOIN_GROUP_SUBSCRIPTIONS_REQUEST


def _named_topics() -> Column:
    """A membership request's topics (the ``topics`` column; a JoinGroup's subscriptions too), as a
    ``TRAFFIC_TYPE`` value."""
    none = F.array().cast("array<string>")
    subscribed = F.when(F.col("api_key") == JOIN_GROUP, F.flatten(F.transform(
        F.coalesce(from_body(F.col("body"), _SUBSCRIPTIONS)["Protocols"], F.array()),
        lambda p: F.coalesce(p["MetadataDecoded"]["value"]["Topics"], none))))
    names = F.array_distinct(F.filter(F.concat(F.coalesce(F.split(F.col("topics"), ","), none),
                                               F.coalesce(subscribed, none)), lambda t: t.isNotNull() & (t != "")))
    return F.struct(F.lit(False).alias("replica"), F.transform(names, lambda t: F.struct(
        t.alias("topic"), F.lit(None).cast("bigint").alias("record_bytes"),
        F.lit(None).cast("bigint").alias("records"))).alias("topics"))


def with_traffic(events: DataFrame) -> DataFrame:
    """``events`` with the ``topic_traffic`` column (``TRAFFIC_TYPE``), read from ``body`` and ``topics`` before
    ``report_job.slim`` drops them; null on the rows the map does not read. Made in steps, each body parsed once
    (an expression used twice in one step is evaluated twice)."""
    is_source = F.lit(False)
    for api_key, direction in SOURCES:
        is_source = is_source | _is(api_key, direction)
    member = (F.col("direction") == "request") & F.col("api_key").isin(list(MEMBER_APIS)) & F.col(
        "group_id").isNotNull()
    parsed = from_body(F.col("body"), body_schemas.TOPIC_MAP_BODIES)
    staged = events.withColumn("_tm_body", F.when(is_source, parsed)).withColumn(
        "_tm_names", F.coalesce(F.split(F.col("topics"), ","), F.array().cast("array<string>"))).withColumn(
        "_tm_walked", _by_source(_walked)).withColumn("_tm_refs", _refs()).withColumn("_tm_entries", _entries())
    b = F.col("_tm_body")
    replica = _is(FETCH, "request") & F.coalesce(F.coalesce(b["ReplicaState"]["ReplicaId"], b["ReplicaId"]) >= 0,
                                                 F.lit(False))
    value = F.when(is_source, F.struct(replica.alias("replica"), F.col("_tm_entries").alias("topics"))).when(
        member, _named_topics())
    return staged.withColumn("topic_traffic", value.cast(TRAFFIC_TYPE)).drop(
        "_tm_body", "_tm_names", "_tm_walked", "_tm_refs", "_tm_entries")


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
                           F.transform("topic_traffic.topics", lambda x: x["topic"]).alias("named"),
                           F.posexplode("topic_traffic.topics").alias("at", "t"))
    # a message naming a topic twice (two entries) is one request for it: counted at its first entry
    first = (F.array_position("named", F.col("t.topic")) == F.col("at") + 1).cast("long")
    grouped = items.groupBy(*_WHO, F.col("t.topic").alias("topic"), "role", "broker").agg(
        F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"),
        F.sum(F.col("request") * first).alias("requests"),
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
