"""The output directory of ``read``: what it holds, and how a run's output is published into it.

A run never writes under a final name while it decodes. It builds its whole output — the event files, every
``--jobs`` worker's included, ``connections.parquet`` and ``summary.json`` — in a staging folder inside DIR
(``DIR/.read-PID-XXXXXXXX/``: the same filesystem, and a dot-name every dataset reader skips). When all of it is
written and synced, the run *commits*: it writes the folder's ``MANIFEST`` (atomically: a temporary name, fsync,
rename), the list of renames that publish it. Then it *publishes*: renames only, in the manifest's order, then it
deletes the staging folder (with the dataset an ``--overwrite`` replaced, moved there by the renames).

Before the commit nothing of DIR has changed: a run that fails (a bad input, a full disk) or is interrupted
removes its staging folder and DIR is exactly as it was. A run killed outright (SIGKILL, power loss) leaves its
staging folder behind: the next run into DIR removes it if it was not committed, or finishes publishing it if
it was (every step of the manifest can be replayed: a step that is done is seen to be done). One run writes
into DIR at a time: each holds an exclusive lock (``flock``) on the directory from start to end.

The layout published: Parquet events as ``DIR/events/part-NNNNN.parquet`` (numbered on from the highest number
already there), JSON lines as ``DIR/events.jsonl`` (a new dataset's single file) or ``DIR/events-NNNNN.jsonl``,
``DIR/connections.parquet``, ``DIR/summary.json``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from contract.errors import ExitCode, InspectorError
from inspector.rows.writers import fsync_path as sync

EVENTS = "events"
CONNECTIONS = "connections.parquet"
SUMMARY = "summary.json"
MANIFEST = "MANIFEST"
#: Staging folders are ``STAGING_PREFIX`` + pid + ``-`` + a random tag; the replaced dataset goes to ``OLD`` in it.
STAGING_PREFIX = ".read-"
OLD = "old"

_PART = re.compile(r"part-(\d+)\.parquet")
_JSONL = re.compile(r"events(?:-(\d+))?\.jsonl")


class Format(Enum):
    PARQUET = "parquet"
    JSONL = "jsonl"


class OutputBusy(InspectorError, OSError):
    """Another run holds DIR's lock."""

    exit_code = ExitCode.OUTPUT


@dataclass
class Dataset:
    """What DIR holds now: its event files (Parquet under ``events/``, JSON lines beside), its summary."""

    out: Path
    parquet: list[Path] = field(default_factory=list)
    jsonl: list[Path] = field(default_factory=list)

    @classmethod
    def scan(cls, out: Path) -> Dataset:
        return cls(out, sorted((out / EVENTS).glob("*.parquet")), sorted(out.glob("events*.jsonl")))

    @property
    def files(self) -> list[Path]:
        return self.parquet + self.jsonl

    @property
    def formats(self) -> set[Format]:
        return ({Format.PARQUET} if self.parquet else set()) | ({Format.JSONL} if self.jsonl else set())

    def summary(self) -> dict[str, Any] | None:
        """``summary.json``, parsed (None when there is none); ``ValueError`` when it is not a JSON object."""
        try:
            text = (self.out / SUMMARY).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return doc


# -- the lock, and what killed runs left ---------------------------------------------------------------------


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on directory ``out`` (``flock`` on the directory itself: no lock file, and the lock
    goes with the process however it ends); :class:`OutputBusy` when another run holds it."""
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputBusy(errno.EBUSY, f"{out} is being written by another run of kafka-inspector read: "
                                          "wait for it to finish, or choose another --output") from None
        yield
    finally:
        os.close(fd)


def recover(out: Path) -> list[str]:
    """Deal with the staging folders runs killed outright left in ``out`` (call it holding the lock): a committed
    one is published (its manifest replayed), any other removed. Returns one line per folder published."""
    done = []
    for staging in sorted(out.glob(f"{STAGING_PREFIX}*")):
        if not staging.is_dir():
            continue
        manifest = staging / MANIFEST
        if manifest.is_file():
            apply_steps(out, staging, json.loads(manifest.read_text(encoding="utf-8"))["steps"])
            done.append(f"{out}: published the output of a run that was stopped while publishing it")
        shutil.rmtree(staging, ignore_errors=True)
    return done


# -- staging and publishing ----------------------------------------------------------------------------------


class Staging:
    """A run's staging folder in ``out``: build the output in :attr:`path`, then :meth:`publish` or
    :meth:`discard`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / f"{STAGING_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        self.path.mkdir()

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def staged_events(self, fmt: Format) -> list[Path]:
        """The complete event files written here, in order (a worker's files by its capture's number)."""
        if fmt is Format.PARQUET:
            return sorted((self.path / EVENTS).glob("*.parquet"))
        return sorted(self.path.glob("*.jsonl"))

    def plan(self, existing: Dataset, fmt: Format, replace: bool) -> tuple[list[list[str]], list[str]]:
        """The renames that publish this folder into ``out`` (``replace``: the existing dataset is moved out of
        the way first, into this folder), and the final names of the event files, in order."""
        steps: list[list[str]] = []
        kept = Dataset(self.out)
        if replace:
            if existing.parquet:
                steps.append(["out", EVENTS, f"{OLD}/{EVENTS}"])
            steps += [["out", p.name, f"{OLD}/{p.name}"] for p in existing.jsonl]
        else:
            kept = existing
        staged = self.staged_events(fmt)
        names: list[str] = []
        if fmt is Format.PARQUET:
            steps.append(["mkdir", EVENTS])
            start = 1 + max((int(m.group(1)) for p in kept.parquet if (m := _PART.fullmatch(p.name))), default=-1)
            for i, path in enumerate(staged):
                names.append(f"{EVENTS}/part-{start + i:05d}.parquet")
                steps.append(["in", f"{EVENTS}/{path.name}", names[-1]])
        else:
            taken = [int(m.group(1) or 0) for p in kept.jsonl if (m := _JSONL.fullmatch(p.name))]
            start = 1 + max(taken, default=-1)
            for i, path in enumerate(staged):
                names.append("events.jsonl" if not taken and len(staged) == 1 else f"events-{start + i:05d}.jsonl")
                steps.append(["in", path.name, names[-1]])
        for name in (CONNECTIONS, SUMMARY):  # replaced atomically; the old one kept aside until the end
            if (self.out / name).exists():
                steps.append(["keep", name, f"{OLD}/{name}"])
            steps.append(["in", name, name])
        return steps, names

    def commit(self, steps: list[list[str]]) -> None:
        """Sync what was staged and write the manifest: from here on the run is published, now or by the next
        run should this one be killed."""
        for path in sorted(self.path.rglob("*")):
            sync(path)
        (self.path / OLD).mkdir()
        tmp = self.path / f".{MANIFEST}.inprogress"
        write_synced(tmp, json.dumps({"steps": steps}).encode())
        os.replace(tmp, self.path / MANIFEST)
        sync(self.path)

    def publish(self, steps: list[list[str]]) -> None:
        """Carry out the committed renames, then remove this folder (and the dataset it replaced)."""
        apply_steps(self.out, self.path, steps)
        self.discard()


def apply_steps(out: Path, staging: Path, steps: list[list[str]]) -> None:
    """Carry out a manifest's steps; a step already done (a run killed while publishing) is skipped.

    ``["out", FINAL, STAGED]`` moves what was published at ``FINAL`` into the staging folder (done once ``STAGED``
    exists), ``["keep", FINAL, STAGED]`` links it there (so it can be put back), ``["mkdir", FINAL]`` makes a
    folder, ``["in", STAGED, FINAL]`` publishes (done once ``STAGED`` is gone; a file already at ``FINAL`` is replaced
    atomically)."""
    touched = {out}
    for step in steps:
        kind, *names = step
        if kind == "out":
            final, staged = out / names[0], staging / names[1]
            if not staged.exists() and final.exists():
                staged.parent.mkdir(parents=True, exist_ok=True)
                os.rename(final, staged)
        elif kind == "keep":
            final, staged = out / names[0], staging / names[1]
            if not staged.exists() and final.exists():
                staged.parent.mkdir(parents=True, exist_ok=True)
                os.link(final, staged)
        elif kind == "mkdir":
            (out / names[0]).mkdir(exist_ok=True)
        elif kind == "in":
            staged, final = staging / names[0], out / names[1]
            if staged.exists():
                os.replace(staged, final)
                touched.add(final.parent)
        else:
            raise ValueError(f"unknown step {step!r} in {staging / MANIFEST}")
    for folder in touched:
        sync(folder)


def undo_steps(out: Path, staging: Path, steps: list[list[str]]) -> None:
    """Put back what :func:`apply_steps` did (publishing failed part way: e.g. an I/O error on a rename), last step
    first; the manifest is removed once everything is back, so the next run does not publish it."""
    for kind, *names in reversed(steps):
        if kind == "in":
            staged, final = staging / names[0], out / names[1]
            if not staged.exists() and final.exists():
                os.rename(final, staged)
        elif kind in ("out", "keep"):
            final, staged = out / names[0], staging / names[1]
            if staged.exists() and not final.exists():
                os.rename(staged, final)
        elif kind == "mkdir":
            with contextlib.suppress(OSError):  # the folder made for the new files (empty again), not one that was
                (out / names[0]).rmdir()
    os.unlink(staging / MANIFEST)
    for folder in (out, out / EVENTS):
        with contextlib.suppress(FileNotFoundError):
            sync(folder)


# -- durability ----------------------------------------------------------------------------------------------


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path`` and fsync it; on failure the file is removed."""
    try:
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
