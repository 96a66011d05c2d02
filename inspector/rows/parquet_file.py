"""Writing one local Parquet file, without importing ``pyarrow.parquet``.

``pyarrow.parquet`` imports pyarrow's filesystem layer when it is imported (S3, GCS, Azure and HDFS
bindings, and with them ``ssl``): 15-20 ms of every run of ``kafka-inspector read``, which only ever writes
local files. :class:`ParquetFile` uses the writer class ``pyarrow.parquet.ParquetWriter`` wraps
(``pyarrow._parquet.ParquetWriter``) with the options ``pyarrow.parquet`` passes for a local path, so the
files are the same byte for byte (``tests/inspector/rows/test_parquet_file.py`` compares them). Where that class
is missing or takes other arguments (another pyarrow), ``pyarrow.parquet`` writes instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

try:
    from pyarrow._parquet import ParquetWriter as _CoreWriter
except ImportError:  # pragma: no cover - a pyarrow without it: pyarrow.parquet writes
    _CoreWriter = None

#: What ``pyarrow.parquet.ParquetWriter`` passes beyond its caller's options (its defaults).
_PQ_OPTIONS: dict[str, Any] = {"version": "2.6", "writer_engine_version": "V2", "data_page_version": "1.0"}
#: ``pyarrow.parquet.ParquetWriter``'s defaults for the options callers here may leave out.
_PQ_DEFAULTS: dict[str, Any] = {"compression": "snappy", "use_dictionary": True, "write_statistics": True}


class ParquetFile:
    """Writes record batches to a new Parquet file at ``path`` (one row group per batch); ``close()`` ends it.

    ``options`` are ``pyarrow.parquet.ParquetWriter``'s (compression, use_dictionary, write_statistics, ...).
    """

    def __init__(self, path: str | Path, schema: pa.Schema, **options: Any) -> None:
        self.schema = schema
        merged = {**_PQ_DEFAULTS, **options}
        self._writer: Any = None
        if _CoreWriter is not None:
            try:
                self._writer = _CoreWriter(str(path), schema, **_PQ_OPTIONS, **merged)
            except TypeError:  # pragma: no cover - arguments of another pyarrow: pyarrow.parquet writes
                self._writer = None
        if self._writer is None:  # pragma: no cover
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(str(path), schema, **merged)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self.write_table(pa.Table.from_batches([batch], self.schema))

    def write_table(self, table: pa.Table) -> None:
        if self._writer is None:
            raise ValueError("the Parquet file is closed")
        if not table.schema.equals(self.schema, check_metadata=False):
            raise ValueError(f"table schema does not match the file's:\n{table.schema}\nvs\n{self.schema}")
        self._writer.write_table(table)

    def close(self) -> None:
        """End the file (its footer written, closed); again, nothing."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


def write_table(table: pa.Table, path: str | Path, **options: Any) -> None:
    """``pyarrow.parquet.write_table(table, path, **options)`` for a local path: the file is removed when
    writing it fails."""
    try:
        writer = ParquetFile(path, table.schema, **options)
        try:
            writer.write_table(table)
        finally:
            writer.close()
    except Exception:
        Path(path).unlink(missing_ok=True)
        raise


def event_files(path: str | Path) -> list[Path]:
    """The Parquet files of a ``read`` output directory's ``events`` dataset (or of ``path`` itself), in order;
    ``ValueError`` when there are none."""
    folder = Path(path)
    if (folder / "events").is_dir():
        folder = folder / "events"
    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise ValueError(f"no Parquet files in {folder}")
    return files


def read_events(path: str | Path, columns: tuple[str, ...] | None = None) -> pa.Table:
    """The events a ``read`` output directory holds (its ``events`` dataset, or the Parquet files of ``path``
    itself), ``columns`` only when given. Imports ``pyarrow.parquet``: for commands that read, not ``read``."""
    import pyarrow.parquet as pq

    return pa.concat_tables([pq.read_table(f, columns=list(columns) if columns else None) for f in event_files(path)],
                            promote_options="default")


def iter_events(path: str | Path, columns: tuple[str, ...], batch_size: int = 1024) -> Iterator[pa.RecordBatch]:
    """The events of :func:`read_events`, batch by batch: memory holds a batch of ``columns``, read as needed, not
    the file's columns buffered ahead (``clients`` over big-frames.pcap's 123k events peaked at 92 MB with batches
    of 1,024 rows, 137 MB with 8,192, 337 MB buffered ahead in batches of 65,536). A file without some of
    ``columns`` (an older dataset) gives its batches without them."""
    import pyarrow.parquet as pq

    for path_ in event_files(path):
        found = pq.ParquetFile(path_, pre_buffer=False)
        names = set(found.schema_arrow.names)
        yield from found.iter_batches(batch_size=batch_size, columns=[c for c in columns if c in names],
                                      use_threads=False)


def column_max(path: str | Path, column: str) -> int | None:
    """The largest value of an integer column of a Parquet file, from its footer's statistics where every row group
    has them, else from the column itself (None: no rows, or all null)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    index = meta.schema.names.index(column)
    best: int | None = None
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max:
            value = pc.max(pq.read_table(path, columns=[column]).column(0)).as_py()
            return None if value is None else int(value)
        best = int(stats.max) if best is None else max(best, int(stats.max))
    return best


def iter_batches(path: str | Path, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
    """A Parquet file's rows, batch by batch (memory: one batch). Imports ``pyarrow.parquet``."""
    import pyarrow.parquet as pq

    yield from pq.ParquetFile(path).iter_batches(batch_size=batch_size)
