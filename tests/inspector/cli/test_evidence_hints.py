"""A message named as the events dataset names it (capture, conn_id, correlation_id) is found by the command the
report's page gives for it (``pipelines.html.show_command``), whichever writer numbered the connections: a
serial ``read`` of several captures, ``read --jobs``, ``read --append``, or the tap (no capture file: its events
are shown). ``inspector.rows.conn_ids`` is the numbering; the decode job's numbering is held equal to ``read``'s in
``tests/pipelines/test_end_to_end.py``."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from inspector.read.decode_options import read_options
from inspector.rows.conn_ids import CONN_ID_SHIFT
from inspector.rows.writers import ParquetDatasetWriter
from inspector.tap.command import add_parser
from inspector.tap.decode import TapDecoder
from pipelines.html import show_command

PCAPS = Path(__file__).resolve().parents[3] / "pcaps"
KAFKA_INSPECTOR = Path(sys.executable).parent / "kafka-inspector"
CAPTURES = [PCAPS / n for n in ("tansu-consumer-group-3-members.pcap", "tansu-sasl-scram.pcap",
                                "mock-cluster-transactions.pcap")]


def _read(out: Path, *args: str) -> list[dict[str, Any]]:
    subprocess.run([str(KAFKA_INSPECTOR), "read", *args, "--output", str(out), "--quiet"], check=True, timeout=300)
    return pq.read_table(out / "events", columns=["capture", "conn_id", "correlation_id", "direction",
                                                  "api_name"]).to_pylist()


def _samples(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A few requests of each capture: its first, one in the middle, its last."""
    out = []
    for capture in sorted({r["capture"] for r in rows}):
        reqs = [r for r in rows if r["capture"] == capture and r["direction"] == "request"
                and r["correlation_id"] is not None]
        out += [reqs[0], reqs[len(reqs) // 2], reqs[-1]]
    return out


def _check(rows: list[dict[str, Any]], events: Path, cwd: Path) -> None:
    """Each sample's command prints exactly the rows of that capture, connection and correlation id."""
    counts = Counter((r["capture"], r["conn_id"], r["correlation_id"]) for r in rows)
    for s in _samples(rows):
        command = show_command(s, str(events))
        out = subprocess.run([str(KAFKA_INSPECTOR), *shlex.split(command)[1:]], cwd=cwd, capture_output=True,
                             text=True, timeout=120, check=True).stdout.splitlines()
        lines = [line for line in out if f" #{s['conn_id']} " in line]
        want = counts[(s["capture"], s["conn_id"], s["correlation_id"])]
        assert len(lines) == want >= 1, (command, out)
        assert all(f"corr={s['correlation_id']} " in line + " " and s["api_name"] in line for line in lines)
        assert out[-1].startswith(f"{want} of "), (command, out)


def test_serial_read_jobs_and_append_name_what_show_finds(tmp_path: Path) -> None:
    serial = _read(tmp_path / "serial", *map(str, CAPTURES))
    jobs = _read(tmp_path / "jobs", *map(str, CAPTURES), "--jobs", "2")
    assert sorted(map(str, serial)) == sorted(map(str, jobs))  # every writer numbers alike
    assert {r["conn_id"] >> CONN_ID_SHIFT for r in serial} == {0, 1, 2}  # a block per capture
    _read(tmp_path / "appended", str(CAPTURES[0]))
    appended = _read(tmp_path / "appended", str(CAPTURES[1]), "--append")
    assert len({r["conn_id"] for r in appended}) == len({(r["capture"], r["conn_id"]) for r in appended})
    for rows, events in ((serial, tmp_path / "serial"), (jobs, tmp_path / "jobs"),
                         (appended, tmp_path / "appended")):
        _check(rows, events, PCAPS)


def test_the_taps_evidence_is_shown_from_its_events(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    decoder = TapDecoder(read_options(parser.parse_args(["tap", "-i", "lo", "-o", "out"])), "tap:lo")
    decoder.feed(CAPTURES[0].read_bytes())
    decoder.end_stream()
    decoder.finish(decoder.stream_ts)
    batch = decoder.take()
    assert batch is not None
    writer = ParquetDatasetWriter(tmp_path / "tap")  # as the tap writes DIR/events/part-N.parquet
    writer.write(batch)
    writer.close()
    rows = pq.read_table(tmp_path / "tap" / "events", columns=["capture", "conn_id", "correlation_id", "direction",
                                                               "api_name"]).to_pylist()
    assert {r["capture"] for r in rows} == {"tap:lo"}
    assert show_command(rows[0], str(tmp_path / "tap")).startswith(f"kafka-inspector show {tmp_path / 'tap'} "
                                                                   "--filter capture=tap:lo --filter conn_id=")
    _check(rows, tmp_path / "tap", tmp_path)
