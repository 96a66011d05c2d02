"""``kafka-inspector tap``: decode live Kafka traffic into a rotating Parquet events dataset.

How packets get here
--------------------
``tcpdump -i IFACE -n -U -s 0 -B BUFFER -w - FILTER`` runs as a child process and writes a classic pcap
stream to a pipe; :class:`PcapStream` cuts that stream into packets as bytes arrive (``os.read`` of
whatever the pipe holds, never waiting for a full chunk), and the packets go through the same sans-I/O
path as ``read``: :func:`~inspector.packets.parse_packet` → :class:`~inspector.pipeline.Inspector` →
:class:`~inspector.events.EventTable`. tcpdump's libpcap fills a memory-mapped TPACKET_V3 ring of
``--buffer`` bytes in the kernel, packed block by block, which absorbs bursts while Python decodes.

Measured on ``lo`` (``bench/bench_tap.py``; 2 cores shared by broker, load sender, tcpdump and tap), the
highest rate decoded with zero kernel drops and no backlog: tcpdump pipe 18,000-21,000 packets/s
(``read`` of the same traffic from a file: 13,500-25,500 packets/s, decoding bounds both); a scapy
PF_PACKET sniffer with the same kernel BPF filter (one ``recvfrom`` and one Python call per packet in the
decoding thread) 12,700-17,500 at best, with drops at 4,000 when the machine was busy; tcpdump with
``--immediate-mode`` 8,000-11,000: in that mode libpcap uses a TPACKET_V2 ring with one slot per packet
sized for the largest frame (64 KiB on ``lo`` and on NICs with offloads), so 128 MiB hold ~2,000 packets.

Without immediate mode libpcap hands a block over when it is full or 1 s old: packets reach the tap
within about a second, and a block still being filled when tcpdump gets SIGINT is lost. So on a stop
request the tap does not signal tcpdump at once: it reads on until a packet captured after the request
arrives (everything before it has then been handed over) or, with no traffic, until the 1 s block
timeout has passed and the pipe has been quiet for 0.3 s; then SIGINT, then the pipe is drained to its
end. ``summary.json`` records how long that took (``tap.stop_catch_up_seconds``).

Kernel drops
------------
tcpdump prints its libpcap counters (``pcap_stats``: captured, received by filter, dropped by
kernel, and dropped by interface when non-zero) on stderr when it exits, and also whenever it gets
SIGUSR1 (Linux has no SIGINFO; tcpdump uses SIGUSR1 instead). The tap sends it SIGUSR1 once a
second (only after tcpdump printed "listening on": before it installs its handler the signal would
kill it) and parses those lines. Drops are shown live, written to ``summary.json`` and warned about;
the TCP streams they damage show up as gaps (``stream_issue_bytes.gap``, ``connections.parquet``).

Output
------
``DIR/events/part-NNNNN.parquet``, a new file every ``--rotate`` seconds and every ``--rotate-size``
bytes, whichever comes first. A file is written as ``DIR/events/.part-NNNNN.parquet.inprogress`` (a
hidden name that Spark and pyarrow datasets skip) and renamed when closed, so readers only ever see
complete files. Event batches go to the open file at least once a second. On exit (SIGINT, SIGTERM,
``--duration``, ``--count-packets``) tcpdump is stopped with SIGINT, the pipe is drained to its end,
the open connections are finished, the last file is closed, then ``DIR/connections.parquet`` and
``DIR/summary.json`` are written as ``read`` writes them (``summary.json`` gets a ``tap`` section).

Interface outages
-----------------
The capture interface may go down or disappear while the tap runs (``ip link set IFACE down``, a cable
pulled, a VPN or container interface re-created). The tap never exits for that. Two cases:

* the interface goes down (administratively or without carrier) but stays: current kernels keep
  tcpdump's packet socket bound, and it captures again once the interface is up. The tap watches
  ``/sys/class/net/IFACE`` once a second to notice and report it;
* the interface disappears (or an older kernel reports ``ENETDOWN``): tcpdump exits with "The interface
  disappeared" / "The interface went down". The tap keeps its decoding state and output open and starts
  tcpdump again after 0.5 s, 1 s, 2 s, 4 s, then every 5 s, while tcpdump says "No such device" or "not
  up"; once it listens again capture resumes (a new pcap stream, the same connections).

Either way one line says the interface is down and the tap is waiting, and one more that it is back.
Connections open across an outage keep their state; the bytes they exchanged meanwhile were not captured,
which the reassembler reports as gaps from the TCP sequence numbers (an ACK for missed bytes, the
out-of-order buffer limit, or the connection's end) and the framer resynchronises after, as for any
other loss: bytes before and after an outage are never joined. ``summary.json`` counts the outages
(``tap.interface_outages``, ``tap.interface_down_seconds``, ``tap.outages``: start, seconds, reason,
whether tcpdump exited and had to be started again, connections open) and a warning names them. ``--max-outage``
bounds the wait (default 0: wait for ever, as a capture service should; a supervisor restarting the tap
would lose the connections' state): beyond it the tap stops as on SIGTERM and exits with 3. SIGINT and
SIGTERM stop a waiting tap at once, as usual.

Full disk
---------
When writing fails (``ENOSPC``, ``EDQUOT``, ``EIO``, any ``OSError`` on write, close or rename) the tap stops
tcpdump and writes nothing more: the file in progress is deleted (never renamed into place), the files
completed before stay, ``connections.parquet`` and ``summary.json`` are not written, and one line names the
directory and the errno (``cannot write to DIR/events: No space left on device (ENOSPC); the file in progress
was removed, the 3 files completed before it are kept``). Exit code 4.

Exit codes: 0 done (also when stopped by a signal: that is how a tap ends); 2 bad usage (bad filter,
bad option); 3 capture problem (no tcpdump, no interface, no permission, tcpdump died for another reason
than an interface outage, an outage longer than ``--max-outage``); 4 the output could not be written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from struct import Struct
from types import FrameType
from typing import IO, Any

from inspector.capture_file import CaptureError, RawPacket
from inspector.connection import KafkaMessage
from inspector.events import EventTable
from inspector.live_view import LiveStats, LiveView, TapCounters
from inspector.packets import parse_packet
from inspector.pipeline import Inspector
from inspector.reader import account_finished, count_events, drain_closed, packet_messages
from inspector.summary import Summary
from inspector.writers import OutputError, ParquetDatasetWriter, output_error, remove_quietly

EXIT_OK, EXIT_USAGE, EXIT_CAPTURE, EXIT_OUTPUT = 0, 2, 3, 4

#: Rows per Arrow batch at most; a batch is also written whenever a second has passed.
BATCH_ROWS = 8192
#: Event batches are handed to the Parquet file at least this often (seconds).
FLUSH_SECONDS = 1.0
#: tcpdump is asked for its counters (SIGUSR1) this often (seconds).
STATS_SECONDS = 1.0
#: After SIGINT, tcpdump gets this long to exit before it is killed (the pipe is drained either way).
STOP_GRACE = 10.0
#: After a stop request, the pipe counts as drained when it stays quiet this long (seconds) ...
QUIET_SECONDS = 0.3
#: ... or when a packet captured after the request arrives; but tcpdump is stopped after this long anyway.
CATCH_UP_SECONDS = 30.0
#: libpcap's TPACKET_V3 ring hands a block of packets over when it is full or this old (tcpdump's 1 s timeout).
BLOCK_TIMEOUT = 1.0
#: tcpdump gets this long to open the interface.
START_TIMEOUT = 15.0
#: While the interface is gone, tcpdump is started again after this long, doubling up to RETRY_MAX (seconds).
RETRY_FIRST = 0.5
RETRY_MAX = 5.0
#: Latencies kept per API for the p50/p99 of summary.json (a uniform reservoir sample beyond this).
LATENCY_RESERVOIR = 100_000
READ_CHUNK = 1 << 20
_F_SETPIPE_SZ = 1031  # fcntl command (Linux)

CAP_FIX = "capture needs CAP_NET_RAW: run as root or `setcap cap_net_raw,cap_net_admin=eip $(which tcpdump)`"
TCPDUMP_FIX = "tcpdump not found: install it (`apt-get install tcpdump`) or name it with --tcpdump PATH"


def _error(message: str) -> None:
    """One line on stderr, never wrapped."""
    print(f"kafka-inspector: error: {message}", file=sys.stderr, flush=True)


# -- option parsing -----------------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h``, ``1.5h``, ``500ms`` → seconds; ``0`` means never."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 60s, 5m, 1h, 0 = never)")
    unit = {None: 1, "ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * unit


def parse_size(text: str) -> int:
    """``65536``, ``64KB``, ``128MB``, ``1GiB`` → bytes (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(?:i?[bB])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 65536, 64MB, 1GiB)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def build_filter(user_filter: str | None, ports: list[int] | frozenset[int]) -> str:
    """The BPF expression given to tcpdump: ``tcp``, AND the user's filter, AND ``port P`` terms."""
    terms = ["tcp"]
    if user_filter and user_filter.strip():
        terms.append(f"({user_filter.strip()})")
    if ports:
        terms.append("(" + " or ".join(f"port {p}" for p in sorted(set(ports))) + ")")
    return " and ".join(terms)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``tap`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    from inspector.cli import _add_decode_options  # lazy: cli imports this module

    p: argparse.ArgumentParser = subparsers.add_parser(
        "tap", help="capture live traffic (tcpdump) into a rotating Parquet events dataset",
        description="Capture live Kafka traffic with tcpdump, decode it as `read` does and write "
                    "DIR/events/part-NNNNN.parquet files, rotated by time and size. Stop with Ctrl-C or "
                    "SIGTERM: the open file is completed, then DIR/connections.parquet and DIR/summary.json "
                    "are written.")
    p.add_argument("--interface", "-i", required=True, metavar="IFACE",
                   help="interface to capture on (lo, eth0, any, ...)")
    p.add_argument("--filter", metavar="BPF", default=None,
                   help="extra BPF expression, ANDed with `tcp` and the --port terms")
    p.add_argument("--output", "-o", required=True, type=Path, help="output directory")
    p.add_argument("--rotate", type=parse_duration, default=60.0, metavar="DURATION",
                   help="start a new Parquet file after this long (default 60s; 0 = never)")
    p.add_argument("--rotate-size", type=parse_size, default=128 << 20, metavar="SIZE",
                   help="start a new Parquet file when the open one reaches this size (default 128MB; 0 = never)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no live view: one line per completed file on stderr, errors and warnings only")
    p.add_argument("--duration", type=parse_duration, default=0.0, metavar="SECONDS",
                   help="stop after this long (default: run until SIGINT/SIGTERM)")
    p.add_argument("--count-packets", type=int, default=0, metavar="N",
                   help="stop after N captured packets (tcpdump -c N)")
    p.add_argument("--buffer", type=parse_size, default=128 << 20, metavar="SIZE",
                   help="kernel capture buffer (tcpdump -B; default 128MB): absorbs bursts while decoding")
    p.add_argument("--immediate-mode", action="store_true",
                   help="tcpdump --immediate-mode: packets reach the tap at once instead of within 1 s, but each "
                        "one takes a ring slot of the interface's largest frame (64 KiB on lo and on NICs with "
                        "offloads): kernel drops start at a much lower rate (see bench/bench_tap.py)")
    p.add_argument("--max-outage", type=parse_duration, default=0.0, metavar="DURATION",
                   help="when the interface goes down or disappears, wait at most this long for it to come back, "
                        "then stop with exit code 3 (default 0: wait for ever, retrying every 0.5-5 s)")
    p.add_argument("--tcpdump", default="tcpdump", metavar="PATH", help="tcpdump binary (default: from PATH)")
    _add_decode_options(p)
    p.set_defaults(func=run)
    return p


# -- the pcap stream ----------------------------------------------------------------------------------

_PCAP_MAGICS: dict[bytes, tuple[str, float]] = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_MAX_RECORD = 256 << 20


class PcapStream:
    """Incremental classic-pcap parser (sans-I/O): ``feed`` bytes as they come, get whole packets back.

    Unlike :func:`~inspector.capture_file.open_capture`, which reads a file in 1 MiB chunks and waits for
    each chunk to fill, this never waits: packets are returned as soon as their last byte was fed.
    """

    def __init__(self, name: str = "tcpdump") -> None:
        self.name = name
        self.linktype: int | None = None
        self.snaplen: int | None = None
        self.bytes_fed = 0
        self.packets = 0
        self._buf = b""
        self._unpack: Callable[[bytes, int], tuple[int, ...]] | None = None
        self._scale = 1e-6

    @property
    def pending(self) -> int:
        """Bytes of an incomplete record (or header) waiting for more data."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[RawPacket]:
        self.bytes_fed += len(data)
        buf = self._buf + data if self._buf else data
        pos = 0
        if self._unpack is None:
            if len(buf) < 24:
                self._buf = buf
                return []
            fmt = _PCAP_MAGICS.get(buf[:4])
            if fmt is None:
                raise CaptureError(f"{self.name}: not a pcap stream (magic 0x{buf[:4].hex()})")
            endian, self._scale = fmt
            snaplen, network = Struct(endian + "II").unpack_from(buf, 16)
            self.snaplen, self.linktype = snaplen, network & 0xFFFF
            self._unpack = Struct(endian + "IIII").unpack_from
            pos = 24
        unpack = self._unpack
        scale = self._scale
        linktype = self.linktype
        assert linktype is not None
        make = RawPacket
        out: list[RawPacket] = []
        n = len(buf)
        while n - pos >= 16:
            sec, frac, caplen, wirelen = unpack(buf, pos)
            start = pos + 16
            end = start + caplen
            if end > n:
                if caplen > _MAX_RECORD:
                    raise CaptureError(f"{self.name}: record claims {caplen} captured bytes: stream damaged")
                break
            out.append(make(sec + frac * scale, linktype, buf[start:end], caplen, wirelen))
            pos = end
        self._buf = buf[pos:] if pos < n else b""
        self.packets += len(out)
        return out


# -- tcpdump ------------------------------------------------------------------------------------------

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


class TcpdumpError(Exception):
    def __init__(self, message: str, exit_code: int = EXIT_CAPTURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.interface_down: str | None = None  # tcpdump's words when the interface is (still) down or gone


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
        return TcpdumpError(f"bad capture filter {bpf!r}: {text.removeprefix('tcpdump: ')}", EXIT_USAGE)
    last = next((line.strip() for line in reversed(lines) if line.strip()), "no message")
    return TcpdumpError(f"tcpdump failed: {last.removeprefix('tcpdump: ')}")


# libpcap's words for an interface that went down or away: "The interface went down" (ENETDOWN while
# capturing), "The interface disappeared", and on opening "That device is not up", "No such device exists",
# "SIOCGIFINDEX: No such device", "Network is down", "No such device or address".
_OUTAGE_RE = re.compile(r"interface went down|interface disappeared|no such device|device is not up|"
                        r"network is down|\benetdown\b|\benodev\b|\benxio\b", re.IGNORECASE)


def interface_outage(lines: list[str]) -> str | None:
    """tcpdump's message when its stderr says the interface went down or disappeared, else None."""
    for line in lines:
        if _OUTAGE_RE.search(line):
            return line.strip().removeprefix("tcpdump: ").removeprefix("pcap_loop: ")
    return None


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
                    raise TcpdumpError("stopped while tcpdump was starting")
                raise explain_tcpdump_failure(self.stderr_lines, self.interface, self.bpf)
        return fd

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lock:
                self.stderr_lines.append(line)
                del self.stderr_lines[:-50]
                self.stats.parse(line)
            if "listening on" in line:
                self.ready.set()

    def request_stats(self) -> None:
        """SIGUSR1: tcpdump prints its counters on stderr (read by the stderr thread)."""
        if self.proc is not None and self.proc.poll() is None and self.ready.is_set() and self.stop_sent_at is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGUSR1)

    def stop(self) -> None:
        """SIGINT: tcpdump flushes, prints its final counters and exits; the pipe then ends."""
        if self.proc is None or self.stop_sent_at is not None:
            return
        self.stop_sent_at = time.monotonic()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGINT if self.ready.is_set() else signal.SIGTERM)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def wait(self, timeout: float = 5.0) -> int:
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait(timeout)
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return rc

    def last_error(self) -> str:
        with self._lock:
            lines = [line for line in self.stderr_lines if not _is_stats_line(line) and "listening on" not in line]
        return lines[-1].removeprefix("tcpdump: ") if lines else "no message"


def _is_stats_line(line: str) -> bool:
    return any(rx.search(line) for rx in _STAT_RES.values())


# -- output -------------------------------------------------------------------------------------------


# -- the tap ------------------------------------------------------------------------------------------


@dataclass
class _Reservoir:
    """Keeps Summary's per-API latency lists to a uniform sample of at most ``cap`` values."""

    cap: int = LATENCY_RESERVOIR
    seen: dict[str, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def after_message(self, summary: Summary, ev: KafkaMessage) -> None:
        if ev.direction != "response" or ev.latency_ms is None:
            return
        msg = ev.message
        name = msg.api_name or ("unknown" if msg.api_key is None else f"key {msg.api_key}")
        n = self.seen.get(name, 0) + 1
        self.seen[name] = n
        stats = summary.apis.get(name)
        if stats is None or len(stats.latencies) <= self.cap:
            return
        # Algorithm R: the newest value (just appended) replaces a random slot with probability cap/n.
        newest = stats.latencies.pop()
        j = self.rng.randrange(n)
        if j < self.cap:
            stats.latencies[j] = newest


@dataclass
class Outage:
    """One period with the capture interface down or gone."""

    reason: str
    started: float  # wall clock
    started_mono: float
    open_connections: int  # connections open when it began (their streams may have gaps after it)
    tcpdump_exited: bool = False  # tcpdump exited with it (the interface disappeared): started again once back
    ended_mono: float | None = None
    ended_by: str = ""  # "back", "stopped" (SIGINT/SIGTERM/--duration while down), "max-outage"
    attempts: int = 0  # tcpdump starts that failed while waiting
    last_error: str = ""

    def seconds(self, now: float | None = None) -> float:
        end = self.ended_mono if self.ended_mono is not None else (time.monotonic() if now is None else now)
        return max(0.0, end - self.started_mono)

    def as_dict(self) -> dict[str, Any]:
        return {"started": self.started, "seconds": round(self.seconds(), 3), "reason": self.reason,
                "tcpdump_exited": self.tcpdump_exited, "open_connections": self.open_connections,
                "ended_by": self.ended_by or "running", "failed_starts": self.attempts,
                "last_start_error": self.last_error or None}


class Tap:
    """One capture session: tcpdump pipe → Inspector → Parquet, with the live view or quiet lines."""

    def __init__(self, args: argparse.Namespace, stop: threading.Event | None = None,
                 console: Any = None) -> None:
        from inspector.cli import _read_options

        self.args = args
        self.options = _read_options(args)
        self.out: Path = args.output
        self.bpf = build_filter(args.filter, self.options.ports)
        self.stop_event = stop or threading.Event()
        self.stop_reason = ""
        self.summary = Summary()
        self.capture_name = f"tap:{args.interface}"
        self.table = EventTable(capture=self.capture_name, records=self.options.records)
        self.inspector = Inspector(ports=set(self.options.ports), max_frame=self.options.max_frame,
                                   max_buffered=self.options.max_buffered,
                                   max_connections=self.options.max_connections,
                                   max_pending=self.options.max_pending, max_held=self.options.max_held,
                                   max_elements=self.options.max_elements)
        self.live_stats = LiveStats()
        self.counters = TapCounters()
        self.reservoir = _Reservoir()
        self.console = console
        self.view: LiveView | None = None
        self.writer: ParquetDatasetWriter | None = None
        self.tcpdump: Tcpdump | None = None  # the running (or last) tcpdump
        self.binary = args.tcpdump
        self.stream = PcapStream(f"tcpdump -i {args.interface}")
        self.stream_ts = 0.0  # timestamp of the last packet read from tcpdump
        self.started_wall = time.time()
        self.started = time.monotonic()
        self.signals = 0
        self.catch_up_seconds: float | None = None  # stop request -> tcpdump stopped (reading its backlog)
        # Without --immediate-mode a packet reaches the pipe at most BLOCK_TIMEOUT after its capture.
        self.ring_delay = 0.0 if args.immediate_mode else BLOCK_TIMEOUT + 0.2
        # Interface outages, and the totals of the tcpdump runs that ended before the current one.
        self.outages: list[Outage] = []
        self.outage: Outage | None = None
        self.watch_interface = False  # /sys/class/net says whether the interface is up
        self.earlier_stats = CaptureStats()
        self.earlier_packets = 0
        self.earlier_bytes = 0
        self.output_failed: OutputError | None = None

    # -- signals --------------------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signals += 1
        if not self.stop_reason:
            self.stop_reason = signal.Signals(signum).name
        self.stop_event.set()
        if self.signals >= 2 and self.tcpdump is not None:
            self.tcpdump.kill()  # impatient: stop now, still drain what the pipe holds

    # -- totals over tcpdump runs ---------------------------------------------------------------------

    @property
    def capture_stats(self) -> CaptureStats:
        """tcpdump's counters summed over every run (the capture is reopened after an interface outage)."""
        current = self.tcpdump
        if current is None or current.accounted:
            return self.earlier_stats.plus(CaptureStats())
        return self.earlier_stats.plus(current.stats)

    @property
    def packets_read(self) -> int:
        return self.earlier_packets + self.stream.packets

    @property
    def bytes_read(self) -> int:
        return self.earlier_bytes + self.stream.bytes_fed

    def _retire(self, tcpdump: Tcpdump) -> int:
        """Wait for a tcpdump that ended (or was stopped) and add its counters to the totals; its exit code."""
        rc = tcpdump.wait()
        if not tcpdump.accounted:
            tcpdump.accounted = True
            self.earlier_stats.add(tcpdump.stats)
            if self.stream.pending:
                self.summary.warnings.append(f"{self.capture_name}: the pcap stream ended inside a record "
                                             f"({self.stream.pending} bytes dropped)")
            self.earlier_packets += self.stream.packets
            self.earlier_bytes += self.stream.bytes_fed
            self.stream = PcapStream(self.stream.name)  # a new tcpdump writes a new pcap header
        return rc

    # -- output callbacks -----------------------------------------------------------------------------

    def _file_done(self, path: Path, rows: int, size: int) -> None:
        self.counters.files_written += 1
        self.counters.last_file = path.name
        try:
            shown = path.relative_to(Path.cwd())
        except ValueError:
            shown = path
        drops = self.capture_stats.kernel_dropped
        line = (f"kafka-inspector tap: wrote {shown} ({rows:,} events, {size:,} bytes; "
                f"kernel drops so far: {drops if drops is not None else '?'})")
        if self.args.quiet:
            print(line, file=sys.stderr, flush=True)

    def _notice(self, message: str) -> None:
        """One line for a person: on stderr in quiet mode, above the live view otherwise."""
        if self.console is not None and not self.args.quiet:
            self.console.print(f"kafka-inspector tap: {message}", highlight=False, markup=False, soft_wrap=True)
        else:
            print(f"kafka-inspector tap: {message}", file=sys.stderr, flush=True)

    # -- interface outages ----------------------------------------------------------------------------

    def _begin_outage(self, reason: str, capture_lost: bool) -> None:
        iface = self.args.interface
        if self.outage is not None:  # already down (seen in /sys/class/net); now tcpdump exited too
            if capture_lost and not self.outage.tcpdump_exited:
                self.outage.tcpdump_exited = True
                self.outage.reason = reason
            return
        self.outage = Outage(reason, time.time(), time.monotonic(), len(self.inspector.conns),
                             tcpdump_exited=capture_lost)
        self.outages.append(self.outage)
        limit = f"; giving up after {self.args.max_outage:g}s (--max-outage)" if self.args.max_outage else ""
        how = (f"restarting tcpdump every {RETRY_FIRST:g}-{RETRY_MAX:g}s until it listens again" if capture_lost
               else "capture kept open")
        self._notice(f"interface {iface} is down ({reason}): waiting for it to come back ({how}{limit}); "
                     f"everything captured so far is kept")
        self._show_outage()

    def _end_outage(self, ended_by: str) -> None:
        outage = self.outage
        if outage is None:
            return
        outage.ended_mono = time.monotonic()
        outage.ended_by = outage.ended_by or ended_by  # "max-outage" stays, even if it came back while stopping
        self.outage = None
        self.counters.outage_seconds = sum(o.seconds() for o in self.outages)
        if outage.ended_by == "back":
            n = outage.open_connections
            gaps = (f"; {n} connection{'s' if n != 1 else ''} open across it may show gaps for the bytes missed"
                    if n and outage.tcpdump_exited else "")
            self._notice(f"interface {self.args.interface} is back after {outage.seconds():.1f}s: capturing again"
                         + (" (tcpdump restarted)" if outage.tcpdump_exited else "") + gaps)
            if self.view is not None:
                self.view.state = "capturing"

    def _show_outage(self, next_retry: float | None = None) -> None:
        outage = self.outage
        if outage is None:
            return
        self.counters.outages = len(self.outages)
        self.counters.outage_seconds = sum(o.seconds() for o in self.outages)
        if self.view is not None:
            retry = (f", next try in {max(0.0, next_retry - time.monotonic()):.1f}s" if next_retry is not None
                     else "")
            self.view.state = f"INTERFACE DOWN for {outage.seconds():.0f}s: waiting{retry}"

    def _reopen(self) -> int:
        """Start tcpdump again after the interface disappeared; its pipe's fd. Raises TcpdumpError."""
        count = 0
        if self.args.count_packets:
            count = max(1, self.args.count_packets - self.packets_read)
        tcpdump = Tcpdump(self.binary, self.args.interface, self.bpf, buffer_bytes=self.args.buffer, count=count,
                          immediate=self.args.immediate_mode)
        try:
            fd = tcpdump.start(cancel=self.stop_event)
        except TcpdumpError as exc:
            if tcpdump.proc is not None:
                tcpdump.wait(2)  # reap it and close its pipes: retries may go on for hours
            exc.interface_down = interface_outage(tcpdump.stderr_lines)
            raise
        self.tcpdump = tcpdump
        return fd

    # -- main loop ------------------------------------------------------------------------------------

    def run(self) -> int:
        args = self.args
        binary = shutil.which(args.tcpdump)
        if binary is None:
            _error(TCPDUMP_FIX)
            return EXIT_CAPTURE
        self.binary = binary
        iface = args.interface
        names = available_interfaces()
        if iface != "any" and not iface.isdigit() and names and iface not in names:
            _error(f"no interface {iface!r}: available: {', '.join(names)}")
            return EXIT_CAPTURE
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.writer = ParquetDatasetWriter(self.out, rows_per_file=0, rotate_seconds=args.rotate,
                                                rotate_bytes=args.rotate_size,
                                                on_file=self._file_done)
        except OSError as exc:
            _error(str(output_error(self.out, exc)))
            return EXIT_OUTPUT

        self.tcpdump = Tcpdump(binary, iface, self.bpf, buffer_bytes=args.buffer, count=args.count_packets,
                               immediate=args.immediate_mode)
        in_main = threading.current_thread() is threading.main_thread()
        previous: dict[int, Any] = {}
        if in_main:
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, self._on_signal)
        error: str | None = None
        try:
            try:
                fd = self.tcpdump.start()
            except TcpdumpError as exc:
                _error(str(exc))
                return exc.exit_code
            self.watch_interface = interface_state(iface) == "up"
            if not args.quiet:
                from rich.console import Console

                self.console = self.console or Console(stderr=True)
                self.console.print(f"[bold]kafka-inspector tap[/]: listening on {iface} "
                                   f"(filter: {self.bpf}) → {self.out}", highlight=False)
                self.view = LiveView(self.console, interface=iface, bpf=self.bpf, output=self.out)
                self.view.start()
            code, error = self._loop(fd)
        finally:
            if self.view is not None:
                self.view.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            tcpdump = self.tcpdump
            if tcpdump is not None and tcpdump.proc is not None and tcpdump.proc.poll() is None:
                tcpdump.kill()
                tcpdump.wait()
        if error:
            _error(error)  # after the live view stopped: one line, not torn by a refresh
        return code

    def _loop(self, first_fd: int) -> tuple[int, str | None]:
        """Capture until stopped; returns the exit code and the error line (if any)."""
        assert self.tcpdump is not None and self.writer is not None
        args = self.args
        fd: int | None = first_fd  # None while the interface is gone (no tcpdump running)
        poller = select.poll()
        poller.register(first_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        deadline = self.started + args.duration if args.duration else None
        last_flush = last_stats = last_data = time.monotonic()
        stop_wall: float | None = None
        stop_mono = 0.0
        backoff = RETRY_FIRST
        next_retry = 0.0
        error: str | None = None
        code = EXIT_OK
        try:
            while True:
                tcpdump = self.tcpdump
                now = time.monotonic()
                if deadline is not None and now >= deadline and not self.stop_event.is_set():
                    self.stop_reason = self.stop_reason or "duration"
                    self.stop_event.set()
                outage = self.outage
                if (outage is not None and args.max_outage and outage.seconds(now) >= args.max_outage
                        and not self.stop_event.is_set()):
                    # Stop as on SIGTERM (a tcpdump still running on a down interface is drained as usual).
                    outage.ended_by = self.stop_reason = "max-outage"
                    error, code = (f"interface {args.interface} down for more than {args.max_outage:g}s "
                                   f"(--max-outage; {outage.reason}): stopped, what was captured is saved",
                                   EXIT_CAPTURE)
                    self.stop_event.set()
                if fd is None:
                    # The interface is gone and tcpdump with it: retry, keep flushing and rotating meanwhile.
                    assert outage is not None
                    if self.stop_event.is_set():
                        self.stop_reason = self.stop_reason or "stop requested"
                        break
                    if now >= next_retry:
                        try:
                            fd = self._reopen()
                        except TcpdumpError as exc:
                            if self.stop_event.is_set():
                                continue
                            if exc.interface_down is None:  # e.g. permission, filter: waiting will not help
                                error, code = f"reopening the capture after an interface outage: {exc}", exc.exit_code
                                break
                            outage.attempts += 1
                            outage.last_error = exc.interface_down
                            backoff = min(backoff * 2, RETRY_MAX)
                            next_retry = time.monotonic() + backoff
                        else:
                            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
                            last_data = time.monotonic()
                            if not self.watch_interface or interface_state(args.interface) == "up":
                                self._end_outage("back")
                            continue
                    else:
                        self.stop_event.wait(min(0.2, max(0.0, next_retry - now)))
                    self._show_outage(next_retry)
                else:
                    assert tcpdump is not None
                    if self.stop_event.is_set() and stop_wall is None:
                        # Packets captured before this moment may still wait in tcpdump's kernel ring (tcpdump
                        # blocks on the pipe while we decode), and tcpdump drops the ring when it gets SIGINT:
                        # read on until a packet from this moment on arrives or the pipe stays quiet.
                        stop_wall, stop_mono = time.time(), now
                        self.stop_reason = self.stop_reason or "stop requested"
                        if self.view is not None:
                            self.view.state = f"stopping ({self.stop_reason or 'requested'}): catching up"
                    if stop_wall is not None and tcpdump.stop_sent_at is None and (
                            self.stream_ts >= stop_wall
                            or (now - stop_mono >= self.ring_delay and now - last_data >= QUIET_SECONDS)
                            or now - stop_mono >= CATCH_UP_SECONDS or self.signals >= 2):
                        if now - stop_mono >= CATCH_UP_SECONDS and self.stream_ts < stop_wall:
                            self.summary.warnings.append(
                                f"{self.capture_name}: still {stop_wall - self.stream_ts:.1f}s behind the capture "
                                f"{CATCH_UP_SECONDS:.0f}s after the stop request; packets still in tcpdump's buffer "
                                "were not decoded")
                        tcpdump.stop()
                        self.catch_up_seconds = now - stop_mono
                        if self.view is not None:
                            self.view.state = f"stopping ({self.stop_reason or 'requested'}): draining"
                    if tcpdump.stop_sent_at is not None and now - tcpdump.stop_sent_at > STOP_GRACE:
                        tcpdump.kill()
                    if poller.poll(50 if stop_wall is not None else 200):
                        data = os.read(fd, READ_CHUNK)
                        if data:
                            last_data = time.monotonic()
                            self._packets(self.stream.feed(data))
                        else:  # tcpdump ended
                            poller.unregister(fd)
                            fd = None
                            rc = self._retire(tcpdump)
                            if tcpdump.stop_sent_at is not None or tcpdump.killed:
                                break
                            lost = interface_outage(tcpdump.stderr_lines)
                            if lost is None:
                                if rc != 0:
                                    how = (f"killed by {signal.Signals(-rc).name}" if rc < 0
                                           else f"exit {rc}: {tcpdump.last_error()}")
                                    error, code = (f"tcpdump stopped unexpectedly ({how}); what it captured is saved",
                                                   EXIT_CAPTURE)
                                break  # -c N packets captured
                            self._begin_outage(lost, capture_lost=True)
                            backoff = RETRY_FIRST
                            next_retry = time.monotonic() + backoff
                now = time.monotonic()
                if len(self.table) >= BATCH_ROWS or (now - last_flush >= FLUSH_SECONDS):
                    self.writer.maybe_rotate(now)  # before writing: a file spans `--rotate` seconds of flushes
                    self._flush()
                    last_flush = now
                if now - last_stats >= STATS_SECONDS:
                    if fd is not None and self.tcpdump is not None:
                        self.tcpdump.request_stats()
                        self._watch_interface()
                    self._drain_closed()
                    self._refresh()
                    last_stats = now
        except CaptureError as exc:
            error, code = str(exc), EXIT_CAPTURE
        except OutputError as exc:  # from the writer, which removed the file in progress
            self.output_failed = exc
            error, code = str(exc), EXIT_OUTPUT
        except OSError as exc:
            error, code = str(output_error(self.out, exc)), EXIT_OUTPUT
        tcpdump = self.tcpdump
        if tcpdump is not None and not tcpdump.accounted:
            if code != EXIT_OK:
                tcpdump.kill()
            self._retire(tcpdump)
        if self.outage is not None:
            self._end_outage(self.outage.ended_by or "stopped")
        if self.output_failed is not None:
            return code, error  # the disk refused: write nothing more (no connections.parquet, no summary.json)
        try:
            self._finish()
        except OSError as exc:  # OutputError from the writer or from _finish: one line saying what is kept
            error, code = str(output_error(self.out, exc)), EXIT_OUTPUT
        return code, error

    def _watch_interface(self) -> None:
        """While tcpdump runs: report the interface going down (the capture stays open) and coming back."""
        if not self.watch_interface:
            return
        state = interface_state(self.args.interface)
        if state is None:
            return
        if state in ("down", "no carrier"):  # "gone": tcpdump exits at once, and the loop restarts it
            self._begin_outage(f"interface {state}", capture_lost=False)
            self._show_outage()
        elif self.outage is not None:
            self._end_outage("back")

    def _packets(self, packets: list[RawPacket]) -> None:
        summary = self.summary
        inspector = self.inspector
        table = self.table
        counters = self.counters
        counted = self.reservoir.after_message
        out: list[KafkaMessage] = []
        if packets:
            self.stream_ts = packets[-1].ts
        for pkt in packets:
            counters.wire_bytes += pkt.wirelen
            packet_messages(inspector, summary, parse_packet(pkt), out, counted)  # as `read` does
            for ev in out:
                table.add(ev)
            out.clear()

    def _flush(self) -> None:
        assert self.writer is not None
        if len(self.table):
            batch = self.table.take()
            self.writer.write(batch)
            self.live_stats.add_batch(batch)

    def _drain_closed(self) -> None:
        drain_closed(self.inspector, self.summary, self.capture_name)

    def _refresh(self) -> None:
        s = self.summary
        c = self.counters
        c.packets = s.packets
        c.frames = s.frames
        c.messages = s.messages
        c.decode_failures = s.decode_failures
        c.decode_warnings = s.decode_warnings
        c.gap_bytes = s.stream_issues.get("gap", 0)
        c.skipped_bytes = s.stream_issues.get("skipped", 0) + s.stream_issues.get("oversized", 0)
        c.open_connections = len(self.inspector.conns)
        if self.writer is not None:
            c.events_in_current_file = self.writer.rows_in_file if self.writer.open_file is not None else 0
        st = self.capture_stats
        c.kernel_dropped, c.received_by_filter = st.kernel_dropped, st.received
        c.interface_dropped = st.interface_dropped or 0
        c.outages = len(self.outages)
        c.outage_seconds = sum(o.seconds() for o in self.outages)
        if self.view is not None:
            self.view.refresh(c, self.live_stats)

    def _finish(self) -> None:
        assert self.writer is not None and self.tcpdump is not None
        out: list[KafkaMessage] = []
        count_events(self.summary, self.inspector.finish(self.stream_ts or time.time()), out,
                     self.reservoir.after_message)
        for ev in out:
            self.table.add(ev)
        self._flush()
        account_finished(self.inspector, self.summary, self.capture_name)  # as `read` does
        for limit, hits in self.table.limit_hits.items():
            self.summary.limit_hit(limit, hits)
        files = self.writer.close()  # OutputError (the file in progress removed) if the disk refuses
        st = self.capture_stats
        if st.kernel_dropped:
            self.summary.warnings.append(
                f"{self.capture_name}: the kernel dropped {st.kernel_dropped:,} packets (tcpdump's counter): "
                "TCP streams have gaps; raise --buffer, narrow --filter/--port or add CPU")
        if st.interface_dropped:
            self.summary.warnings.append(f"{self.capture_name}: the interface dropped {st.interface_dropped:,} "
                                         "packets")
        if self.tcpdump.killed:
            self.summary.warnings.append(f"{self.capture_name}: tcpdump had to be killed; its final counters "
                                         "may be missing")
        down = sum(o.seconds() for o in self.outages)
        if self.outages:
            exited = sum(1 for o in self.outages if o.tcpdump_exited)
            self.summary.warnings.append(
                f"{self.capture_name}: the interface was down {len(self.outages)} time"
                f"{'s' if len(self.outages) != 1 else ''} ({down:.1f}s in all"
                + (f"; tcpdump exited with {exited} of them" if exited else "")
                + "): traffic meanwhile was not captured; connections open across an outage show gaps "
                  "where bytes were missed (tap.outages in summary.json)")
        self._refresh()
        from inspector.cli import print_summary, summary_dict
        from inspector.reader import write_connections

        try:
            write_connections(self.summary, self.out)
        except OSError as exc:
            remove_quietly(self.out / "connections.parquet")  # never leave it half-written
            n = len(files)
            raise output_error(self.out, exc, f"{n} complete event file{'s' if n != 1 else ''} kept; "
                                              "connections.parquet and summary.json not written") from exc
        doc = summary_dict(self.summary)
        doc["tap"] = {
            "interface": self.args.interface,
            "filter": self.bpf,
            "started": self.started_wall,
            "seconds": round(time.monotonic() - self.started, 3),
            "stopped_by": self.stop_reason or ("count" if self.args.count_packets else "end of stream"),
            "stop_catch_up_seconds": None if self.catch_up_seconds is None else round(self.catch_up_seconds, 3),
            "packets_read": self.packets_read,
            "bytes_read": self.bytes_read,
            "tcpdump_captured": st.captured,
            "tcpdump_received_by_filter": st.received,
            "kernel_dropped": st.kernel_dropped,
            "interface_dropped": st.interface_dropped or 0,
            "interface_outages": len(self.outages),
            "interface_down_seconds": round(down, 3),
            "max_outage": self.args.max_outage or None,
            "outages": [o.as_dict() for o in self.outages],
            "files": [p.name for p in files],
        }
        tmp = self.out / ".summary.json.inprogress"
        try:
            tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, self.out / "summary.json")
        except OSError as exc:
            remove_quietly(tmp)
            n = len(files)
            raise output_error(self.out, exc, f"{n} complete event file{'s' if n != 1 else ''} and "
                                              "connections.parquet kept; summary.json not written") from exc
        if self.view is not None and self.console is not None:
            self.view.stop()
            print_summary(self.console, self.summary, time.monotonic() - self.started)
            drops = "?" if st.kernel_dropped is None else f"{st.kernel_dropped:,}"
            outages = (f"; interface down {len(self.outages)} time{'s' if len(self.outages) != 1 else ''} "
                       f"({down:.1f}s)" if self.outages else "")
            self.console.print(f"tcpdump: {st.captured if st.captured is not None else '?'} packets captured, "
                               f"{drops} dropped by kernel{outages}; wrote {self.summary.messages:,} events to "
                               f"{self.out} ({len(files)} file{'s' if len(files) != 1 else ''})", highlight=False)
        elif self.args.quiet:
            for warning in self.summary.warnings:
                print(f"kafka-inspector tap: warning: {warning}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, stop: threading.Event | None = None) -> int:
    """Run ``tap`` with parsed options; ``stop`` (optional) ends it like SIGINT does. Returns the exit code."""
    if args.rotate < 0 or args.rotate_size < 0 or args.duration < 0 or args.count_packets < 0:
        _error("--rotate, --rotate-size, --duration and --count-packets must not be negative")
        return EXIT_USAGE
    return Tap(args, stop).run()


def main(argv: list[str] | None = None) -> int:
    """``python -m inspector.tap ...``: the tap on its own, until the CLI offers ``kafka-inspector tap``."""
    parser = argparse.ArgumentParser(prog="kafka-inspector")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "tap":
        argv = ["tap", *argv]
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
