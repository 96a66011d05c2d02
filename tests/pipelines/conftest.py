"""One local SparkSession for the whole pipelines suite (local[2], 4 shuffle partitions); the demo's events one
part file per capture, and the batch report's findings of them (the --follow tests hold the stream to them)."""

from __future__ import annotations

import fcntl
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers use this virtualenv too

pyspark = pytest.importorskip("pyspark")

import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from pipelines.jvm_names import pin_jvm_names  # noqa: E402
from pipelines.report_job import DATAFRAME_DEBUGGING, LOCAL_JAVA_OPTIONS  # noqa: E402

PCAPS = Path(__file__).resolve().parents[2] / "pcaps"
KAFKA_INSPECTOR = Path(sys.executable).parent / "kafka-inspector"
T = TypeVar("T")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka-inspector-pipelines-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config(DATAFRAME_DEBUGGING, "false")  # as the report's session (report_job.DATAFRAME_DEBUGGING)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        # the report's local driver's JIT and collector (report_job.LOCAL_JAVA_OPTIONS): on the tests' many small
        # queries the default's optimising JIT and G1's concurrent threads cost a quarter more CPU
        .config("spark.driver.extraJavaOptions", LOCAL_JAVA_OPTIONS)
        # the tests' inputs are small: run interpreted, as the report does below report_job.SMALL_INPUT_BYTES
        # (codegen.wholeStage, codegen.factoryMode), with several shuffle partitions (no order taken for granted)
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    pin_jvm_names(session)  # as the report's session (report_job.build_session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_read(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of one ``kafka-inspector read`` of every capture in pcaps/ (the demo's events)."""
    out = tmp_path_factory.mktemp("demo-read") / "all"
    subprocess.run([str(KAFKA_INSPECTOR), "read", *map(str, sorted(PCAPS.glob("*.pcap"))), "--output", str(out),
                    "--quiet"], check=True, timeout=300)
    return out


@pytest.fixture(scope="session")
def capture_files(demo_read: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The demo's events (``demo_read``), one part file per capture, oldest first."""
    tmp = tmp_path_factory.mktemp("follow-events")
    table = pq.read_table(demo_read / "events")
    captures = table.column("capture").unique().to_pylist()
    firsts = {c: pc.min(table.filter(pc.equal(table["capture"], c))["ts"]).as_py() for c in captures}
    out = []
    for i, name in enumerate(sorted(captures, key=lambda c: firsts[c])):
        path = tmp / "split" / f"part-{i:05d}.parquet"
        path.parent.mkdir(exist_ok=True)
        pq.write_table(table.filter(pc.equal(table["capture"], name)), path)
        out.append(path)
    return out


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)``, made once per run of the suite: on several pytest-xdist workers the first to ask makes it
    (in a folder of the run's own temporary root) while the others wait for it, then each reads its pickle."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
    done = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its worker ends
        if not done.exists():
            folder = root / name
            folder.mkdir(exist_ok=True)  # a worker that failed making it may have left it
            made = make(folder)
            tmp = root / f".{name}.pickle.tmp"
            tmp.write_bytes(pickle.dumps(made))
            os.replace(tmp, done)
            return made
    loaded: T = pickle.loads(done.read_bytes())  # noqa: S301  # written by this run's own workers
    return loaded


@pytest.fixture(scope="session")
def batch_report(spark: SparkSession, capture_files: list[Path], tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, list[dict[str, Any]]]:
    """The batch report of the demo's events (``capture_files``): its output folder and its findings (one report
    per run of the suite, however many workers run it: ~20 s of CPU each)."""
    from pipelines import report_job

    def make(out: Path) -> tuple[Path, list[dict[str, Any]]]:
        return out, report_job.run(spark, str(capture_files[0].parent), str(out)).findings

    return once_per_run(tmp_path_factory, "batch-report", make)


@pytest.fixture(scope="session")
def batch_findings(batch_report: tuple[Path, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The batch report's findings of the demo's events."""
    return batch_report[1]
