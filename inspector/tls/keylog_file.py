"""The TLS key log file (``--tls-keylog``), read at the edge and fed as text to a sans-I/O
:class:`~inspector.tls.keylog.KeyLog`.

``read``, ``show`` and the decode job read the whole file once (:func:`load_keylog`); the tap keeps it open and
reads what was appended each time before it decodes more packets (:meth:`KeyLogFile.poll`): a client writing
its key log as it connects gives the keys of connections the tap is seeing. A file that does not exist yet is
looked for again at each poll; one that was truncated or replaced is read again from its start.
"""

from __future__ import annotations

import os
from io import TextIOWrapper
from pathlib import Path

from inspector.tls.keylog import KeyLog

__all__ = ["KeyLogFile", "load_keylog"]

#: Characters read at most per poll (the rest waits for the next one): a poll never stalls the tap for long.
POLL_CHARS = 1 << 20


class KeyLogFile:
    """A key log file read as it grows into :attr:`keylog`."""

    def __init__(self, path: str | Path, keylog: KeyLog | None = None) -> None:
        self.path = Path(path)
        self.keylog = keylog if keylog is not None else KeyLog()
        self._file: TextIOWrapper | None = None
        self._inode: tuple[int, int] | None = None

    def poll(self) -> int:
        """Read what was appended since the last poll (opening the file if it now exists); the number of
        characters read. Unreadable, it is tried again at the next poll."""
        try:
            if self._file is None:
                self._open()
            elif self._replaced():
                self.close()
                self._open()
            assert self._file is not None
            text = self._file.read(POLL_CHARS)
        except OSError:
            return 0
        self.keylog.feed(text)
        return len(text)

    def finish(self) -> KeyLog:
        """The file is complete: everything left is read and a last line without its newline taken."""
        while self.poll():
            pass
        self.keylog.finish()
        self.close()
        return self.keylog

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self) -> None:
        f = open(self.path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115 - kept open
        st = os.fstat(f.fileno())
        self._file, self._inode = f, (st.st_dev, st.st_ino)

    def _replaced(self) -> bool:
        """Whether the path now names another file, or the file shrank below what was read."""
        assert self._file is not None
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) != self._inode or st.st_size < os.lseek(self._file.fileno(), 0, os.SEEK_CUR)


def load_keylog(path: str | Path) -> KeyLog:
    """The whole key log file, read now (OSError when it cannot be read)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        keylog = KeyLog(f.read())
    keylog.finish()
    return keylog
