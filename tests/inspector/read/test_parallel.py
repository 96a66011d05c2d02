"""``read --jobs N``: the per-process summaries merged (Summary.merge) give the totals of one process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contract.limits import DecodeLimits
from inspector.read.parallel import read_parallel
from inspector.read.reader import ReadOptions, read_captures
from inspector.rows.conn_ids import CONN_ID_SHIFT
from inspector.rows.summary import Summary
from inspector.rows.writers import JsonLinesWriter

PCAPS = Path(__file__).parents[3] / "pcaps"
CAPTURES = [PCAPS / "tansu-produce-fetch-compression.pcap", PCAPS / "mock-cluster-3-brokers-multi-client.pcap",
            PCAPS / "tansu-consumer-group-3-members.pcap"]


def _totals(s: Summary) -> dict[str, object]:
    apis = {name: (a.requests, a.responses, a.errors, a.decode_failures, a.decode_warnings, sorted(a.latencies))
            for name, a in s.apis.items()}
    rows = sorted((r["capture"], r["client"], r["broker"], r["bytes_seen"], r["bytes_decoded"]) for r in s.connections)
    return {"apis": apis, "rows": rows, "accounting": s.accounting(), "frames": s.frames, "messages": s.messages,
            "decode_failures": s.decode_failures, "decode_warnings": s.decode_warnings, "packets": s.packets,
            "stream_issues": s.stream_issues, "packets_skipped": s.packets_skipped, "limits": s.limits,
            "non_kafka": (s.non_kafka_connections, s.non_kafka_bytes, s.empty_connections), "warnings": s.warnings}


def test_parallel_totals_equal_one_process(tmp_path: Path) -> None:
    options = ReadOptions(limits=DecodeLimits(max_pending=1))  # a limit hit in every capture: limits are merged too
    one = read_captures([str(p) for p in CAPTURES], JsonLinesWriter(tmp_path / "one"), options)
    (tmp_path / "many").mkdir()
    many = read_parallel([str(p) for p in CAPTURES], tmp_path / "many", "jsonl", options, jobs=2)
    assert _totals(many) == _totals(one) and one.limits["--max-pending"] > len(CAPTURES)
    assert many.max_conn_id >> CONN_ID_SHIFT == len(CAPTURES) - 1
    assert one.max_conn_id == many.max_conn_id  # each file in a block of its own either way (inspector.rows.conn_ids)


def test_a_stop_as_a_worker_starts_leaves_no_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt that Python runs right after the fork (another thread of the process took the signal: the
    parent's mask holds back only its own) finds the worker listed: it is killed and waited for before the interrupt
    leaves ``read_parallel`` (the staging folder is removed after it, with no worker still writing there). One that
    comes before the fork stops the run with nothing to kill."""
    from multiprocessing.context import ForkProcess

    started: list[int] = []
    real_start = ForkProcess.start

    def start_then_stop(self: ForkProcess) -> None:
        real_start(self)
        assert self.pid is not None
        started.append(self.pid)
        raise KeyboardInterrupt

    monkeypatch.setattr(ForkProcess, "start", start_then_stop)
    with pytest.raises(KeyboardInterrupt):
        read_parallel([str(p) for p in CAPTURES], tmp_path, "jsonl", ReadOptions(), jobs=2)
    assert len(started) == 1
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(started[0], 0)

    def stop_before_the_fork(self: ForkProcess) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ForkProcess, "start", stop_before_the_fork)
    with pytest.raises(KeyboardInterrupt):
        read_parallel([str(p) for p in CAPTURES], tmp_path, "jsonl", ReadOptions(), jobs=2)
