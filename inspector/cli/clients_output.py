"""How ``kafka-inspector clients`` prints the inventory: a table for a person, TSV or JSON for a script.

* ``table`` (the default): on a terminal wide enough for every cell's longest word, a table at its width; on a
  narrower one, one block per client (a field a line), so no cell is ever cut a character at a time; off a
  terminal (a pipe, a file), the table at its natural width: one line per row whatever the width.
* ``tsv``: a header line, then one line per client, cells separated by tabs (a tab, newline or other control
  character inside a value is written as its escape, ``\\x09``).
* ``json``: a JSON array of the rows ``report`` writes to ``clients.parquet`` (``contract.clients.Client.row``),
  one row a line, times in ISO 8601.

Every value taken from the traffic goes through ``contract.text.visible`` (and rich's markup escaping where rich
prints it); JSON escapes every non-ASCII character.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contract.clients import apis_text, errors_text, readiness, software_text
from contract.text import visible

if TYPE_CHECKING:
    from rich.console import Console

Row = dict[str, Any]


def _seen(row: Row) -> str:
    first, last = row["first_seen"], row["last_seen"]
    return f"{first:%Y-%m-%d %H:%M:%S} … {last:%H:%M:%S}" if first is not None and last is not None else ""


#: The columns a person sees: title, the TSV header's name, and the cell's text from a row.
COLUMNS: tuple[tuple[str, str, Callable[[Row], Any]], ...] = (
    ("client", "client_ip", lambda r: r["client_ip"]),
    ("client id", "client_id", lambda r: r["client_id"]),
    ("principal", "principal", lambda r: r["principal"]),
    ("software", "software", software_text),
    ("seen", "seen", _seen),
    ("brokers", "brokers", lambda r: ", ".join(r["brokers"])),
    ("APIs (version ×requests)", "apis", apis_text),
    ("errors (×responses)", "errors", errors_text),
    ("Kafka 4.0", "kafka_4_0", lambda r: "; ".join(readiness(r)) or "ready"),
)


#: A printed column: title, the TSV header's name, and the cell's text from a row.
Columns = tuple[tuple[str, str, Callable[[Row], Any]], ...]


def _cells(row: Row, columns: Columns = COLUMNS) -> list[str]:
    return [visible(str(value)) if (value := text(row)) is not None else "" for _, _, text in columns]


def print_clients(console: Console, rows: list[Row], fmt: str) -> None:
    """Print ``rows`` (``Client.row()`` dicts) as ``fmt`` (``table``, ``tsv`` or ``json``) says."""
    print_rows(console, rows, fmt, COLUMNS, "client")


def print_rows(console: Console, rows: list[Row], fmt: str, columns: Columns, noun: str) -> None:
    """Print ``rows`` under ``columns`` as ``fmt`` says (``noun``: what a row is, for the table's title); the
    ``clients`` and ``topics`` commands print this way."""
    if fmt == "tsv":
        out = sys.stdout
        out.write("\t".join(name for _, name, _ in columns) + "\n")
        for row in rows:
            out.write("\t".join(_cells(row, columns)) + "\n")
    elif fmt == "json":
        sys.stdout.write(_json(rows, noun))
    else:
        _table(console, rows, columns, noun)


def _json(rows: list[Row], noun: str) -> str:
    def plain(value: object) -> str:
        if isinstance(value, datetime):
            return value.isoformat()
        raise TypeError(f"{type(value).__name__} in a {noun} row")

    lines = [json.dumps(row, default=plain) for row in rows]
    return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"


def _table(console: Console, rows: list[Row], columns: Columns, noun: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(title=f"{len(rows)} {noun}(s)", show_lines=True)
    for title, _, _ in columns:
        table.add_column(title, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in _cells(row, columns)))
    width = Measurement.get(console, console.options.update_width(1 << 20), table)  # unbounded
    if not console.is_terminal:  # a pipe or a file: the table as wide as its longest row
        Console(file=console.file, width=max(width.maximum, 1), soft_wrap=True).print(table)
    elif width.minimum <= console.width:
        console.print(table)
    else:  # too narrow for the table: a block per row
        console.print(f"{len(rows)} {noun}(s)", highlight=False)
        for row in rows:
            cells = _cells(row, columns)
            console.print()
            for (title, _, _), cell in zip(columns, cells, strict=True):
                console.print(f"[bold]{escape(title)}:[/] {escape(cell)}", highlight=False)
