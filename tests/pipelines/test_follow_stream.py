"""``kafka-inspector report DIR --follow`` as a person runs it: part files appear in the folder as a tap writes
them (complete under their final name), findings come out as they are found; stopped with SIGTERM (exit 0) and
started again it re-emits nothing and misses no file that came meanwhile, a kill -9 in the middle of a pass
loses and repeats nothing, and a folder that disappears and comes back stops nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipelines import follow_state
from pipelines.findings import EPISODE_KEY

KAFKA_INSPECTOR = Path(sys.executable).parent / "kafka-inspector"
#: a pass on this 2-core machine takes ~5-20 s, a JVM ~5 s to start
WAIT_S = 300


def start(inputs: list[Path], out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    log = open(out.parent / f"{out.name}-follow.log", "ab")  # noqa: SIM115
    return subprocess.Popen(
        [str(KAFKA_INSPECTOR), "report", *map(str, inputs), "--output", str(out), "--follow", "--trigger", "1s",
         "--settle", "2s", "--master", "local[2]", *extra],
        stdout=log, stderr=subprocess.STDOUT, env=env or {**os.environ, "PYSPARK_PYTHON": sys.executable})


def feed(part: Path, folder: Path) -> None:
    """As the tap publishes a file: written under a hidden name, renamed into place."""
    events = folder / "events"
    events.mkdir(parents=True, exist_ok=True)
    tmp = events / f".{part.name}.inprogress"
    shutil.copyfile(part, tmp)
    os.replace(tmp, events / part.name)


def meta(out: Path) -> follow_state.Meta | None:
    found = follow_state.versions(follow_state.state_dir(str(out)))
    if not found:
        return None
    return follow_state.load(follow_state.state_dir(str(out))).meta


def settled(out: Path, events: int) -> Callable[[], bool]:
    """Every fed event read, and everything judged (the idle pass after the last file ran)."""
    def done() -> bool:
        m = meta(out)
        return m is not None and m.events == events and m.end_us is not None and m.settled_us == m.end_us
    return done


def wait(until: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not until():
        assert proc.poll() is None, f"the follow process ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
        time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=120)


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "findings.jsonl").read_text().splitlines()]


def rows(parts: list[Path]) -> int:
    return sum(pq.read_metadata(p).num_rows for p in parts)


def test_follow_stop_restart_and_kill(capture_files: list[Path], batch_findings: list[dict[str, Any]],
                                      tmp_path: Path) -> None:
    folder, out = tmp_path / "tap", tmp_path / "report"
    out.mkdir()
    parts = capture_files
    a, b, c = len(parts) // 4, len(parts) // 2, 3 * len(parts) // 4

    proc = start([folder], out)  # the folder does not exist yet: the tap has not started
    wait((out / "_checkpoint" / "spark" / "metadata").exists, proc, "the stream started (on no folder)")
    assert not folder.exists()
    for p in parts[:a]:
        feed(p, folder)
    wait(settled(out, rows(parts[:a])), proc, "first files judged")
    first = lines(out)
    assert first and (out / "report.html").exists()
    assert stop(proc) == 0

    for p in parts[a:b]:  # files that come while it is stopped
        feed(p, folder)
    proc = start([folder], out)
    wait(settled(out, rows(parts[:b])), proc, "the files that came meanwhile judged")
    assert lines(out)[:len(first)] == first  # what was written stays, nothing is written again

    for p in parts[b:c]:
        feed(p, folder)
    staging = follow_state.state_dir(str(out))
    wait(lambda: any(staging.glob(".v-*.inprogress")) and (meta(out) is None or meta(out).events < rows(parts[:c])),
         proc, "a pass under way")
    proc.send_signal(signal.SIGKILL)  # in the middle of a pass
    proc.wait(timeout=60)
    proc = start([folder], out, "--quiet")
    for p in parts[c:-1]:
        feed(p, folder)
    wait(settled(out, rows(parts[:-1])), proc, "every file judged after the kill")
    shutil.rmtree(folder)  # the tap's folder disappears (a volume unmounted): the stream goes on
    time.sleep(4)
    assert proc.poll() is None
    feed(parts[-1], folder)  # ... and it comes back
    wait(settled(out, rows(parts)), proc, "a file in the folder come back")
    assert stop(proc) == 0

    written = lines(out)
    new = [line["id"] for line in written if not line["update"]]
    assert len(new) == len(set(new))  # each episode written once as new
    last = {tuple(line[k] for k in EPISODE_KEY): line for line in written}
    assert set(last) == {tuple(f[k] for k in EPISODE_KEY) for f in batch_findings}
    parquet = pq.read_table(out / "findings").to_pylist()
    assert sorted(r["id"] + r["pass"] for r in parquet) == sorted(line["id"] + line["pass"] for line in written)
    assert meta(out).events == rows(parts)  # type: ignore[union-attr]  # every file read once
