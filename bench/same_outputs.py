"""Outputs unchanged: snapshot what `read` and `show` write for every capture, and compare two snapshots.

    .venv/bin/python bench/same_outputs.py snapshot DIR   # before a change
    .venv/bin/python bench/same_outputs.py snapshot DIR2  # after it
    .venv/bin/python bench/same_outputs.py compare DIR DIR2

A snapshot holds, per capture of ``pcaps/`` and ``../shared/real-captures/`` (when present), the files of
``read --format parquet`` (events Parquet, ``connections.parquet``, ``summary.json``), of ``read --format
jsonl`` and the text of ``show`` and ``show -v``, plus ``read --records records`` in JSONL (the dict path).
``compare`` lists every file that differs byte for byte, or is in one snapshot only, and exits 1 if any
does. A change to the hot path must leave ``compare`` silent (issue 17, item 9).

A change that adds an events column changes the events files and nothing else: ``compare DIR DIR2
--added-column NAME`` accepts an events Parquet file of the second snapshot when its table without column
``NAME`` equals the first's (schema, values and row groups), and a JSONL file when each of its lines without
the key ``NAME`` is the first's line, byte for byte; every other file must still be identical.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "inspector.cli"]


def captures() -> list[Path]:
    """Every capture the project ships, and the real captures beside it."""
    found = sorted(p for p in (REPO / "pcaps").iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))
    real = REPO.parent / "shared" / "real-captures"
    if real.is_dir():
        found += sorted(p for p in real.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))
    return found


def _run(args: list[str], out: Path | None = None) -> None:
    env = dict(os.environ, COLUMNS="160", TERM="dumb", NO_COLOR="1")
    result = subprocess.run(CLI + args, cwd=REPO, env=env, capture_output=True, timeout=600)
    if out is not None:
        out.write_bytes(result.stdout + b"\n--- stderr ---\n" + result.stderr
                        + f"\n--- exit {result.returncode} ---\n".encode())
    elif result.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {result.returncode}\n{result.stderr.decode(errors='replace')}")


def snapshot(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for capture in captures():
        base = target / capture.name
        base.mkdir(exist_ok=True)
        name = str(capture)
        _run(["read", name, "--output", str(base / "parquet"), "--overwrite", "--quiet"])
        _run(["read", name, "--output", str(base / "jsonl"), "--format", "jsonl", "--overwrite", "--quiet"])
        _run(["read", name, "--output", str(base / "records"), "--format", "jsonl", "--records", "records",
              "--overwrite", "--quiet"])
        _run(["show", name], base / "show.txt")
        _run(["show", name, "-v"], base / "show-v.txt")
        print(capture.name, flush=True)


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if p.is_file()}


def _same_but_column(first: Path, second: Path, column: str) -> bool:
    """Whether ``second`` is ``first`` with the events column ``column`` added (see the module's docstring)."""
    if first.suffix == ".parquet" and first.parent.name == "events":
        import pyarrow.parquet as pq

        old, new = pq.ParquetFile(first), pq.ParquetFile(second)
        if column not in new.schema_arrow.names or old.num_row_groups != new.num_row_groups:
            return False
        groups = range(old.num_row_groups)
        return all(new.read_row_group(i).drop_columns([column]).equals(old.read_row_group(i), check_metadata=True)
                   for i in groups)
    if first.suffix == ".jsonl":
        old_lines = first.read_bytes().split(b"\n")
        new_lines = second.read_bytes().split(b"\n")
        if len(old_lines) != len(new_lines):
            return False
        for old_line, new_line in zip(old_lines, new_lines, strict=True):
            if not old_line and not new_line:
                continue
            row = json.loads(new_line)
            if column not in row:
                return False
            del row[column]
            if json.dumps(row, ensure_ascii=False).encode() != old_line:
                return False
        return True
    return False


def compare(a: Path, b: Path, added_column: str | None = None) -> int:
    left, right = _files(a), _files(b)
    differ = sorted(p for p in left & right if not filecmp.cmp(a / p, b / p, shallow=False))
    added = [p for p in differ if added_column and _same_but_column(a / p, b / p, added_column)]
    for p in added:
        print(f"differs by the added column {added_column!r} alone: {p}")
    differ = [p for p in differ if p not in added]
    for p in differ:
        print(f"differs: {p}")
    for p in sorted(left ^ right):
        print(f"only in {'first' if p in left else 'second'}: {p}")
    same = len(left & right) - len(differ) - len(added)
    print(f"{same} files identical, {len(added)} differ by the added column alone, {len(differ)} differ, "
          f"{len(left ^ right)} in one snapshot only")
    return 1 if differ or left ^ right else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("snapshot").add_argument("dir", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("first", type=Path)
    cmp.add_argument("second", type=Path)
    cmp.add_argument("--added-column", metavar="NAME", help="an events column the second snapshot adds")
    args = parser.parse_args()
    if args.command == "snapshot":
        snapshot(args.dir)
        return 0
    return compare(args.first, args.second, args.added_column)


if __name__ == "__main__":
    sys.exit(main())
