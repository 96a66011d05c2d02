"""What ``report`` checks before Spark starts: each problem is one line naming it and the fix, with its exit code.

Spark takes seconds to start and answers a mistake with a Java stack trace (a JSON lines folder, a folder of
other Parquet files, a master that is not one or does not answer: 22 to 147 lines, or a minute of retries
first). So, with pyarrow and the standard library only:

* the events (:func:`events_problem`, which ``clients`` uses too): the folder exists, holds Parquet files and
  nothing Spark would fail to read as one, and each file's schema (its footer only) has the events contract's
  identifying columns with the contract's types (``contract/events.py``); a ``read --format jsonl`` folder is
  named as such;
* the master (:func:`master_problem`): a Spark master URL (``local[*]``, ``spark://HOST:PORT``, ``yarn``,
  ``k8s://...``); a standalone or Kubernetes master must accept a TCP connection within
  :data:`CONNECT_TIMEOUT` seconds;
* the hosts file can be read as text, and the output folder (and ``--html``'s) can be created and written, and
  is not inside the events folder (the findings would be read as events next time).

Exit codes: 2 usage (a master URL that is not one, an output inside the events), 3 input (events, hosts file,
an unreachable master), 4 output.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contract.errors import ExitCode
from contract.events import BOOL, EVENT_COLUMNS, FLOAT64, INT16, INT32, INT64, LIST_INT16, STRING, TIMESTAMP

#: The columns that make a Parquet file an events file (every version of ``read`` wrote them).
IDENTIFYING = ("ts", "conn_id", "direction", "api_key")
#: Seconds a master's address has to accept a connection (all its addresses together).
CONNECT_TIMEOUT = 10.0
_WRITE_EVENTS = "write an events dataset with `kafka-inspector read CAPTURE... --output DIR`"
_MASTERS = "local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"
_LOCAL = re.compile(r"local(\[(\*|[1-9]\d*)(,\d+)?\])?|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]")
_TYPES = {c.name: c.type for c in EVENT_COLUMNS}


@dataclass(frozen=True)
class Problem:
    """One line to print, and the exit code."""

    code: int
    message: str


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def check(events: str | Sequence[str], output: str, master: str | None, hosts: str | None, html: str | None,
          follow: bool = False) -> Problem | None:
    """The first problem of a report's arguments, in this order: the events, the hosts file, the master (its
    address tried last of the inputs: it may take :data:`CONNECT_TIMEOUT`), the output (created when all else is
    right); None when there is none. ``follow``: the events folders are not checked (a tap may not have made its
    folder yet; the stream checks each file as it comes, ``pipelines/follow_input.py``)."""
    paths = [events] if isinstance(events, str) else list(events)
    for path in [] if follow else paths:
        problem = events_problem(path)
        if problem is not None:
            return Problem(ExitCode.INPUT, problem)
    problem = hosts_problem(hosts) if hosts else None
    if problem is not None:
        return Problem(ExitCode.INPUT, problem)
    found = master_problem(master) if master else None
    for path in paths:
        found = found or output_problem(output, path, html)
    return found


# -- the events ------------------------------------------------------------------------------------------------


def events_problem(path: str, required: Sequence[str] = IDENTIFYING) -> str | None:
    """Why ``path`` (a ``read`` output folder, its ``events`` folder, or one Parquet file) is not an events dataset
    Spark or pyarrow can read, in one line; None when it is one (or is remote: Spark finds out)."""
    import pyarrow.parquet as pq  # noqa: TID251 - a footer read by report and clients, never by `read`

    if not _is_local(path):
        return None
    local = _local(path)
    if not os.path.exists(local):
        return f"{path} does not exist ({_WRITE_EVENTS})"
    if os.path.isdir(local) and not os.path.isdir(os.path.join(local, "events")):
        jsonl = sorted(n for n in os.listdir(local) if n.startswith("events") and n.endswith(".jsonl"))
        if jsonl:
            return (f"{path} holds JSON lines events ({jsonl[0]}), not Parquet: "
                    f"read the captures again without --format jsonl (`kafka-inspector read CAPTURE... --output DIR`)")
    files = _files(local)
    if not any(name.endswith(".parquet") for name in files):
        return f"{path} holds no Parquet events ({_WRITE_EVENTS})"
    for name in files:
        try:
            schema = pq.read_schema(name)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            return f"{name} is not a Parquet file ({first_line(exc)}): an events folder holds only `read`'s files"
        missing = [c for c in required if c not in schema.names]
        if missing:
            shown = ", ".join(schema.names[:8]) + (", ..." if len(schema.names) > 8 else "")
            return (f"{name} is not an events file: it has no {', '.join(missing)} column (its columns: {shown}); "
                    f"{_WRITE_EVENTS}")
        for field in schema:
            logical = _TYPES.get(field.name)
            if logical is not None and not _fits(logical, field.type):
                return (f"{name} is not an events file: its column {field.name} is {field.type}, the events "
                        f"contract's is {logical}; {_WRITE_EVENTS}")
    return None


def _files(local: str) -> list[str]:
    """The files Spark reads for ``local``: a file itself; a folder's (its ``events`` folder's) files, but for
    hidden ones (``.``, ``_``: a file in progress, Spark's markers)."""
    if os.path.isfile(local):
        return [local]
    folder = os.path.join(local, "events") if os.path.isdir(os.path.join(local, "events")) else local
    out: list[str] = []
    for d, dirs, names in os.walk(folder):
        dirs[:] = sorted(n for n in dirs if not n.startswith((".", "_")))
        out.extend(os.path.join(d, n) for n in sorted(names) if not n.startswith((".", "_")))
    return out


def _fits(logical: str, t: Any) -> bool:
    """Whether an Arrow type holds the contract's logical type as ``read`` writes it."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if logical == TIMESTAMP:
        return bool(pa.types.is_timestamp(t))
    if logical == STRING:
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t))
    if logical == LIST_INT16:
        return bool((pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_int16(t.value_type))
    exact = {BOOL: pa.bool_(), INT16: pa.int16(), INT32: pa.int32(), INT64: pa.int64(), FLOAT64: pa.float64()}
    return bool(t == exact[logical])


# -- the master ------------------------------------------------------------------------------------------------


def master_problem(master: str, timeout: float = CONNECT_TIMEOUT) -> Problem | None:
    """Why ``master`` is not a Spark master this report can use, or None. A standalone (``spark://``) or
    Kubernetes (``k8s://``) master must accept a TCP connection on one of its addresses within ``timeout``."""
    if _LOCAL.fullmatch(master) or master == "yarn":
        return None
    if master.startswith("spark://"):
        addresses = master[len("spark://"):].split(",")
        default_port = 7077
    elif master.startswith("k8s://"):
        rest = master[len("k8s://"):]
        scheme, _, rest = rest.rpartition("://")
        addresses = [rest.split("/", 1)[0]]
        default_port = 80 if scheme == "http" else 443
    else:
        return Problem(ExitCode.USAGE, f"--master {master}: not a Spark master URL (use {_MASTERS})")
    parsed = [_host_port(a, default_port) for a in addresses]
    if any(p is None for p in parsed):
        return Problem(ExitCode.USAGE, f"--master {master}: not a Spark master URL (use {_MASTERS})")
    errors = []
    each = timeout / len(parsed)
    for host, port in (p for p in parsed if p is not None):
        try:
            with socket.create_connection((host, port), timeout=each):
                return None
        except OSError as exc:
            errors.append(f"{_shown(host)}:{port}: {_reason(exc)}")
    return Problem(ExitCode.INPUT, f"--master {master}: the master does not answer ({'; '.join(errors)}): start it, "
                                   f"or give the master's URL as its web page shows it (--master local[*] runs here)")


def _host_port(address: str, default: int) -> tuple[str, int] | None:
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(\d+))?|([^:\[\]/]+)(?::(\d+))?", address.strip())
    if not m:
        return None
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4) or default)
    return (host, port) if 0 < port < 65536 else None


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _reason(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer (timed out)"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    return exc.strerror or first_line(exc)


# -- hosts, output ---------------------------------------------------------------------------------------------


def hosts_problem(path: str) -> str | None:
    """Why the ``--hosts`` file cannot be read as text, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            f.read()
    except FileNotFoundError:
        return f"--hosts {path}: no such file"
    except IsADirectoryError:
        return f"--hosts {path} is a directory: give a file of \"name ip\" lines"
    except UnicodeDecodeError:
        return f"--hosts {path} is not text (UTF-8): give a file of \"name ip\" lines"
    except OSError as exc:
        return f"--hosts {path}: cannot read it: {exc.strerror or first_line(exc)}"
    return None


def output_problem(output: str, events: str, html: str | None = None) -> Problem | None:
    """Why the report cannot be written to ``output`` (and ``html``), or None; a local ``output`` is created."""
    if not _is_local(output):
        return None
    local = _local(output)
    if _is_local(events) and os.path.exists(_local(events)):
        folder = _local(events)
        if os.path.isdir(os.path.join(folder, "events")):
            folder = os.path.join(folder, "events")
        if os.path.isdir(folder) and _inside(local, folder):
            return Problem(ExitCode.USAGE, f"--output {output} is inside the events folder {folder}: the findings "
                                           f"would be read as events; give another folder (for example "
                                           f"{folder.rstrip('/')}-report)")
    if html is not None and os.path.isdir(html):
        return Problem(ExitCode.OUTPUT, f"--html {html} is a directory: give the page's file name "
                                        f"(for example {os.path.join(html, 'report.html')})")
    page = os.path.dirname(os.path.abspath(html)) if html is not None else None
    problem = None
    if page is not None and os.path.realpath(page) != os.path.realpath(local):  # checked before OUTPUT is made
        problem = _writable_folder(page, "--html", create=False)
    problem = problem or _writable_folder(local, "--output")
    return Problem(ExitCode.OUTPUT, problem) if problem is not None else None


def _inside(path: str, folder: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _writable_folder(folder: str, option: str, create: bool = True) -> str | None:
    if os.path.exists(folder) and not os.path.isdir(folder):
        return f"{option} {folder} is a file: give a folder"
    try:
        if create:
            os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".report-check-"):
            pass
    except OSError as exc:
        return f"{option}: cannot write to {folder}: {exc.strerror or first_line(exc)}"
    return None
