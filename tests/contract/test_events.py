"""The events contract rendered for both sides: the Arrow schema the files are written with and the Spark
schema the jobs read them with, each against a literal copy of the contract and against each other."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from contract.events import EVENT_COLUMN_NAMES, EVENT_COLUMNS, TYPES
from inspector.rows.event_table import COLUMNS, SCHEMA
from pipelines.events_dataset import EVENTS_SCHEMA

#: The contract as the files have always had it (README.md, "The events contract"), written out by hand.
EXPECTED_ARROW = pa.schema([
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("capture", pa.string()),
    pa.field("conn_id", pa.int64(), nullable=False),
    pa.field("client_ip", pa.string()),
    pa.field("client_port", pa.int32()),
    pa.field("broker_ip", pa.string()),
    pa.field("broker_port", pa.int32()),
    pa.field("direction", pa.string(), nullable=False),
    pa.field("api_key", pa.int16()),
    pa.field("api_name", pa.string()),
    pa.field("api_version", pa.int16()),
    pa.field("correlation_id", pa.int32()),
    pa.field("client_id", pa.string()),
    pa.field("frame_offset", pa.int64()),
    pa.field("frame_size", pa.int32()),
    pa.field("error_code", pa.int16()),
    pa.field("nested_error_codes", pa.list_(pa.int16())),
    pa.field("latency_ms", pa.float64()),
    pa.field("decode_status", pa.string(), nullable=False),
    pa.field("body", pa.string()),
    pa.field("body_version", pa.int16()),
    pa.field("group_id", pa.string()),
    pa.field("member_id", pa.string()),
    pa.field("generation_id", pa.int32()),
    pa.field("protocol_type", pa.string()),
    pa.field("protocol_name", pa.string()),
    pa.field("cluster_id", pa.string()),
    pa.field("node_id", pa.int32()),
    pa.field("topics", pa.string()),
    pa.field("envelope_correlation_id", pa.int32()),
    pa.field("principal", pa.string()),
    pa.field("sasl_mechanism", pa.string()),
    pa.field("tls", pa.bool_()),
    pa.field("request_missing", pa.bool_()),
    pa.field("candidates", pa.string()),
    pa.field("confidence", pa.float64()),
    pa.field("notes", pa.string()),
])

EXPECTED_SPARK = StructType([
    StructField("ts", TimestampType(), False),
    StructField("capture", StringType()),
    StructField("conn_id", LongType(), False),
    StructField("client_ip", StringType()),
    StructField("client_port", IntegerType()),
    StructField("broker_ip", StringType()),
    StructField("broker_port", IntegerType()),
    StructField("direction", StringType(), False),
    StructField("api_key", ShortType()),
    StructField("api_name", StringType()),
    StructField("api_version", ShortType()),
    StructField("correlation_id", IntegerType()),
    StructField("client_id", StringType()),
    StructField("frame_offset", LongType()),
    StructField("frame_size", IntegerType()),
    StructField("error_code", ShortType()),
    StructField("nested_error_codes", ArrayType(ShortType())),
    StructField("latency_ms", DoubleType()),
    StructField("decode_status", StringType(), False),
    StructField("body", StringType()),
    StructField("body_version", ShortType()),
    StructField("group_id", StringType()),
    StructField("member_id", StringType()),
    StructField("generation_id", IntegerType()),
    StructField("protocol_type", StringType()),
    StructField("protocol_name", StringType()),
    StructField("cluster_id", StringType()),
    StructField("node_id", IntegerType()),
    StructField("topics", StringType()),
    StructField("envelope_correlation_id", IntegerType()),
    StructField("principal", StringType()),
    StructField("sasl_mechanism", StringType()),
    StructField("tls", BooleanType()),
    StructField("request_missing", BooleanType()),
    StructField("candidates", StringType()),
    StructField("confidence", DoubleType()),
    StructField("notes", StringType()),
])

#: Which Spark type reads which Arrow type (Spark's own Arrow conversion, written out).
SPARK_OF_ARROW = {
    pa.timestamp("us", tz="UTC"): TimestampType(),
    pa.string(): StringType(),
    pa.bool_(): BooleanType(),
    pa.int16(): ShortType(),
    pa.int32(): IntegerType(),
    pa.int64(): LongType(),
    pa.float64(): DoubleType(),
    pa.list_(pa.int16()): ArrayType(ShortType()),
}


def test_arrow_schema_is_the_contract_unchanged() -> None:
    assert SCHEMA.names == EXPECTED_ARROW.names
    for got, want in zip(SCHEMA, EXPECTED_ARROW, strict=True):
        assert (got.name, got.type, got.nullable, got.metadata) == (want.name, want.type, want.nullable, want.metadata)
    assert SCHEMA.equals(EXPECTED_ARROW, check_metadata=True) and SCHEMA.metadata is None
    # What the Parquet files store (ARROW:schema): the same bytes, so the files are too.
    assert SCHEMA.serialize().to_pybytes() == EXPECTED_ARROW.serialize().to_pybytes()


def test_spark_schema_is_the_contract_unchanged() -> None:
    assert EVENTS_SCHEMA == EXPECTED_SPARK
    assert EVENTS_SCHEMA.jsonValue() == EXPECTED_SPARK.jsonValue()  # names, types, nullability, metadata, in order


def test_arrow_and_spark_schemas_agree() -> None:
    assert len(SCHEMA) == len(EVENTS_SCHEMA.fields)
    for arrow, spark in zip(SCHEMA, EVENTS_SCHEMA.fields, strict=True):
        assert (arrow.name, arrow.nullable, SPARK_OF_ARROW[arrow.type]) == (spark.name, spark.nullable, spark.dataType)


def test_columns_are_defined_once_with_a_meaning() -> None:
    assert EVENT_COLUMN_NAMES == COLUMNS == tuple(EVENTS_SCHEMA.names)
    assert len(set(EVENT_COLUMN_NAMES)) == len(EVENT_COLUMNS)
    for column in EVENT_COLUMNS:
        assert column.type in TYPES
        assert column.meaning and "\n" not in column.meaning, column.name
