"""Findings: what every detector returns, one row per thing a person should look at."""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from contract.kafka import ERROR_NAMES

EVIDENCE_TYPE = ArrayType(
    StructType([StructField("conn_id", LongType()), StructField("correlation_id", IntegerType())])
)

FINDINGS_SCHEMA = StructType(
    [
        StructField("kind", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("ts_first", TimestampType()),
        StructField("ts_last", TimestampType()),
        StructField("client", StringType()),
        StructField("broker", StringType()),
        StructField("group_id", StringType()),
        StructField("detail", StringType(), False),
        StructField("evidence", EVIDENCE_TYPE),
    ]
)
FINDING_COLUMNS = tuple(FINDINGS_SCHEMA.names)


def as_findings(
    df: DataFrame,
    kind: str | Column,
    severity: str | Column,
    detail: Column,
    ts_first: Column | str = "ts_first",
    ts_last: Column | str = "ts_last",
    client: Column | str | None = "client",
    broker: Column | str | None = "broker",
    group_id: Column | str | None = None,
    evidence: Column | str = "evidence",
) -> DataFrame:
    """Project a detector's rows onto the findings schema."""

    def col(value: Column | str | None, type_: str) -> Column:
        if value is None:
            return F.lit(None).cast(type_)
        return (F.col(value) if isinstance(value, str) else value).cast(type_)

    return df.select(
        (F.lit(kind) if isinstance(kind, str) else kind).cast("string").alias("kind"),
        (F.lit(severity) if isinstance(severity, str) else severity).cast("string").alias("severity"),
        col(ts_first, "timestamp").alias("ts_first"),
        col(ts_last, "timestamp").alias("ts_last"),
        col(client, "string").alias("client"),
        col(broker, "string").alias("broker"),
        col(group_id, "string").alias("group_id"),
        detail.cast("string").alias("detail"),
        (F.col(evidence) if isinstance(evidence, str) else evidence).cast(EVIDENCE_TYPE).alias("evidence"),
    )


def empty_findings(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], FINDINGS_SCHEMA)


def union_findings(spark: SparkSession, parts: Iterable[DataFrame]) -> DataFrame:
    out = empty_findings(spark)
    for part in parts:
        out = out.unionByName(part.select(*FINDING_COLUMNS))
    return out


def error_label(code: Column) -> Column:
    """``NAME (code)`` for an error code column (Kafka's names; unknown codes as ``error (n)``)."""
    names = F.create_map(*[x for k, v in ERROR_NAMES.items() for x in (F.lit(k), F.lit(v))])
    return F.concat(F.coalesce(F.try_element_at(names, code.cast("int")), F.lit("error")), F.lit(" ("),
                    code.cast("string"), F.lit(")"))


def error_list(codes: Column) -> Column:
    """``NAME (code), NAME (code)`` for an array of error codes."""
    return F.array_join(F.transform(codes, error_label), ", ")
