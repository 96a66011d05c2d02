"""The key log file at the edge (inspector/tls/keylog_file.py): read whole, or as it grows (the tap), including a file
that appears late, a line written in two pieces, and a file truncated or replaced."""

from __future__ import annotations

import os
from pathlib import Path

from inspector.tls.keylog_file import KeyLogFile, load_keylog

RANDOM_A, RANDOM_B = "aa" * 32, "bb" * 32
LINE_A = f"CLIENT_RANDOM {RANDOM_A} {'11' * 48}\n"
LINE_B = f"CLIENT_TRAFFIC_SECRET_0 {RANDOM_B} {'22' * 32}\n"


def test_load_reads_the_whole_file_and_its_last_line(tmp_path: Path) -> None:
    path = tmp_path / "keys.log"
    path.write_text("# a comment\n" + LINE_A + "garbage line\n" + LINE_B.rstrip("\n"))  # no final newline
    keylog = load_keylog(path)
    assert (len(keylog), keylog.lines_used, keylog.lines_malformed) == (2, 2, 1)
    secrets = keylog.lookup(bytes.fromhex(RANDOM_A))
    assert secrets is not None and secrets.master_secret == bytes.fromhex("11" * 48)


def test_a_growing_file_is_read_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "keys.log"
    reader = KeyLogFile(path)
    assert reader.poll() == 0 and len(reader.keylog) == 0  # not there yet: looked for again next time
    path.write_text(LINE_A[:40])
    assert reader.poll() == 40 and len(reader.keylog) == 0  # half a line waits for its end
    with path.open("a") as f:
        f.write(LINE_A[40:] + LINE_B)
    reader.poll()
    assert len(reader.keylog) == 2 and reader.keylog.lines_used == 2
    assert reader.poll() == 0  # nothing new
    reader.close()


def test_a_truncated_or_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "keys.log"
    path.write_text(LINE_A + LINE_A)
    reader = KeyLogFile(path)
    reader.poll()
    path.write_text(LINE_B)  # truncated and rewritten, shorter
    reader.poll()
    assert reader.keylog.lookup(bytes.fromhex(RANDOM_B)) is not None
    other = tmp_path / "new.log"
    other.write_text(LINE_A)
    os.replace(other, path)  # replaced (another inode)
    assert reader.poll() == len(LINE_A)
    assert reader.finish() is reader.keylog and reader.keylog.lines_used == 4
