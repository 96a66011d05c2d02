"""Where the ``--follow`` report writes what it finds, on the driver: ``OUTPUT/findings.jsonl`` (one JSON object a
line, appended as episodes are found and change), ``OUTPUT/findings/`` (the same rows, a Parquet file per pass)
and ``OUTPUT/report.html`` (rewritten after a pass that changed something).

Every file under its final name is complete: the Parquet files and the page are written under a hidden name and
renamed; ``findings.jsonl`` is appended to and flushed to disk before the pass commits its state, and a pass run
again cuts it back to the length its state recorded (``follow_state``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import row_time

JSONL = "findings.jsonl"
PARQUET_DIR = "findings"

#: The rows of findings.jsonl and findings/*.parquet: a finding (``findings.FINDINGS_SCHEMA``) with the
#: episode's stable id, whether it updates an episode written before, and the pass that wrote it.
SCHEMA = pa.schema([
    ("id", pa.string()),
    ("update", pa.bool_()),
    ("pass", pa.string()),
    ("kind", pa.string()),
    ("severity", pa.string()),
    ("ts_first", pa.timestamp("us", tz="UTC")),
    ("ts_last", pa.timestamp("us", tz="UTC")),
    ("occurrences", pa.int64()),
    ("client", pa.string()),
    ("broker", pa.string()),
    ("group_id", pa.string()),
    ("subject", pa.string()),
    ("detail", pa.string()),
    ("evidence", pa.list_(pa.struct([("capture", pa.string()), ("conn_id", pa.int64()),
                                     ("correlation_id", pa.int32())]))),
])


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return row_time.utc_naive(value).isoformat()  # UTC, as findings.parquet's times
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _parquet_value(value: Any) -> Any:
    """A row's value as pyarrow takes it: a time aware (pyarrow reads a naive one as UTC; PySpark's are local)."""
    return row_time.utc(value) if isinstance(value, datetime) else value


def truncate(output: Path, length: int) -> None:
    """Cut ``findings.jsonl`` back to ``length`` bytes (what a pass run again must not repeat)."""
    path = output / JSONL
    if path.exists() and path.stat().st_size > length:
        with open(path, "r+b") as f:
            f.truncate(length)
            f.flush()
            os.fsync(f.fileno())


def append(output: Path, rows: Sequence[Mapping[str, Any]]) -> int:
    """Append ``rows`` (SCHEMA's fields) to ``findings.jsonl``, flushed to disk; returns the file's new length."""
    path = output / JSONL
    with open(path, "ab") as f:
        for row in rows:
            f.write(json.dumps({k: _json_value(row[k]) for k in SCHEMA.names}, ensure_ascii=False).encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
        return f.tell()


def drop_passes_from(output: Path, batch: int, idle: int) -> None:
    """Remove ``findings/pass-B-I.parquet`` of the pass ``(batch, idle)`` and later ones (a pass run again: they
    are its first run's, and the state they followed is gone)."""
    folder = output / PARQUET_DIR
    if not folder.is_dir():
        return
    for path in folder.glob("pass-*-*.parquet"):
        parts = path.stem.split("-")
        try:
            b, i = int(parts[1]), int(parts[2])
        except (IndexError, ValueError):
            continue
        if (b, i) >= (batch, idle):
            path.unlink(missing_ok=True)


def write_parquet(output: Path, name: str, rows: Sequence[Mapping[str, Any]]) -> Path | None:
    """``OUTPUT/findings/NAME.parquet`` with ``rows`` (none: no file), complete under its final name."""
    if not rows:
        return None
    folder = output / PARQUET_DIR
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{name}.parquet"
    tmp = folder / f".{name}.parquet.inprogress"
    table = pa.Table.from_pylist([{k: _parquet_value(row[k]) for k in SCHEMA.names} for row in rows], schema=SCHEMA)
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, final)
    return final


def write_page(path: Path, page: str) -> None:
    """The page, replaced whole."""
    tmp = path.with_name(f".{path.name}.inprogress")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
