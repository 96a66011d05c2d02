"""``report --follow``'s passes, driven as Spark's foreachBatch drives them (a DataFrame of new file paths per batch
id): the same episodes as the batch report, each written once and then as updates, a batch run again writes
nothing twice, files that are not events are said and skipped, and an answer in the next file is waited for."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

from contract.kafka import CREATE_TOPICS, METADATA, PRODUCE
from pipelines import follow, follow_state, retention
from pipelines.findings import EPISODE_KEY
from tests.pipelines.rows import at, events, exchange, row


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(r[k] for k in EPISODE_KEY)


def _files(spark: SparkSession, paths: list[Path]) -> DataFrame:
    """What Spark's binaryFile stream hands foreachBatch: the new files' URIs."""
    return spark.createDataFrame([(p.resolve().as_uri(),) for p in paths], "path string")


def _follower(spark: SparkSession, out: Path, said: list[str] | None = None, **settings: Any) -> follow.Follower:
    out.mkdir(parents=True, exist_ok=True)
    s = follow.Settings(output=str(out), inputs=["test"], say=(said.append if said is not None else lambda line: None),
                        **settings)
    return follow.Follower(spark, s)


def _settle_now(f: follow.Follower) -> bool:
    f.last_pass = 0.0  # as if no file had come for --settle seconds
    return f.idle()


def _lines(out: Path) -> list[dict[str, Any]]:
    path = out / "findings.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _episodes(out: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each episode as its last line says it."""
    return {_key(r): r for r in _lines(out)}


def test_one_batch_finds_what_the_batch_report_finds(spark: SparkSession, capture_files: list[Path],
                                                      batch_findings: list[dict[str, Any]], tmp_path: Path) -> None:
    f = _follower(spark, tmp_path)
    f.batch(_files(spark, capture_files), 0)
    assert _settle_now(f)  # the last --settle seconds of traffic, judged once no file comes
    assert not _settle_now(f)  # nothing waits any more
    got = _episodes(tmp_path)
    assert len(batch_findings) > 20
    for want in batch_findings:
        have = got.pop(_key(want))
        for column in ("occurrences", "ts_first", "ts_last", "detail"):
            value = want[column].isoformat() if column.startswith("ts_") else want[column]
            assert have[column] == value, (column, want["kind"])
        assert have["evidence"] == [dict(e) for e in want["evidence"]]
    assert not got
    assert (tmp_path / "report.html").read_text().count("<tr") > len(batch_findings)
    parquet = pq.read_table(tmp_path / "findings").to_pylist()
    assert sorted(map(_key, parquet)) == sorted(map(_key, _lines(tmp_path)))


@dataclass
class FourBatches:
    """The demo's files given a quarter a micro-batch (batches 0-3), then judged as no file comes."""

    out: Path
    #: after each batch: the events the state says it keeps, and the rows of the file it keeps them in
    retained: list[tuple[int | None, int]]
    #: findings.jsonl and the findings/ files after batch 3 (before the idle pass)
    after_last_batch: bytes
    written: list[str]
    #: findings.jsonl's lines after the idle pass
    lines: list[dict[str, Any]]


@pytest.fixture(scope="module")
def four_batches(spark: SparkSession, capture_files: list[Path], tmp_path_factory: pytest.TempPathFactory
                 ) -> FourBatches:
    out = tmp_path_factory.mktemp("four-batches")
    f = _follower(spark, out)
    n = len(capture_files)
    retained = []
    for i in range(4):
        f.batch(_files(spark, capture_files[i * n // 4:(i + 1) * n // 4]), i)
        retained.append((f.version.meta.retained_events, pq.read_table(f.version.retained).num_rows))
    after = (out / "findings.jsonl").read_bytes()
    written = sorted(p.name for p in (out / "findings").iterdir())
    _settle_now(f)
    return FourBatches(out, retained, after, written, _lines(out))


def test_batches_of_files_find_every_episode_once(four_batches: FourBatches,
                                                  batch_findings: list[dict[str, Any]]) -> None:
    # the state counts the events it keeps for the next pass (which judges by that count whether it is small)
    for counted, kept in four_batches.retained:
        assert counted == kept > 0
    lines = four_batches.lines
    assert {_key(r) for r in lines} == {_key(r) for r in batch_findings}
    firsts: set[str] = set()
    last_count: dict[str, int] = {}
    for line in lines:  # written once as new, then only as updates, never counting back
        assert line["update"] == (line["id"] in firsts)
        firsts.add(line["id"])
        assert line["occurrences"] >= last_count.get(line["id"], 1)
        last_count[line["id"]] = line["occurrences"]
    assert len({line["id"] for line in lines}) == len(batch_findings)


def test_a_batch_run_again_writes_nothing_twice(spark: SparkSession, capture_files: list[Path],
                                                four_batches: FourBatches) -> None:
    out, before, written = four_batches.out, four_batches.after_last_batch, four_batches.written
    last = capture_files[3 * len(capture_files) // 4:]
    assert before and written
    # the process ended after the pass, before Spark recorded the batch: a new run, and Spark gives batch 3 again
    # (what the idle pass after it wrote goes with it)
    again = _follower(spark, out)
    assert again.version.meta.batch == 3
    again.batch(_files(spark, last), 3)
    assert (out / "findings.jsonl").read_bytes() == before
    assert sorted(p.name for p in (out / "findings").iterdir()) == written
    # ... and a crash in the middle of batch 3's writing (half a line, no state) is cut back the same way
    with open(out / "findings.jsonl", "ab") as partial:
        partial.write(b'{"id": "torn')
    shutil.rmtree(again.version.path)  # batch 3's state never committed
    third = _follower(spark, out)
    assert third.version.meta.batch == 2
    third.batch(_files(spark, last), 3)
    assert (out / "findings.jsonl").read_bytes() == before
    assert len(follow_state.versions(follow_state.state_dir(str(out)))) <= follow_state.KEEP_VERSIONS


def test_files_that_are_not_events_are_said_and_skipped(spark: SparkSession, capture_files: list[Path],
                                                        tmp_path: Path) -> None:
    good = next(p for p in capture_files if "removed" in pq.read_table(p, columns=["capture"])["capture"][0].as_py())
    bad = tmp_path / "in"
    bad.mkdir()
    (bad / "junk.parquet").write_bytes(b"not parquet at all")
    (bad / "cut.parquet").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    pq.write_table(pa.table({"x": [1, 2]}), bad / "other.parquet")
    older = pq.read_table(good)
    older = older.drop_columns(["topics", "tls"])
    pq.write_table(older, bad / "older.parquet")
    said: list[str] = []
    f = _follower(spark, tmp_path / "out", said)
    f.batch(_files(spark, [bad / "junk.parquet", bad / "cut.parquet", bad / "other.parquet", bad / "gone.parquet",
                           bad / "older.parquet"]), 0)
    _settle_now(f)
    text = "\n".join(said)
    assert "junk.parquet: not a readable Parquet file" in text
    assert "cut.parquet: not a readable Parquet file" in text
    assert "other.parquet: not an events file (no ts, conn_id, direction, api_key column)" in text
    assert "gone.parquet: gone before it could be read" in text
    assert "older.parquet: an events file of an older version: topics, tls read as null" in text
    assert {r["kind"] for r in _lines(tmp_path / "out")} >= {"removed_in_kafka_4", "old_message_format"}
    assert len(f.version.meta.skipped_files) == 4


def _write(spark: SparkSession, rows: list[dict[str, Any]], path: Path) -> Path:
    events(spark, rows).coalesce(1).write.parquet(str(path))
    return next(path.glob("part-*.parquet"))


def _admin_write(t: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    request, response = exchange(CREATE_TOPICS, 7, {"Topics": [{"Name": "t1", "NumPartitions": 1}]},
                                 {"Topics": [{"Name": "t1", "ErrorCode": 0}]}, t=t, corr=5, latency_ms=400.0)
    return [request], [response]


@pytest.mark.parametrize("settle", [10.0, 0.0])
def test_an_answer_in_the_next_file_is_waited_for(spark: SparkSession, tmp_path: Path, settle: float) -> None:
    request, response = _admin_write(0.1)
    filler = [row(api_key=METADATA, api_version=12, correlation_id=100 + i, ts=at(i), conn_id=2) for i in range(1, 30)]
    first = _write(spark, request, tmp_path / "f1")
    second = _write(spark, response + filler, tmp_path / "f2")
    f = _follower(spark, tmp_path / "out", settle_s=settle)
    f.batch(_files(spark, [first]), 0)
    f.batch(_files(spark, [second]), 1)
    _settle_now(f)
    kinds = {r["kind"] for r in _lines(tmp_path / "out")}
    # judged at once (--settle 0), the request looked unanswered at the end of the first file
    assert ("admin_write_unanswered" in kinds) == (settle == 0)


def _no_detectors(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the detectors ran")


@pytest.mark.parametrize("kept", [True, False], ids=["waiting-kept", "older-state"])
def test_what_never_comes_is_judged_when_no_file_comes(spark: SparkSession, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, kept: bool) -> None:
    request, _ = _admin_write(0.1)
    f = _follower(spark, tmp_path / "out", settle_s=10.0)
    f.batch(_files(spark, [_write(spark, request, tmp_path / "f1")]), 0)
    assert not _lines(tmp_path / "out")  # within --settle of the newest traffic: it waits
    assert f.pending
    waiting = f.version.waiting()
    assert waiting is not None and [r["kind"] for r in waiting] == ["admin_write_unanswered"]
    if kept:  # the idle pass settles what the pass before left waiting: the same events, no detector again
        monkeypatch.setattr(follow, "detector_pass", _no_detectors)
    else:  # a state written before the waiting occurrences were kept: the idle pass runs the detectors
        f.version = replace(f.version, meta=replace(f.version.meta, retained_oldest_us=None))
        assert f.version.waiting() is None
    assert _settle_now(f)
    assert [r["kind"] for r in _lines(tmp_path / "out")] == ["admin_write_unanswered"]
    assert not f.pending and f.version.waiting() == []
    assert pq.read_table(f.version.retained).num_rows == f.version.meta.retained_events == 1


@pytest.fixture
def old_and_new(spark: SparkSession) -> Iterator[DataFrame]:
    old_metadata = exchange(METADATA, 12, {"Topics": None}, {"Brokers": [], "ClusterId": "c1"}, t=0, corr=1, conn=1)
    old_produce = [r for i in range(5) for r in exchange(PRODUCE, 9, {}, {}, t=i, corr=10 + i, conn=3)]
    recent = [row(api_key=METADATA, direction="request", ts=at(3000 + i), conn_id=9, correlation_id=500 + i)
              for i in range(10)]
    yield events(spark, old_metadata, old_produce, recent)


def test_what_is_kept_is_the_horizon_and_the_facts(old_and_new: DataFrame) -> None:
    since = int(at(2000).timestamp() * 1_000_000)
    kept = retention.retain(old_and_new, since).collect()
    recent = [r for r in kept if r["conn_id"] == 9]
    assert len(recent) == 10  # everything within the horizon
    metadata = sorted((r["correlation_id"], r["direction"]) for r in kept if r["conn_id"] == 1)
    assert metadata == [(1, "request"), (1, "response")]  # a broker's identity, beyond it: its last exchanges
    produce = sorted({r["correlation_id"] for r in kept if r["conn_id"] == 3})
    assert produce == [13, 14]  # a producer's last two batches
