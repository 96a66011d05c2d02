"""``kafka-inspector report`` as a person runs it: a terminal with the summary only; Spark's own output (log4j's
lines, the JDK's warnings, the loopback-hostname warning) goes to OUTPUT/spark.log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import PCAPS

KAFKA_INSPECTOR = Path(sys.executable).parent / "kafka-inspector"
SPARK_NOISE = ("log4j", "WARN ", "WARNING:", "incubator", "NativeCodeLoader", "loopback", "setLogLevel", "Stage ")


def test_report_prints_no_spark_output_and_logs_it_to_a_file(tmp_path: Path) -> None:
    events = tmp_path / "events"
    subprocess.run([str(KAFKA_INSPECTOR), "read", str(PCAPS / "tansu-kafka-python-0.10-removed-versions.pcap"),
                    "--output", str(events), "--quiet"], check=True, timeout=120)
    out = tmp_path / "report"
    done = subprocess.run([str(KAFKA_INSPECTOR), "report", str(events), "--output", str(out), "--master", "local[2]"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    terminal = done.stdout + done.stderr
    assert not [noise for noise in SPARK_NOISE if noise in terminal], terminal
    assert "removed_in_kafka_4" in terminal and "clients (" in terminal
    log = (out / "spark.log").read_text()
    assert "log4j" in log  # what Spark said went there
    assert (out / "clients.parquet").is_dir() and (out / "report.html").is_file()
