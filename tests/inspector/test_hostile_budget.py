"""Hostile input: tagged fields and record sets that cost far more to decode than their bytes (issue 34, item 7).

An ApiVersions v3 request whose header carried 5 M empty unknown tagged fields (a 23 MB frame, under the
default --max-frame) took ``read`` to 1.22 GB, 10 M of them (48 MB) to 2.38 GB, with exit 0, status ok and no
limit reported: tagged fields were not charged to the element budget, and ``--max-elements 1000`` changed
nothing. A Produce whose one partition held 1.6 M empty record batches (61 bytes each, a 98 MB frame) took it to
2.45 GB. Each is now the ``--max-elements`` limit: one status on the message, one line in ``read``'s output,
``read`` under 500 MB. Measured like ``test_hostile.py`` (child process peak RSS, wall time).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.rows.summary import LIMITS
from tests.frames import frame, kstr
from tests.inspector.hostile_captures import check_bounds, record_batch, run_read, uvarint
from tests.inspector.test_hostile_elements import AFTER, HELLO, conversation_pcap


def cstr(s: str) -> bytes:
    return uvarint(len(s) + 1) + s.encode()


def tags(n: int) -> bytes:
    """``n`` empty tagged fields numbered 0, 1, 2, ... (ApiVersions' request header knows none of them)."""
    parts = []
    for width, top in ((1, 1 << 7), (2, 1 << 14), (3, 1 << 21), (4, 1 << 28)):
        low = 1 << 7 * (width - 1) if width > 1 else 0
        for i in range(low, min(top, n)):
            parts.append(uvarint(i) + b"\x00")
    return uvarint(n) + b"".join(parts)


def api_versions_tagged(n: int, corr: int = 2) -> bytes:
    """An ApiVersions v3 request whose header carries ``n`` empty unknown tagged fields: the framed bytes."""
    return frame(struct.pack(">hhi", 18, 3, corr) + kstr("hostile") + tags(n) + cstr("client") + cstr("1.0")
                 + b"\x00")


@pytest.mark.parametrize("count", [5_000_000])
def test_millions_of_unknown_tagged_fields(tmp_path: Path, count: int) -> None:
    hostile = api_versions_tagged(count)
    assert 22_000_000 < len(hostile) < 24_000_000  # the 23 MB frame
    pcap = conversation_pcap(tmp_path / "tags.pcap", [*HELLO, ("c", hostile), *AFTER])
    run = run_read(tmp_path, pcap)
    summary = run.summary()
    rows = run.events()
    (row,) = [r for r in rows if r["correlation_id"] == 2 and r["direction"] == "request"]
    check_bounds(f"ApiVersions v3, {count / 1e6:.0f} M unknown tagged fields, {len(hostile) / 1e6:.0f} MB", run,
                 f"{summary['limits']['--max-elements']['hits']}x --max-elements: {row['decode_status'][:50]}")
    assert row["decode_status"].startswith(f"header limit: {count} tagged fields exceed the elements left of this "
                                           "message's budget (--max-elements)"), row["decode_status"]
    assert summary["limits"]["--max-elements"] == {"hits": 1, "meaning": LIMITS["--max-elements"]}
    assert "limit --max-elements: 1 messages" in " ".join(run.stderr.split()) or run.stderr == ""
    others = [r for r in rows if r is not row]
    assert len(others) == 4 and all(r["decode_status"] == "ok" for r in others)


def test_max_elements_bounds_tagged_fields(tmp_path: Path) -> None:
    """``--max-elements 1000`` stops 1,001 tagged fields; 1,000 decode."""
    pcap = conversation_pcap(tmp_path / "tags.pcap", [("c", api_versions_tagged(1000, 2)),
                                                      ("c", api_versions_tagged(1001, 3))])
    out = tmp_path / "out"
    assert main(["read", str(pcap), "--output", str(out), "--quiet", "--max-elements", "1000"]) == ExitCode.OK
    rows = {r["correlation_id"]: r["decode_status"] for r in pq.read_table(out / "events").to_pylist()}
    assert rows[2] == "ok" and rows[3].startswith("header limit: 1001 tagged fields exceed"), rows


def test_a_million_and_a_half_empty_record_batches(tmp_path: Path) -> None:
    batch = record_batch(0, b"", 0)
    assert len(batch) == 61
    body = kstr(None) + struct.pack(">hi", 1, 30000) + struct.pack(">i", 1) + kstr("t")
    records = batch * 1_600_000
    body += struct.pack(">iii", 1, 0, len(records)) + records
    hostile = frame(struct.pack(">hhi", 0, 3, 2) + kstr("hostile") + body)
    pcap = conversation_pcap(tmp_path / "batches.pcap", [*HELLO, ("c", hostile), *AFTER])
    run = run_read(tmp_path, pcap)
    summary = run.summary()
    (row,) = [r for r in run.events() if r["correlation_id"] == 2 and r["direction"] == "request"]
    check_bounds(f"Produce, 1.6 M empty record batches, {len(hostile) / 1e6:.0f} MB", run,
                 f"{summary['limits']['--max-elements']['hits']}x --max-elements: {row['decode_status'][:50]}")
    assert row["decode_status"].startswith("limit: record set of 1600000 batches (32000000 elements) exceeds the "
                                           "elements left of this message's budget (--max-elements)"), \
        row["decode_status"]
    assert summary["limits"]["--max-elements"]["hits"] == 1
