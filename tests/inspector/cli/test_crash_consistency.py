"""Crash consistency: ``read`` (one process and ``--jobs``) and ``tap`` killed at random points, over many runs.

Each run is a real ``kafka-inspector`` process, stopped by SIGINT (to its process group, as a terminal's Ctrl-C),
SIGTERM or SIGKILL at a random moment (seeded: a failure names its seed and replays). After every run: every file
under a final name is complete and readable (pyarrow reads each Parquet file, every JSON line parses, the file ends
with its line), no worker process is left, and the accounting of what was kept is true: ``summary.json``'s counts
agree with the rows and connections the folder holds. A ``read`` that did not finish left the dataset exactly as it
was (SIGKILL: once the next run, or :func:`recover`, has dealt with its staging folder); one that finished added
one run (``--append``) or replaced the dataset (``--overwrite``). A tap stopped by SIGINT/SIGTERM wrote totals that
count exactly its files' rows; a killed one left complete files and a hidden one in progress at most.

The tap reads a fake tcpdump (a script that prints "listening on", streams a real capture in small pieces, prints
libpcap's counters when asked and stops on SIGINT), so the test needs neither root nor a broker.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from inspector.rows.output_dir import Dataset, locked, recover

REPO = Path(__file__).resolve().parents[3]
PCAPS = REPO / "pcaps"
CAPTURES = [PCAPS / name for name in ("mock-cluster-kip848-consumer-group.pcap", "tansu-consumer-lag.pcap",
                                      "tansu-classic-rebalance-storm.pcap", "mock-cluster-3-brokers-multi-client.pcap",
                                      "tansu-transactions.pcap")]
SEED = int(os.environ.get("CRASH_SEED", "34"))
READ_RUNS = 24
TAP_RUNS = 8
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
ENV = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes], signum: int, at: float) -> tuple[int, list[int]]:
    """Send ``signum`` ``at`` seconds after start (SIGINT to the process group, like a terminal's Ctrl-C); the exit
    code and the children the process had then."""
    deadline = time.monotonic() + at
    children: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None:
        children = _children(proc.pid) or children
        time.sleep(0.005)
    if proc.poll() is None:
        children = _children(proc.pid) or children
        with contextlib.suppress(ProcessLookupError):
            if signum == signal.SIGINT:
                os.killpg(proc.pid, signum)
            else:
                os.kill(proc.pid, signum)
    try:
        return proc.wait(60), children
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _final_files(out: Path) -> dict[str, tuple[int, bytes]]:
    """The files under final names (no dot-name on the way): their inode (a file published anew is a new one) and
    bytes."""
    found = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            found[str(rel)] = (path.stat().st_ino, path.read_bytes())
    return found


def _check_complete(out: Path) -> None:
    """Every final-named file is whole: Parquet files read, JSON lines parse, summary.json parses."""
    for name, (_, data) in _final_files(out).items():
        if name.endswith(".parquet"):
            pq.read_table(out / name)
        elif name.endswith(".jsonl"):
            assert data == b"" or data.endswith(b"\n"), name
            for line in data.splitlines():
                json.loads(line)
        elif name.endswith(".json"):
            json.loads(data)


def _rows(out: Path, names: list[str]) -> int:
    return sum(pq.read_metadata(out / n).num_rows if n.endswith(".parquet") else len((out / n).read_bytes()
                                                                                         .splitlines())
               for n in names)


def _check_accounting(out: Path) -> dict | None:
    """summary.json agrees with what the folder holds (None: no dataset)."""
    if not (out / "summary.json").exists():
        assert not Dataset.scan(out).files
        return None
    summary = json.loads((out / "summary.json").read_text())
    dataset = Dataset.scan(out)
    names = [str(p.relative_to(out)) for p in dataset.files]
    assert sorted(name for run in summary["runs"] for name in run["files"]) == sorted(names)
    assert _rows(out, names) == summary["messages"] == sum(run["messages"] for run in summary["runs"])
    for run in summary["runs"]:
        assert _rows(out, run["files"]) == run["messages"]
    connections = pq.read_table(out / "connections.parquet", columns=["conn_id"]).column(0).to_pylist()
    assert len(connections) == len(set(connections)) == summary["kafka_connections"] - summary[
        "kafka_connections_without_data"]
    return summary


#: How a stopped run may end: done (the signal came after the commit, or was handled after the run), interrupted
#: (130), or killed by the signal itself: SIGKILL, or SIGTERM while Python was still starting, before the command
#: set its handlers (nothing written by then).
_STOPPED = (0, 130, -signal.SIGTERM, -signal.SIGKILL)


def _check_exit(code: int, stderr: str, what: str, also: tuple[int, ...] = ()) -> None:
    """One of the :data:`_STOPPED` ends, with no traceback; or Python's own end for a Ctrl-C while the interpreter
    was still starting (exit -SIGINT, silent) or importing the command (exit 1 or -SIGINT, its traceback ending in
    KeyboardInterrupt)."""
    if code in (1, -signal.SIGINT):
        assert stderr == "" and code == -signal.SIGINT or stderr.rstrip().endswith("KeyboardInterrupt"), (
            f"{what}: exit {code}: {stderr}")
    else:
        assert code in _STOPPED + also and "Traceback" not in stderr, f"{what}: exit {code}: {stderr}"


def _read_durations(tmp: Path) -> dict[str, float]:
    """How long an uninterrupted run takes, per mode: the kills are spread over that."""
    took = {}
    for jobs in ("1", "2"):
        out = tmp / f"timing-{jobs}"
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "inspector.cli.main", "read", *map(str, CAPTURES), "-o", str(out), "-q",
                        "--jobs", jobs], cwd=REPO, env=ENV, check=True)
        took[jobs] = time.monotonic() - start
    return took


def test_read_killed_at_random_points_leaves_whole_files_and_true_totals(tmp_path: Path) -> None:
    rnd = random.Random(SEED)
    took = _read_durations(tmp_path)
    for i in range(READ_RUNS):
        fmt = rnd.choice(("parquet", "jsonl"))
        jobs = rnd.choice(("1", "2"))
        out = tmp_path / fmt
        exists = (out / "summary.json").exists()
        flag = rnd.choice(("--append", "--overwrite")) if exists else "--append"
        captures = rnd.sample(CAPTURES, rnd.randint(2, len(CAPTURES)))
        signum = SIGNALS[i % len(SIGNALS)]
        at = rnd.uniform(0.0, 1.2 * took[jobs])
        before = _final_files(out) if out.exists() else {}
        runs_before = len(json.loads(before["summary.json"][1])["runs"]) if "summary.json" in before else 0
        what = f"seed {SEED} run {i}: read {fmt} --jobs {jobs} {flag}, {signum.name} at {at:.2f}s"
        proc = subprocess.Popen([sys.executable, "-m", "inspector.cli.main", "read", *map(str, captures),
                                 "-o", str(out), "-q", "--format", fmt, "--jobs", jobs, flag], cwd=REPO, env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        code, children = _stop(proc, signum, at)
        stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
        time.sleep(0.05)
        assert not [c for c in children if _alive(c)], f"{what}: workers left running"
        _check_exit(code, stderr, what)
        if out.exists():
            _check_complete(out)
        if code == -signal.SIGKILL and out.exists():  # what the next run does first
            with locked(out):
                recover(out)
        after = _final_files(out) if out.exists() else {}
        if after != before:  # published: the whole run, and only now
            changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
            assert code in (0, -signal.SIGKILL), f"{what}: exit {code} but the dataset changed: {changed}"
            summary = _check_accounting(out)
            assert summary is not None
            expected = runs_before + 1 if flag == "--append" else 1
            assert len(summary["runs"]) == expected, what
            assert summary["runs"][-1]["captures"] == [c.name for c in captures], what
        else:
            assert code != 0, f"{what}: exit 0 and nothing published"
        if out.exists():
            assert not [p for p in out.iterdir() if p.name.startswith(".read-")], f"{what}: staging left"


FAKE_TCPDUMP = '''#!{python}
"""A stand-in for tcpdump: says it listens, streams a capture in small pieces, prints counters, stops on SIGINT."""
import os, signal, sys, time
parent = os.getppid()
stop = []
sent = [0]
def stats(*_):
    sys.stderr.write(f"{{sent[0]}} packets captured\\n{{sent[0]}} packets received by filter\\n"
                     "0 packets dropped by kernel\\n")
    sys.stderr.flush()
signal.signal(signal.SIGUSR1, stats)
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
sys.stderr.write("listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes\\n")
sys.stderr.flush()
data = open({capture!r}, "rb").read()
out = sys.stdout.buffer
pos = 0
try:
    while not stop and os.getppid() == parent:
        if pos < len(data):
            out.write(data[pos:pos + 2048])
            out.flush()
            pos += 2048
            sent[0] = pos // 300
        time.sleep(0.004)
except BrokenPipeError:
    sys.exit(1)
stats()
'''


def test_tap_killed_at_random_points_leaves_whole_files_and_true_totals(tmp_path: Path) -> None:
    rnd = random.Random(SEED)
    fake = tmp_path / "tcpdump"
    fake.write_text(FAKE_TCPDUMP.format(python=sys.executable, capture=str(CAPTURES[0])))
    fake.chmod(0o755)
    seen = {"summary": 0, "killed": 0}
    for i in range(TAP_RUNS):
        out = tmp_path / f"tap-{i}"
        signum = SIGNALS[i % len(SIGNALS)]
        listening = i < TAP_RUNS - 2  # most runs stopped while capturing, the last two while starting
        at = rnd.uniform(0.0, 1.2) if listening else rnd.uniform(0.0, 0.5)
        what = f"seed {SEED} tap run {i}: {signum.name} at {at:.2f}s" + (" after tcpdump started" if listening else "")
        proc = subprocess.Popen([sys.executable, "-m", "inspector.tap.command", "-i", "lo", "-o", str(out), "--quiet",
                                 "--tcpdump", str(fake), "--rotate-size", "16KB"], cwd=REPO, env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 30
        while listening and not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        code, children = _stop(proc, signum, at)
        stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
        deadline = time.monotonic() + 5
        while [c for c in children if _alive(c)] and time.monotonic() < deadline:  # the fake tcpdump sees its
            time.sleep(0.02)                                                       # parent gone
        _check_exit(code, stderr, what, also=(3,))
        if not out.exists():
            continue
        _check_complete(out)
        files = sorted((out / "events").glob("part-*.parquet")) if (out / "events").exists() else []
        hidden = [p.name for p in out.rglob(".*")]
        if code == 3:  # stopped before tcpdump said it listens: the tap says so (nothing was captured)
            assert stderr == "kafka-inspector: error: stopped while tcpdump was starting\n", f"{what}: {stderr}"
        if code == 0:
            summary = json.loads((out / "summary.json").read_text())
            assert summary["tap"]["files"] == [p.name for p in files], what
            assert sum(pq.read_metadata(p).num_rows for p in files) == summary["messages"], what
            connections = pq.read_table(out / "connections.parquet")
            assert connections.num_rows == summary["kafka_connections"] - summary["kafka_connections_without_data"]
            assert hidden == [], what
            seen["summary"] += 1
        else:
            assert not (out / "summary.json").exists() and all(n.endswith(".inprogress") for n in hidden), what
            seen["killed"] += 1
    assert seen["summary"] and seen["killed"], seen

