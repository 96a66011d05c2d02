"""``kafka-inspector report EVENTS_DIR --output DIR [--master URL] [--hosts FILE] [--verbose]``.

The CLI face of :mod:`pipelines.report_job`: builds a Spark session (``local[*]`` unless ``--master``),
runs every detector, prints a summary, and writes ``DIR/findings.parquet``, ``DIR/admin_audit.parquet``,
``DIR/clients.parquet`` and ``DIR/report.html``. Spark's own output (log4j, the JVM's warnings) goes to
``DIR/spark.log``, not the terminal, unless ``--verbose``. Wiring: ``report.add_parser(subparsers)`` adds the
subcommand (its ``func`` default is :func:`run`); ``run(args)`` returns the exit code.
"""

from __future__ import annotations

import argparse
import contextlib
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

from contract.errors import ExitCode
from contract.text import visible
from contract.units import parse_duration
from pipelines import preflight
from pipelines.kafka_rules import SEVERITIES

#: --follow's defaults (pipelines/follow.py owns them; repeated here so that --help needs no Spark import)
TRIGGER_S, SETTLE_S, HORIZON_S = 10.0, 10.0, 600.0

#: Where Spark's own output goes, in the output directory.
SPARK_LOG = "spark.log"

_STYLE = {"critical": "bold magenta", "error": "bold red", "warning": "yellow", "info": "cyan"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``report`` subcommand to an ``argparse`` subparsers object."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "report", help="run the Spark anomaly detectors on an events dataset; write findings and an HTML page")
    p.add_argument("events", metavar="EVENTS_DIR", nargs="+",
                   help="directories written by `read` or `tap` (DIR or DIR/events); with --follow also a quoted "
                        "glob ('/data/*/') that later folders match too")
    p.add_argument("--output", "-o", required=True, help="output directory for findings.parquet, "
                   "admin_audit.parquet and report.html")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    p.add_argument("--hosts", metavar="FILE", help='"name ip" lines resolving advertised broker host names')
    p.add_argument("--html", metavar="PATH", help="write the page here instead of OUTPUT/report.html")
    follow = p.add_argument_group("continuous report (Spark Structured Streaming)")
    follow.add_argument("--follow", action="store_true",
                        help="keep running: judge each new part file as it appears; write each new finding and each "
                             "change to OUTPUT/findings.jsonl and OUTPUT/findings/, rewrite the page; stop with Ctrl-C")
    follow.add_argument("--trigger", type=parse_duration, default=TRIGGER_S, metavar="DURATION",
                        help="how often to look for new files (default 10s)")
    follow.add_argument("--settle", type=parse_duration, default=SETTLE_S, metavar="DURATION",
                        help="judge traffic once it is this far behind the newest (a request's answer, a "
                             "transaction's end may follow it; default 10s); after as long with no new file, judge "
                             "everything")
    follow.add_argument("--horizon", type=parse_duration, default=HORIZON_S, metavar="DURATION",
                        help="keep every event of this much traffic for the next micro-batches (default 10m; "
                             "beyond it only the facts pipelines/README.md lists)")
    follow.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors (for services)")
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
    inputs = [args.events] if isinstance(args.events, str) else list(args.events)
    follow = getattr(args, "follow", False)
    # Before Spark starts (seconds, and a Java stack trace for any mistake): each problem is one line.
    problem = preflight.check(inputs, args.output, args.master, args.hosts, getattr(args, "html", None), follow)
    if problem is not None:
        _error(problem.message)
        return problem.code

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        _error("report needs PySpark, which is not installed: pip install 'kafka-inspector[spark]' (or pyspark)")
        return ExitCode.INPUT
    if follow:
        return _follow(args, inputs)

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
                    args.master, log=log, quick_jit=report_job.small_input(inputs))
            except Exception as exc:  # no Java, a JVM that died, a master that turned us away: its log says more
                where = os.path.join(args.output, SPARK_LOG) if log is not None and "://" not in args.output \
                    else "the terminal above"
                _error(f"Spark did not start ({_why(exc)}); its log: {where}")
                return ExitCode.INPUT
            try:
                result = report_job.run(spark, inputs if len(inputs) > 1 else inputs[0], args.output, args.hosts,
                                        args.html, progress=progress)
            finally:
                if active is None:
                    spark.stop()
    except OSError as exc:
        _error(f"cannot write the report: {exc}")
        return ExitCode.OUTPUT
    finally:
        if log is not None:
            log.close()
    print_summary(console, result.findings, result, time.monotonic() - started)
    return ExitCode.OK


def _print_found(console: Console, rows: Sequence[dict[str, Any]]) -> None:
    for f in rows:
        what = "updated" if f["update"] else "new"
        console.print(f"[{_STYLE.get(f['severity'], '')}]{_shown(f['severity'])}[/] {what} {_shown(f['kind'])} "
                      f"×{f['occurrences']}: {_shown(f['detail'])}", highlight=False, soft_wrap=True)


def _follow(args: argparse.Namespace, inputs: list[str]) -> int:
    """``report --follow``: the streaming report until SIGINT/SIGTERM (exit 0)."""
    import signal
    import threading

    if "://" in args.output:
        _error("--follow writes OUTPUT on the driver's file system: give a local directory")
        return ExitCode.USAGE
    if args.trigger <= 0 or args.settle < 0 or args.horizon <= args.settle:
        _error("--trigger must be above 0, --settle not negative, --horizon longer than --settle")
        return ExitCode.USAGE
    from pipelines import follow, report_job

    console = Console(stderr=False)
    quiet = args.quiet
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()

    previous: dict[int, Any] = {}
    log = open(os.path.join(args.output, SPARK_LOG), "ab") if not args.verbose else None  # noqa: SIM115
    settings = follow.Settings(
        output=args.output, inputs=inputs, settle_s=args.settle, horizon_s=args.horizon, hosts_path=args.hosts,
        say=(lambda line: None) if quiet else (lambda line: console.print(f"[dim]{_shown(line)}[/]", highlight=False,
                                                                           soft_wrap=True)),
        found=(lambda rows: None) if quiet else (lambda rows: _print_found(console, rows)))
    try:
        if not quiet:
            console.print(f"following {', '.join(inputs)} -> {args.output}/findings.jsonl (Ctrl-C stops)",
                          highlight=False)
        spark = report_job.build_session(args.master, log=log)
        # after the session: PySpark's own SIGINT handler (cancel the jobs, raise KeyboardInterrupt) is replaced,
        # so that Ctrl-C ends the pass under way and stops the stream between passes
        previous.update({sig: signal.signal(sig, stopping) for sig in (signal.SIGINT, signal.SIGTERM)})
        try:
            follower = follow.run(spark, settings, trigger_s=args.trigger, stop=stop)
        except Exception as exc:  # noqa: BLE001  # the stream or its JVM failed: one line, not Spark's traces
            if stop.is_set():  # stopped meanwhile (a service manager signals the JVM too): a clean stop
                return ExitCode.OK
            _error(f"the stream stopped: {_why(exc)}; Spark's log: {os.path.join(args.output, SPARK_LOG)}; the "
                   "findings written so far are complete, and a new run goes on from them")
            return ExitCode.INPUT
        finally:
            with contextlib.suppress(Exception):
                spark.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if log is not None:
            log.close()
    if not quiet:
        console.print(f"stopped after {follower.passes} pass(es); {follower.version.meta.events:,} events read",
                      highlight=False)
    return ExitCode.OK


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
