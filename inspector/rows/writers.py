"""Edge adapters that write event batches: a Parquet dataset directory or JSON lines.

Write failures (disk full, quota, I/O error) never publish a half-written file: the file being written
is removed and the writer raises :class:`OutputError`, one line naming the directory and the errno;
files completed before stay in place. A writer that failed writes nothing more (``close()`` returns the
completed files).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

import pyarrow as pa

from contract.errors import ExitCode, InspectorError
from inspector.rows.event_table import SCHEMA
from inspector.rows.parquet_file import ParquetFile, write_table


class OutputError(InspectorError, OSError):
    """Writing the output failed; ``str()`` is one line: the directory, the reason, the errno name and what
    was kept. Built by :func:`output_error`; pickles as an ``OSError`` (``--jobs`` workers raise it)."""

    exit_code = ExitCode.OUTPUT

    def __str__(self) -> str:
        return str(self.strerror) if self.strerror is not None else super().__str__()


def describe_os_error(exc: BaseException) -> str:
    """``No space left on device (ENOSPC)``: the reason and the errno name of an ``OSError``."""
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        return f"{os.strerror(code)} ({errno.errorcode[code]})"
    return str(exc) or type(exc).__name__


def output_error(directory: Path, exc: BaseException, kept: str = "") -> OutputError:
    """An :class:`OutputError` for a failure writing into ``directory`` (``kept``: what is left, appended)."""
    if isinstance(exc, OutputError):
        return exc
    code = getattr(exc, "errno", None)
    message = f"cannot write to {directory}: {describe_os_error(exc)}" + (f"; {kept}" if kept else "")
    return OutputError(code if isinstance(code, int) else errno.EIO, message)


def fsync_path(path: Path) -> None:
    """fsync a file (its content durable before it is renamed into place: a rename can reach the disk before the
    data it names, and after a power loss the final name would hold nothing) or a folder (its entries: renames
    into it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_quietly(path: Path | None) -> None:
    """Delete a partly written file, if it is there (never raises)."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


class EventWriter(Protocol):
    def write(self, batch: pa.RecordBatch) -> None: ...
    def close(self) -> list[Path]: ...


#: Columns written dictionary-encoded: the text columns whose values repeat (names, addresses, statuses).
#: Numbers compress as well without a dictionary, and timestamps, offsets and bodies rarely repeat, so a
#: dictionary would be built only to be dropped (docs/performance.md).
DICTIONARY_COLUMNS = [field.name for field in SCHEMA if field.type == pa.string() and field.name != "body"]
#: Columns with min/max statistics per row group and page: the numbers and times, by which a reader skips
#: row groups (a time range, a connection, an api key). Text bounds prune next to nothing in batches of
#: mixed traffic (equality on a dictionary-encoded column is answered from its dictionary) and computing
#: them compared every value of every batch: ~1.5% of a read.
STATISTICS_COLUMNS = [field.name for field in SCHEMA if field.type != pa.string()]


class ParquetDatasetWriter:
    """``DIR/events/part-NNNNN.parquet`` files, each renamed into place only when complete.

    The open file is ``DIR/events/.part-NNNNN.parquet.inprogress`` (dot-prefixed: dataset readers skip
    it). A new file is started after ``rows_per_file`` rows, when the open one reaches ``rotate_bytes``
    or, through :meth:`maybe_rotate`, is older than ``rotate_seconds`` (0 turns a limit off).
    Numbering continues after the files already in the directory. ``on_file(path, rows, bytes)`` is
    called for each completed file; ``close()`` returns every file written (with ``empty_file``, one file with
    the schema and no rows when no row came). A file is synced (fsync) before it is renamed into place.

    An ``OSError`` while writing, closing or renaming (``ENOSPC``, ``EDQUOT``, ``EIO``, ...) removes the
    file in progress (never renamed into place: after a failed write pyarrow would still close it with a
    footer over missing row groups) and raises :class:`OutputError`; the writer is then ``failed`` and
    writes nothing more.
    """

    def __init__(self, out_dir: Path, *, rows_per_file: int = 1_000_000, rotate_seconds: float = 0.0,
                 rotate_bytes: int = 0, compression: str = "zstd", prefix: str = "part",
                 on_file: Callable[[Path, int, int], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, empty_file: bool = True) -> None:
        self.dir = out_dir / "events"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_per_file = rows_per_file
        self.rotate_seconds = rotate_seconds
        self.rotate_bytes = rotate_bytes
        self.compression = compression
        self.prefix = prefix
        self.on_file = on_file
        self.clock = clock
        self.empty_file = empty_file
        self.files: list[Path] = []
        self.rows = 0
        self.rows_in_file = 0
        self._writer: ParquetFile | None = None
        self._tmp: Path | None = None
        self._final: Path | None = None
        self._opened_at = 0.0
        self.failed: OutputError | None = None
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

    def _open(self) -> ParquetFile:
        self._final = self.dir / f"{self.prefix}-{self._index:05d}.parquet"
        self._tmp = self.dir / f".{self._final.name}.inprogress"
        self._index += 1
        self.rows_in_file = 0
        self._opened_at = self.clock()
        return ParquetFile(self._tmp, SCHEMA, compression=self.compression, use_dictionary=DICTIONARY_COLUMNS,
                           write_statistics=STATISTICS_COLUMNS)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self.failed is not None:
            raise self.failed
        try:
            if self._writer is None:
                self._writer = self._open()
            self._writer.write_batch(batch)
            self.rows_in_file += batch.num_rows
            self.rows += batch.num_rows
            full = bool(self.rotate_bytes and self._tmp is not None and self._tmp.stat().st_size >= self.rotate_bytes)
        except OSError as exc:
            raise self._fail(exc) from exc
        if (self.rows_per_file and self.rows_in_file >= self.rows_per_file) or full:
            self.rotate()

    def _fail(self, exc: OSError) -> OutputError:
        """Drop the file in progress and remember the failure."""
        self.abort()
        n = len(self.files)
        kept = (f", the {n} file{'s' if n != 1 else ''} completed before it {'are' if n != 1 else 'is'} kept"
                if n else "")
        self.failed = output_error(self.dir, exc, "the file in progress was removed" + kept)
        return self.failed

    def abort(self) -> None:
        """Stop without publishing the open file: it is closed (errors ignored) and deleted."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
        remove_quietly(self._tmp)
        self._tmp = None

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
        writer = self._writer
        assert self._tmp is not None and self._final is not None
        try:
            writer.close()
            self._writer = None
            size = self._tmp.stat().st_size
            fsync_path(self._tmp)
            os.replace(self._tmp, self._final)
        except OSError as exc:
            raise self._fail(exc) from exc
        self._tmp = None
        self.files.append(self._final)
        if self.on_file is not None:
            self.on_file(self._final, self.rows_in_file, size)
        return self._final

    def close(self) -> list[Path]:
        if self.failed is not None:
            return list(self.files)
        self.rotate()
        if not self.files and self.empty_file:
            # An empty dataset still has its schema, so readers see the columns.
            self._final = self.dir / f"{self.prefix}-{self._index:05d}.parquet"
            self._tmp = self.dir / f".{self._final.name}.inprogress"
            try:
                write_table(SCHEMA.empty_table(), self._tmp, compression=self.compression)
                fsync_path(self._tmp)
                os.replace(self._tmp, self._final)
            except OSError as exc:
                raise self._fail(exc) from exc
            self._tmp = None
            self.files.append(self._final)
        return list(self.files)


class JsonLinesWriter:
    """Writes ``DIR/events.jsonl`` (or ``DIR/NAME``; one JSON object per row; ``body`` embedded as an object).

    The file is written as ``DIR/.events.jsonl.inprogress`` (opened by the first write) and renamed by
    ``close()``; a write failure removes it and raises :class:`OutputError`. Given a ``stream`` instead, rows
    go there (a failure raises :class:`OutputError` too; what reached the stream stays).
    """

    def __init__(self, out_dir: Path | None, stream: IO[str] | None = None, name: str = "events.jsonl") -> None:
        self._tmp: Path | None = None
        self._stream: IO[str] | None = stream
        if stream is None:
            assert out_dir is not None
            out_dir.mkdir(parents=True, exist_ok=True)
            self.path: Path | None = out_dir / name
        else:
            self.path = None
        self.rows = 0
        self.failed: OutputError | None = None
        self._closed: list[Path] | None = None

    def _open(self) -> IO[str]:
        if self._stream is None:
            assert self.path is not None
            self._tmp = self.path.parent / f".{self.path.name}.inprogress"
            self._stream = self._tmp.open("w", encoding="utf-8")
        return self._stream

    def write(self, batch: pa.RecordBatch) -> None:
        if self.failed is not None:
            raise self.failed
        try:
            stream = self._open()
            for row in batch.to_pylist():
                out: dict[str, Any] = dict(row)
                out["ts"] = row["ts"].isoformat() if row["ts"] is not None else None
                if row["body"] is not None:
                    out["body"] = json.loads(row["body"])
                stream.write(json.dumps(out, ensure_ascii=False) + "\n")
                self.rows += 1
        except OSError as exc:
            raise self._fail(exc) from exc

    def _fail(self, exc: OSError) -> OutputError:
        where = self.path.parent if self.path is not None else Path(getattr(self._stream, "name", "<stream>"))
        if self._tmp is not None:
            with contextlib.suppress(Exception):
                if self._stream is not None:
                    self._stream.close()
            remove_quietly(self._tmp)
            self._tmp = None
            self.failed = output_error(where, exc, "the file in progress was removed")
        else:
            self.failed = output_error(where, exc)
        return self.failed

    def close(self) -> list[Path]:
        if self.failed is not None:
            return []
        if self._closed is not None:
            return list(self._closed)
        try:
            stream = self._open()  # no rows: still an (empty) events.jsonl
            if self.path is not None:
                assert self._tmp is not None
                stream.flush()
                os.fsync(stream.fileno())
                stream.close()
                os.replace(self._tmp, self.path)
                self._tmp = None
            else:
                stream.flush()
        except OSError as exc:
            raise self._fail(exc) from exc
        self._closed = [self.path] if self.path is not None else []
        return list(self._closed)
