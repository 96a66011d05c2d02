"""Decode many capture files on all cores: one process per file, one dataset."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from inspector.reader import ReadOptions, read_captures
from inspector.summary import Summary
from inspector.writers import EventWriter, JsonLinesWriter, ParquetDatasetWriter

#: conn_ids of file N start at N << CONN_ID_SHIFT, so they stay unique across processes.
CONN_ID_SHIFT = 32


def _one(index: int, path: str, out: str, fmt: str, options: ReadOptions) -> Summary:
    out_dir = Path(out)
    writer: EventWriter
    if fmt == "parquet":
        writer = ParquetDatasetWriter(out_dir, prefix=f"part-f{index:04d}")
    else:
        writer = JsonLinesWriter(out_dir, name=f"events-f{index:04d}.jsonl")  # renamed into place when complete
    summary = Summary()
    summary.max_conn_id = index << CONN_ID_SHIFT
    try:
        read_captures([path], writer, options, summary=summary)
    finally:
        writer.close()
    return summary


def read_parallel(paths: list[str], out: Path, fmt: str, options: ReadOptions, jobs: int) -> Summary:
    """Decode ``paths`` with ``jobs`` processes (0 = one per core); returns the merged totals."""
    workers = jobs if jobs > 0 else (os.cpu_count() or 1)
    summary = Summary()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_one, i, p, str(out), fmt, options) for i, p in enumerate(paths)]
        for fut in futures:
            summary.merge(fut.result())
    return summary
