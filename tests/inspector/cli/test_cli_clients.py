"""``kafka-inspector clients``: a table that stays readable off a terminal and on a narrow one, ``--format tsv`` and
``json`` for scripts, and one line for an input that is not a capture nor an events dataset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main

REPO = Path(__file__).resolve().parents[3]
GROUP = REPO / "pcaps" / "tansu-consumer-group-3-members.pcap"
#: The three clients of GROUP (independently: tshark shows these client ids and software names).
CLIENT_IDS = ["aiokafka-member", "confluent-member", "kafka-python-member"]


def _clients(*argv: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(REPO)}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "inspector.cli.main", "clients", *argv], capture_output=True,
                          text=True, env=env, cwd=REPO)


def test_off_a_terminal_the_table_keeps_each_row_on_one_line() -> None:
    """Piped, each client is one line holding every cell whole (at 80 columns they were cut a character at a
    time: "aiokaf/ka-mem/ber")."""
    proc = _clients(str(GROUP))
    assert proc.returncode == ExitCode.OK and proc.stderr == ""
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 3
    for line, client_id in zip(rows, CLIENT_IDS, strict=True):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[:2] == ["127.0.0.1", client_id] and cells[5] == "127.0.0.1:32913" and cells[-1] == "ready"
        assert "Heartbeat v" in cells[6] and "JoinGroup v" in cells[6]


def test_a_narrow_terminal_gets_a_block_per_client() -> None:
    """On a terminal too narrow for the table's longest words (80 columns here), a field a line."""
    proc = subprocess.run(["script", "-q", "-e", "-c", f"stty cols 80; {sys.executable} -m inspector.cli.main clients "
                           f"{GROUP}", "/dev/null"], capture_output=True, text=True, cwd=REPO,
                          env=os.environ | {"PYTHONPATH": str(REPO), "NO_COLOR": "1", "TERM": "dumb"})
    if proc.returncode != 0 and "script" in proc.stderr:
        pytest.skip(f"no pseudo-terminal: {proc.stderr.strip()}")
    text = proc.stdout.replace("\r", "")
    assert proc.returncode == ExitCode.OK, text
    assert "┃" not in text and "│" not in text
    for client_id in CLIENT_IDS:
        assert f"client id: {client_id}\n" in text
    assert text.count("Kafka 4.0: ready\n") == 3


def test_tsv_is_a_header_and_a_line_per_client() -> None:
    proc = _clients(str(GROUP), "--format", "tsv", columns=40)
    assert proc.returncode == ExitCode.OK and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].split("\t") == ["client_ip", "client_id", "principal", "software", "seen", "brokers", "apis",
                                    "errors", "kafka_4_0"]
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[1] for r in rows] == CLIENT_IDS and all(len(r) == 9 for r in rows)
    assert rows[2][3] == "kafka-python 3.0.12" and rows[0][3] == "software unknown"


def test_json_is_the_rows_report_writes() -> None:
    proc = _clients(str(GROUP), "--format", "json", columns=40)
    assert proc.returncode == ExitCode.OK and proc.stderr == ""
    rows = json.loads(proc.stdout)
    assert [r["client_id"] for r in rows] == CLIENT_IDS
    assert proc.stdout.count("\n") == len(rows) + 2  # "[", a row a line, "]"
    python = rows[2]
    assert (python["software_name"], python["software_version"]) == ("kafka-python", "3.0.12")
    assert python["brokers"] == ["127.0.0.1:32913"] and python["first_seen"].startswith("2026-11-22T04:47:")
    assert any(a["api_name"] == "JoinGroup" and a["requests"] > 0 for a in python["apis"])
    assert python["requests"] == sum(a["requests"] for a in python["apis"])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("outputs")
    assert main(["read", str(GROUP), "-o", str(base / "jsonl"), "--format", "jsonl", "--quiet"]) == ExitCode.OK
    (base / "other").mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), base / "other" / "x.parquet")
    (base / "captures").mkdir()
    (base / "captures" / "x.pcap").write_bytes(GROUP.read_bytes())
    return base


@pytest.mark.parametrize("name,needle", [
    ("jsonl", "holds JSON lines events (events.jsonl), not Parquet: read the captures again without --format jsonl"),
    ("other", "x.parquet is not an events file: it has no ts, "),
    ("captures", "holds no Parquet events (write an events dataset with `kafka-inspector read"),
    ("missing", "missing: no such file"),
])
def test_an_input_that_is_not_events_is_one_line(outputs: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                  needle: str) -> None:
    assert main(["clients", str(outputs / name)]) == ExitCode.INPUT
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and needle in out.err and "Traceback" not in out.err


def test_a_fifo_capture_is_read(tmp_path: Path) -> None:
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m inspector.cli.main clients --format tsv <(cat {GROUP})"],
                          capture_output=True, text=True, cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO)})
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert [line.split("\t")[1] for line in proc.stdout.splitlines()[1:]] == CLIENT_IDS
