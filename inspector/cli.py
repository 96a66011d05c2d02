"""``kafka-inspector``: the command line.

Exit codes: 0 done (damage in the traffic is reported, not an error); 2 bad usage;
3 a capture could not be read (missing, not a capture, damaged header); 4 the output could not be
written (disk full, quota, I/O error: one line names the directory and the errno; completed files
stay, the file in progress is removed, never renamed into place); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from inspector.capture_file import CaptureError
from inspector.connection import MAX_ELEMENTS, MAX_PENDING
from inspector.events import EventTable, RecordsOptions
from inspector.pipeline import MAX_HELD
from inspector.reader import ReadOptions, iter_capture, read_captures, write_connections
from inspector.summary import LIMITS, Summary
from inspector.writers import (
    EventWriter,
    JsonLinesWriter,
    OutputError,
    ParquetDatasetWriter,
    output_error,
    remove_quietly,
)

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_USAGE, EXIT_CAPTURE, EXIT_OUTPUT, EXIT_INTERRUPTED = 0, 2, 3, 4, 130


class _LazyConsole:
    """rich's Console, made (and rich imported, ~30 ms) when something is first printed: ``read --quiet``
    prints nothing."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    @property
    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _real(console: Console) -> Console:
    """The Console itself (rich's Progress needs one, not a stand-in)."""
    return console.real if isinstance(console, _LazyConsole) else console


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([kKmMgG]?)i?[bB]?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 65536, 64MB, 1GiB)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def _count(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (examples: 1000000, 1_000_000)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (must not be negative)")
    return value


def _add_decode_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, action="append", default=[],
                   help="broker port: only connections to it are Kafka, and that side is the broker "
                        "(repeatable; default: detect Kafka by content on any port)")
    p.add_argument("--records", choices=("size", "headers", "records"), default="headers",
                   help="how much of Produce/Fetch record data to decode (default: batch headers)")
    p.add_argument("--decompress", action="store_true", help="decompress record batches (with --records records)")
    p.add_argument("--max-decompressed", type=_size, default=64 << 20, metavar="SIZE",
                   help="cap on decompressed record data per message, all its records fields together "
                        "(default 64MB)")
    p.add_argument("--max-frame", type=_size, default=100 << 20, metavar="SIZE",
                   help="largest Kafka frame accepted; larger length prefixes are reported and skipped")
    p.add_argument("--max-buffered", type=_size, default=8 << 20, metavar="SIZE",
                   help="out-of-order bytes buffered per TCP direction before a hole is declared a gap")
    p.add_argument("--max-connections", type=int, default=100_000,
                   help="TCP connections tracked at once (the oldest idle ones are evicted)")
    p.add_argument("--max-pending", type=int, default=MAX_PENDING, metavar="N",
                   help=f"requests per connection kept waiting for their response; beyond it the oldest is "
                        f"given up and counted as a missing response (default {MAX_PENDING:,})")
    p.add_argument("--max-held", type=_size, default=MAX_HELD, metavar="SIZE",
                   help=f"bytes held in incomplete frames and behind holes, all connections together; beyond it "
                        f"the connections holding the most are released and resync (default {MAX_HELD >> 20}MB)")
    p.add_argument("--max-elements", type=_count, default=MAX_ELEMENTS, metavar="N",
                   help=f"array elements decoded per message, all its arrays (and embedded protocols, Envelope "
                        f"contents) together; a message with more is reported, not decoded (default "
                        f"{MAX_ELEMENTS:,})")


def _read_options(args: argparse.Namespace) -> ReadOptions:
    return ReadOptions(
        ports=frozenset(args.port),
        records=RecordsOptions(args.records, args.decompress, args.max_decompressed),
        max_frame=args.max_frame,
        max_buffered=args.max_buffered,
        max_connections=args.max_connections,
        max_pending=args.max_pending,
        max_held=args.max_held,
        max_elements=args.max_elements,
    )


#: Commands whose modules need nothing of ``tap`` and ``report`` (nor rich, which they import).
_LEAN_COMMANDS = ("read", "show")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; for ``command`` read or show, without the tap and report subcommands (their modules
    cost ~40 ms to import, a tenth of reading a small capture)."""
    parser = argparse.ArgumentParser(prog="kafka-inspector", description="Inspect Kafka wire traffic.")
    sub = parser.add_subparsers(dest="command", required=True)

    read = sub.add_parser("read", help="decode captures into a Parquet (or JSON lines) events dataset")
    read.add_argument("captures", nargs="+", help="pcap/pcapng files (gzip ok), or - for stdin")
    read.add_argument("--output", "-o", required=True, type=Path, help="output directory")
    read.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    read.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    existing = read.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true", help="replace events already in DIR")
    existing.add_argument("--append", action="store_true", help="add to events already in DIR")
    read.add_argument("--jobs", "-j", type=int, default=1,
                      help="decode this many capture files in parallel (0 = all cores)")
    _add_decode_options(read)

    show = sub.add_parser("show", help="print decoded messages for a person")
    show.add_argument("capture", help="pcap/pcapng file, or - for stdin")
    show.add_argument("--filter", "-f", action="append", default=[], metavar="EXPR",
                      help="COLUMN=VALUE, COLUMN!=VALUE or COLUMN~REGEX on the event columns "
                           "(api_name, api_key, direction, client_id, group_id, decode_status, ...); "
                           "repeat to AND")
    show.add_argument("--verbose", "-v", action="store_true", help="print each decoded body")
    show.add_argument("--limit", type=int, default=0, help="stop after N messages")
    _add_decode_options(show)

    if command in _LEAN_COMMANDS:
        return parser
    from inspector import tap

    tap.add_parser(sub)
    try:
        from pipelines import report
    except ImportError:  # installed without the pipelines package
        pass
    else:
        report.add_parser(sub)
    return parser


def _error(message: str) -> None:
    """One line on stderr, never wrapped."""
    print(f"kafka-inspector: error: {message}", file=sys.stderr)


# -- read -------------------------------------------------------------------------------------


def cmd_read(args: argparse.Namespace, console: Console) -> int:
    options = _read_options(args)
    out: Path = args.output
    old = sorted((out / "events").glob("*.parquet")) + sorted(out.glob("events*.jsonl"))
    if old and not (args.overwrite or args.append):
        _error(f"{out} already holds events ({len(old)} files): use --overwrite to replace them or --append")
        return EXIT_USAGE
    try:
        if args.overwrite:
            for path in old:
                path.unlink()
        out.mkdir(parents=True, exist_ok=True)
        writer: EventWriter = (ParquetDatasetWriter(out) if args.format == "parquet" else JsonLinesWriter(out))
    except OSError as exc:
        _error(f"cannot write to {out}: {exc.strerror or exc}")
        return EXIT_OUTPUT
    for path in args.captures:
        if path != "-" and not Path(path).is_file():
            _error(f"{path}: no such file")
            return EXIT_CAPTURE
    started = time.perf_counter()
    total = sum(Path(p).stat().st_size for p in args.captures if p != "-") or None
    summary = Summary()
    try:
        if args.jobs != 1 and len(args.captures) > 1:
            from inspector.parallel import read_parallel

            summary = read_parallel(args.captures, out, args.format, options, args.jobs)
        elif args.quiet:
            read_captures(args.captures, writer, options, summary=summary)
        else:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                          TimeElapsedColumn(), console=_real(console), transient=True) as bar:
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

                read_captures(args.captures, writer, options, progress, summary)
    except CaptureError as exc:
        try:
            writer.close()
        except OSError as failed:
            _error(f"{exc}; and {failed}")
            return EXIT_OUTPUT
        _error(f"{exc}")
        return EXIT_CAPTURE
    except OSError as exc:  # a write failure is an OutputError: the file in progress is already removed
        if not isinstance(exc, OutputError):
            with contextlib.suppress(OSError):
                writer.close()
        _error(f"{exc}")
        return EXIT_OUTPUT
    try:
        files = writer.close() if not (args.jobs != 1 and len(args.captures) > 1) else []
        _write_totals(summary, out)
    except OSError as exc:
        _error(str(output_error(out, exc)))
        return EXIT_OUTPUT
    if not args.quiet:
        print_summary(console, summary, time.perf_counter() - started)
        console.print(f"wrote {summary.messages:,} events to {out} "
                      f"({len(files) or 'several'} file{'s' if len(files) != 1 else ''})")
    return EXIT_OK


def _write_totals(summary: Summary, out: Path) -> None:
    """``connections.parquet`` and ``summary.json``; a failure leaves neither half-written (OutputError)."""
    try:
        write_connections(summary, out)
    except OSError as exc:
        remove_quietly(out / "connections.parquet")
        raise output_error(out, exc, "the event files are complete; connections.parquet and summary.json "
                                     "not written") from exc
    tmp = out / ".summary.json.inprogress"
    try:
        tmp.write_text(json.dumps(summary_dict(summary), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, out / "summary.json")
    except OSError as exc:
        remove_quietly(tmp)
        raise output_error(out, exc, "the event files and connections.parquet are complete; summary.json "
                                     "not written") from exc


def summary_dict(summary: Summary) -> dict[str, Any]:
    issues = summary.stream_issues
    return {
        "packets": summary.packets,
        "packets_skipped": summary.packets_skipped,
        "frames": summary.frames,
        "messages": summary.messages,
        "decode_failures": summary.decode_failures,
        "decode_warnings": summary.decode_warnings,
        "stream_issue_bytes": issues,
        "kafka_connections": len(summary.connections) + summary.empty_connections,
        "kafka_connections_without_data": summary.empty_connections,
        "non_kafka_connections": summary.non_kafka_connections,
        "non_kafka_bytes": summary.non_kafka_bytes,
        "apis": summary.rows(),
        "accounting": summary.accounting(),
        "limits": {name: {"hits": hits, "meaning": LIMITS.get(name, "")}
                   for name, hits in sorted(summary.limits.items())},
        "warnings": summary.warnings,
    }


def print_summary(console: Console, summary: Summary, elapsed: float) -> None:
    from rich.table import Table

    table = Table(title=f"Kafka traffic: {summary.frames:,} frames in {elapsed:.2f}s", title_justify="left")
    for col, justify in (("API", "left"), ("req", "right"), ("resp", "right"), ("errors", "right"),
                         ("p50 ms", "right"), ("p99 ms", "right"), ("undecoded", "right"),
                         ("trailing", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in summary.rows():
        table.add_row(
            row["api"], f"{row['requests']:,}", f"{row['responses']:,}",
            f"[red]{row['errors']:,}[/]" if row["errors"] else "0",
            _ms(row["p50_ms"]), _ms(row["p99_ms"]),
            f"[red]{row['decode_failures']:,}[/]" if row["decode_failures"] else "0",
            f"[yellow]{row['decode_warnings']:,}[/]" if row["decode_warnings"] else "0",
        )
    console.print(table)
    seen = sum(c["bytes_seen"] for c in summary.connections)
    decoded = sum(c["bytes_decoded"] for c in summary.connections)
    gap = sum(c["bytes_gap"] for c in summary.connections)
    junk = sum(c["bytes_undecodable"] for c in summary.connections)
    console.print(
        f"{len(summary.connections) + summary.empty_connections} Kafka connections: {seen:,} bytes seen, "
        f"{decoded:,} decoded, "
        f"{gap:,} lost in gaps, {junk:,} undecodable"
        + (f"; {summary.non_kafka_connections} other TCP connections ({summary.non_kafka_bytes:,} bytes) ignored"
           if summary.non_kafka_connections else "")
    )
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    for name, hits in sorted(summary.limits.items()):
        console.print(f"[yellow]limit {name}:[/] {hits:,} {LIMITS.get(name, 'hits')}", highlight=False)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


# -- show -------------------------------------------------------------------------------------


def _compile_filter(expr: str) -> Callable[[dict[str, Any]], bool]:
    m = re.fullmatch(r"\s*(\w+)\s*(!=|=|~)\s*(.*?)\s*", expr)
    if not m:
        raise argparse.ArgumentTypeError(f"bad filter {expr!r}: use COLUMN=VALUE, COLUMN!=VALUE or COLUMN~REGEX")
    column, op, value = m.groups()
    from inspector.events import COLUMNS

    if column not in COLUMNS:
        raise argparse.ArgumentTypeError(f"bad filter {expr!r}: unknown column {column!r}")
    if op == "~":
        pattern = re.compile(value)
        return lambda row: row.get(column) is not None and bool(pattern.search(str(row[column])))
    if op == "=":
        return lambda row: str(row.get(column)) == value
    return lambda row: str(row.get(column)) != value


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    try:
        filters = [_compile_filter(f) for f in args.filter]
    except argparse.ArgumentTypeError as exc:
        _error(f"{exc}")
        return EXIT_USAGE
    options = _read_options(args)
    if args.capture != "-" and not Path(args.capture).is_file():
        _error(f"{args.capture}: no such file")
        return EXIT_CAPTURE
    summary = Summary()
    table = EventTable(capture=Path(args.capture).name, records=options.records)
    shown = 0
    try:
        for ev in iter_capture(args.capture, summary, options):
            table.add(ev)
            for row in table.take().to_pylist():
                if all(f(row) for f in filters):
                    _print_row(console, row, args.verbose)
                    shown += 1
            if args.limit and shown >= args.limit:
                break
    except CaptureError as exc:
        _error(f"{exc}")
        return EXIT_CAPTURE
    console.print(f"[dim]{shown:,} of {summary.messages:,} messages shown[/]")
    return EXIT_OK


def _print_row(console: Console, row: dict[str, Any], verbose: bool) -> None:
    ts = row["ts"].strftime("%H:%M:%S.%f")
    arrow = "→" if row["direction"] == "request" else "←"
    name = row["api_name"] or f"key {row['api_key']}"
    head = (f"{ts} #{row['conn_id']} {row['client_ip']}:{row['client_port']} {arrow} "
            f"{row['broker_ip']}:{row['broker_port']} [bold]{name}[/] v{row['api_version']} "
            f"{row['direction']} corr={row['correlation_id']}")
    if row["client_id"]:
        head += f" client={row['client_id']}"
    if row["latency_ms"] is not None:
        head += f" {row['latency_ms']:.2f}ms"
    if row["error_code"]:
        head += f" [red]error={row['error_code']}[/]"
    if row["envelope_correlation_id"] is not None:
        head += f" (in Envelope corr={row['envelope_correlation_id']} principal={row['principal']})"
    if row["request_missing"]:
        head += f" [yellow](request missing; candidates {row['candidates']}, confidence {row['confidence']})[/]"
    if row["decode_status"] != "ok":
        head += f" [red]{row['decode_status']}[/]"
    console.print(head, highlight=False, markup=True)
    if verbose and row["body"]:
        _print_tree(console, json.loads(row["body"]), "    ")


def _print_tree(console: Console, value: Any, indent: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                console.print(f"{indent}{key}:", highlight=False, markup=False)
                _print_tree(console, item, indent + "    ")
            else:
                console.print(f"{indent}{key}: {json.dumps(item, ensure_ascii=False)}", highlight=False,
                              markup=False)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                console.print(f"{indent}[{i}]", highlight=False, markup=False)
                _print_tree(console, item, indent + "    ")
            else:
                console.print(f"{indent}[{i}] {json.dumps(item, ensure_ascii=False)}", highlight=False,
                              markup=False)


def cmd_tap(args: argparse.Namespace, console: Console) -> int:
    from inspector import tap

    return tap.run(args)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from pipelines import report

    return report.run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    "read": cmd_read,
    "show": cmd_show,
    "tap": cmd_tap,
    "report": cmd_report,
}


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    args = parser.parse_args(argv)
    console = cast("Console", _LazyConsole(stderr=args.command == "read"))
    try:
        return COMMANDS[args.command](args, console)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


def run() -> None:
    """The console script: :func:`main`, then the process ends at once with its exit code.

    Everything is written and closed when :func:`main` returns; tearing the interpreter down after it (every
    module and object freed one by one, pyarrow's static destructors run) would only give memory back that
    the operating system takes back anyway: ~15 ms of every run. With a thread still running the exit is the
    usual one (which waits for it).
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said there
            stream.flush()
    if threading.active_count() > 1:
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
