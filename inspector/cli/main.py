"""``kafka-inspector``: the command line.

Exit codes: 0 done (damage in the traffic is reported, not an error); 2 bad usage;
3 a capture could not be read (missing, not a capture, damaged header); 4 the output could not be
written (disk full, quota, I/O error: one line names the directory and the errno; ``read`` publishes
nothing, ``tap`` keeps the files it completed and removes the one in progress); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from contract.errors import ExitCode, InspectorError
from contract.text import visible
from inspector.capture.file import CaptureError, input_problem
from inspector.kafka.connection import Endpoint
from inspector.read.arg_types import parse_jobs, parse_limit
from inspector.read.decode_options import add_decode_options as _add_decode_options
from inspector.read.decode_options import read_options as _read_options
from inspector.read.reader import iter_capture
from inspector.rows.event_table import EventTable
from inspector.rows.summary import Summary
from inspector.rows.summary_output import escape_markup, print_notes

if TYPE_CHECKING:
    from rich.console import Console


class _LazyConsole:
    """rich's Console, made (and rich imported, ~30 ms) when something is first printed: ``read --quiet``
    prints nothing. Off a terminal (a pipe, a file) a line is never wrapped: ``show X | grep`` sees each
    message whole."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    @property
    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
            if not self._console.is_terminal:
                self._console.soft_wrap = True
            self._console.on_broken_pipe = _reader_left  # type: ignore[method-assign]
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _reader_left() -> None:
    """What rich does when the reader of a pipe left (``show X | head``), without its exit code 1: nothing more
    is written there, and :func:`main` ends with 0 as for any other closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise BrokenPipeError


def _real(console: Console) -> Console:
    """The Console itself (rich's Progress needs one, not a stand-in)."""
    return console.real if isinstance(console, _LazyConsole) else console


#: Commands whose modules need nothing of ``tap`` and ``report`` (nor rich, which they import).
_LEAN_COMMANDS = ("read", "show", "clients", "topics")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (argparse prints its usage first, many lines for ``read``):
    the problem, and where the usage is. Exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}; see {self.prog} --help\n")


class _Version(argparse.Action):
    """``--version``: the installed package's version (looked up only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("kafka-inspector")
        except PackageNotFoundError:  # run from a source tree that was never installed
            text = "(not installed: version unknown)"
        print(f"kafka-inspector {text}")
        parser.exit(ExitCode.OK)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; for ``command`` read or show, without the tap and report subcommands (their modules
    cost ~40 ms to import, a tenth of reading a small capture)."""
    parser = _Parser(prog="kafka-inspector", description="Inspect Kafka wire traffic.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)

    read = sub.add_parser("read", help="decode captures into a Parquet (or JSON lines) events dataset")
    read.add_argument("captures", nargs="+", help="pcap/pcapng files (gzip ok), or - for stdin")
    read.add_argument("--output", "-o", required=True, type=Path, help="output directory")
    read.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    read.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    existing = read.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true", help="replace events already in DIR")
    existing.add_argument("--append", action="store_true", help="add to events already in DIR")
    read.add_argument("--jobs", "-j", type=parse_jobs, default=1,
                      help="decode this many capture files in parallel (0 = all cores)")
    _add_decode_options(read)

    show = sub.add_parser("show", help="print decoded messages for a person")
    show.add_argument("capture",
                      help="pcap/pcapng file, - for stdin, or a directory written by `read` or `tap` (its events)")
    show.add_argument("--filter", "-f", action="append", default=[], metavar="EXPR",
                      help="COLUMN=VALUE, COLUMN!=VALUE, COLUMN~REGEX or COLUMN<VALUE (<, <=, >, >=: numbers and "
                           "ts) on the event columns (api_name, api_key, direction, client_id, error_code, tls, "
                           "latency_ms, ...), values spelt as JSON (true, false, null, 7, \"text\"); null is "
                           "matched only by =null and !=null (error_code!=0 leaves out the rows without a code); "
                           "repeat to AND")
    show.add_argument("--verbose", "-v", action="store_true", help="print each decoded body")
    show.add_argument("--limit", type=parse_limit, default=None, metavar="N", help="stop after N messages")
    _add_decode_options(show)

    clients = sub.add_parser("clients", help="one row per client: software, versions used, brokers, errors")
    clients.add_argument("inputs", nargs="+", metavar="CAPTURE_OR_EVENTS",
                         help="pcap/pcapng files, or directories written by `read` (their events)")
    clients.add_argument("--format", choices=("table", "tsv", "json"), default="table",
                         help="table (default: for a person; off a terminal, one line per client), tsv (a header "
                              "line, then one tab-separated line per client) or json (an array of the rows "
                              "`report` writes to clients.parquet, one a line)")
    _add_decode_options(clients)

    topics = sub.add_parser("topics", help="the topic map: who produces to and consumes from each topic")
    topics.add_argument("inputs", nargs="+", metavar="CAPTURE_OR_EVENTS",
                        help="pcap/pcapng files, or directories written by `read` (their events)")
    topics.add_argument("--format", choices=("table", "tsv", "json"), default="table",
                        help="table (default: for a person; off a terminal, one line per row), tsv (a header "
                             "line, then one tab-separated line per row) or json (an array of the rows `report` "
                             "writes to topics.parquet, one a line)")
    _add_decode_options(topics)

    if command in _LEAN_COMMANDS:
        return parser
    from inspector.tap import command as tap

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


def _keylog_missing(args: argparse.Namespace) -> bool:
    """``--tls-keylog FILE`` names no file: said on stderr (read, show and clients read it whole; the tap waits
    for it)."""
    if args.tls_keylog is None or Path(args.tls_keylog).is_file():
        return False
    if Path(args.tls_keylog).is_dir():
        _error(f"--tls-keylog {args.tls_keylog} is a directory: give the key log file (SSLKEYLOGFILE) in it")
    else:
        _error(f"--tls-keylog {args.tls_keylog}: no such file")
    return True


def cmd_read(args: argparse.Namespace, console: Console) -> int:
    """Decode captures into DIR (``inspector.cli.read_command``: checked first, built aside, published when
    complete)."""
    options = _read_options(args)
    if _keylog_missing(args):
        return ExitCode.USAGE
    from inspector.cli.read_command import run

    return run(args, options, console, lambda: _real(console), owns_process=args.owns_process)


# -- show -------------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    from inspector.cli.event_filter import FilterError, compile_filter, equal_values
    from inspector.rows.conn_ids import base, block_of

    try:
        filters = [compile_filter(f) for f in args.filter]
    except FilterError as exc:
        _error(f"{exc}")
        return ExitCode.USAGE
    options = _read_options(args)
    if _keylog_missing(args):
        return ExitCode.USAGE
    if _events_folder(Path(args.capture)):
        return _show_events(args, console, filters)
    problem = input_problem(args.capture)
    if problem is not None:
        _error(problem)
        return ExitCode.INPUT
    summary = Summary()
    table = EventTable(capture=Path(args.capture).name, records=options.records, limits=options.limits)
    shown = examined = 0
    limit: int | None = args.limit
    # the capture's connections numbered as the dataset that --filter conn_id=N comes from numbers them
    # (inspector.rows.conn_ids: a capture's block), else from 1
    blocks = {block_of(int(v)) for v in equal_values(args.filter, "conn_id")}
    first = base(min(blocks)) if blocks else 0
    try:
        for ev in iter_capture(args.capture, summary, options, conn_id_base=first):
            table.add(ev)
            for row in table.take().to_pylist():
                examined += 1
                if all(f(row) for f in filters):
                    _print_row(console, row, args.verbose)
                    shown += 1
                    if shown == limit:
                        break
            if shown == limit:
                break
    except CaptureError as exc:
        _error(f"{exc}")
        return ExitCode.INPUT
    except BrokenPipeError:
        raise
    except OSError as exc:  # the key log could not be read (the capture's own errors are CaptureError)
        _error(_unreadable(exc, args.capture))
        return ExitCode.INPUT
    if shown == limit:  # the rest of the capture was not read: its totals and warnings are not known
        console.print(f"[dim]{shown:,} shown (stopped at --limit {limit}, after {examined:,} "
                      f"message{'s' if examined != 1 else ''} read)[/]", highlight=False)
        return ExitCode.OK
    console.print(f"[dim]{shown:,} of {summary.messages:,} messages shown[/]", highlight=False)
    print_notes(console, summary)
    return ExitCode.OK


def _events_folder(path: Path) -> bool:
    """``path`` is a folder of events (``read``'s or the tap's output, or its ``events`` folder), not a capture."""
    return path.is_dir() and ((path / "events").is_dir() or any(path.glob("*.parquet")))


def _show_events(args: argparse.Namespace, console: Console, filters: list[Callable[[dict[str, Any]], bool]]
                 ) -> int:
    """``show DIR``: the messages of an events dataset (``read``'s or the tap's output), batch by batch, as
    ``show CAPTURE`` prints them (the tap keeps no capture: its evidence is shown from its events)."""
    from contract.events import EVENT_COLUMNS
    from inspector.rows.parquet_file import iter_events
    from pipelines.preflight import events_problem

    columns = tuple(c.name for c in EVENT_COLUMNS)
    problem = events_problem(args.capture)
    if problem is not None:
        _error(problem)
        return ExitCode.INPUT
    shown = examined = 0
    limit: int | None = args.limit
    try:
        for batch in iter_events(Path(args.capture), columns):
            for row in batch.to_pylist():
                examined += 1
                if all(f(row) for f in filters):
                    _print_row(console, {c: row.get(c) for c in columns}, args.verbose)
                    shown += 1
                    if shown == limit:
                        console.print(f"[dim]{shown:,} shown (stopped at --limit {limit}, after {examined:,} "
                                      f"message{'s' if examined != 1 else ''} read)[/]", highlight=False)
                        return ExitCode.OK
    except (OSError, ValueError) as exc:  # what the check cannot see (a file damaged after its footer)
        _error(f"{args.capture}: the events cannot be read ({str(exc).strip().splitlines()[0]})")
        return ExitCode.INPUT
    console.print(f"[dim]{shown:,} of {examined:,} messages shown[/]", highlight=False)
    return ExitCode.OK


def _print_row(console: Console, row: dict[str, Any], verbose: bool) -> None:
    """One message's line; every value taken from the traffic (client id, principal, status, ...) is escaped, so
    text such as ``[/]`` in a client id prints as it is, never as rich markup."""
    escape = escape_markup
    ts = row["ts"].strftime("%H:%M:%S.%f")
    arrow = "→" if row["direction"] == "request" else "←"
    name = escape(row["api_name"] or f"key {row['api_key']}")
    head = (f"{ts} #{row['conn_id']} {escape(_endpoint(row['client_ip'], row['client_port']))} {arrow} "
            f"{escape(_endpoint(row['broker_ip'], row['broker_port']))} [bold]{name}[/]")
    if row["api_version"] is not None:
        head += f" v{row['api_version']}"
    head += f" {row['direction']}"
    if row["correlation_id"] is not None:  # a legacy SASL token has none
        head += f" corr={row['correlation_id']}"
    if row["client_id"]:
        head += f" client={escape(row['client_id'])}"
    if row["principal"] and row["envelope_correlation_id"] is None:  # who the connection authenticated as
        head += f" principal={escape(str(row['principal']))}"
    if row["tls"]:
        head += " tls"
    if row["latency_ms"] is not None:
        head += f" {row['latency_ms']:.2f}ms"
    if row["error_code"]:
        head += f" [red]error={row['error_code']}[/]"
    if row["envelope_correlation_id"] is not None:
        head += (f" (in Envelope corr={row['envelope_correlation_id']} "
                 f"principal={escape(str(row['principal']))})")
    if row["request_missing"]:
        head += (f" [yellow](request missing; candidates {escape(str(row['candidates']))}, "
                 f"confidence {row['confidence']})[/]")
    if row["decode_status"] != "ok":
        head += f" [red]{escape(row['decode_status'])}[/]"
    console.print(head, highlight=False, markup=True)
    if verbose and row["body"]:
        _print_tree(console, json.loads(row["body"]), "    ")


def _unreadable(exc: OSError, capture: str) -> str:
    return f"{exc.filename or capture}: cannot read it: {exc.strerror or exc}"


def _endpoint(ip: str | None, port: int | None) -> str:
    """``ip:port``, an IPv6 address in brackets (``[::1]:9092``), as every output writes an endpoint."""
    return str(Endpoint(str(ip), port)) if port is not None else str(ip)


def _print_tree(console: Console, value: Any, indent: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                console.print(f"{indent}{visible(str(key))}:", highlight=False, markup=False)
                _print_tree(console, item, indent + "    ")
            else:
                console.print(f"{indent}{visible(str(key))}: {visible(json.dumps(item, ensure_ascii=False))}",
                              highlight=False, markup=False)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                console.print(f"{indent}[{i}]", highlight=False, markup=False)
                _print_tree(console, item, indent + "    ")
            else:
                console.print(f"{indent}[{i}] {visible(json.dumps(item, ensure_ascii=False))}", highlight=False,
                              markup=False)


def cmd_tap(args: argparse.Namespace, console: Console) -> int:
    from inspector.tap import command as tap

    return tap.run(args)


def cmd_clients(args: argparse.Namespace, console: Console) -> int:
    """The client inventory of captures or events datasets, in the terminal (pyarrow only), batch by batch: memory
    does not grow with the events."""
    from inspector.cli.clients_output import print_clients
    from inspector.rows.client_inventory import COLUMNS, Inventory

    found = Inventory()
    code = _each_batch(args, COLUMNS, found.add)
    if code == ExitCode.OK:
        print_clients(console, [c.row() for c in found.clients()], args.format)
    return code


def cmd_topics(args: argparse.Namespace, console: Console) -> int:
    """The topic map of captures or events datasets, in the terminal (pyarrow only), batch by batch."""
    from inspector.cli.topic_map_output import print_topic_map
    from inspector.rows.topic_traffic import COLUMNS, TopicMap

    found = TopicMap()
    code = _each_batch(args, COLUMNS, found.add)
    if code == ExitCode.OK:
        print_topic_map(console, [r.row() for r in found.rows()], args.format)
    return code


def _each_batch(args: argparse.Namespace, columns: tuple[str, ...], add: Callable[[Any], None]) -> int:
    """Hand ``add`` the events of ``args.inputs`` (captures decoded here, or ``read`` output directories), batch by
    batch, ``columns`` at least; the exit code (a problem said in one line)."""
    from inspector.read.reader import BATCH_ROWS
    from inspector.rows.parquet_file import iter_events
    from pipelines.preflight import events_problem

    options = _read_options(args)
    if _keylog_missing(args):
        return ExitCode.USAGE
    for name in args.inputs:
        path = Path(name)
        if path.is_dir():
            problem = events_problem(name)  # the identifying columns: a column added since reads as null
            if problem is not None:
                _error(problem)
                return ExitCode.INPUT
            try:
                for batch in iter_events(path, columns):
                    add(batch)
            except (OSError, ValueError) as exc:  # what the check cannot see (a file damaged after its footer)
                _error(f"{name}: the events cannot be read ({str(exc).strip().splitlines()[0]})")
                return ExitCode.INPUT
            continue
        problem = input_problem(name)
        if problem is not None:
            _error(problem)
            return ExitCode.INPUT
        table = EventTable(capture=path.name, records=options.records, limits=options.limits)
        try:
            for ev in iter_capture(name, Summary(), options, body_text=table.takes_text):
                table.add(ev)
                if len(table) >= BATCH_ROWS:
                    add(table.take())
        except CaptureError as exc:
            _error(f"{exc}")
            return ExitCode.INPUT
        except OSError as exc:  # the key log could not be read
            _error(_unreadable(exc, name))
            return ExitCode.INPUT
        if len(table):
            add(table.take())
    return ExitCode.OK


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from pipelines import report

    return report.run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    "read": cmd_read,
    "show": cmd_show,
    "clients": cmd_clients,
    "topics": cmd_topics,
    "tap": cmd_tap,
    "report": cmd_report,
}


def main(argv: list[str] | None = None, *, owns_process: bool = False) -> int:
    """The command's exit code. ``owns_process``: the process ends when this returns (:func:`run`), so a command
    need not put back what it changed of the process's state (``read``'s signal handlers)."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    args = parser.parse_args(argv)
    args.owns_process = owns_process
    console = cast("Console", _LazyConsole(stderr=args.command == "read"))
    try:
        return COMMANDS[args.command](args, console)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except InspectorError as exc:  # the project's own errors not answered where raised: one line, never a traceback
        _error(str(exc))
        return exc.exit_code


def run() -> None:
    """The console script: :func:`main`, then the process ends at once with its exit code.

    Everything is written and closed when :func:`main` returns; tearing the interpreter down after it (every
    module and object freed one by one, pyarrow's static destructors run) would only give memory back that
    the operating system takes back anyway: ~15 ms of every run. With a thread still running the exit is the
    usual one (which waits for it).
    """
    code = main(owns_process=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said there
            stream.flush()
    if threading.active_count() > 1:
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
