"""How ``kafka-inspector topics`` prints the topic map: as ``clients`` prints its inventory
(``inspector/cli/clients_output.py``: a table for a person, TSV or JSON for a script; JSON rows are those ``report``
writes to ``topics.parquet``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contract.clients import software_text
from inspector.cli.clients_output import print_rows

if TYPE_CHECKING:
    from rich.console import Console

Row = dict[str, Any]


def _seen(row: Row) -> str:
    first, last = row["first_seen"], row["last_seen"]
    if not isinstance(first, datetime) or not isinstance(last, datetime):
        return ""
    return f"{first:%Y-%m-%d %H:%M:%S} … {last:%H:%M:%S}"


def _records(row: Row) -> str:
    if row["record_bytes"] is None and row["records"] is None:
        return "not decoded"
    records = "?" if row["records"] is None else f"{row['records']:,}"
    size = "?" if row["record_bytes"] is None else f"{row['record_bytes']:,}"
    return f"{records} records, {size} bytes"


#: The columns a person sees: title, the TSV header's name, and the cell's text from a row.
COLUMNS: tuple[tuple[str, str, Callable[[Row], Any]], ...] = (
    ("topic", "topic", lambda r: r["topic"]),
    ("role", "role", lambda r: r["role"]),
    ("client", "client_ip", lambda r: r["client_ip"]),
    ("client id", "client_id", lambda r: r["client_id"]),
    ("principal", "principal", lambda r: r["principal"]),
    ("software", "software", software_text),
    ("group", "group_id", lambda r: r["group_id"]),
    ("seen", "seen", _seen),
    ("requests", "requests", lambda r: r["requests"]),
    ("records", "records", _records),
    ("brokers", "brokers", lambda r: ", ".join(r["brokers"])),
)


def print_topic_map(console: Console, rows: list[Row], fmt: str) -> None:
    """Print ``rows`` (``TopicClient.row()`` dicts) as ``fmt`` (``table``, ``tsv`` or ``json``) says."""
    print_rows(console, rows, fmt, COLUMNS, "topic client")
