"""Findings: what every detector returns, one row per thing a person should look at."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
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
from pipelines.events_dataset import merge_evidence

#: One evidence sample: the message that shows the finding, as the events dataset names it (``capture`` the
#: capture file's name, ``conn_id`` unique within the dataset, ``correlation_id``): ``kafka-inspector show CAPTURE
#: --filter conn_id=N --filter correlation_id=M`` shows it and its response (README.md, "The events contract").
EVIDENCE_STRUCT = StructType([StructField("capture", StringType()), StructField("conn_id", LongType()),
                              StructField("correlation_id", IntegerType())])
EVIDENCE_TYPE = ArrayType(EVIDENCE_STRUCT)

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
        StructField("subject", StringType()),
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
    subject: Column | str | None = None,
) -> DataFrame:
    """Project a detector's rows onto the findings schema. ``subject`` is what, besides its client, broker and
    group, names the problem a person fixes (per kind: ``pipelines/README.md``); with them it is the episode's
    key (:data:`EPISODE_KEY`)."""

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
        col(subject, "string").alias("subject"),
        detail.cast("string").alias("detail"),
        (F.col(evidence) if isinstance(evidence, str) else evidence).cast(EVIDENCE_TYPE).alias("evidence"),
    )


def client_subject(*what: Column) -> Column:
    """A client finding's subject: ``IP client id ID: WHAT`` (from the columns ``client_ip`` and ``client_id``;
    a finding's ``client`` names an endpoint only when the client used one connection, the subject names the
    client whatever its connections)."""
    return F.concat(F.col("client_ip"), F.lit(" client id "), F.coalesce(F.col("client_id"), F.lit("null")),
                    F.lit(": "), *what)


#: What identifies an episode: one problem a person fixes, seen once or many times. ``subject`` holds what the
#: kind needs beyond the client, broker and group (``pipelines/README.md`` lists it per kind).
EPISODE_KEY = ("kind", "severity", "client", "broker", "group_id", "subject")

#: The forms of an episode's sentence its detail lists, the earliest first; the later ones are counted together.
MAX_CASES = 10

#: One form of an episode's sentence: when it was first seen, the sentence, how many occurrences said it (a
#: null sentence: the occurrences beyond ``MAX_CASES`` forms).
CASE_TYPE = StructType([StructField("ts_first", TimestampType()), StructField("detail", StringType()),
                        StructField("occurrences", LongType())])


def partials(findings: DataFrame) -> DataFrame:
    """A detector's rows as episode partials: each row one occurrence (``occurrences`` 1), its span, its sentence
    (``cases``: one form, seen once, from its first time) and its evidence. Partials of one episode combine
    (:func:`combine`) in any grouping and order: the report combines all of a detector's at once, the
    ``--follow`` report those of each micro-batch with the episodes it already holds."""
    case = F.struct(F.col("ts_first").alias("ts_first"), F.col("detail").alias("detail"),
                    F.lit(1).cast("long").alias("occurrences"))
    return findings.select(*EPISODE_KEY, F.lit(1).cast("long").alias("occurrences"), "ts_first", "ts_last",
                           F.array(case).alias("cases"), "evidence")


def combine(partials: DataFrame) -> DataFrame:
    """Partials (:func:`partials`, or combined ones) merged per episode: occurrences summed, the earliest first
    and latest last time, each distinct sentence once with how many occurrences said it (the ``MAX_CASES``
    earliest; the rest counted in one case without a sentence), the evidence merged (distinct, sorted, the first
    ``EVIDENCE_LIMIT``: the same samples whatever the grouping)."""
    forms = partials.select(*EPISODE_KEY, "ts_first", "ts_last", "evidence", F.explode("cases").alias("c")).groupBy(
        *EPISODE_KEY, F.col("c.detail").alias("form")).agg(
        F.sum("c.occurrences").alias("n"), F.min("c.ts_first").alias("since"), F.min("ts_first").alias("ts_first"),
        F.max("ts_last").alias("ts_last"), merge_evidence(F.col("evidence")).alias("evidence"))
    merged = forms.groupBy(*EPISODE_KEY).agg(
        F.sum("n").alias("occurrences"), F.min("ts_first").alias("ts_first"), F.max("ts_last").alias("ts_last"),
        F.array_sort(F.collect_list(F.struct(F.col("since").alias("ts_first"), F.col("form").alias("detail"),
                                             F.col("n").alias("occurrences")))).alias("_all"),
        merge_evidence(F.col("evidence")).alias("evidence"))
    named = F.filter("_all", lambda c: c["detail"].isNotNull())
    rest = F.concat(F.slice(named, MAX_CASES + 1, 1 << 30), F.filter("_all", lambda c: c["detail"].isNull()))
    remainder = F.struct(F.array_min(F.transform(rest, lambda c: c["ts_first"])).alias("ts_first"),
                         F.lit(None).cast("string").alias("detail"),
                         F.aggregate(rest, F.lit(0).cast("long"), lambda a, c: a + c["occurrences"]).alias(
                             "occurrences"))
    cases = F.when(F.size(rest) > 0, F.concat(F.slice(named, 1, MAX_CASES), F.array(remainder))).otherwise(named)
    return merged.select(*EPISODE_KEY, "occurrences", "ts_first", "ts_last", cases.alias("cases"), "evidence")


def _time(c: Column | str) -> Column:
    return F.date_format(c, "yyyy-MM-dd HH:mm:ss.SSS")


def render(combined: DataFrame) -> DataFrame:
    """Combined partials as findings. ``detail`` describes the whole episode: its one sentence (for a repeated
    one, followed by how often it was seen and when), or, when its occurrences said different things, how often
    and when, then each form with how many occurrences said it."""
    shown = F.filter("cases", lambda c: c["occurrences"] > 0)  # a --follow update may add a form seen 0 times
    shown = F.when(F.size(shown) > 0, shown).otherwise(F.col("cases"))
    seen = F.concat(F.lit("Seen "), F.col("occurrences").cast("string"), F.lit(" times from "), _time("ts_first"),
                    F.lit(" to "), _time("ts_last"))
    one = F.element_at(shown, 1)
    single = F.when(F.col("occurrences") > 1, F.concat(one["detail"], F.lit(" "), seen, F.lit("."))).otherwise(
        one["detail"])
    listed = F.array_join(F.transform(shown, lambda c, i: F.concat(
        F.lit("("), (i + 1).cast("string"), F.lit(") "), c["occurrences"].cast("string"), F.lit("×: "),
        F.coalesce(c["detail"], F.lit("in other forms (not listed)")))), " ")
    several = F.concat(seen, F.lit(", in "), F.size(shown).cast("string"), F.lit(" forms: "), listed)
    detail = F.when((F.size(shown) == 1) & one["detail"].isNotNull(), single).otherwise(several)
    return combined.select(*[detail.alias("detail") if c == "detail" else F.col(c) for c in FINDING_COLUMNS])


def episodes(findings: DataFrame) -> DataFrame:
    """A detector's rows merged into one finding per episode: the same kind and severity, client, broker, group
    and subject (:data:`EPISODE_KEY`). A problem that repeats (a client asking the wrong broker again and again)
    is one finding that says how often (``occurrences``), its first and last time, with evidence samples: the
    number of findings follows the number of distinct problems, not the traffic. ``detail`` describes every
    occurrence (:func:`render`)."""
    return render(combine(partials(findings)))


def episode_id(row: Mapping[str, Any]) -> str:
    """An episode's stable id: a digest of its key (:data:`EPISODE_KEY`), the same in every run over the same
    traffic (the ``--follow`` report's updates name the episode they change by it)."""
    key = "\x1f".join("" if row[k] is None else str(row[k]) for k in EPISODE_KEY)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


#: The JVM's gateway and the error names' map made through it (``_error_names``).
_ERROR_NAMES_MAP: tuple[object, Column] | None = None


def _error_names() -> Column:
    """Kafka's error names by code as a map column, made once per JVM: ~135 pairs, each a literal made through
    py4j and added to a Java list one round trip at a time (six thousand round trips in a report on the demo's
    events, a tenth of all, when each ``error_label`` made its own; docs/performance.md). A column is an
    unresolved expression, not bound to a DataFrame: any query may hold it."""
    from pyspark import SparkContext

    global _ERROR_NAMES_MAP
    gateway = SparkContext._gateway
    if _ERROR_NAMES_MAP is None or _ERROR_NAMES_MAP[0] is not gateway:
        _ERROR_NAMES_MAP = (gateway, F.create_map(*[x for k, v in ERROR_NAMES.items() for x in (F.lit(k), F.lit(v))]))
    return _ERROR_NAMES_MAP[1]


def error_label(code: Column) -> Column:
    """``NAME (code)`` for an error code column (Kafka's names; unknown codes as ``error (n)``)."""
    names = _error_names()
    return F.concat(F.coalesce(F.try_element_at(names, code.cast("int")), F.lit("error")), F.lit(" ("),
                    code.cast("string"), F.lit(")"))


def listed(items: Column | str, most: int, sep: str, each: Callable[[Column], Column] | None = None) -> Column:
    """How a detail names the members of a list: the first ``most`` of ``items`` (each told by ``each``, else as
    they are: strings), joined by ``sep``, and ``sep`` + ``...`` after them when there are more."""
    array = F.col(items) if isinstance(items, str) else items
    first = F.slice(array, 1, most)
    return F.concat(F.array_join(first if each is None else F.transform(first, each), sep),
                    F.when(F.size(array) > most, F.lit(sep + "...")).otherwise(F.lit("")))


def tallied(values: str, told: Callable[[Column, Column], Column], sep: str = ", ") -> Column:
    """Each distinct member of the array column ``values``, sorted, with how many times the array holds it: told
    by ``told(member, count as a string)``, joined by ``sep``."""
    distinct = F.array_sort(F.array_distinct(values))
    return F.array_join(F.transform(distinct, lambda v: told(v, F.size(F.filter(values, lambda x: x == v)).cast(
        "string"))), sep)


def error_list(codes: Column) -> Column:
    """``NAME (code), NAME (code)`` for an array of error codes."""
    return F.array_join(F.transform(codes, error_label), ", ")
