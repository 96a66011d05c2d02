"""Edge adapters that write event batches: a Parquet dataset directory or JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from inspector.events import SCHEMA


class EventWriter(Protocol):
    def write(self, batch: pa.RecordBatch) -> None: ...
    def close(self) -> list[Path]: ...


class ParquetDatasetWriter:
    """Writes ``DIR/events/part-NNNNN.parquet`` files, a new file every ``rows_per_file`` rows.

    Each file is complete and readable once closed; ``close()`` returns the files written.
    """

    def __init__(self, out_dir: Path, *, rows_per_file: int = 1_000_000, compression: str = "zstd",
                 prefix: str = "part") -> None:
        self.dir = out_dir / "events"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_per_file = rows_per_file
        self.compression = compression
        self.prefix = prefix
        self._writer: pq.ParquetWriter | None = None
        self._rows_in_file = 0
        self._index = self._next_index()
        self.files: list[Path] = []
        self.rows = 0

    def _next_index(self) -> int:
        existing = sorted(self.dir.glob(f"{self.prefix}-*.parquet"))
        if not existing:
            return 0
        try:
            return int(existing[-1].stem.rsplit("-", 1)[1]) + 1
        except ValueError:
            return len(existing)

    def _open(self) -> pq.ParquetWriter:
        path = self.dir / f"{self.prefix}-{self._index:05d}.parquet"
        self._index += 1
        self.files.append(path)
        self._rows_in_file = 0
        return pq.ParquetWriter(path, SCHEMA, compression=self.compression)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._writer is None:
            self._writer = self._open()
        self._writer.write_batch(batch)
        self._rows_in_file += batch.num_rows
        self.rows += batch.num_rows
        if self._rows_in_file >= self.rows_per_file:
            self.rotate()

    def rotate(self) -> Path | None:
        """Close the current file (if any); the next batch opens a new one."""
        if self._writer is None:
            return None
        self._writer.close()
        self._writer = None
        return self.files[-1]

    def close(self) -> list[Path]:
        self.rotate()
        if not self.files:
            # An empty dataset still has its schema, so readers see the columns.
            path = self.dir / f"{self.prefix}-{self._index:05d}.parquet"
            pq.write_table(SCHEMA.empty_table(), path, compression=self.compression)
            self.files.append(path)
        return list(self.files)


class JsonLinesWriter:
    """Writes ``DIR/events.jsonl`` (one JSON object per row; ``body`` embedded as an object)."""

    def __init__(self, out_dir: Path | None, stream: IO[str] | None = None) -> None:
        if stream is None:
            assert out_dir is not None
            out_dir.mkdir(parents=True, exist_ok=True)
            self.path: Path | None = out_dir / "events.jsonl"
            self._stream: IO[str] = self.path.open("w", encoding="utf-8")
        else:
            self.path = None
            self._stream = stream
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        for row in batch.to_pylist():
            out: dict[str, Any] = dict(row)
            out["ts"] = row["ts"].isoformat() if row["ts"] is not None else None
            if row["body"] is not None:
                out["body"] = json.loads(row["body"])
            self._stream.write(json.dumps(out, ensure_ascii=False) + "\n")
            self.rows += 1

    def close(self) -> list[Path]:
        if self.path is not None:
            self._stream.close()
            return [self.path]
        self._stream.flush()
        return []
