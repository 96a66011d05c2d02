"""Outputs unchanged: snapshot what `read` and `show` write for every capture, and compare two snapshots.

    .venv/bin/python bench/same_outputs.py snapshot DIR   # before a change
    .venv/bin/python bench/same_outputs.py snapshot DIR2  # after it
    .venv/bin/python bench/same_outputs.py compare DIR DIR2

A snapshot holds, per capture of ``pcaps/``, ``pcaps/tls/`` (read with ``--tls-keylog`` when its key log,
``NAME.keylog``, is beside it) and ``../shared/real-captures/`` (when present), the files of
``read --format parquet`` (events Parquet, ``connections.parquet``, ``summary.json``), of ``read --format
jsonl`` and the text of ``show`` and ``show -v``, plus ``read --records records`` in JSONL (the dict path).
``compare`` lists every file that differs byte for byte (a ``summary.json`` but for the time each
``read`` started, ``CLOCK_KEYS``), or is in one snapshot only, and exits 1 if any does. A change to the hot
path must leave ``compare`` silent (issue 17, item 9).

A change that adds columns compares with ``--except NAME`` (repeatable): a file that differs is then
compared without them, Parquet files as tables without those columns, JSON lines and ``summary.json`` as
values without those keys (at any depth), and counts as equal if nothing else differs; text must still be
identical.
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
CLI = [sys.executable, "-m", "inspector.cli.main"]


def captures() -> list[Path]:
    """Every capture the project ships, and the real captures beside it."""
    found = sorted(p for p in (REPO / "pcaps").iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))
    found += sorted(p for p in (REPO / "pcaps" / "tls").iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))
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
        keylog = capture.with_suffix(".keylog")
        keys = ["--tls-keylog", str(keylog)] if keylog.exists() else []
        _run(["read", name, "--output", str(base / "parquet"), "--overwrite", "--quiet", *keys])
        _run(["read", name, "--output", str(base / "jsonl"), "--format", "jsonl", "--overwrite", "--quiet", *keys])
        _run(["read", name, "--output", str(base / "records"), "--format", "jsonl", "--records", "records",
              "--overwrite", "--quiet", *keys])
        _run(["show", name, *keys], base / "show.txt")
        _run(["show", name, "-v", *keys], base / "show-v.txt")
        print(capture.name, flush=True)


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if p.is_file()}


def _without(value: object, names: frozenset[str]) -> object:
    """A JSON value without the keys ``names``, at any depth."""
    if isinstance(value, dict):
        return {k: _without(v, names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [_without(v, names) for v in value]
    return value


def _equal_except(a: Path, b: Path, names: frozenset[str]) -> bool:
    """Whether two output files hold the same once the columns or keys ``names`` are left out."""
    if a.suffix == ".parquet":
        import pyarrow.parquet as pq

        left, right = pq.read_table(a), pq.read_table(b)
        return left.drop_columns([n for n in names if n in left.column_names]).equals(
            right.drop_columns([n for n in names if n in right.column_names]), check_metadata=False)
    if a.suffix in (".jsonl", ".json"):
        def values(path: Path) -> list[object]:
            text = path.read_text()
            lines = text.splitlines() if path.suffix == ".jsonl" else [text]
            return [_without(json.loads(line), names) for line in lines]

        return values(a) == values(b)
    return False


#: What two runs over the same captures always differ in: the wall-clock time each ``read`` started
#: (``summary.json``'s ``runs[].started``). A summary that differs in it alone counts as identical.
CLOCK_KEYS = frozenset({"started"})


def compare(a: Path, b: Path, names: frozenset[str] = frozenset()) -> int:
    left, right = _files(a), _files(b)
    differ = sorted(p for p in left & right if not filecmp.cmp(a / p, b / p, shallow=False))
    clock = [p for p in differ if p.name == "summary.json" and _equal_except(a / p, b / p, CLOCK_KEYS)]
    only_new = [p for p in differ if p not in clock and names and _equal_except(a / p, b / p, names | CLOCK_KEYS)]
    differ = [p for p in differ if p not in only_new and p not in clock]
    for p in differ:
        print(f"differs: {p}")
    for p in sorted(left ^ right):
        print(f"only in {'first' if p in left else 'second'}: {p}")
    same = len(left & right) - len(differ) - len(only_new)
    print(f"{same} files identical ({len(clock)} of them summaries but for the time a read started), "
          f"{len(only_new)} equal except {', '.join(sorted(names)) or '-'}, {len(differ)} differ, "
          f"{len(left ^ right)} in one snapshot only")
    return 1 if differ or left ^ right else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("snapshot").add_argument("dir", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("first", type=Path)
    cmp.add_argument("second", type=Path)
    cmp.add_argument("--except", dest="names", action="append", default=[], metavar="NAME",
                     help="a new column or key: files that differ are compared without it")
    args = parser.parse_args()
    if args.command == "snapshot":
        snapshot(args.dir)
        return 0
    return compare(args.first, args.second, frozenset(args.names))


if __name__ == "__main__":
    sys.exit(main())
