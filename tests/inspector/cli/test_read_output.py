"""``read``'s output folder: appending keeps every earlier row and totals the whole dataset, connection ids never
collide, and a run replaces or adds only once it is complete (a bad input, another run at work, a run killed
while publishing)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.rows.output_dir import Dataset, Format, Staging, apply_steps, locked, recover
from inspector.rows.summary_output import dataset_dict

PCAPS = Path(__file__).parents[3] / "pcaps"
GROUP = PCAPS / "tansu-consumer-group-3-members.pcap"
LAG = PCAPS / "tansu-consumer-lag.pcap"
MULTI = PCAPS / "mock-cluster-3-brokers-multi-client.pcap"
TXN = PCAPS / "tansu-transactions.pcap"


def _read(out: Path, *captures: Path, extra: tuple[str, ...] = ()) -> int:
    return main(["read", *map(str, captures), "--output", str(out), "--quiet", *extra])


def _state(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` (hidden ones included) and its bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _jsonl_rows(out: Path) -> list[dict]:
    files = sorted(out.glob("events*.jsonl"), key=lambda p: (p.name != "events.jsonl", p.name))  # the first first
    return [json.loads(line) for path in files for line in path.read_text().splitlines()]


def _check_dataset(out: Path) -> tuple[dict, list[dict]]:
    """The dataset's summary and rows, checked to agree: rows, connections, runs and their files."""
    summary = json.loads((out / "summary.json").read_text())
    dataset = Dataset.scan(out)
    rows = (pq.read_table(out / "events").to_pylist() if dataset.parquet else _jsonl_rows(out))
    assert summary["messages"] == len(rows) == sum(run["messages"] for run in summary["runs"])
    connections = pq.read_table(out / "connections.parquet").to_pylist()
    assert summary["kafka_connections"] - summary["kafka_connections_without_data"] == len(connections)
    assert len({c["conn_id"] for c in connections}) == len(connections)  # never two connections with one id
    assert {r["conn_id"] for r in rows} <= {c["conn_id"] for c in connections}
    owner = {c["conn_id"]: c["capture"] for c in connections}
    assert all(owner[r["conn_id"]] == r["capture"] for r in rows)
    listed = [name for run in summary["runs"] for name in run["files"]]
    assert sorted(listed) == sorted(str(p.relative_to(out)) for p in dataset.files)
    assert [e.name for e in out.iterdir() if e.name.startswith(".")] == []  # no staging left
    return summary, rows


# -- item 1: appending is appending ------------------------------------------------------------------------------


def test_jsonl_append_keeps_every_earlier_line(tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert _read(out, GROUP, MULTI, extra=("--format", "jsonl")) == ExitCode.OK
    before = _jsonl_rows(out)
    first = (out / "events.jsonl").read_bytes()
    assert _read(out, TXN, extra=("--format", "jsonl", "--append")) == ExitCode.OK
    assert (out / "events.jsonl").read_bytes() == first  # never rewritten
    summary, rows = _check_dataset(out)
    assert rows[:len(before)] == before and len(rows) > len(before)
    assert [run["files"] for run in summary["runs"]] == [["events.jsonl"], ["events-00001.jsonl"]]
    assert [run["captures"] for run in summary["runs"]] == [[GROUP.name, MULTI.name], [TXN.name]]


def test_parquet_append_totals_the_whole_dataset(tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert _read(out, GROUP, MULTI, LAG) == ExitCode.OK
    first, first_rows = _check_dataset(out)
    first_connections = pq.read_table(out / "connections.parquet").to_pylist()
    assert _read(out, TXN, extra=("--append",)) == ExitCode.OK
    summary, rows = _check_dataset(out)
    connections = pq.read_table(out / "connections.parquet").to_pylist()
    assert connections[:len(first_connections)] == first_connections and len(connections) > len(first_connections)
    assert summary["runs"][0] == first["runs"][0] and len(summary["runs"]) == 2
    assert summary["runs"][1]["files"] == ["events/part-00001.parquet"]
    assert summary["messages"] == first["messages"] + summary["runs"][1]["messages"]
    # The totals add up; a latency percentile measured by one run is kept, one measured by both is not.
    apis = {a["api"]: a for a in summary["apis"]}
    for a in first["apis"]:
        assert apis[a["api"]]["requests"] >= a["requests"]
    second = {a["api"]: a for a in summary["runs"][1]["apis"]}
    for name, a in apis.items():
        timed = [run_api for run_api in ({x["api"]: x for x in first["apis"]}.get(name), second.get(name))
                 if run_api is not None and run_api["p50_ms"] is not None]
        assert a["p50_ms"] == (timed[0]["p50_ms"] if len(timed) == 1 else None)
    assert summary["accounting"]["*"]["connections"] == len(connections)
    new_ids = {r["conn_id"] for r in rows[len(first_rows):]}
    assert new_ids and min(new_ids) > max(r["conn_id"] for r in first_rows)


def test_the_same_capture_appended_twice_keeps_both_with_their_own_ids(tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert _read(out, TXN) == ExitCode.OK
    assert _read(out, TXN, extra=("--append",)) == ExitCode.OK
    summary, rows = _check_dataset(out)
    half = len(rows) // 2
    assert summary["messages"] == 2 * summary["runs"][0]["messages"]
    assert not {r["conn_id"] for r in rows[:half]} & {r["conn_id"] for r in rows[half:]}
    assert summary["accounting"][TXN.name]["connections"] == 2 * summary["runs"][0]["accounting"][TXN.name][
        "connections"]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_connection_ids_never_collide_across_workers_and_runs(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "d"
    assert _read(out, GROUP, MULTI, extra=("--jobs", "2", "--format", fmt)) == ExitCode.OK
    assert _read(out, LAG, extra=("--append", "--format", fmt)) == ExitCode.OK  # serial after --jobs
    assert _read(out, TXN, GROUP, extra=("--append", "--jobs", "2", "--format", fmt)) == ExitCode.OK
    summary, rows = _check_dataset(out)
    runs_of: dict[int, set[int]] = defaultdict(set)
    for run_no, run in enumerate(summary["runs"]):
        for name in run["files"]:
            ids = ({r["conn_id"] for r in pq.read_table(out / name, columns=["conn_id"]).to_pylist()}
                   if fmt == "parquet" else {json.loads(line)["conn_id"] for line in (out / name).open()})
            for conn_id in ids:
                runs_of[conn_id].add(run_no)
    assert runs_of and all(len(runs) == 1 for runs in runs_of.values())
    assert len(summary["runs"]) == 3 and [len(run["files"]) for run in summary["runs"]] == [2, 1, 2]


def test_append_refuses_what_it_cannot_add_to(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d"
    assert _read(out, TXN) == ExitCode.OK
    state = _state(out)
    assert _read(out, TXN, extra=("--append", "--format", "jsonl")) == ExitCode.USAGE
    assert "holds parquet events: --append adds to them in the same format" in capsys.readouterr().err
    (out / "summary.json").unlink()
    assert _read(out, TXN, extra=("--append",)) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds events but no summary.json" in err
    del state["summary.json"]
    assert _state(out) == state


def test_summary_of_an_older_version_is_taken_as_one_run() -> None:
    older = {"packets": 10, "frames": 4, "messages": 4, "apis": [{"api": "Fetch", "requests": 2, "responses": 2,
                                                                 "errors": 0, "p50_ms": 1.0, "p99_ms": 2.0,
                                                                 "decode_failures": 0, "decode_warnings": 0}],
             "accounting": {"a.pcap": {"connections": 1}, "*": {"connections": 1}}, "warnings": ["w"]}
    run = {"packets": 5, "frames": 2, "messages": 2, "apis": [], "accounting": {"b.pcap": {"connections": 1},
                                                                             "*": {"connections": 1}},
           "max_conn_id": 9, "warnings": []}
    doc = dataset_dict(older, run)
    assert (doc["packets"], doc["messages"], doc["max_conn_id"], doc["warnings"]) == (15, 6, 9, ["w"])
    assert doc["accounting"] == {"a.pcap": {"connections": 1}, "*": {"connections": 2}, "b.pcap": {"connections": 1}}
    assert doc["apis"][0]["p50_ms"] == 1.0 and doc["runs"][0]["captures"] == ["a.pcap"]


# -- item 2: replace only after success ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_overwrite_with_a_bad_input_leaves_the_dataset_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 fmt: str, jobs: str) -> None:
    out = tmp_path / "d"
    assert _read(out, GROUP, MULTI, extra=("--format", fmt)) == ExitCode.OK
    state = _state(out)
    (tmp_path / "notes.txt").write_text("not a capture\n" * 40)
    for inputs in ([tmp_path / "typo.pcap"], [TXN, tmp_path / "notes.txt"], [tmp_path / "notes.txt", TXN]):
        capsys.readouterr()
        assert _read(out, *inputs, extra=("--overwrite", "--format", fmt, "--jobs", jobs)) == ExitCode.INPUT
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert _state(out) == state
    assert _read(out, TXN, extra=("--overwrite", "--format", fmt, "--jobs", jobs)) == ExitCode.OK
    summary, _ = _check_dataset(out)
    assert [run["captures"] for run in summary["runs"]] == [[TXN.name]]


def test_a_bad_input_among_good_ones_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "notacapture.txt"
    bad.write_text("hello\n")
    for jobs in ("1", "2"):
        out = tmp_path / f"new-{jobs}"
        assert _read(out, GROUP, bad, extra=("--jobs", jobs)) == ExitCode.INPUT
        assert not out.exists()


def test_overwrite_swaps_the_new_dataset_in(tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert _read(out, GROUP, MULTI, LAG, extra=("--jobs", "2")) == ExitCode.OK
    assert len(list((out / "events").iterdir())) == 3
    assert _read(out, TXN, extra=("--overwrite", "--format", "jsonl")) == ExitCode.OK
    assert not (out / "events").exists() and (out / "events.jsonl").exists()
    _check_dataset(out)
    assert _read(out, TXN, extra=("--overwrite",)) == ExitCode.OK
    assert not list(out.glob("*.jsonl")) and [p.name for p in (out / "events").iterdir()] == ["part-00000.parquet"]
    _check_dataset(out)


def test_another_run_writing_the_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d"
    out.mkdir()
    with locked(out):
        assert _read(out, TXN) == ExitCode.OUTPUT
    err = capsys.readouterr().err
    assert err == (f"kafka-inspector: error: {out} is being written by another run of kafka-inspector read: wait for "
                   "it to finish, or choose another --output\n")
    assert list(out.iterdir()) == []


def test_a_run_killed_before_its_commit_is_cleaned_up(tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert _read(out, TXN) == ExitCode.OK
    state = _state(out)
    left = Staging(out)  # what a killed run leaves: files in progress, no manifest
    (left.path / "events").mkdir()
    (left.path / "events" / ".part-00000.parquet.inprogress").write_bytes(b"PAR1 half")
    with locked(out):
        assert recover(out) == []
    assert _state(out) == state


@pytest.mark.parametrize("done", range(8))
def test_a_run_killed_while_publishing_is_finished_by_the_next(tmp_path: Path, done: int) -> None:
    """A committed run whose publishing stopped after ``done`` of its steps: the next run carries out the rest."""
    out = tmp_path / "d"
    assert _read(out, GROUP) == ExitCode.OK
    other = tmp_path / "other"
    assert _read(other, GROUP, TXN, extra=("--jobs", "2")) == ExitCode.OK  # what the stopped run would have published
    staging = Staging(out)
    (staging.path / "events").mkdir()
    for p in sorted((other / "events").iterdir()):
        os.replace(p, staging.path / "events" / p.name.replace("part-", "part-f"))
    for name in ("connections.parquet", "summary.json"):
        os.replace(other / name, staging.path / name)
    steps, _ = staging.plan(Dataset.scan(out), Format.PARQUET, replace=True)
    assert [s[0] for s in steps] == ["out", "mkdir", "in", "in", "keep", "in", "keep", "in"]
    staging.commit(steps)
    apply_steps(out, staging.path, steps[:done])  # then killed
    assert _read(out, TXN, extra=("--append",)) == ExitCode.OK  # the next run finishes publishing, then appends
    summary, _ = _check_dataset(out)
    assert [run["captures"] for run in summary["runs"]] == [[GROUP.name, TXN.name], [TXN.name]]
