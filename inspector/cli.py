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
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contract.text import visible
from inspector.capture_file import CaptureError
from inspector.decode_options import add_decode_options as _add_decode_options
from inspector.decode_options import read_options as _read_options
from inspector.events import EventTable
from inspector.reader import iter_capture
from inspector.summary import Summary
from inspector.summary_output import escape_markup

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


#: Commands whose modules need nothing of ``tap`` and ``report`` (nor rich, which they import).
_LEAN_COMMANDS = ("read", "show", "clients")


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

    clients = sub.add_parser("clients", help="one row per client: software, versions used, brokers, errors")
    clients.add_argument("inputs", nargs="+", metavar="CAPTURE_OR_EVENTS",
                         help="pcap/pcapng files, or directories written by `read` (their events)")
    _add_decode_options(clients)

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


def _keylog_missing(args: argparse.Namespace) -> bool:
    """``--tls-keylog FILE`` names no file: said on stderr (read, show and clients read it whole; the tap waits
    for it)."""
    if args.tls_keylog is not None and not Path(args.tls_keylog).is_file():
        _error(f"--tls-keylog {args.tls_keylog}: no such file")
        return True
    return False


def cmd_read(args: argparse.Namespace, console: Console) -> int:
    """Decode captures into DIR (``inspector.read_command``: checked first, built aside, published when complete)."""
    options = _read_options(args)
    if _keylog_missing(args):
        return EXIT_USAGE
    from inspector.read_command import run

    return run(args, options, console, lambda: _real(console))


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
    if _keylog_missing(args):
        return EXIT_USAGE
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
    """One message's line; every value taken from the traffic (client id, principal, status, ...) is escaped, so
    text such as ``[/]`` in a client id prints as it is, never as rich markup."""
    escape = escape_markup
    ts = row["ts"].strftime("%H:%M:%S.%f")
    arrow = "→" if row["direction"] == "request" else "←"
    name = escape(row["api_name"] or f"key {row['api_key']}")
    head = (f"{ts} #{row['conn_id']} {escape(str(row['client_ip']))}:{row['client_port']} {arrow} "
            f"{escape(str(row['broker_ip']))}:{row['broker_port']} [bold]{name}[/]")
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
    from inspector import tap

    return tap.run(args)


def cmd_clients(args: argparse.Namespace, console: Console) -> int:
    """The client inventory of captures or events datasets, in the terminal (pyarrow only), batch by batch: memory
    does not grow with the events."""
    from inspector.client_inventory import COLUMNS, Inventory
    from inspector.parquet_file import iter_events
    from inspector.reader import BATCH_ROWS

    options = _read_options(args)
    if _keylog_missing(args):
        return EXIT_USAGE
    found = Inventory()
    for name in args.inputs:
        path = Path(name)
        if path.is_dir():
            try:
                for batch in iter_events(path, COLUMNS):
                    found.add(batch)
            except (OSError, ValueError) as exc:  # no events there, or not the events contract
                _error(f"{name}: not an events dataset ({exc})")
                return EXIT_CAPTURE
            continue
        if not path.is_file():
            _error(f"{name}: no such file or directory")
            return EXIT_CAPTURE
        table = EventTable(capture=path.name, records=options.records)
        try:
            for ev in iter_capture(name, Summary(), options, body_text=table.takes_text):
                table.add(ev)
                if len(table) >= BATCH_ROWS:
                    found.add(table.take())
        except CaptureError as exc:
            _error(f"{exc}")
            return EXIT_CAPTURE
        if len(table):
            found.add(table.take())
    _print_clients(console, [c.row() for c in found.clients()])
    return EXIT_OK


def _print_clients(console: Console, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from contract.clients import apis_text, errors_text, readiness, software_text

    table = Table(title=f"{len(rows)} client(s)", show_lines=True)
    for column in ("client", "client id", "principal", "software", "seen", "brokers", "APIs (version ×requests)",
                   "errors (×responses)", "Kafka 4.0"):
        table.add_column(column, overflow="fold")
    for row in rows:
        first, last = row["first_seen"], row["last_seen"]
        seen = f"{first:%Y-%m-%d %H:%M:%S} … {last:%H:%M:%S}" if first is not None and last is not None else ""
        cells = (row["client_ip"], row["client_id"], row["principal"], software_text(row), seen,
                 ", ".join(row["brokers"]), apis_text(row), errors_text(row), "; ".join(readiness(row)) or "ready")
        table.add_row(*(escape_markup(visible(str(c))) if c is not None else "" for c in cells))
    console.print(table)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from pipelines import report

    return report.run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    "read": cmd_read,
    "show": cmd_show,
    "clients": cmd_clients,
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
