"""Which new files the ``--follow`` report reads: each part file checked on the driver before Spark reads it.

A tap's part files are complete once they appear (written under a hidden name, renamed into place). What else
may turn up in a followed folder is said in one line and skipped, and the stream goes on: a file that is not
Parquet or is cut short, a Parquet file that is not an events file (none of the contract's key columns), a file
that is gone by the time it is read. An events file of an older version of the project (some columns missing)
is read, its missing columns as null, and said once.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq

from contract.events import EVENT_COLUMNS

#: Columns without which a file is not an events file (every detector reads them).
KEY_COLUMNS = ("ts", "conn_id", "direction", "api_key")
_ALL = tuple(c.name for c in EVENT_COLUMNS)


@dataclass(frozen=True, slots=True)
class Checked:
    path: str  # as Spark names it (a URI)
    problem: str | None = None  # why it is skipped
    note: str | None = None  # read, with this said


def local_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI (or a plain path); None for another file system."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return None


def check(uri: str) -> Checked:
    """Whether the file at ``uri`` is an events file the stream can read (files on other file systems than the
    driver's are left to Spark)."""
    path = local_path(uri)
    if path is None:
        return Checked(uri)
    try:
        schema = pq.read_schema(path)
    except FileNotFoundError:
        return Checked(uri, f"{path}: gone before it could be read")
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        return Checked(uri, f"{path}: not a readable Parquet file ({str(exc).splitlines()[0][:120]})")
    names = set(schema.names)
    missing_keys = [c for c in KEY_COLUMNS if c not in names]
    if missing_keys:
        return Checked(uri, f"{path}: not an events file (no {', '.join(missing_keys)} column)")
    missing = [c for c in _ALL if c not in names]
    if missing:
        return Checked(uri, note=f"{path}: an events file of an older version: {', '.join(missing)} read as null")
    return Checked(uri)
