"""What the tap's controller is told and what it tells its driver: small frozen dataclasses, no I/O.

Events (``inspector.tap.controller.TapController.handle`` takes one with the time): :class:`Tick`,
:class:`DataArrived`, :class:`TcpdumpStarted`, :class:`TcpdumpStartFailed`, :class:`TcpdumpExited`,
:class:`InterfaceObserved`, :class:`StopRequested`, :class:`FileGrew`, :class:`Failed`. Actions (what it
returns, carried out in order by ``inspector.tap.driver``): :class:`StartTcpdump`, :class:`StopTcpdump`,
:class:`KillTcpdump`, :class:`RequestStats`, :class:`ObserveInterface`, :class:`WriteRows`,
:class:`RotateFile`, :class:`Refresh`, :class:`ShowState`, :class:`Notice`, :class:`Warn`, :class:`Finish`.
And :class:`Outage`, one period with the interface down, as ``summary.json`` reports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.errors import ExitCode

# -- events: what happened ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed. ``wall``: the wall clock at ``now`` (packet timestamps are wall-clock times)."""

    wall: float | None = None


@dataclass(frozen=True, slots=True)
class DataArrived:
    """Bytes of the pcap stream were read and their packets decoded."""

    packets: int
    nbytes: int
    rows_pending: int  # rows in the event table, not written yet
    last_ts: float | None = None  # capture time of the newest packet


@dataclass(frozen=True, slots=True)
class TcpdumpStarted:
    """tcpdump listens; ``interface``: the interface's state then (up, down, no carrier, gone, None: unknown)."""

    interface: str | None = "up"


@dataclass(frozen=True, slots=True)
class TcpdumpStartFailed:
    message: str  # one line naming the fix
    exit_code: int = ExitCode.INPUT
    stderr: tuple[str, ...] = ()
    cancelled: bool = False  # a stop request ended the wait


@dataclass(frozen=True, slots=True)
class TcpdumpExited:
    """tcpdump's pipe ended and the process was reaped."""

    returncode: int
    stderr: tuple[str, ...] = ()
    signal_name: str | None = None  # the signal's name, for a negative return code
    open_connections: int = 0


@dataclass(frozen=True, slots=True)
class InterfaceObserved:
    state: str | None  # up, down, no carrier, gone; None where the kernel does not say
    open_connections: int = 0


@dataclass(frozen=True, slots=True)
class StopRequested:
    reason: str  # SIGINT, SIGTERM, "stop requested"
    signal: bool = False  # a second signal means: stop now


@dataclass(frozen=True, slots=True)
class FileGrew:
    """Rows were written; ``size``: bytes of the file in progress now."""

    size: int


@dataclass(frozen=True, slots=True)
class Failed:
    """The stream or the output failed. ``output``: the disk refused, write nothing more."""

    code: int
    message: str
    output: bool = False


Event = (Tick | DataArrived | TcpdumpStarted | TcpdumpStartFailed | TcpdumpExited | InterfaceObserved
         | StopRequested | FileGrew | Failed)

# -- actions: what the driver does ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartTcpdump:
    count: int = 0  # tcpdump -c: packets still wanted (0: no limit)


@dataclass(frozen=True, slots=True)
class StopTcpdump:
    """SIGINT: tcpdump hands over its ring, prints its counters and exits; the pipe is read to its end."""


@dataclass(frozen=True, slots=True)
class KillTcpdump:
    """SIGKILL: tcpdump did not stop in time, or a second signal asked for it."""


@dataclass(frozen=True, slots=True)
class RequestStats:
    """SIGUSR1: tcpdump prints its counters."""


@dataclass(frozen=True, slots=True)
class ObserveInterface:
    """Look at the interface (reply: InterfaceObserved)."""


@dataclass(frozen=True, slots=True)
class WriteRows:
    """Write the pending rows to the open file (reply: FileGrew)."""


@dataclass(frozen=True, slots=True)
class RotateFile:
    reason: str  # "time" or "size"


@dataclass(frozen=True, slots=True)
class Refresh:
    """Account the connections closed meanwhile and redraw the live view."""


@dataclass(frozen=True, slots=True)
class ShowState:
    text: str  # the live view's state line


@dataclass(frozen=True, slots=True)
class Notice:
    text: str  # one line for a person


@dataclass(frozen=True, slots=True)
class Warn:
    text: str  # a warning for summary.json


@dataclass(frozen=True, slots=True)
class Finish:
    """Stop: write what is left and the totals (unless ``write_totals`` is False), then exit with ``code``."""

    code: int
    error: str | None = None
    write_totals: bool = True


Action = (StartTcpdump | StopTcpdump | KillTcpdump | RequestStats | ObserveInterface | WriteRows | RotateFile
          | Refresh | ShowState | Notice | Warn | Finish)


# -- what the controller records ------------------------------------------------------------------------


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

    def seconds(self, now: float = 0.0) -> float:
        """How long it lasted (up to ``now`` while it goes on)."""
        end = self.ended_mono if self.ended_mono is not None else now
        return max(0.0, end - self.started_mono)

    def as_dict(self) -> dict[str, Any]:
        return {"started": self.started, "seconds": round(self.seconds(), 3), "reason": self.reason,
                "tcpdump_exited": self.tcpdump_exited, "open_connections": self.open_connections,
                "ended_by": self.ended_by or "running", "failed_starts": self.attempts,
                "last_start_error": self.last_error or None}
