"""inspector.rows.parquet_file writes the files pyarrow.parquet writes, byte for byte, without importing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from inspector.rows.event_table import SCHEMA
from inspector.rows.parquet_file import ParquetFile, write_table
from inspector.rows.writers import DICTIONARY_COLUMNS, STATISTICS_COLUMNS

ROOT = Path(__file__).resolve().parents[3]
CAPTURE = ROOT / "pcaps" / "tansu-admin-operations.pcap"


def _events(tmp_path: Path) -> pa.Table:
    from inspector.cli.main import main

    assert main(["read", str(CAPTURE), "--output", str(tmp_path / "events"), "--quiet"]) == 0
    table = pq.read_table(tmp_path / "events" / "events").cast(SCHEMA)
    assert table.num_rows > 50
    return table


def test_event_files_equal_pyarrow_parquet_ones(tmp_path: Path) -> None:
    table = _events(tmp_path)
    options = {"compression": "zstd", "use_dictionary": DICTIONARY_COLUMNS, "write_statistics": STATISTICS_COLUMNS}
    ours = ParquetFile(tmp_path / "ours.parquet", SCHEMA, **options)
    theirs = pq.ParquetWriter(tmp_path / "theirs.parquet", SCHEMA, **options)
    for batch in table.to_batches(max_chunksize=40):  # several row groups
        ours.write_batch(batch)
        theirs.write_batch(batch)
    ours.close()
    ours.close()  # again: nothing
    theirs.close()
    assert (tmp_path / "ours.parquet").read_bytes() == (tmp_path / "theirs.parquet").read_bytes()
    assert pq.read_table(tmp_path / "ours.parquet").equals(table)
    assert pq.ParquetFile(tmp_path / "ours.parquet").metadata.num_row_groups > 1


def test_write_table_equals_pyarrow_parquet_defaults(tmp_path: Path) -> None:
    table = pa.table({"a": [1, 2, None], "b": ["x", "y", "x"], "c": [[1], [], None]})
    write_table(table, tmp_path / "ours.parquet")
    pq.write_table(table, tmp_path / "theirs.parquet")
    assert (tmp_path / "ours.parquet").read_bytes() == (tmp_path / "theirs.parquet").read_bytes()
    write_table(SCHEMA.empty_table(), tmp_path / "empty.parquet", compression="zstd")
    pq.write_table(SCHEMA.empty_table(), tmp_path / "empty-theirs.parquet", compression="zstd")
    assert (tmp_path / "empty.parquet").read_bytes() == (tmp_path / "empty-theirs.parquet").read_bytes()


def test_a_batch_of_another_schema_is_refused(tmp_path: Path) -> None:
    writer = ParquetFile(tmp_path / "f.parquet", pa.schema([("a", pa.int64())]))
    with pytest.raises(ValueError, match="(?i)schema"):
        writer.write_batch(pa.record_batch({"a": ["x"]}))
    with pytest.raises(ValueError, match="(?i)schema"):
        writer.write_table(pa.table({"b": [1]}))
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write_batch(pa.record_batch({"a": [1]}))


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        write_table(pa.table({"a": [1]}), tmp_path / "missing-dir" / "f.parquet")
    assert not (tmp_path / "missing-dir").exists()
    path = tmp_path / "g.parquet"
    with pytest.raises(pa.ArrowException, match="no-codec"):  # refused after the file was created
        write_table(pa.table({"a": [1]}), path, compression="no-codec")
    assert not path.exists()


def test_read_does_not_import_pyarrow_parquet(tmp_path: Path) -> None:
    code = ("import sys\nfrom inspector.cli.main import main\n"
            f"assert main(['read', {str(CAPTURE)!r}, '--output', {str(tmp_path / 'out')!r}, '--quiet']) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('pyarrow.parquet') or m in ('ssl', 'pyarrow.fs')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "out" / "connections.parquet").exists()
