"""Findings: what every detector returns, one row per thing a person should look at."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
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
from pipelines.events import EVIDENCE_LIMIT, merge_evidence

EVIDENCE_TYPE = ArrayType(
    StructType([StructField("conn_id", LongType()), StructField("correlation_id", IntegerType())])
)

FINDINGS_SCHEMA = StructType(
    [
        StructField("kind", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("ts_first", TimestampType()),
        StructField("ts_last", TimestampType()),
        StructField("occurrences", LongType(), False),
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


#: What identifies an episode: one problem a person fixes, seen once or many times.
EPISODE_KEY = ("kind", "severity", "client", "broker", "group_id")


def partials(findings: DataFrame) -> DataFrame:
    """A detector's rows as episode partials: each row one occurrence (``occurrences`` 1), its span, its sentence
    with the time it starts (``first``: the earliest is the episode's) and its evidence. Partials of one episode
    combine (:func:`combine`) in any grouping and order: the report combines all of a detector's at once, the
    ``--follow`` report those of each micro-batch with the episodes it already holds."""
    return findings.select(*EPISODE_KEY, F.lit(1).cast("long").alias("occurrences"), "ts_first", "ts_last",
                           F.struct("ts_first", "detail").alias("first"), "evidence")


def combine(partials: DataFrame) -> DataFrame:
    """Partials (:func:`partials`, or combined ones) merged per episode: occurrences summed, the earliest first
    and latest last time, the earliest sentence, the evidence merged (distinct, sorted, the first
    ``EVIDENCE_LIMIT``: the same samples whatever the grouping)."""
    return partials.groupBy(*EPISODE_KEY).agg(
        F.sum("occurrences").alias("occurrences"), F.min("ts_first").alias("ts_first"),
        F.max("ts_last").alias("ts_last"), F.min("first").alias("first"),
        merge_evidence(F.col("evidence")).alias("evidence"))


def render(combined: DataFrame) -> DataFrame:
    """Combined partials as findings: ``detail`` is the first occurrence's sentence, followed, for a repeated
    one, by how often it was seen and when."""
    seen = F.concat(F.lit(" Seen "), F.col("occurrences").cast("string"), F.lit(" times from "),
                    F.date_format("ts_first", "yyyy-MM-dd HH:mm:ss.SSS"), F.lit(" to "),
                    F.date_format("ts_last", "yyyy-MM-dd HH:mm:ss.SSS"),
                    F.lit(f" (the first is described; the evidence samples up to {EVIDENCE_LIMIT} messages)."))
    first = F.col("first.detail")
    detail = F.when(F.col("occurrences") > 1, F.concat(first, seen)).otherwise(first)
    return combined.select(*[detail.alias("detail") if c == "detail" else F.col(c) for c in FINDING_COLUMNS])


def episodes(findings: DataFrame) -> DataFrame:
    """A detector's rows merged into one finding per episode: the same kind and severity, client, broker and
    group. A problem that repeats (a client asking the wrong broker again and again) is one finding that says how
    often (``occurrences``), its first and last time, with evidence samples: the number of findings follows the
    number of distinct problems, not the traffic. ``detail`` is the first occurrence's, followed by how often
    it was seen."""
    return render(combine(partials(findings)))


def episode_id(row: Mapping[str, Any]) -> str:
    """An episode's stable id: a digest of its key (:data:`EPISODE_KEY`), the same in every run over the same
    traffic (the ``--follow`` report's updates name the episode they change by it)."""
    key = "\x1f".join("" if row[k] is None else str(row[k]) for k in EPISODE_KEY)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def error_label(code: Column) -> Column:
    """``NAME (code)`` for an error code column (Kafka's names; unknown codes as ``error (n)``)."""
    names = F.create_map(*[x for k, v in ERROR_NAMES.items() for x in (F.lit(k), F.lit(v))])
    return F.concat(F.coalesce(F.try_element_at(names, code.cast("int")), F.lit("error")), F.lit(" ("),
                    code.cast("string"), F.lit(")"))


def error_list(codes: Column) -> Column:
    """``NAME (code), NAME (code)`` for an array of error codes."""
    return F.array_join(F.transform(codes, error_label), ", ")
