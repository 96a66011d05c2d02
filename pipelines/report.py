"""``kafka-inspector report EVENTS_DIR --output DIR [--master URL] [--hosts FILE] [--verbose]``.

The CLI face of :mod:`pipelines.report_job`: builds a Spark session (``local[*]`` unless ``--master``),
runs every detector, prints a summary, and writes ``DIR/findings.parquet``, ``DIR/admin_audit.parquet``,
``DIR/clients.parquet`` and ``DIR/report.html``. Spark's own output (log4j, the JVM's warnings) goes to
``DIR/spark.log``, not the terminal, unless ``--verbose``. Wiring: ``report.add_parser(subparsers)`` adds the
subcommand (its ``func`` default is :func:`run`); ``run(args)`` returns the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from contract.text import visible
from pipelines import preflight
from pipelines.kafka import SEVERITIES

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_OUTPUT = 4
#: Where Spark's own output goes, in the output directory.
SPARK_LOG = "spark.log"

_STYLE = {"critical": "bold magenta", "error": "bold red", "warning": "yellow", "info": "cyan"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``report`` subcommand to an ``argparse`` subparsers object."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "report", help="run the Spark anomaly detectors on an events dataset; write findings and an HTML page")
    p.add_argument("events", metavar="EVENTS_DIR", help="directory written by `read` (DIR or DIR/events)")
    p.add_argument("--output", "-o", required=True, help="output directory for findings.parquet, "
                   "admin_audit.parquet and report.html")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    p.add_argument("--hosts", metavar="FILE", help='"name ip" lines resolving advertised broker host names')
    p.add_argument("--html", metavar="PATH", help="write the page here instead of OUTPUT/report.html")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="let Spark's own output (log4j, the JVM) reach the terminal instead of OUTPUT/spark.log")
    p.set_defaults(func=run)
    return p


def _error(message: str) -> None:
    print(f"kafka-inspector: error: {message}", file=sys.stderr)


def _why(exc: BaseException) -> str:
    """The first line of what went wrong, the Java exception's for a Py4J error (whose own first line only names
    the method called)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return preflight.first_line(Exception(str(java)))
        except Exception:  # the JVM is gone: what Python says is all there is
            pass
    return preflight.first_line(exc)


def _shown(value: object) -> str:
    """A value of a finding (its detail names clients, groups, topics) as rich shows it as it is: control and
    invisible characters as visible escapes, ``[...]`` not read as markup, None as nothing."""
    return "" if value is None else escape(visible(str(value)))


def print_summary(console: Console, findings: Sequence[dict[str, Any]], result: Any, elapsed: float) -> None:
    counts = Counter((f["kind"], f["severity"]) for f in findings)
    p = result.plots
    console.print(f"[bold]{p.events:,}[/] events ({p.requests:,} requests, {p.responses:,} responses, "
                  f"{p.connections:,} connections) from {len(p.captures)} capture(s)", highlight=False)
    if not findings:
        console.print("[green]no findings[/]")
    else:
        sevs = [s for s in reversed(SEVERITIES) if any(sv == s for _, sv in counts)]
        table = Table(title=f"{len(findings)} findings", title_justify="left")
        table.add_column("kind")
        for s in sevs:
            table.add_column(s, justify="right", style=_STYLE.get(s, ""))
        for kind in sorted({k for k, _ in counts}, key=lambda k: (k is None, str(k))):
            table.add_row(_shown(kind), *[str(counts[(kind, s)] or "") for s in sevs])
        console.print(table)
        top = Table(title="most severe", title_justify="left", show_lines=False)
        top.add_column("severity")
        top.add_column("kind")
        top.add_column("detail", overflow="fold")
        for f in findings[:10]:
            top.add_row(f"[{_STYLE.get(f['severity'], '')}]{_shown(f['severity'])}[/]", _shown(f["kind"]),
                        _shown(f["detail"]))
        console.print(top)
    console.print(f"findings -> {result.findings_path}\nadmin audit ({result.audit_rows} writes) -> "
                  f"{result.audit_path}\nclients ({result.clients}) -> {result.clients_path}\npage -> "
                  f"{result.html_path}\n({elapsed:.1f} s)", highlight=False)


@contextmanager
def _progress(console: Console, shown: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar (Spark's own is off): Spark starting, then "step n of m" as the report's steps end."""
    if not shown:
        yield None
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("Spark: starting, reading the events", total=None)

        def advance(done: int, total: int, name: str) -> None:
            bar.update(task, total=total, completed=done, description=f"step {done} of {total}: {escape(name)} done")

        yield advance


def run(args: argparse.Namespace) -> int:
    # Before Spark starts (seconds, and a Java stack trace for any mistake): each problem is one line.
    problem = preflight.check(args.events, args.output, args.master, args.hosts, getattr(args, "html", None))
    if problem is not None:
        _error(problem.message)
        return problem.code

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        _error("report needs PySpark, which is not installed: pip install 'kafka-inspector[spark]' (or pyspark)")
        return EXIT_INPUT

    from pipelines import report_job  # pyspark loads only for this command

    console = Console()
    started = time.monotonic()
    active = SparkSession.getActiveSession()  # a caller's session (tests, notebooks): use it, leave it running
    # Spark's own output goes to OUTPUT/spark.log (a remote OUTPUT: a temporary file), unless --verbose.
    quiet = not getattr(args, "verbose", False)
    log = (open(os.path.join(args.output, SPARK_LOG), "ab") if "://" not in args.output  # noqa: SIM115
           else tempfile.TemporaryFile()) if quiet and active is None else None
    try:
        with _progress(console, quiet and console.is_terminal) as progress:  # off a terminal: no bar, no stray line
            try:
                spark = active if active is not None else report_job.build_session(
                    args.master, log=log, quick_jit=report_job.small_input(args.events))
            except Exception as exc:  # no Java, a JVM that died, a master that turned us away: its log says more
                where = os.path.join(args.output, SPARK_LOG) if log is not None and "://" not in args.output \
                    else "the terminal above"
                _error(f"Spark did not start ({_why(exc)}); its log: {where}")
                return EXIT_INPUT
            try:
                result = report_job.run(spark, args.events, args.output, args.hosts, args.html, progress=progress)
            finally:
                if active is None:
                    spark.stop()
    except OSError as exc:
        _error(f"cannot write the report: {exc}")
        return EXIT_OUTPUT
    finally:
        if log is not None:
            log.close()
    print_summary(console, result.findings, result, time.monotonic() - started)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m pipelines.report``) until the lead wires it into ``kafka-inspector``."""
    parser = argparse.ArgumentParser(prog="kafka-inspector")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
