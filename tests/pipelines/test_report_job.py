"""The report job's run: every detector is a step, each step reports its end and its time, a small input runs
interpreted and the session's settings come back afterwards, and findings come out in one total order."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from contract.kafka import API_VERSIONS
from pipelines import report_job
from pipelines.detectors import DETECTORS
from pipelines.findings import episodes, partials
from tests.pipelines.rows import T0, events, exchange, finding_rows


def _events_dir(spark: SparkSession, tmp_path: Path) -> Path:
    # ApiVersions v5 with only a ClusterId: one api_versions_one_sided_identity finding
    rows = exchange(API_VERSIONS, 5, {"ClusterId": "c1", "NodeId": -1}, {"ErrorCode": 42, "ApiKeys": []},
                    req_cols={"cluster_id": "c1", "node_id": -1}, resp_cols={"error_code": 42})
    out = tmp_path / "events"
    events(spark, rows).write.parquet(str(out / "events"))
    return out


def test_every_step_reports_its_end_and_time(spark: SparkSession, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    before = spark.conf.get("spark.sql.codegen.wholeStage", None)
    result = report_job.run(spark, str(_events_dir(spark, tmp_path)), str(tmp_path / "report"),
                            progress=lambda done, total, name: seen.append((done, total, name)))
    # the events hold ApiVersions alone: the detectors that judge other APIs do not run
    ran = [d.name for d in DETECTORS if d.reads is None or API_VERSIONS in d.reads]
    assert 5 < len(ran) < len(DETECTORS)
    steps = ran + ["admin audit", "rebalances", "consumer lag", "plots", "client inventory", "topic map",
                   "group inventory"]
    assert [(d, t) for d, t, _ in seen] == [(i, len(steps)) for i in range(1, len(steps) + 1)]
    assert sorted(name for _, _, name in seen) == sorted(steps)
    assert set(result.timings) == {"load", "episodes", "write", *steps}  # the episodes: made once, after the steps
    assert all(t >= 0 for t in result.timings.values())
    assert spark.conf.get("spark.sql.codegen.wholeStage", None) == before  # put back after the small input
    assert [f["kind"] for f in result.findings] == ["api_versions_one_sided_identity"]
    written = pq.read_table(tmp_path / "report" / "findings.parquet").to_pylist()
    assert [f["detail"] for f in written] == [f["detail"] for f in result.findings]


def test_every_detectors_episodes_are_made_at_once_as_each_alone_makes_its_own(spark: SparkSession) -> None:
    # two detectors' rows: repeats, one key in two forms, and one key (but its kind) the same in both
    a: list[tuple[Any, ...]] = [
        ("misrouted", "error", T0 + timedelta(seconds=i), "10.0.0.1:5000", "b:9092", None, "node 1", f"form {i % 2}",
         100 - i) for i in range(30)]
    a.append(("misrouted", "error", T0, "10.0.0.2:5000", "b:9092", None, "node 1", "once", 7))
    b: list[tuple[Any, ...]] = [
        ("unassigned", "error", T0 + timedelta(seconds=i), "10.0.0.1:5000", "b:9092", None, "node 1", "gap", i)
        for i in range(3)]
    b.append(("unassigned", "warning", T0, None, "b:9092", "g1", "t", "gap", 4))
    found = [finding_rows(spark, a), finding_rows(spark, b)]
    alone = sorted((r.asDict(recursive=True) for df in found for r in episodes(df).collect()),
                   key=report_job.finding_order)
    together = report_job.all_episodes([report_job.materialise(partials(df)) for df in found])
    assert sorted((r.asDict(recursive=True) for r in together), key=report_job.finding_order) == alone
    assert sorted((f["kind"], f["severity"], f["occurrences"]) for f in alone) == [
        ("misrouted", "error", 1), ("misrouted", "error", 30), ("unassigned", "error", 3),
        ("unassigned", "warning", 1)]
    (two_forms,) = [f for f in alone if f["occurrences"] == 30]
    assert "in 2 forms: (1) 15×: form 0 (2) 15×: form 1" in two_forms["detail"]
    assert report_job.all_episodes([]) == []


def test_small_inputs_are_told_by_their_size(spark: SparkSession, tmp_path: Path) -> None:
    d = _events_dir(spark, tmp_path)
    assert report_job.small_input(str(d)) and report_job.small_input(str(d / "events"))
    assert not report_job.small_input("s3a://bucket/events")  # remote: sized by nobody, compiled as usual
    assert report_job.input_bytes(str(d)) == sum(f.stat().st_size for f in (d / "events").glob("*.parquet"))


def test_findings_order_is_total() -> None:
    t = datetime(2024, 1, 1)

    def f(severity: str, kind: str, ts: datetime | None, broker: str | None, detail: str) -> dict[str, object]:
        return {"severity": severity, "kind": kind, "ts_first": ts, "broker": broker, "client": None,
                "group_id": None, "detail": detail}

    rows = [f("info", "a", t, "b", "x"), f("error", "z", t, "b", "y"), f("error", "a", t, None, "b"),
            f("error", "a", None, "b", "c"), f("error", "a", t, None, "a")]
    ordered = sorted(rows, key=report_job.finding_order)
    assert [(r["severity"], r["kind"], r["detail"]) for r in ordered] == [
        ("error", "a", "c"), ("error", "a", "a"), ("error", "a", "b"), ("error", "z", "y"), ("info", "a", "x")]
