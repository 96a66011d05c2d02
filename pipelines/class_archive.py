"""A local Spark driver's class-data archive (the JVM's AppCDS), so that a report's JVM starts in half the time.

A report's JVM loads some 20,000 classes, each looked up in the 250-odd jars of pyspark's class path, read and
verified: on the project's 2-core machine, 2.8 s of the Spark start and a seventh of the report's CPU on the
demo's events. The JVM can write the classes a run loaded to an archive when it exits
(``-XX:ArchiveClassesAtExit``) and map them from it on the next start (``-XX:SharedArchiveFile``): Spark then
starts in 1.3-1.6 s.

The first local report of a pyspark version writes the archive (it starts a little slower, and its JVM takes a
few seconds more to exit); the next ones use it. It lives in the user's cache folder (``$XDG_CACHE_HOME`` or
``~/.cache``, ``kafka-inspector/``), about 200 MB. A JVM that cannot use it (another Java, another class path)
says so in its log and starts without it: the archive changes the speed, never the results. The JVM's own
lines about it are turned off, so none reaches a terminal. ``KAFKA_INSPECTOR_CLASS_ARCHIVE=0`` turns it off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Lines of the JVM about archives: off (the dump lists every class it skips: signed jars, old class files).
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: A written archive not touched for this long is finished (the JVM writes it in a few seconds as it exits).
_SETTLED_S = 60.0


def folder() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kafka-inspector"


def archive_path(key: str, where: Path | None = None) -> Path:
    """The archive of the installation ``key`` (``installation()``)."""
    return (where or folder()) / f"spark-{key}-classes.jsa"


def installation() -> str:
    """Which Spark and Java a JVM would run: pyspark's version and a digest of where it and Java are (an archive
    holds one class path's classes: another installation gets its own)."""
    import hashlib

    import pyspark

    where = f"{Path(pyspark.__file__).resolve().parent}\0{_java() or ''}"
    return f"{pyspark.__version__}-{hashlib.sha256(where.encode()).hexdigest()[:12]}"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return os.path.realpath(found) if found else None


def java_options(key: str, where: Path | None = None, now: float | None = None) -> str:
    """The driver's JVM options: use the archive of the installation ``key`` (``installation()``), or write it as
    this JVM exits (unless another JVM is writing it)."""
    if os.environ.get("KAFKA_INSPECTOR_CLASS_ARCHIVE", "1") == "0":
        return ""
    archive = archive_path(key, where)
    now = time.time() if now is None else now
    written = _written(archive, now)
    while not archive.exists() and written.settled:
        candidate = written.settled.pop(0)
        if _usable(candidate):  # a JVM killed while writing leaves a truncated one, on which the JVM crashes
            candidate.replace(archive)  # atomic; a JVM mapping an older one keeps it open
        else:
            candidate.unlink(missing_ok=True)
    for stale in written.settled:
        stale.unlink(missing_ok=True)
    if archive.exists():
        return f"-XX:SharedArchiveFile={archive} {_QUIET}"
    if written.writing:
        return ""
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""  # no writable cache: start as before
    return f"-XX:ArchiveClassesAtExit={archive}.{os.getpid()}.{time.monotonic_ns()}.tmp {_QUIET}"


@dataclass
class _Written:
    settled: list[Path] = field(default_factory=list)  # finished: untouched for _SETTLED_S
    writing: bool = False  # one may still be being written


def _written(archive: Path, now: float) -> _Written:
    """The archives earlier JVMs wrote under names of their own."""
    found = _Written()
    for path in sorted(archive.parent.glob(archive.name + ".*.tmp")):
        try:
            info = path.stat()
        except OSError:
            continue
        if now - info.st_mtime <= _SETTLED_S:
            found.writing = True
        elif info.st_size > 0:
            found.settled.append(path)
        else:
            path.unlink(missing_ok=True)
    return found


def _usable(archive: Path) -> bool:
    """Whether a JVM starts with ``archive`` (a truncated archive stops it with SIGBUS as it maps it)."""
    java = _java()
    if not java:
        return False
    try:
        done = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", "-XX:ErrorFile=/dev/null", *_QUIET.split(),
                               "-version"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
