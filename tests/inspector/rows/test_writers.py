"""The writers (and ``kafka-inspector read``) on a full disk.

The disk is real: a 1 MiB tmpfs mounted for the test (root only, skipped otherwise) and filled up with a
filler file, so the writers meet a genuine ``ENOSPC`` from the kernel through pyarrow or Python's I/O. The
failures no filesystem produces on demand (a failing rename, the totals written after the events) are
injected.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import inspector.cli.main
import inspector.rows.writers
from contract.errors import ExitCode
from inspector.cli.main import main
from inspector.read.reader import iter_capture
from inspector.rows.event_table import EventTable
from inspector.rows.summary import Summary
from inspector.rows.writers import JsonLinesWriter, OutputError, ParquetDatasetWriter, output_error

REPO = Path(__file__).resolve().parents[3]
PCAPS = REPO / "pcaps"
SMALL = PCAPS / "tansu-apiversions-v5-identity.pcap"
LARGE = PCAPS / "mock-cluster-3-brokers-multi-client.pcap"


@contextlib.contextmanager
def tmpfs(size: str = "1m") -> Iterator[Path]:
    """A real, small filesystem (tmpfs) for the duration; skips the test where mounting is not allowed."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = Path(tempfile.mkdtemp(prefix="kitap-fs-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                          text=True, timeout=10)
    if done.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=10)
        with contextlib.suppress(OSError):
            mnt.rmdir()


@pytest.fixture
def small_fs() -> Iterator[Path]:
    with tmpfs() as mnt:
        yield mnt


def fill(fs: Path) -> int:
    """Fill the filesystem up (what another process does to a tap's disk); returns the bytes written."""
    written = 0
    with (fs / "filler").open("wb", buffering=0) as f:
        for chunk in (1 << 16, 4096, 512, 1):
            try:
                while True:
                    written += f.write(b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    return written


def _batches() -> list[pa.RecordBatch]:
    summary = Summary()
    table = EventTable(capture=LARGE.name)
    for ev in iter_capture(str(LARGE), summary):
        table.add(ev)
    batch = table.take()
    return [batch.slice(i, 50) for i in range(0, batch.num_rows, 50)]


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.name.startswith(".") or "inprogress" in p.name)


def test_parquet_writer_on_a_full_disk_keeps_completed_files(small_fs: Path) -> None:
    batches = _batches()
    out = small_fs / "out"
    w = ParquetDatasetWriter(out, rotate_bytes=1)  # one file per batch: many complete files, then the disk is full
    written: list[int] = []
    with pytest.raises(OutputError) as caught:
        for batch in batches * 50:
            w.write(batch)
            written.append(batch.num_rows)
    failure = caught.value
    n = len(w.files)
    assert n >= 3 and failure.errno == errno.ENOSPC
    assert str(failure) == (f"cannot write to {out / 'events'}: No space left on device (ENOSPC); the file in progress "
                            f"was removed, the {n} files completed before it are kept")
    # Every completed file is whole, with the rows written to it; nothing half-written or in progress is left.
    assert [pq.read_table(p).num_rows for p in w.files] == written[:n]
    assert sorted((out / "events").iterdir()) == w.files and _leftovers(small_fs) == []
    # The writer stops: more writes fail the same way, close() publishes nothing more (not even an empty file).
    with pytest.raises(OutputError) as again:
        w.write(batches[0])
    assert again.value is failure
    (small_fs / "some-room").write_bytes(b"")  # (the disk is still full)
    assert w.close() == w.files and sorted((out / "events").iterdir()) == w.files


def test_parquet_writer_never_renames_a_file_it_could_not_finish(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    batches = _batches()
    w = ParquetDatasetWriter(tmp_path, rows_per_file=100)
    w.write(batches[0])
    w.write(batches[1])  # 100 rows: complete, renamed into place
    assert [p.name for p in w.files] == ["part-00000.parquet"]

    def quota(src: object, dst: object) -> None:
        raise OSError(errno.EDQUOT, "Disk quota exceeded")

    monkeypatch.setattr(inspector.rows.writers.os, "replace", quota)
    w.write(batches[2])
    with pytest.raises(OutputError, match=r"Disk quota exceeded \(EDQUOT\); the file in progress was removed, "
                                          r"the 1 file completed before it is kept$"):
        w.write(batches[3])  # second 100 rows: closing works, the rename fails
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "events").iterdir()) == ["part-00000.parquet"]
    assert pq.read_table(tmp_path / "events").num_rows == 100
    assert w.close() == [tmp_path / "events" / "part-00000.parquet"]


def test_jsonl_writer_on_a_full_disk_leaves_no_partial_file(small_fs: Path) -> None:
    fill(small_fs)
    w = JsonLinesWriter(small_fs / "out")
    with pytest.raises(OutputError, match=r"No space left on device \(ENOSPC\); the file in progress was removed"):
        for batch in _batches():
            w.write(batch)
        w.close()
    assert list((small_fs / "out").iterdir()) == [] and w.close() == []


def test_output_error_is_one_line_and_crosses_processes() -> None:
    err = output_error(Path("/data/out"), OSError(errno.ENOSPC, "No space left on device"), "1 completed file kept")
    assert str(err) == "cannot write to /data/out: No space left on device (ENOSPC); 1 completed file kept"
    back = pickle.loads(pickle.dumps(err))  # `read --jobs N` workers raise it in another process
    assert type(back) is OutputError and back.errno == errno.ENOSPC and str(back) == str(err)
    assert output_error(Path("x"), err) is err
    pyarrow_style = OSError(28, "Error writing bytes to file. Detail: [errno 28] No space left on device")
    assert str(output_error(Path("d"), pyarrow_style)) == "cannot write to d: No space left on device (ENOSPC)"


# -- kafka-inspector read --------------------------------------------------------------------------------


def _state(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_read_onto_a_full_disk(small_fs: Path, capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    out = small_fs / "out"
    assert main(["read", str(SMALL), "-o", str(out), "--quiet"]) == 0
    before = _state(out)
    capsys.readouterr()
    fill(small_fs)
    for flag in ("--append", "--overwrite"):
        code = main(["read", str(LARGE), str(SMALL), "-o", str(out), flag, "--quiet", "--jobs", jobs])
        err = capsys.readouterr().err
        assert code == ExitCode.OUTPUT
        assert err == (f"kafka-inspector: error: cannot write to {out}: No space left on device (ENOSPC); nothing was "
                       f"written, {out} is as it was\n")
        # The dataset is exactly as it was: every file, its summary and connections; nothing is left behind.
        assert _state(out) == before and _leftovers(small_fs) == []


def test_parallel_jsonl_onto_a_full_disk_leaves_no_partial_file(small_fs: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`read --jobs 2 --format jsonl`: the disk fills while a worker writes; nothing of the run is published."""
    out = small_fs / "out"
    out.mkdir()
    written = fill(small_fs)
    os.truncate(small_fs / "filler", written - 48 * 1024)  # room for part of a file: the disk fills mid-write
    code = main(["read", str(LARGE), str(SMALL), "-o", str(out), "--format", "jsonl", "--quiet", "--jobs", "2"])
    err = capsys.readouterr().err
    assert code == ExitCode.OUTPUT and err.count("\n") == 1 and "No space left on device (ENOSPC)" in err, err
    assert _leftovers(small_fs) == [] and list(out.iterdir()) == []


def test_read_when_the_totals_cannot_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    real = inspector.cli.read_command.write_connections

    def full(summary: Summary, out: Path, previous: Path | None = None) -> Path:
        (out / "connections.parquet").write_bytes(b"PAR1 half")  # what a failed write leaves
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(inspector.cli.read_command, "write_connections", full)
    assert main(["read", str(SMALL), "-o", str(tmp_path / "a"), "--quiet"]) == ExitCode.OUTPUT
    assert capsys.readouterr().err == (
        f"kafka-inspector: error: cannot write to {tmp_path / 'a'}: No space left on device (ENOSPC); nothing was "
        f"written, {tmp_path / 'a'} is as it was\n")
    assert not (tmp_path / "a").exists()

    monkeypatch.setattr(inspector.cli.read_command, "write_connections", real)
    b = tmp_path / "b"
    assert main(["read", str(SMALL), "-o", str(b), "--quiet"]) == 0
    before = _state(b)
    replace = os.replace

    def no_summary(src: Path, dst: Path) -> None:  # publishing fails at its last rename: the others are undone
        if Path(dst).name == "summary.json":
            raise OSError(errno.EIO, "Input/output error")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", no_summary)
    for flag in ("--overwrite", "--append"):
        assert main(["read", str(LARGE), "-o", str(b), "--quiet", flag]) == ExitCode.OUTPUT
        assert "Input/output error (EIO); nothing was written" in capsys.readouterr().err
        assert _state(b) == before


def test_parquet_files_keep_statistics_for_numbers_and_times_and_dictionaries_for_text(tmp_path: Path) -> None:
    """Min/max per row group for the columns a reader prunes by (ts, conn_id, api_key...), none for text;
    the repeating text columns dictionary-encoded."""
    table = EventTable(capture="c")
    for ev in iter_capture(str(Path(__file__).resolve().parents[3] / "pcaps" / "tansu-admin-operations.pcap"),
                           Summary()):
        table.add(ev)
    writer = ParquetDatasetWriter(tmp_path)
    writer.write(table.take())
    writer.close()
    (path,) = (tmp_path / "events").glob("*.parquet")
    group = pq.ParquetFile(path).metadata.row_group(0)
    columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    for name in ("ts", "conn_id", "api_key", "frame_size", "latency_ms"):
        stats = columns[name].statistics
        assert stats is not None and stats.has_min_max, name
    for name in ("body", "client_id", "api_name", "decode_status"):
        assert columns[name].statistics is None or not columns[name].statistics.has_min_max, name
    assert "RLE_DICTIONARY" in columns["api_name"].encodings and "RLE_DICTIONARY" not in columns["body"].encodings
