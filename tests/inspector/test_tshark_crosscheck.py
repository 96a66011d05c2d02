"""Our decodes agree with Wireshark's on api key, version, correlation id, client id and group fields."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from tests.tshark_check import HAVE_TSHARK, cross_check

pytestmark = pytest.mark.skipif(not HAVE_TSHARK, reason="tshark is not installed (make system-deps)")


def _rows(tmp_path: Path, pcap: Path) -> list[dict]:
    out = tmp_path / pcap.stem
    assert main(["read", str(pcap), "--output", str(out), "--quiet"]) == ExitCode.OK
    return pq.read_table(out / "events").to_pylist()


def test_real_captures_agree_with_tshark(tmp_path: Path, real_captures: list[Path]) -> None:
    totals = {"requests": 0, "responses": 0, "fields": 0}
    for pcap in real_captures:
        for k, v in cross_check(pcap, _rows(tmp_path, pcap)).items():
            totals[k] += v
    assert totals["requests"] >= 15 and totals["responses"] >= 8 and totals["fields"] >= 5
