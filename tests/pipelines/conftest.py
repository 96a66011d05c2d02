"""One local SparkSession for the whole pipelines suite (local[2], 4 shuffle partitions); the demo's events one
part file per capture, and the batch report's findings of them (the --follow tests hold the stream to them)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers use this virtualenv too

pyspark = pytest.importorskip("pyspark")

import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from pipelines.jvm_names import pin_jvm_names  # noqa: E402
from pipelines.report_job import DATAFRAME_DEBUGGING  # noqa: E402

PCAPS = Path(__file__).resolve().parents[2] / "pcaps"
KAFKA_INSPECTOR = Path(sys.executable).parent / "kafka-inspector"


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


@pytest.fixture(scope="session")
def batch_report(spark: SparkSession, capture_files: list[Path], tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, list[dict[str, Any]]]:
    """The batch report of the demo's events (``capture_files``): its output folder and its findings."""
    from pipelines import report_job

    out = tmp_path_factory.mktemp("batch-report")
    result = report_job.run(spark, str(capture_files[0].parent), str(out))
    return out, result.findings


@pytest.fixture(scope="session")
def batch_findings(batch_report: tuple[Path, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The batch report's findings of the demo's events."""
    return batch_report[1]
