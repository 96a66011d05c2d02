"""Episodes: a detector's repeated rows become one finding with how often, when, every form of its sentence and
evidence samples; distinct problems (another subject) stay apart."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.events_dataset import EVIDENCE_LIMIT, body_type, from_body
from pipelines.findings import (
    FINDING_COLUMNS,
    MAX_CASES,
    _error_names,
    combine,
    episodes,
    error_label,
    partials,
    render,
)
from tests.pipelines.rows import T0, finding_rows


def test_repeats_become_one_episode_with_count_span_and_samples(spark: SparkSession) -> None:
    many = [("misrouted", "error", T0 + timedelta(seconds=i), "10.0.0.1:5000", "10.0.0.9:9092", None, "node 1",
             "asks for node 1", 100 - i) for i in range(120)]
    other = [("misrouted", "warning", T0, "10.0.0.1:5000", "10.0.0.9:9092", None, "node 1", "caught", 1),  # severity
             ("misrouted", "error", T0, "10.0.0.2:5000", "10.0.0.9:9092", None, "node 1", "another client", 2),
             ("misrouted", "error", T0, "10.0.0.1:5000", "10.0.0.9:9092", None, "node 2", "asks for node 2", 5),
             ("unassigned", "warning", T0, None, "10.0.0.9:9092", "g1", "t", "gap", 3),
             ("unassigned", "warning", T0, None, "10.0.0.9:9092", "g2", "t", "gap", 4)]  # group
    out = episodes(finding_rows(spark, many + other)).collect()
    assert tuple(out[0].asDict()) == FINDING_COLUMNS
    assert len(out) == 6
    (e,) = [r for r in out if r["occurrences"] > 1]
    assert e["occurrences"] == 120 and e["severity"] == "error" and e["client"] == "10.0.0.1:5000"
    assert e["subject"] == "node 1"
    assert e["ts_last"] - e["ts_first"] == timedelta(seconds=119)
    assert e["detail"] == ("asks for node 1 Seen 120 times from 2024-05-01 12:00:00.000 to "
                           "2024-05-01 12:01:59.000.")
    assert len(e["evidence"]) == EVIDENCE_LIMIT
    samples = [{"capture": "a.pcap", "conn_id": c, "correlation_id": 7} for c in range(-19, -19 + EVIDENCE_LIMIT)]
    assert [x.asDict() for x in e["evidence"]] == samples  # the lowest distinct ones
    singles = sorted((r["kind"], r["severity"], r["client"], r["group_id"], r["subject"], r["detail"]) for r in out
                     if r["occurrences"] == 1)
    assert singles == [("misrouted", "error", "10.0.0.1:5000", None, "node 2", "asks for node 2"),  # subject
                       ("misrouted", "error", "10.0.0.2:5000", None, "node 1", "another client"),
                       ("misrouted", "warning", "10.0.0.1:5000", None, "node 1", "caught"),
                       ("unassigned", "warning", None, "g1", "t", "gap"),
                       ("unassigned", "warning", None, "g2", "t", "gap")]


def test_an_episode_names_every_form_with_its_count(spark: SparkSession) -> None:
    rows = [("k", "error", T0 + timedelta(seconds=i), "c", "b", None, "s", f"form {i % 3}", i) for i in range(7)]
    (e,) = episodes(finding_rows(spark, rows)).collect()
    assert e["occurrences"] == 7
    assert e["detail"] == ("Seen 7 times from 2024-05-01 12:00:00.000 to 2024-05-01 12:00:06.000, in 3 forms: "
                           "(1) 3×: form 0 (2) 2×: form 1 (3) 2×: form 2")


def test_forms_beyond_the_limit_are_counted_together_and_combine_in_any_grouping(spark: SparkSession) -> None:
    n = MAX_CASES + 5
    rows = [("k", "error", T0 + timedelta(seconds=i), "c", "b", None, "s", f"form {i:02d}", i) for i in range(n)]
    rows += [("k", "error", T0 + timedelta(seconds=100), "c", "b", None, "s", "form 00", 99)]
    whole = episodes(finding_rows(spark, rows)).collect()
    (e,) = whole
    assert e["occurrences"] == n + 1
    assert "(1) 2×: form 00 " in e["detail"]
    assert f"({MAX_CASES + 1}) 5×: in other forms (not listed)" in e["detail"]
    # the same partials combined in two steps (as --follow combines each pass with what it holds)
    first, second = finding_rows(spark, rows[:8]), finding_rows(spark, rows[8:])
    stepwise = render(combine(combine(partials(first)).unionByName(partials(second)))).collect()
    assert [r.asDict() for r in stepwise] == [r.asDict() for r in whole]


def test_error_labels_name_each_code_from_one_map_made_once(spark: SparkSession) -> None:
    df = spark.createDataFrame([(0,), (3,), (25,), (32767,)], "code smallint")
    labels = [r[0] for r in df.select(error_label(F.col("code"))).collect()]
    again = [r[0] for r in df.select(error_label(F.col("code")).alias("again")).collect()]
    assert labels == again == ["NONE (0)", "UNKNOWN_TOPIC_OR_PARTITION (3)", "UNKNOWN_MEMBER_ID (25)",
                               "error (32767)"]
    assert _error_names() is _error_names()  # one map per JVM, whichever queries hold it


def test_a_body_is_parsed_with_its_ddl_read_once(spark: SparkSession) -> None:
    ddl = "ErrorCode SMALLINT, Topics ARRAY<STRUCT<Name: STRING, Partitions: ARRAY<INT>>>"
    assert body_type(ddl) is body_type(ddl)
    assert body_type(ddl).simpleString() == ("struct<ErrorCode:smallint,Topics:array<struct<Name:string,"
                                             "Partitions:array<int>>>>")
    df = spark.createDataFrame([('{"ErrorCode": 0, "Topics": [{"Name": "t", "Partitions": [1, 2]}]}',)], "body string")
    (row,) = df.select(from_body(F.col("body"), ddl).alias("b")).collect()
    assert row.b.ErrorCode == 0 and row.b.Topics[0].Name == "t" and row.b.Topics[0].Partitions == [1, 2]
