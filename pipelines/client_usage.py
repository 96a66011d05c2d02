"""The client inventory and Kafka 4.0 readiness in the report (issue 21).

* :func:`usage` and :func:`errors` group the events per client (address, client id, principal), broker, direction,
  API and version, and per client and error code; ``contract/clients.py`` makes the inventory rows from them,
  as it does for ``kafka-inspector clients`` (so ``clients.parquet`` equals what that command prints);
* :func:`removed_in_kafka_4` (error): a client that sent requests at versions Kafka 4.0 removed (KIP-896), or of
  the ZooKeeper-era APIs 4-7, per client and API, naming the lowest version it must move to; what was removed
  comes from the specs (``contract.apis``), never typed here;
* :func:`old_message_format` (warning): a client that produced, or fetched, record sets in message format v0/v1
  (MessageSet, magic 0 or 1), which Kafka 4.0 no longer supports (KIP-724).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from contract.apis import REMOVED_APIS, REMOVED_VERSIONS
from contract.clients import (
    API_VERSIONS,
    ERROR_FIELDS,
    FETCH,
    OLD_RECORD_FORMAT,
    PRODUCE,
    SOFTWARE_FROM,
    USAGE_FIELDS,
    Client,
    build_clients,
)
from pipelines.events_dataset import collect_evidence, endpoint, evidence
from pipelines.findings import as_findings, client_subject

_WHO = ("client_ip", "client_id", "principal")

CLIENTS_SCHEMA = StructType([
    StructField("client_ip", StringType()),
    StructField("client_id", StringType()),
    StructField("principal", StringType()),
    StructField("software_name", StringType()),
    StructField("software_version", StringType()),
    StructField("first_seen", TimestampType()),
    StructField("last_seen", TimestampType()),
    StructField("brokers", ArrayType(StringType())),
    StructField("apis", ArrayType(StructType([StructField("api_name", StringType()),
                                              StructField("api_version", ShortType()),
                                              StructField("requests", LongType())]))),
    StructField("requests", LongType()),
    StructField("errors", ArrayType(StructType([StructField("error_code", ShortType()),
                                                StructField("error_name", StringType()),
                                                StructField("responses", LongType())]))),
    StructField("removed_in_kafka_4", ArrayType(StructType([StructField("api_name", StringType()),
                                                            StructField("api_key", ShortType()),
                                                            StructField("versions", ArrayType(ShortType())),
                                                            StructField("requests", LongType()),
                                                            StructField("move_to", IntegerType())]))),
    StructField("message_set_produced", LongType()),
    StructField("message_set_fetched", LongType()),
])


def old_record_format() -> Column:
    """A Produce request or Fetch response with record sets in message format v0/v1 (read from ``body``: the
    report's slimmed events keep it as a column, ``old_record_format``, where the bodies are dropped)."""
    body = F.col("body")
    carries = ((F.col("api_key") == PRODUCE) & (F.col("direction") == "request")) | (
        (F.col("api_key") == FETCH) & (F.col("direction") == "response"))
    found = F.lit(False)
    for text in OLD_RECORD_FORMAT:
        found = found | body.contains(text)
    return carries & F.coalesce(found, F.lit(False))


def _direct(events: DataFrame) -> DataFrame:
    """Rows sent on this wire (not unwrapped from an Envelope), with the record-format flag."""
    if "old_record_format" not in events.columns:
        events = events.withColumn("old_record_format", old_record_format())
    return events.where(F.col("envelope_correlation_id").isNull())


def software() -> Column:
    """The software an ApiVersions v3+ request names: a struct (``name``, ``v``; the least per client is its), null on
    other rows (the topic map reads it too)."""
    body = F.col("body")
    names_software = ((F.col("direction") == "request") & (F.col("api_key") == API_VERSIONS)
                      & (F.col("api_version") >= SOFTWARE_FROM))
    name = F.get_json_object(body, "$.ClientSoftwareName")
    return F.when(names_software & name.isNotNull(), F.struct(
        name.alias("name"), F.coalesce(F.get_json_object(body, "$.ClientSoftwareVersion"), F.lit("")).alias("v")))


def usage(events: DataFrame) -> DataFrame:
    """Per client, broker, direction, API and version: messages, first and last time, software, old record sets
    (``contract.clients.USAGE_FIELDS``)."""
    grouped = _direct(events).withColumn("broker", endpoint("broker_ip", "broker_port")).withColumn(
        "software", software()).groupBy(*_WHO, "broker", "direction", "api_key", "api_name", "api_version").agg(
        F.count(F.lit(1)).alias("messages"), F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"),
        F.min("software").alias("software"), F.sum(F.col("old_record_format").cast("long")).alias("old_record_sets"))
    return grouped.select(*[F.col("software.name").alias(f) if f == "software_name" else
                            F.col("software.v").alias(f) if f == "software_version" else F.col(f)
                            for f in USAGE_FIELDS])


def errors(events: DataFrame) -> DataFrame:
    """Per client and error code: the responses carrying it, top level or nested (``ERROR_FIELDS``)."""
    top = F.when(F.coalesce(F.col("error_code"), F.lit(0)) != 0, F.array(F.col("error_code"))).otherwise(
        F.array().cast("array<smallint>"))
    codes = F.array_distinct(F.concat(F.coalesce(F.col("nested_error_codes"), F.array().cast("array<smallint>")),
                                      top))
    return _direct(events).where(F.col("direction") == "response").select(
        *_WHO, F.explode(codes).alias("error_code")).groupBy(*_WHO, "error_code").agg(
        F.count(F.lit(1)).alias("responses")).select(*ERROR_FIELDS)


def inventory(events: DataFrame) -> list[Client]:
    """The clients of ``events`` (a small result: one row per client)."""
    return build_clients([tuple(r) for r in usage(events).collect()], [tuple(r) for r in errors(events).collect()])


def clients_frame(spark: SparkSession, clients: list[Client]) -> DataFrame:
    """``clients.parquet``'s rows."""
    return spark.createDataFrame([c.row() for c in clients], CLIENTS_SCHEMA)


def _move_to() -> Column:
    """The lowest version to move to for a removed (API, version) request; -1 when the API is gone; null when the
    request was not removed."""
    pairs = []
    for key, (lo, hi) in sorted(REMOVED_VERSIONS.items()):
        for version in range(lo, hi + 1):
            pairs += [F.lit(f"{key}:{version}"), F.lit(-1 if key in REMOVED_APIS else hi + 1)]
    table = F.create_map(*pairs)
    return F.try_element_at(table, F.concat(F.col("api_key").cast("string"), F.lit(":"),
                                            F.col("api_version").cast("string")))


def _per_client(rows: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """``rows`` per client (address and client id) and ``keys``: first and last time, count ``n``, the brokers,
    the connections, one client endpoint, the evidence."""
    rows = rows.withColumn("broker", endpoint("broker_ip", "broker_port")).withColumn(
        "client", endpoint("client_ip", "client_port"))
    return rows.groupBy("client_ip", "client_id", *keys).agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.array_sort(F.collect_set("broker")).alias("brokers"), F.countDistinct("conn_id").alias("conns"),
        F.min("client").alias("one_client"), collect_evidence(evidence()).alias("evidence"))


def _client_finding(agg: DataFrame, kind: str, severity: str, detail: Column, subject: Column) -> DataFrame:
    """A finding per :func:`_per_client` row: its client endpoint when it used one connection, its broker when
    one."""
    return as_findings(agg, kind, severity, detail, client=F.when(F.col("conns") == 1, F.col("one_client")),
                       broker=F.when(F.size("brokers") == 1, F.element_at("brokers", 1)), subject=subject)


def _who_said() -> Column:
    """``IP (client id ID``: how a client finding's detail starts (the page links a client's findings by it)."""
    return F.concat(F.col("client_ip"), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")))


def removed_in_kafka_4(events: DataFrame) -> DataFrame:
    """Per client (address and client id), API and version Kafka 4.0 removed: the requests sent at it."""
    reqs = _direct(events).where((F.col("direction") == "request") & F.col("api_key").isNotNull()).withColumn(
        "move_to", _move_to()).where(F.col("move_to").isNotNull())
    agg = _per_client(reqs, ("api_name", "api_version", "move_to"))
    target = F.when(F.col("move_to") < 0, F.concat(F.lit(": the API itself is gone (a ZooKeeper-era inter-broker "
                                                         "API); nothing replaces it for a client")),
                    ).otherwise(F.concat(F.lit(": it must move to "), F.col("api_name"), F.lit(" v"),
                                         F.col("move_to").cast("string"), F.lit(" or later")))
    version = F.concat(F.col("api_name"), F.lit(" v"), F.col("api_version").cast("string"))
    detail = F.concat(
        _who_said(), F.lit(") sent "), F.col("n").cast("string"), F.lit(" "), F.col("api_name"),
        F.lit(" request(s) at v"), F.col("api_version").cast("string"), F.lit(" to "), F.array_join("brokers", ", "),
        F.lit(", removed in Kafka 4.0 (KIP-896: a Kafka 4 broker answers UNSUPPORTED_VERSION or closes the "
              "connection)"), target, F.lit("."))
    return _client_finding(agg, "removed_in_kafka_4", "error", detail, client_subject(version))


def old_message_format(events: DataFrame) -> DataFrame:
    agg = _per_client(_direct(events).where(F.col("old_record_format")), ("direction",))
    what = F.when(F.col("direction") == "request", F.lit(" Produce request(s) with record sets in message format "
                                                         "v0/v1 (MessageSet) to ")).otherwise(
        F.lit(" Fetch response(s) carrying record sets in message format v0/v1 (MessageSet) from "))
    detail = F.concat(
        _who_said(), F.when(F.col("direction") == "request", F.lit(") sent ")).otherwise(F.lit(") received ")),
        F.col("n").cast("string"), what, F.array_join("brokers", ", "),
        F.lit(". Kafka 4.0 dropped message formats v0 and v1 (KIP-724): the client must produce RecordBatch "
              "(magic 2, Produce v3+), and data still stored in the old format is rewritten before the upgrade."))
    what = F.when(F.col("direction") == "request", F.lit("produced MessageSet v0/v1")).otherwise(
        F.lit("fetched MessageSet v0/v1"))
    return _client_finding(agg, "old_message_format", "warning", detail, client_subject(what))
