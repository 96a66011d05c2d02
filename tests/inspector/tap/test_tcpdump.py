"""The tcpdump child's stderr reader (``inspector/tap/tcpdump.py``)."""

from __future__ import annotations

import errno
import io
import os
import threading

import pytest

from inspector.tap.tcpdump import Tcpdump


class _ClosedUnderfoot(io.BytesIO):
    """A pipe whose next read fails as a read does once another thread closed the pipe's descriptor."""

    def __init__(self, lines: bytes, error: Exception) -> None:
        super().__init__(lines)
        self.error = error

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        if line:
            return line
        raise self.error


@pytest.mark.parametrize("error", [OSError(errno.EBADF, os.strerror(errno.EBADF)),
                                   ValueError("readline of closed file")])
def test_stderr_closed_by_the_tap_ends_the_reader_quietly(error: Exception) -> None:
    dump = Tcpdump("tcpdump", "lo", "tcp")
    raised: list[BaseException | None] = []
    hook, threading.excepthook = threading.excepthook, lambda args: raised.append(args.exc_value)
    try:
        stream = _ClosedUnderfoot(b"listening on lo, link-type EN10MB\n3 packets captured\n", error)
        reader = threading.Thread(target=dump._read_stderr, args=(stream,))
        reader.start()
        reader.join(5)
    finally:
        threading.excepthook = hook
    assert not reader.is_alive() and raised == []  # no traceback on the terminal
    assert dump.ready.is_set() and dump.stderr_lines[-1] == "3 packets captured"
    assert dump.stats.captured == 3
