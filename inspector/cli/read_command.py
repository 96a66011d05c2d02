"""``kafka-inspector read``: check every input, decode into a staging folder (one process, or ``--jobs`` workers),
total the run with what DIR held, publish, print.

Nothing under DIR's final names changes until the run is complete (``inspector.rows.output_dir``): a bad input, a full
disk, SIGINT or SIGTERM leave DIR exactly as it was (exit 3, 4, 130), and so does SIGKILL (its staging folder,
hidden, is removed by the next run). Exit 130 means DIR is as it was and 0 that the run was published whole,
wherever the signal lands (``inspector.cli.stop_signals``). ``--overwrite`` swaps the new dataset in only then;
``--append`` adds the new event files under new names, numbers the new connections after the dataset's highest
``conn_id``, and rewrites ``connections.parquet`` (every earlier row kept) and ``summary.json`` (the totals of every
run, and each run) for the whole dataset.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract.errors import ExitCode
from inspector.capture.file import CaptureError, open_capture
from inspector.capture.file import input_problem as capture_input_problem
from inspector.cli.stop_signals import StopSignals
from inspector.read.reader import ReadOptions, read_captures, write_connections
from inspector.rows.output_dir import (
    CONNECTIONS,
    SUMMARY,
    Dataset,
    Format,
    OutputBusy,
    Staging,
    locked,
    recover,
    undo_steps,
    write_synced,
)
from inspector.rows.parquet_file import column_max
from inspector.rows.summary import Summary
from inspector.rows.summary_output import dataset_dict, escape_markup, print_summary, run_dict
from inspector.rows.writers import EventWriter, JsonLinesWriter, ParquetDatasetWriter, describe_os_error

if TYPE_CHECKING:
    from rich.console import Console


class _Refused(Exception):
    """The run stops before decoding: one line and an exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def error_line(message: str) -> None:
    """One line on stderr, never wrapped."""
    print(f"kafka-inspector: error: {message}", file=sys.stderr)


def capture_name(path: str) -> str:
    return Path(path).name if path != "-" else "<stdin>"


def input_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a capture (None: it can, as far as its header shows; stdin and pipes are not
    opened here: they can be read only once)."""
    problem = capture_input_problem(path)
    if problem is not None or path == "-" or not Path(path).is_file():
        return problem
    try:
        with open_capture(path):
            return None
    except CaptureError as exc:
        return str(exc)


def run(args: argparse.Namespace, options: ReadOptions, console: Console, real_console: Any,
        owns_process: bool = False) -> int:
    """``read``'s exit code; ``real_console`` gives rich's Console itself (for the progress bar). ``owns_process``:
    the process ends when this returns (the console script), so the signal handlers are not put back."""
    started = time.perf_counter()
    for path in args.captures:  # every input, before DIR is touched
        problem = input_problem(path)
        if problem is not None:
            error_line(problem)
            return ExitCode.INPUT
    out: Path = args.output
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        with locked(out):
            return _run_locked(args, options, console, real_console, started, owns_process)
    except _Refused as refused:
        error_line(str(refused))
        return refused.code
    except OutputBusy as exc:
        error_line(str(exc.strerror))
        return ExitCode.OUTPUT
    except OSError as exc:
        error_line(f"cannot write to {out}: {describe_os_error(exc)}")
        return ExitCode.OUTPUT
    finally:
        if created:  # a run that published nothing leaves no folder behind
            with contextlib.suppress(OSError):
                out.rmdir()


def _run_locked(args: argparse.Namespace, options: ReadOptions, console: Console, real_console: Any,
                started: float, owns_process: bool) -> int:
    out: Path = args.output
    fmt = Format(args.format)
    for note in recover(out):
        console.print(f"[yellow]note:[/] {escape_markup(note)}", highlight=False)
    existing = Dataset.scan(out)
    previous, max_conn_id = _previous(args, existing, fmt)
    # before the staging folder exists: a SIGINT or SIGTERM from here on removes it
    with StopSignals().installed(restore=not owns_process) as stop:
        return _run_staged(args, options, console, real_console, started, out, fmt, existing, previous,
                           max_conn_id, stop)


def _run_staged(args: argparse.Namespace, options: ReadOptions, console: Console, real_console: Any,
                started: float, out: Path, fmt: Format, existing: Dataset, previous: dict[str, Any] | None,
                max_conn_id: int, stop: StopSignals) -> int:
    staging: Staging | None = None
    try:
        with stop.held():  # the folder made and named before an interrupt lands
            staging = Staging(out)
        summary = _decode(args, options, staging, fmt, max_conn_id, previous is not None, real_console, started)
        steps, names = staging.plan(existing, fmt, replace=args.overwrite)
        run = run_dict(summary, started=datetime.now(UTC).isoformat(timespec="seconds"),
                       captures=[capture_name(p) for p in args.captures], files=names)
        doc = dataset_dict(previous, run)
        write_connections(summary, staging.path,
                          previous=out / CONNECTIONS if previous is not None and (out / CONNECTIONS).exists()
                          else None)
        write_synced(staging.path / SUMMARY, (json.dumps(doc, indent=1) + "\n").encode())
        with stop.publishing():
            staging.commit(steps)
            _publish(staging, steps)
    except BaseException as exc:
        stop.stopping()
        _discard(staging)
        if stop.stopped:  # whatever it became on its way (see inspector.cli.stop_signals), it was the interrupt
            raise KeyboardInterrupt from None
        if isinstance(exc, CaptureError):
            raise _Refused(ExitCode.INPUT, f"{exc}; nothing was written, {out} is as it was") from None
        if isinstance(exc, OSError):
            raise _Refused(ExitCode.OUTPUT, f"cannot write to {out}: {describe_os_error(exc)}; nothing was "
                                            f"written, {out} is as it was") from None
        raise
    if not args.quiet:
        print_summary(console, summary, time.perf_counter() - started)
        n = len(names)
        line = f"wrote {summary.messages:,} events to {escape_markup(str(out))} ({n} file{'s' if n != 1 else ''})"
        if len(doc["runs"]) > 1:
            line += f"; it holds {doc['messages']:,} events from {len(doc['runs'])} runs"
        console.print(line, soft_wrap=True)
    return ExitCode.OK


def _discard(staging: Staging | None) -> None:
    if staging is not None:
        staging.discard()


def _previous(args: argparse.Namespace, existing: Dataset, fmt: Format) -> tuple[dict[str, Any] | None, int]:
    """What an ``--append`` adds to: the dataset's summary and its highest conn_id (None and 0 for a new dataset).
    Refuses a dataset with events and no flag, one in the other format, one whose summary is missing."""
    out: Path = args.output
    if not existing.files:
        return None, 0
    if not (args.overwrite or args.append):
        raise _Refused(ExitCode.USAGE, f"{out} already holds events ({len(existing.files)} files): use --overwrite to "
                                       "replace them or --append")
    if args.overwrite:
        return None, 0
    if existing.formats != {fmt}:
        have = " and ".join(sorted(f.value for f in existing.formats))
        raise _Refused(ExitCode.USAGE, f"{out} holds {have} events: --append adds to them in the same format "
                                       f"(--format {have if len(existing.formats) == 1 else '...'})")
    try:
        previous = existing.summary()
    except (OSError, ValueError) as exc:
        raise _Refused(ExitCode.OUTPUT, f"{out / SUMMARY} cannot be read ({exc}): --overwrite to replace the dataset, "
                                        "or another --output") from None
    if previous is None:
        raise _Refused(ExitCode.USAGE, f"{out} holds events but no {SUMMARY} (a run that did not finish): their totals "
                                       "are unknown; --overwrite to replace them, or another --output")
    return previous, _max_conn_id(existing, previous)


def _max_conn_id(existing: Dataset, previous: dict[str, Any]) -> int:
    """The dataset's highest conn_id: from its summary, its connections and its Parquet files' statistics (a
    summary written before it recorded one says nothing)."""
    best = int(previous.get("max_conn_id") or 0)
    for run in previous.get("runs") or []:
        best = max(best, int(run.get("max_conn_id") or 0))
    connections = existing.out / CONNECTIONS
    if connections.exists():
        best = max(best, column_max(connections, "conn_id") or 0)
    for path in existing.parquet:
        best = max(best, column_max(path, "conn_id") or 0)
    if existing.jsonl and "max_conn_id" not in previous:
        for path in existing.jsonl:
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    best = max(best, int(json.loads(line).get("conn_id") or 0))
    return best


def _decode(args: argparse.Namespace, options: ReadOptions, staging: Staging, fmt: Format, max_conn_id: int,
            appending: bool, real_console: Any, started: float) -> Summary:
    """Every capture decoded into the staging folder; the run's totals."""
    if args.jobs != 1 and len(args.captures) > 1:
        from inspector.read.parallel import read_parallel
        from inspector.rows.conn_ids import next_block

        return read_parallel(args.captures, staging.path, fmt.value, options, args.jobs, next_block(max_conn_id))
    summary = Summary()
    summary.max_conn_id = max_conn_id  # this run's connections are numbered after the dataset's
    # An empty run adds no empty file to a dataset that has files (a new dataset gets one: its columns).
    writer: EventWriter = (ParquetDatasetWriter(staging.path, empty_file=not appending) if fmt is Format.PARQUET
                           else JsonLinesWriter(staging.path))
    try:
        if args.quiet:
            read_captures(args.captures, writer, options, summary=summary)
        else:
            _read_with_progress(args.captures, writer, options, summary, real_console(), started)
        writer.close()
    finally:
        if isinstance(writer, ParquetDatasetWriter):
            writer.abort()
    return summary


def _read_with_progress(captures: list[str], writer: EventWriter, options: ReadOptions, summary: Summary,
                        console: Any, started: float) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    total = sum(Path(p).stat().st_size for p in captures if p != "-" and Path(p).is_file()) or None
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("reading", total=total, info="")
        done_before = [0]
        current = [""]

        def progress(name: str, nbytes: int, frames: int) -> None:
            if name != current[0]:
                if current[0]:
                    done_before[0] = int(bar.tasks[0].completed)
                current[0] = name
            elapsed = max(time.perf_counter() - started, 1e-6)
            bar.update(task, completed=done_before[0] + nbytes, description=name,
                       info=f"{(done_before[0] + nbytes) / 1e6:.1f} MB  {frames:,} frames  "
                            f"{frames / elapsed:,.0f} frames/s")

        read_captures(captures, writer, options, progress, summary)


def _publish(staging: Staging, steps: list[list[str]]) -> None:
    """The committed renames; should one fail (an I/O error), those done are undone and the error raised."""
    try:
        staging.publish(steps)
    except OSError:
        try:
            undo_steps(staging.out, staging.path, steps)
        except OSError as again:  # left committed: the next run into DIR finishes publishing it
            raise OSError(again.errno, f"{again.strerror}; publishing stopped part way, the next read into "
                                       f"{staging.out} finishes it") from None
        raise
