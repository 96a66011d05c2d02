"""Decode many capture files on all cores: one process per file, one dataset."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from inspector.reader import ReadOptions, read_captures
from inspector.summary import ApiStats, Summary
from inspector.writers import EventWriter, JsonLinesWriter, ParquetDatasetWriter

#: conn_ids of file N start at N << CONN_ID_SHIFT, so they stay unique across processes.
CONN_ID_SHIFT = 32


def _one(index: int, path: str, out: str, fmt: str, options: ReadOptions) -> Summary:
    out_dir = Path(out)
    writer: EventWriter
    if fmt == "parquet":
        writer = ParquetDatasetWriter(out_dir, prefix=f"part-f{index:04d}")
    else:
        writer = JsonLinesWriter(None, (out_dir / f"events-f{index:04d}.jsonl").open("w", encoding="utf-8"))
    summary = Summary()
    summary.max_conn_id = index << CONN_ID_SHIFT
    try:
        read_captures([path], writer, options, summary=summary)
    finally:
        writer.close()
    return summary


def merge(into: Summary, part: Summary) -> None:
    for name, stats in part.apis.items():
        target = into.apis.setdefault(name, ApiStats())
        target.requests += stats.requests
        target.responses += stats.responses
        target.errors += stats.errors
        target.decode_failures += stats.decode_failures
        target.decode_warnings += stats.decode_warnings
        target.latencies.extend(stats.latencies)
    into.frames += part.frames
    into.messages += part.messages
    into.decode_failures += part.decode_failures
    into.decode_warnings += part.decode_warnings
    for kind, n in part.stream_issues.items():
        into.stream_issues[kind] = into.stream_issues.get(kind, 0) + n
    into.connections.extend(part.connections)
    into.empty_connections += part.empty_connections
    into.non_kafka_connections += part.non_kafka_connections
    into.non_kafka_bytes += part.non_kafka_bytes
    into.packets += part.packets
    for reason, n in part.packets_skipped.items():
        into.packets_skipped[reason] = into.packets_skipped.get(reason, 0) + n
    into.warnings.extend(part.warnings)
    for limit, hits in part.limits.items():
        into.limit_hit(limit, hits)
    into.max_conn_id = max(into.max_conn_id, part.max_conn_id)


def read_parallel(paths: list[str], out: Path, fmt: str, options: ReadOptions, jobs: int) -> Summary:
    """Decode ``paths`` with ``jobs`` processes (0 = one per core); returns the merged totals."""
    workers = jobs if jobs > 0 else (os.cpu_count() or 1)
    summary = Summary()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_one, i, p, str(out), fmt, options) for i, p in enumerate(paths)]
        for fut in futures:
            merge(summary, fut.result())
    return summary
