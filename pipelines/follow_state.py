"""The ``--follow`` report's state between micro-batches, in ``OUTPUT/_checkpoint/state/``.

One version per pass, a directory ``v-BBBBBBBB-IIII`` (the Spark batch id, then the idle passes after it) that
appears whole: it is written under a hidden name and renamed into place (the rename is the commit). It holds

* ``meta.json``: the pass, how far the traffic was settled and seen, and how long ``findings.jsonl`` was after it;
* ``retained/``: the events kept for the next pass (``retention.retain``), as Parquet;
* ``episodes/``: every episode found so far, combined (``findings.combine``'s columns), as Parquet;
* ``seen.json``: the occurrences counted so far whose traffic is still within the horizon (episode id, first
  and last time), so that a pass counts an occurrence once however often it is recomputed;
* ``waiting.pickle``: the occurrences the pass found that end within ``settle`` of the traffic's end (the
  detectors' rows, as PySpark gave them), which the idle pass after it settles without running the detectors
  again (its events are the same).

A pass re-run after a crash (Spark runs a batch again whose commit it did not record) starts from the newest
version before it and cuts ``findings.jsonl`` back to that version's length: nothing is written twice.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Versions kept on disk (the newest; older ones are removed after a pass commits).
KEEP_VERSIONS = 3
_VERSION = re.compile(r"v-(\d{8})-(\d{4})")
WAITING = "waiting.pickle"


@dataclass
class Meta:
    """What a pass left: ``batch`` the Spark batch id (-1: none yet), ``idle`` the idle passes after it."""

    batch: int = -1
    idle: int = 0
    #: occurrences whose last time is at or before this (µs since the epoch) have been considered
    settled_us: int | None = None
    #: the oldest traffic this pass kept whole: older events are only the facts (µs since the epoch)
    kept_from_us: int | None = None
    #: the newest event's time seen (µs since the epoch)
    end_us: int | None = None
    #: the length of findings.jsonl after this pass
    jsonl_bytes: int = 0
    #: events read so far, and files skipped as not events
    events: int = 0
    skipped_files: list[str] = field(default_factory=list)
    has_retained: bool = False
    has_episodes: bool = False
    #: the events kept for the next pass (``retained``), counted as they were written (None: a state written
    #: before this was kept: the next pass counts them)
    retained_events: int | None = None
    #: the oldest of them (µs since the epoch; None: a state written before this was kept)
    retained_oldest_us: int | None = None
    #: whether ``waiting.pickle`` holds the occurrences this pass left to settle
    has_waiting: bool = False


@dataclass
class Version:
    path: Path
    meta: Meta
    #: (episode id, ts_first µs) -> ts_last µs
    seen: dict[tuple[str, int], int]

    @property
    def retained(self) -> str:
        return str(self.path / "retained")

    @property
    def episodes(self) -> str:
        return str(self.path / "episodes")

    def waiting(self) -> list[Any] | None:
        """The occurrences this pass left to settle (``waiting.pickle``; none when it left none); None for a state
        written before they were kept, or when they cannot be read: the idle pass then runs the detectors."""
        if self.meta.retained_oldest_us is None:
            return None
        if not self.meta.has_waiting:
            return []
        try:
            rows: list[Any] = pickle.loads((self.path / WAITING).read_bytes())  # noqa: S301  # this run's own state
        except (OSError, pickle.UnpicklingError, AttributeError, ImportError, EOFError, TypeError, ValueError):
            return None
        return rows


def state_dir(output: str) -> Path:
    return Path(output) / "_checkpoint" / "state"


def _name(batch: int, idle: int) -> str:
    return f"v-{batch:08d}-{idle:04d}"


def versions(root: Path) -> list[tuple[int, int, Path]]:
    """The committed versions under ``root``, oldest first."""
    found = []
    if root.is_dir():
        for p in root.iterdir():
            m = _VERSION.fullmatch(p.name)
            if m and (p / "meta.json").is_file():
                found.append((int(m.group(1)), int(m.group(2)), p))
    return sorted(found)


def load(root: Path, before_batch: int | None = None) -> Version:
    """The newest committed version (of a batch before ``before_batch``, when given); an empty one if none."""
    candidates = [v for v in versions(root) if before_batch is None or v[0] < before_batch]
    if not candidates:
        return Version(root / _name(-1, 0), Meta(), {})
    path = candidates[-1][2]
    meta = Meta(**json.loads((path / "meta.json").read_text(encoding="utf-8")))
    seen_rows = json.loads((path / "seen.json").read_text(encoding="utf-8"))
    return Version(path, meta, {(r[0], int(r[1])): int(r[2]) for r in seen_rows})


def staging(root: Path, batch: int, idle: int) -> Path:
    """A fresh hidden directory to write the version ``(batch, idle)`` into."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{_name(batch, idle)}.inprogress"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def keep_waiting(tmp: Path, rows: list[Any]) -> None:
    """Keep ``rows`` (the occurrences a pass leaves to settle) in the version being written in ``tmp``."""
    (tmp / WAITING).write_bytes(pickle.dumps(rows))


def keep_retained(prev: Version, tmp: Path) -> None:
    """The events ``prev`` kept, kept again by the version being written in ``tmp`` (an idle pass reads none)."""
    shutil.copytree(prev.retained, tmp / "retained")


def commit(root: Path, tmp: Path, meta: Meta, seen: dict[tuple[str, int], int]) -> Path:
    """Write ``meta`` and ``seen`` into ``tmp`` and rename it into place (replacing a version of the same pass
    left by a run that crashed after committing it, before Spark recorded the batch); remove old versions."""
    (tmp / "seen.json").write_text(json.dumps([[k[0], k[1], v] for k, v in sorted(seen.items())]), encoding="utf-8")
    with open(tmp / "meta.json", "w", encoding="utf-8") as f:
        json.dump(asdict(meta), f)
        f.flush()
        os.fsync(f.fileno())
    final = root / _name(meta.batch, meta.idle)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for _, _, old in versions(root)[:-KEEP_VERSIONS]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".v-*.inprogress"):
        if stale != tmp:
            shutil.rmtree(stale, ignore_errors=True)
    return final


def drop_after(root: Path, batch: int) -> None:
    """Remove the versions of ``batch`` and later (a batch Spark runs again: they belong to its first run)."""
    for b, _, path in versions(root):
        if b >= batch:
            shutil.rmtree(path, ignore_errors=True)
