"""Edge adapters that write event batches: a Parquet dataset directory or JSON lines."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from inspector.events import SCHEMA


class EventWriter(Protocol):
    def write(self, batch: pa.RecordBatch) -> None: ...
    def close(self) -> list[Path]: ...


class ParquetDatasetWriter:
    """``DIR/events/part-NNNNN.parquet`` files, each renamed into place only when complete.

    The open file is ``DIR/events/.part-NNNNN.parquet.inprogress`` (dot-prefixed: dataset readers skip
    it). A new file is started after ``rows_per_file`` rows, when the open one reaches ``rotate_bytes``
    or, through :meth:`maybe_rotate`, is older than ``rotate_seconds`` (0 turns a limit off).
    Numbering continues after the files already in the directory. ``on_file(path, rows, bytes)`` is
    called for each completed file; ``close()`` returns every file written.
    """

    def __init__(self, out_dir: Path, *, rows_per_file: int = 1_000_000, rotate_seconds: float = 0.0,
                 rotate_bytes: int = 0, compression: str = "zstd", prefix: str = "part",
                 on_file: Callable[[Path, int, int], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.dir = out_dir / "events"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_per_file = rows_per_file
        self.rotate_seconds = rotate_seconds
        self.rotate_bytes = rotate_bytes
        self.compression = compression
        self.prefix = prefix
        self.on_file = on_file
        self.clock = clock
        self.files: list[Path] = []
        self.rows = 0
        self.rows_in_file = 0
        self._writer: pq.ParquetWriter | None = None
        self._tmp: Path | None = None
        self._final: Path | None = None
        self._opened_at = 0.0
        self._index = self._next_index()

    def _next_index(self) -> int:
        best = -1
        for path in self.dir.glob(f"{self.prefix}-*.parquet"):
            with contextlib.suppress(ValueError):
                best = max(best, int(path.stem.rsplit("-", 1)[1]))
        return best + 1

    @property
    def open_file(self) -> Path | None:
        return self._final if self._writer is not None else None

    def _open(self) -> pq.ParquetWriter:
        self._final = self.dir / f"{self.prefix}-{self._index:05d}.parquet"
        self._tmp = self.dir / f".{self._final.name}.inprogress"
        self._index += 1
        self.rows_in_file = 0
        self._opened_at = self.clock()
        return pq.ParquetWriter(self._tmp, SCHEMA, compression=self.compression)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._writer is None:
            self._writer = self._open()
        self._writer.write_batch(batch)
        self.rows_in_file += batch.num_rows
        self.rows += batch.num_rows
        if (self.rows_per_file and self.rows_in_file >= self.rows_per_file) or (
                self.rotate_bytes and self._tmp is not None and self._tmp.stat().st_size >= self.rotate_bytes):
            self.rotate()

    def due(self, now: float | None = None) -> bool:
        """True when the open file is older than ``rotate_seconds``."""
        now = self.clock() if now is None else now
        return bool(self._writer is not None and self.rotate_seconds and now - self._opened_at >= self.rotate_seconds)

    def maybe_rotate(self, now: float | None = None) -> Path | None:
        return self.rotate() if self.due(now) else None

    def rotate(self) -> Path | None:
        """Complete the open file (if any) and rename it into place; the next batch opens a new one."""
        if self._writer is None:
            return None
        writer, self._writer = self._writer, None
        writer.close()
        assert self._tmp is not None and self._final is not None
        size = self._tmp.stat().st_size
        os.replace(self._tmp, self._final)
        self.files.append(self._final)
        if self.on_file is not None:
            self.on_file(self._final, self.rows_in_file, size)
        return self._final

    def close(self) -> list[Path]:
        self.rotate()
        if not self.files:
            # An empty dataset still has its schema, so readers see the columns.
            self._final = self.dir / f"{self.prefix}-{self._index:05d}.parquet"
            self._tmp = self.dir / f".{self._final.name}.inprogress"
            pq.write_table(SCHEMA.empty_table(), self._tmp, compression=self.compression)
            os.replace(self._tmp, self._final)
            self.files.append(self._final)
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
