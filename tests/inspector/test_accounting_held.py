"""Byte accounting with ``--max-held``: real captures, damaged (reordered, lost, duplicated), read with a limit
so small that data waiting behind holes is released all the time. The released holes become gaps, the data
behind them is delivered, the segments that fill them later count as retransmitted: every stream byte is
still counted exactly once, per connection, per capture and in total."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from scapy.utils import rdpcap

from contract.errors import ExitCode
from inspector.cli.main import main
from tests.inspector.test_accounting import CAPTURES, DIRECTIONS, PARTS, PCAPS, duplicate, lose, reorder, write
from tests.inspector.test_accounting import reassembler_totals as unlimited_totals


def read(tmp_path: Path, pcap: Path, *extra: str) -> tuple[list[dict], dict]:
    out = tmp_path / f"out-{pcap.stem}-{len(extra)}"
    assert main(["read", str(pcap), "--output", str(out), "--quiet", *extra]) == ExitCode.OK
    return pq.read_table(out / "connections.parquet").to_pylist(), json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("name", CAPTURES)
def test_released_holes_are_counted_once(tmp_path: Path, name: str) -> None:
    rng = random.Random(6)
    damaged = write(tmp_path / "damaged.pcap", duplicate(reorder(lose(list(rdpcap(str(PCAPS / name))), rng), rng), rng))
    rows, summary = read(tmp_path, damaged, "--max-held", "0")
    assert summary["limits"]["--max-held"]["hits"] > 0
    for row in rows:
        for who in DIRECTIONS:
            assert row[f"{who}_bytes_seen"] == sum(row[f"{who}_bytes_{part}"] for part in PARTS), (who, row)
    totals = {key: sum(r[f"bytes_{key}"] for r in rows) for key in ("seen", *PARTS, "retransmitted")}
    for capture in (damaged.name, "*"):
        assert {k: summary["accounting"][capture][f"bytes_{k}"] for k in totals} == totals
    assert summary["stream_issue_bytes"].get("gap", 0) == totals["gap"]
    # The same stream bytes as without a limit; the released holes' bytes, when they came, were duplicates.
    without_rows, without = read(tmp_path, damaged)
    assert "--max-held" not in without["limits"]
    plain = {key: sum(r[f"bytes_{key}"] for r in without_rows) for key in ("seen", *PARTS, "retransmitted")}
    assert totals["seen"] == plain["seen"] == unlimited_totals(damaged)["seen"]
    assert totals["gap"] > plain["gap"] and totals["retransmitted"] > plain["retransmitted"]
    assert totals["gap"] - plain["gap"] == totals["retransmitted"] - plain["retransmitted"]
