"""Decode many capture files on several cores: one worker process per file at a time, one dataset.

Each worker writes its capture's event files into the run's staging folder (``inspector.rows.output_dir``; never under
a final name) and sends its totals back. The workers are the run's: they ignore SIGINT (a Ctrl-C reaches the whole
terminal's process group; the parent decides), they are killed by the kernel if the parent dies
(``PR_SET_PDEATHSIG``: SIGKILL of the parent included), and the parent kills whichever are still running whenever
it stops early (an error in one of them, an interrupt), waiting for them before it removes the staging folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path

from inspector.capture.parser import CaptureError
from inspector.read.reader import ReadOptions, read_captures
from inspector.rows.summary import Summary
from inspector.rows.writers import EventWriter, JsonLinesWriter, ParquetDatasetWriter

#: conn_ids of a run's file N are in block (first block + N): ``inspector.rows.conn_ids``.
_PR_SET_PDEATHSIG = 1
_STOP = {signal.SIGINT, signal.SIGTERM}


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux; elsewhere the parent's kill on exit is all)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _worker(conn: Connection, parent: int, index: int, block: int, path: str, staging: str, fmt: str,
            options: ReadOptions) -> None:
    _die_with_parent(parent)
    for signum in _STOP:  # the parent stops the run (and kills its workers); they came blocked (see _spawn)
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)
    out_dir = Path(staging)
    writer: EventWriter
    if fmt == "parquet":  # named by the capture's place among the run's: the staging folder lists them in order
        writer = ParquetDatasetWriter(out_dir, prefix=f"part-f{index:06d}")
    else:
        writer = JsonLinesWriter(out_dir, name=f"events-f{index:06d}.jsonl")
    summary = Summary()
    try:
        read_captures([path], writer, options, summary=summary, first_block=block)
        writer.close()
    except (CaptureError, OSError) as exc:
        conn.send(("error", exc))
        return
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which reports it
        conn.send(("error", RuntimeError(f"{path}: {type(exc).__name__}: {exc}")))
        return
    conn.send(("done", summary))


def read_parallel(paths: list[str], staging: Path, fmt: str, options: ReadOptions, jobs: int,
                  block: int = 0) -> Summary:
    """Decode ``paths`` with ``jobs`` processes (0 = one per core) into ``staging``; returns the merged totals.

    File N's connections are numbered in block ``block + N`` (``inspector.rows.conn_ids``). The first failure
    (``CaptureError``, ``OSError``) is raised once every worker has stopped."""
    workers = jobs if jobs > 0 else (os.cpu_count() or 1)
    context = multiprocessing.get_context("fork")
    pending = list(enumerate(paths))
    running: dict[Connection, tuple[BaseProcess, int, str]] = {}
    results: dict[int, Summary] = {}
    parent = os.getpid()
    try:
        while pending or running:
            while pending and len(running) < workers:
                index, path = pending.pop(0)
                receive, send = context.Pipe(duplex=False)
                started: BaseProcess = context.Process(
                    target=_worker, name=f"read-{index}", daemon=True,
                    args=(send, parent, index, block + index, path, str(staging), fmt, options))
                # An interrupt between the fork and the line after it would leave a worker no one kills: listed
                # before it starts, and the signals held back meanwhile (the worker inherits the mask, and
                # unblocks once it ignores them). Another thread of this process (pyarrow's) can still take a
                # signal from the kernel, and Python then runs the handler here: the worker is listed by then.
                signal.pthread_sigmask(signal.SIG_BLOCK, _STOP)
                try:
                    running[receive] = (started, index, path)
                    started.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP)
                send.close()
            for ready in wait(list(running)):
                conn = ready if isinstance(ready, Connection) else None
                assert conn is not None
                proc, index, path = running.pop(conn)
                try:
                    kind, value = conn.recv()
                except EOFError:
                    proc.join()
                    raise CaptureError(f"{path}: the process decoding it ended with {_ended(proc)}") from None
                finally:
                    conn.close()
                proc.join()
                if kind == "error":
                    raise value
                results[index] = value
    finally:
        for conn, (proc, _, _) in running.items():
            if proc.pid is not None:  # None: stopped before it started
                with contextlib.suppress(OSError):
                    proc.kill()
                proc.join()
            conn.close()
    summary = Summary()
    for index in sorted(results):
        summary.merge(results[index])
    return summary


def _ended(proc: BaseProcess) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
    return f"exit code {code}"
