"""tcpdump as the tap's capture process, and the interface it listens on (the I/O of capturing).

:class:`Tcpdump` starts ``tcpdump -i IFACE -n -U -s 0 -B BUFFER -w - FILTER`` in a session of its own (a
Ctrl-C in the terminal reaches only the tap, which stops it in order), waits until it says "listening on",
asks it for its libpcap counters with SIGUSR1 (Linux has no SIGINFO) and stops it with SIGINT. A thread
reads its stderr: counters (:class:`CaptureStats`) and the words of its last error.
:func:`interface_state` reads ``/sys/class/net/IFACE``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from contract.errors import ExitCode, InspectorError

#: tcpdump gets this long to open the interface.
START_TIMEOUT = 15.0
#: Bytes read from tcpdump's pipe at most at a time (and the pipe's size asked for).
READ_CHUNK = 1 << 20
_F_SETPIPE_SZ = 1031  # fcntl command (Linux)

CAP_FIX = "capture needs CAP_NET_RAW: run as root or `setcap cap_net_raw,cap_net_admin=eip $(which tcpdump)`"
#: The tap signals tcpdump (its counters, an orderly stop); tcpdump becomes the user ``tcpdump`` once listening, and
#: a root without CAP_KILL (a container's ``--cap-drop ALL``) may not signal another user's process.
KILL_FIX = ("the tap may not signal tcpdump, which runs as the user tcpdump: give the tap CAP_KILL (in a container "
            "`--cap-add KILL`; Kubernetes: capabilities add KILL)")
TCPDUMP_FIX = "tcpdump not found: install it (`apt-get install tcpdump`) or name it with --tcpdump PATH"

_STAT_RES = {
    "captured": re.compile(r"(\d+) packets? captured"),
    "received": re.compile(r"(\d+) packets? received by filter"),
    "kernel_dropped": re.compile(r"(\d+) packets? dropped by kernel"),
    "interface_dropped": re.compile(r"(\d+) packets? dropped by interface"),
}


@dataclass
class CaptureStats:
    """tcpdump's libpcap counters, as last printed (None: not reported yet)."""

    captured: int | None = None
    received: int | None = None
    kernel_dropped: int | None = None
    interface_dropped: int | None = None
    reports: int = 0

    def parse(self, line: str) -> bool:
        found = False
        for name, rx in _STAT_RES.items():
            m = rx.search(line)
            if m:
                setattr(self, name, int(m.group(1)))
                found = True
        if found:
            self.reports += 1
        return found

    def add(self, other: CaptureStats) -> None:
        """Add the final counters of another tcpdump run (the capture was reopened after an outage)."""
        for name in _STAT_RES:
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, (getattr(self, name) or 0) + value)
        self.reports += other.reports

    def plus(self, other: CaptureStats) -> CaptureStats:
        total = CaptureStats(self.captured, self.received, self.kernel_dropped, self.interface_dropped, self.reports)
        total.add(other)
        return total


class TcpdumpError(InspectorError):
    """tcpdump did not start listening: one line naming the fix, and the exit code it means."""

    def __init__(self, message: str, exit_code: int = ExitCode.INPUT, cancelled: bool = False) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.cancelled = cancelled  # a stop request ended the wait


def available_interfaces() -> list[str]:
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError:  # pragma: no cover
        return []


def explain_tcpdump_failure(lines: list[str], interface: str, bpf: str) -> TcpdumpError:
    """Turn tcpdump's stderr into one line naming the fix."""
    text = " ".join(line.strip() for line in lines)
    low = text.lower()
    if "permission" in low or "operation not permitted" in low:
        return TcpdumpError(CAP_FIX)
    if "no such device" in low:
        return TcpdumpError(f"no interface {interface!r}: available: {', '.join(available_interfaces())}")
    if "not up" in low:
        return TcpdumpError(f"interface {interface!r} is down: bring it up (`ip link set {interface} up`)")
    if "filter" in low and ("syntax" in low or "parse" in low or "illegal" in low or "expression" in low):
        return TcpdumpError(f"bad capture filter {bpf!r}: {text.removeprefix('tcpdump: ')}", ExitCode.USAGE)
    last = next((line.strip() for line in reversed(lines) if line.strip()), "no message")
    return TcpdumpError(f"tcpdump failed: {last.removeprefix('tcpdump: ')}")


_IFF_UP = 0x1


def interface_state(name: str) -> str | None:
    """``up``, ``down`` (administratively), ``no carrier``, ``gone`` (not in ``/sys/class/net``), or None
    where the kernel does not say (``any``, an interface number, non-network capture devices)."""
    if not name or name == "any" or "/" in name or name.startswith("."):
        return None
    base = Path("/sys/class/net") / name
    try:
        flags = int((base / "flags").read_text().strip(), 16)
    except FileNotFoundError:
        return "gone"
    except (OSError, ValueError):
        return None
    if not flags & _IFF_UP:
        return "down"
    try:
        oper = (base / "operstate").read_text().strip()
    except OSError:
        return "up"
    return "no carrier" if oper in ("down", "lowerlayerdown", "notpresent") else "up"


class Tcpdump:
    """The tcpdump child: start, wait until it listens, ask for counters, stop gracefully."""

    def __init__(self, binary: str, interface: str, bpf: str, *, buffer_bytes: int = 128 << 20,
                 count: int = 0, immediate: bool = False) -> None:
        self.interface = interface
        self.bpf = bpf
        self.cmd = [binary, "-i", interface, "-n", "-U", "-s", "0", "-B", str(max(1, buffer_bytes // 1024))]
        if immediate:
            self.cmd.append("--immediate-mode")
        if count:
            self.cmd += ["-c", str(count)]
        self.cmd += ["-w", "-", bpf]
        self.proc: subprocess.Popen[bytes] | None = None
        self.stats = CaptureStats()
        self.stderr_lines: list[str] = []
        self.ready = threading.Event()
        self.stop_sent_at: float | None = None
        self.killed = False
        self.abandoned = False  # let go of: the tap may not signal it (KILL_FIX)
        self.accounted = False  # its counters were added to the tap's totals
        self._stderr_thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, timeout: float = START_TIMEOUT, cancel: threading.Event | None = None) -> int:
        """Start tcpdump and wait until it captures; return the read end of its pcap pipe.

        ``cancel`` (set by a stop request) gives up waiting: tcpdump is killed and ``TcpdumpError`` raised."""
        # tcpdump runs in its own session, so a Ctrl-C in the terminal reaches only the tap, which stops it
        # in order. Should the tap be killed outright, tcpdump ends on EPIPE at its next packet (a
        # parent-death signal would not help: the kernel clears it when tcpdump drops root or execs with
        # file capabilities).
        try:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, bufsize=0, start_new_session=True)
        except FileNotFoundError:
            raise TcpdumpError(TCPDUMP_FIX) from None
        except PermissionError:
            raise TcpdumpError(f"cannot run {self.cmd[0]}: permission denied") from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        fd = self.proc.stdout.fileno()
        with contextlib.suppress(OSError):  # a bigger pipe: more slack while a batch is written
            import fcntl

            fcntl.fcntl(fd, _F_SETPIPE_SZ, READ_CHUNK)
        self._stderr_thread = threading.Thread(target=self._read_stderr, args=(self.proc.stderr,),
                                               name="tcpdump-stderr", daemon=True)
        self._stderr_thread.start()
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.05):
            cancelled = cancel is not None and cancel.is_set()
            if self.proc.poll() is not None or time.monotonic() > deadline or cancelled:
                self.kill()
                self._stderr_thread.join(2)
                if cancelled:
                    raise TcpdumpError("stopped while tcpdump was starting", cancelled=True)
                raise explain_tcpdump_failure(self.stderr_lines, self.interface, self.bpf)
        if not self._may_signal():  # it listens as the user tcpdump, and the tap may not signal that user
            self._abandon()
            raise TcpdumpError(KILL_FIX)
        return fd

    def _read_stderr(self, stream: IO[bytes]) -> None:
        """Keep tcpdump's last lines and counters until its stderr ends: at its exit, or when the tap closes the
        pipe under this thread (``_abandon``, ``wait``), which ends the read with EBADF or on a closed file."""
        with contextlib.suppress(OSError, ValueError):
            self._read_lines(stream)

    def _read_lines(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lock:
                self.stderr_lines.append(line)
                del self.stderr_lines[:-50]
                self.stats.parse(line)
            if "listening on" in line:
                self.ready.set()

    def _may_signal(self) -> bool:
        """Whether the tap may signal tcpdump (signal 0: the kernel's permission check, nothing sent)."""
        assert self.proc is not None
        try:
            os.kill(self.proc.pid, 0)
        except PermissionError:
            return False
        except ProcessLookupError:
            pass  # it ended: the caller sees that
        return True

    def _abandon(self) -> None:
        """Let go of a tcpdump the tap may not signal: its pipes closed, it ends at its next packet (EPIPE)."""
        assert self.proc is not None
        self.killed = self.abandoned = True
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def request_stats(self) -> None:
        """SIGUSR1: tcpdump prints its counters on stderr (read by the stderr thread)."""
        if self.proc is not None and self.proc.poll() is None and self.ready.is_set() and self.stop_sent_at is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGUSR1)

    def stop(self) -> None:
        """SIGINT: tcpdump flushes, prints its final counters and exits; the pipe then ends."""
        if self.proc is None or self.stop_sent_at is not None:
            return
        self.stop_sent_at = time.monotonic()
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGINT if self.ready.is_set() else signal.SIGTERM)
            except ProcessLookupError:
                pass
            except PermissionError:
                self._abandon()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.killed = True
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:
                self._abandon()

    def wait(self, timeout: float = 5.0) -> int:
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            if self.abandoned:
                return -signal.SIGPIPE  # it ends at its next packet, after the tap
            rc = self.proc.wait(timeout)
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return rc

    def stderr(self) -> tuple[str, ...]:
        """tcpdump's last lines on stderr (at most 50)."""
        with self._lock:
            return tuple(self.stderr_lines)


def build_filter(user_filter: str | None, ports: list[int] | frozenset[int]) -> str:
    """The BPF expression given to tcpdump: ``tcp``, AND the user's filter, AND ``port P`` terms."""
    terms = ["tcp"]
    if user_filter and user_filter.strip():
        terms.append(f"({user_filter.strip()})")
    if ports:
        terms.append("(" + " or ".join(f"port {p}" for p in sorted(set(ports))) + ")")
    return " and ".join(terms)
