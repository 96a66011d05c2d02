"""``kafka-inspector report``: what is wrong with its arguments is one line, with its exit code, before Spark starts
(pipelines/preflight.py): the events, the master, the hosts file, the output."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from pipelines import preflight
from pipelines.preflight import master_problem
from tests.conftest import PCAPS

REPO = Path(__file__).resolve().parents[2]
CAPTURE = PCAPS / "tansu-consumer-group-3-members.pcap"


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector.cli.main", *argv], capture_output=True, text=True, cwd=REPO,
                          env=(env or os.environ) | {"PYTHONPATH": str(REPO)}, timeout=120)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("datasets")
    assert _cli("read", str(CAPTURE), "-o", str(base / "parquet"), "--quiet").returncode == 0
    assert _cli("read", str(CAPTURE), "-o", str(base / "jsonl"), "--format", "jsonl", "--quiet").returncode == 0
    (base / "other").mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), base / "other" / "x.parquet")
    # an events folder with a foreign file among its parts, and one whose ts is text
    mixed = base / "mixed" / "events"
    mixed.mkdir(parents=True)
    for part in (base / "parquet" / "events").glob("*.parquet"):
        (mixed / part.name).write_bytes(part.read_bytes())
    (mixed / "zz-notes.parquet").write_text("not parquet\n")
    typed = base / "typed"
    typed.mkdir()
    table = pq.read_table(base / "parquet" / "events")
    pq.write_table(table.set_column(0, "ts", table.column("ts").cast(pa.string())), typed / "part.parquet")
    (base / "hosts.bin").write_bytes(b"\xff\xfe\x00broker 10.0.0.1\n")
    (base / "a-file").write_text("x")
    return base


@pytest.mark.parametrize("argv,code,needle", [
    (["jsonl"], ExitCode.INPUT, "holds JSON lines events (events.jsonl), not Parquet"),
    (["other"], ExitCode.INPUT, "x.parquet is not an events file: it has no ts, conn_id, direction, api_key column"),
    (["mixed"], ExitCode.INPUT, "zz-notes.parquet is not a Parquet file"),
    (["typed"], ExitCode.INPUT, "its column ts is string, the events contract's is timestamp[us, UTC]"),
    (["nope"], ExitCode.INPUT, "nope does not exist"),
    (["parquet", "--master", "bogus://x"], ExitCode.USAGE, "--master bogus://x: not a Spark master URL"),
    (["parquet", "--master", "local[0]"], ExitCode.USAGE, "not a Spark master URL"),
    (["parquet", "--master", "spark://127.0.0.1:1"], ExitCode.INPUT,
     "--master spark://127.0.0.1:1: the master does not answer (127.0.0.1:1: Connection refused)"),
    (["parquet", "--hosts", "nope"], ExitCode.INPUT, "/nope: no such file"),
    (["parquet", "--hosts", "hosts.bin"], ExitCode.INPUT, "is not text (UTF-8)"),
    (["parquet", "--hosts", "parquet"], ExitCode.INPUT, "is a directory"),
    (["parquet", "--output", "a-file"], ExitCode.OUTPUT, "a-file is a file: give a folder"),
    (["parquet", "--output", "parquet/events/report"], ExitCode.USAGE, "is inside the events folder"),
    (["parquet", "--html", "nope/page.html"], ExitCode.OUTPUT, "--html: cannot write to"),
    (["parquet", "--html", "parquet"], ExitCode.OUTPUT, "is a directory: give the page's file name"),
])
def test_a_report_that_cannot_run_is_one_line_before_spark(datasets: Path, argv: list[str], code: int,
                                                           needle: str) -> None:
    events, *options = argv
    if "--output" not in options:
        options += ["--output", "report"]
    options = [str(datasets / o) if i and options[i - 1] in ("--output", "--hosts", "--html") else o
               for i, o in enumerate(options)]
    started = time.monotonic()
    proc = _cli("report", str(datasets / events), *options)
    took = time.monotonic() - started
    assert (proc.returncode, proc.stdout) == (code, "")
    assert proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr
    assert proc.stderr.startswith("kafka-inspector: error: ")
    assert not (datasets / "report").exists()  # nothing written, Spark not started (no spark.log)
    assert took < 30


def test_spark_that_does_not_start_is_one_line(datasets: Path, tmp_path: Path) -> None:
    """The safety net behind the checks: a JVM that cannot start (no Java here) is one line naming the log."""
    proc = _cli("report", str(datasets / "parquet"), "--output", str(tmp_path / "r"),
                env=os.environ | {"JAVA_HOME": str(tmp_path / "no-java")})
    assert proc.returncode == ExitCode.INPUT and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("kafka-inspector: error: Spark did not start (")
    assert proc.stderr.endswith(f"its log: {tmp_path / 'r' / 'spark.log'}\n")


@pytest.fixture
def full_listener() -> Iterator[int]:
    """A port on 127.0.0.1 whose accept queue is full: a connection to it gets no answer (its SYN is dropped)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    held = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        yield port
    finally:
        held.close()
        server.close()


def test_a_master_that_does_not_answer_fails_within_the_timeout(full_listener: int) -> None:
    started = time.monotonic()
    problem = master_problem(f"spark://127.0.0.1:{full_listener}", timeout=1.0)
    assert time.monotonic() - started < 5
    assert problem is not None and problem.code == ExitCode.INPUT
    assert f"(127.0.0.1:{full_listener}: no answer (timed out))" in problem.message


def test_master_urls() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        for good in ("local", "local[*]", "local[4]", "local[2,3]", "local[*,2]", "local-cluster[2,1,1024]", "yarn",
                     f"spark://127.0.0.1:{port}", f"spark://127.0.0.1:1,127.0.0.1:{port}",
                     f"k8s://https://127.0.0.1:{port}", f"k8s://127.0.0.1:{port}"):
            assert master_problem(good) is None, good
    finally:
        listener.close()
    for bad in ("bogus://x", "local[0]", "local[]", "spark://", "spark://host:99999", "mesos://h:5050", "sc://h"):
        problem = master_problem(bad)
        assert problem is not None and problem.code == ExitCode.USAGE, bad
    problem = master_problem("spark://127.0.0.1:1,[::1]:1")
    assert problem is not None and problem.code == ExitCode.INPUT
    assert "127.0.0.1:1: Connection refused; [::1]:1: " in problem.message


def test_a_read_output_and_its_events_folder_pass(datasets: Path) -> None:
    assert preflight.events_problem(str(datasets / "parquet")) is None
    assert preflight.events_problem(str(datasets / "parquet" / "events")) is None
    assert preflight.events_problem("hdfs:///somewhere/events") is None  # remote: Spark finds out


def test_without_pyspark_the_report_is_one_line(datasets: Path, tmp_path: Path) -> None:
    """PySpark is an optional dependency (``kafka-inspector[spark]``): without it, one line saying so."""
    blocker = tmp_path / "sitecustomize.py"  # run at start-up: pyspark cannot be imported in this interpreter
    blocker.write_text("import sys\n"
                       "class _NoPySpark:\n"
                       "    def find_spec(self, name, path=None, target=None):\n"
                       "        if name == 'pyspark' or name.startswith('pyspark.'):\n"
                       "            raise ImportError('No module named ' + repr(name))\n"
                       "sys.meta_path.insert(0, _NoPySpark())\n")
    proc = subprocess.run([sys.executable, "-m", "inspector.cli.main", "report", str(datasets / "parquet"), "--output",
                           str(tmp_path / "r")], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env=os.environ | {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"})
    assert (proc.returncode, proc.stdout) == (ExitCode.INPUT, "")
    assert proc.stderr == ("kafka-inspector: error: report needs PySpark, which is not installed: "
                           "pip install 'kafka-inspector[spark]' (or pyspark)\n")
