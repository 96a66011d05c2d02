"""The local driver's class-data archive: written once, adopted when finished and sound, used after."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines import class_archive

VERSION = "9.9.9"


def _age(path: Path, seconds: float, now: float) -> None:
    os.utime(path, (now - seconds, now - seconds))


def test_without_an_archive_the_jvm_writes_one_under_a_name_of_its_own(tmp_path: Path) -> None:
    options = class_archive.java_options(VERSION, tmp_path, now=1e9)
    assert options.startswith(f"-XX:ArchiveClassesAtExit={tmp_path}/spark-9.9.9-classes.jsa.")
    assert options.split()[0].endswith(".tmp")
    assert "-Xlog:cds=off" in options and "-Xlog:cds+dynamic=off" in options  # nothing reaches a terminal


def test_an_archive_is_used(tmp_path: Path) -> None:
    archive = class_archive.archive_path(VERSION, tmp_path)
    archive.write_bytes(b"x")
    assert class_archive.java_options(VERSION, tmp_path).split()[0] == f"-XX:SharedArchiveFile={archive}"


def test_while_another_jvm_writes_it_none_is_used_or_written(tmp_path: Path) -> None:
    now = 1e9
    writing = tmp_path / "spark-9.9.9-classes.jsa.1.2.tmp"
    writing.write_bytes(b"partial")
    _age(writing, 5, now)
    assert class_archive.java_options(VERSION, tmp_path, now=now) == ""
    assert writing.exists()


def test_a_finished_sound_archive_is_adopted_and_the_other_finished_ones_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = 1e9
    first, second = (tmp_path / f"spark-9.9.9-classes.jsa.{n}.1.tmp" for n in (1, 2))
    for path in (first, second):
        path.write_bytes(b"archive")
        _age(path, 120, now)
    monkeypatch.setattr(class_archive, "_usable", lambda path: True)
    options = class_archive.java_options(VERSION, tmp_path, now=now)
    archive = class_archive.archive_path(VERSION, tmp_path)
    assert options.split()[0] == f"-XX:SharedArchiveFile={archive}"
    assert archive.read_bytes() == b"archive"
    assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]


def test_an_unsound_archive_is_removed_not_adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = 1e9
    broken = tmp_path / "spark-9.9.9-classes.jsa.1.1.tmp"
    broken.write_bytes(b"truncated")
    _age(broken, 120, now)
    monkeypatch.setattr(class_archive, "_usable", lambda path: False)
    options = class_archive.java_options(VERSION, tmp_path, now=now)
    assert not broken.exists() and not class_archive.archive_path(VERSION, tmp_path).exists()
    assert options.startswith("-XX:ArchiveClassesAtExit=")  # written again by this run


def test_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_INSPECTOR_CLASS_ARCHIVE", "0")
    assert class_archive.java_options(VERSION, tmp_path) == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("java") is None, reason="no java")
def test_a_real_jvm_writes_an_archive_that_starts_and_a_truncated_one_does_not(tmp_path: Path) -> None:
    written = tmp_path / "spark-9.9.9-classes.jsa.1.1.tmp"
    subprocess.run(["java", f"-XX:ArchiveClassesAtExit={written}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off",
                    "-version"], check=True, capture_output=True)
    assert class_archive._usable(written)
    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(written.read_bytes()[: written.stat().st_size // 2])
    assert not class_archive._usable(truncated)
    assert not list(Path.cwd().glob("hs_err_pid*.log"))


def test_each_installation_of_spark_and_java_has_its_own_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    here = class_archive.installation()
    assert here.startswith(pyspark.__version__ + "-")
    monkeypatch.setattr(class_archive, "_java", lambda: "/another/java")
    assert class_archive.installation() != here
