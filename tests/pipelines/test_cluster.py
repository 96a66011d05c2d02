"""The decode job and the report on a real Spark standalone cluster (a master and one worker on 127.0.0.1,
started from the pyspark installation), with the commands pipelines/README.md gives: the events and findings
equal those of the local run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipelines.findings import EPISODE_KEY
from pipelines.report_job import QUICK_JIT
from tests.conftest import PCAPS
from tests.pipelines.rows import canonical
from tests.pipelines.test_follow_stream import feed, lines, rows, settled, start, stop, wait

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Cluster:
    url: str  # the master's
    work: Path  # the worker's folder of applications
    env: dict[str, str]  # what its commands run with


def _env(conf: Path) -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_CONF_DIR": str(conf),
            "SPARK_DAEMON_JAVA_OPTS": QUICK_JIT}


def _spark_defaults(conf: Path) -> Path:
    """Every JVM of the cluster (the master, the worker, each application's driver and executors) runs a job or two
    and ends: each compiles at the JIT's quick tier only, as a local report on a small input does
    (``report_job.QUICK_JIT``); the optimising tier's compilations, much of these JVMs' CPU otherwise, would not
    pay back in their lifetime. What the tests compare (events, findings) does not depend on it."""
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.driver.extraJavaOptions {QUICK_JIT}\nspark.executor.extraJavaOptions {QUICK_JIT}\n")
    return conf


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    logs = tmp_path_factory.mktemp("standalone")
    env = _env(_spark_defaults(logs / "conf"))
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs = [subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui)], stdout=open(logs / "master.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
        env=env)]
    url = f"spark://127.0.0.1:{port}"
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
             "--memory", "2g", "--webui-port", str(worker_ui), "--work-dir", str(logs / "work")],
            stdout=open(logs / "worker.log", "wb"), stderr=subprocess.STDOUT, env=env))  # noqa: SIM115
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    if json.load(r).get("aliveworkers", 0) >= 1:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (logs / "master.log").read_text()[-2000:]
            time.sleep(0.5)
        yield Cluster(url, logs / "work", env)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _jobs_zip(path: Path) -> Path:
    """``zip -qr jobs.zip pipelines contract -x '*__pycache__*'``, as pipelines/README.md says."""
    with zipfile.ZipFile(path, "w") as z:
        for package in ("pipelines", "contract"):
            for f in sorted((REPO / package).rglob("*.py")):
                z.write(f, f.relative_to(REPO))
    return path


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_decode_job_and_report_on_a_standalone_cluster(master: Cluster, demo_read: Path,
                                                       batch_report: tuple[Path, list[dict[str, Any]]],
                                                       tmp_path: Path) -> None:
    url, work = master.url, master.work
    captures = [str(p) for p in sorted(PCAPS.glob("*.pcap"))]
    jobs = _jobs_zip(tmp_path / "jobs.zip")
    # the decode job, submitted to the cluster: one task per capture file
    _run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", url, "--py-files", str(jobs),
          "--conf", f"spark.pyspark.python={sys.executable}", str(REPO / "pipelines" / "decode_job.py"),
          *captures, "--output", str(tmp_path / "cluster")], tmp_path, master.env)
    cluster = pq.read_table(tmp_path / "cluster" / "events")
    local = pq.read_table(demo_read / "events")  # `kafka-inspector read` of the same captures
    assert cluster.num_rows == local.num_rows > 1000
    assert canonical(cluster.to_pylist()) == canonical(local.to_pylist())  # conn_id included: per-file ranges

    # the report on the cluster (the command), against the batch report of the same events in the tests' local
    # session (its inputs one file per capture)
    before = set(work.glob("app-*"))
    _run([str(BIN / "kafka-inspector"), "report", str(tmp_path / "cluster"), "--output", str(tmp_path / "on-cluster"),
          "--master", url], tmp_path, master.env)
    assert len(set(work.glob("app-*")) - before) == 1  # the worker ran the report's executors
    for name in ("findings.parquet", "admin_audit.parquet", "clients.parquet"):
        on_cluster = pq.read_table(tmp_path / "on-cluster" / name).to_pylist()
        here = pq.read_table(batch_report[0] / name).to_pylist()
        assert on_cluster and canonical(on_cluster) == canonical(here), name


def test_follow_on_a_standalone_cluster_over_two_taps_folders(master: Cluster, capture_files: list[Path],
                                                             batch_findings: list[dict[str, Any]],
                                                             tmp_path: Path) -> None:
    """Two taps (one per broker host) each write their folder; one ``report --follow`` on the cluster judges
    both."""
    url, work = master.url, master.work
    taps = [tmp_path / "broker-a", tmp_path / "broker-b"]
    out = tmp_path / "follow"
    out.mkdir()
    before = set(work.glob("app-*"))
    proc = start(taps, out, "--master", url, "--quiet", env=master.env)
    try:
        for i, part in enumerate(capture_files):
            feed(part, taps[i % 2])
        wait(settled(out, rows(capture_files)), proc, "both folders judged")
    finally:
        assert stop(proc) == 0
    assert len(set(work.glob("app-*")) - before) == 1  # the worker ran its executors
    last = {tuple(line[k] for k in EPISODE_KEY): line for line in lines(out)}
    assert set(last) == {tuple(f[k] for k in EPISODE_KEY) for f in batch_findings}
