"""The tap's controller, sans-I/O: what a running ``kafka-inspector tap`` does next, as a state table.

:meth:`TapController.handle` takes one event (something that happened: bytes decoded, tcpdump exited,
the interface was seen down, a tick of the clock, a stop request) and the monotonic time ``now`` as a plain
number, updates :class:`TapState` and returns the actions the driver (``inspector.tap.driver``) carries out
in order: start, stop or kill tcpdump, write the pending rows, rotate the Parquet file, say a line, show a
state in the live view, finish with an exit code. It never reads a clock, opens a file, starts a process
or touches a signal, so every transition is tested with synthetic time (``tests/inspector/
test_tap_controller.py``).

Phases (``TapState.phase``, a :class:`TapPhase`) and what moves between them (:data:`PHASE_MOVES`, the table
every move goes through):

* ``starting``: the first tcpdump is being started; it listens (``capturing``) or fails (``done``, exit 3,
  or 2 for a bad filter; nothing is written);
* ``capturing``: tcpdump runs. The interface seen down keeps the phase (the capture stays open) and opens
  an outage; tcpdump exiting with an interface-outage message moves to ``waiting``; exiting otherwise
  finishes (exit 3 if its code is not 0: ``-c N`` exits with 0);
* ``waiting``: the interface is gone and tcpdump with it. tcpdump is started again after
  ``RETRY_FIRST`` seconds, then after each failed start the wait doubles up to ``RETRY_MAX``
  (``restarting`` while a start is under way); once it listens, ``capturing`` again;
* ``catching_up``: a stop was requested (SIGINT/SIGTERM, ``--duration``, ``--max-outage``) while tcpdump
  runs. Packets captured before the request may still sit in tcpdump's kernel ring (without
  ``--immediate-mode`` a block is handed over when full or ``BLOCK_TIMEOUT`` old) and tcpdump drops the
  ring on SIGINT, so it is told to stop only once a packet captured after the request arrived, or the
  block timeout passed and the pipe stayed quiet ``QUIET_SECONDS``, or ``CATCH_UP_SECONDS`` passed, or a
  second signal came;
* ``draining``: tcpdump was told to stop (killed after ``STOP_GRACE`` seconds); its exit finishes;
* ``done``: :class:`Finish` was returned; nothing more happens.

In every phase but ``starting`` and ``done`` a tick rotates the file once it is ``--rotate`` seconds old
(a write that makes it ``--rotate-size`` bytes rotates it too) and then writes the pending rows, at least
every ``FLUSH_SECONDS`` (at once at ``BATCH_ROWS`` rows); once a second it asks tcpdump for its counters,
has the interface looked at and the view refreshed. An outage longer than ``--max-outage`` stops the tap
as SIGTERM does, with exit 3.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Final

from contract.errors import ExitCode
from inspector.tap.tap_events import (
    Action,
    DataArrived,
    Event,
    Failed,
    FileGrew,
    Finish,
    InterfaceObserved,
    KillTcpdump,
    Notice,
    ObserveInterface,
    Outage,
    Refresh,
    RequestStats,
    RotateFile,
    ShowState,
    StartTcpdump,
    StopRequested,
    StopTcpdump,
    TcpdumpExited,
    TcpdumpStarted,
    TcpdumpStartFailed,
    Tick,
    Warn,
    WriteRows,
)
from inspector.transitions import move

#: Rows waiting in the event table that are written at once (else at least every FLUSH_SECONDS).
BATCH_ROWS = 8192
#: Event batches are handed to the Parquet file at least this often (seconds).
FLUSH_SECONDS = 1.0
#: tcpdump is asked for its counters (and the interface looked at) this often (seconds).
STATS_SECONDS = 1.0
#: After SIGINT, tcpdump gets this long to exit before it is killed (the pipe is drained either way).
STOP_GRACE = 10.0
#: After a stop request, the pipe counts as drained when it stays quiet this long (seconds) ...
QUIET_SECONDS = 0.3
#: ... or when a packet captured after the request arrives; but tcpdump is stopped after this long anyway.
CATCH_UP_SECONDS = 30.0
#: libpcap's TPACKET_V3 ring hands a block of packets over when it is full or this old (tcpdump's 1 s timeout).
BLOCK_TIMEOUT = 1.0
#: While the interface is gone, tcpdump is started again after this long, doubling up to RETRY_MAX (seconds).
RETRY_FIRST = 0.5
RETRY_MAX = 5.0

# libpcap's words for an interface that went down or away: "The interface went down" (ENETDOWN while
# capturing), "The interface disappeared", and on opening "That device is not up", "No such device exists",
# "SIOCGIFINDEX: No such device", "Network is down", "No such device or address".
_OUTAGE_RE = re.compile(r"interface went down|interface disappeared|no such device|device is not up|"
                        r"network is down|\benetdown\b|\benodev\b|\benxio\b", re.IGNORECASE)
_STATS_RE = re.compile(r"\d+ packets? (captured|received by filter|dropped by kernel|dropped by interface)")


def interface_outage(lines: list[str] | tuple[str, ...]) -> str | None:
    """tcpdump's message when its stderr says the interface went down or disappeared, else None."""
    for line in lines:
        if _OUTAGE_RE.search(line):
            return line.strip().removeprefix("tcpdump: ").removeprefix("pcap_loop: ")
    return None


def last_error(lines: list[str] | tuple[str, ...]) -> str:
    """tcpdump's last line on stderr that is neither a counter nor ``listening on``."""
    said = [line for line in lines if not _STATS_RE.search(line) and "listening on" not in line]
    return said[-1].removeprefix("tcpdump: ") if said else "no message"


# -- state ----------------------------------------------------------------------------------------------


class TapPhase(StrEnum):
    """Where the tap is (the module's docstring says what each means)."""

    STARTING = "starting"
    CAPTURING = "capturing"
    WAITING = "waiting"
    RESTARTING = "restarting"
    CATCHING_UP = "catching_up"
    DRAINING = "draining"
    DONE = "done"


class PhaseEvent(Enum):
    """What moves the tap from one phase to another."""

    LISTENING = "tcpdump listens"
    LISTENING_AFTER_STOP = "tcpdump listens again, a stop having been requested while it started"
    CAPTURE_LOST = "tcpdump exited, or failed to start, because the interface went down or away"
    RETRY = "the wait before starting tcpdump again is over"
    STOP = "a stop was requested while capturing"
    STOP_SENT = "tcpdump was told to stop"
    KILLED = "tcpdump was killed"
    FINISHED = "the tap finished (Finish returned)"


_P = TapPhase
#: The allowed (phase, event) -> phase moves; any other raises (inspector.transitions.IllegalTransition).
PHASE_MOVES: Final[dict[tuple[TapPhase, PhaseEvent], TapPhase]] = {
    (_P.STARTING, PhaseEvent.LISTENING): _P.CAPTURING,
    (_P.RESTARTING, PhaseEvent.LISTENING): _P.CAPTURING,
    (_P.RESTARTING, PhaseEvent.LISTENING_AFTER_STOP): _P.CATCHING_UP,
    (_P.CAPTURING, PhaseEvent.CAPTURE_LOST): _P.WAITING,
    (_P.CATCHING_UP, PhaseEvent.CAPTURE_LOST): _P.WAITING,
    (_P.RESTARTING, PhaseEvent.CAPTURE_LOST): _P.WAITING,
    (_P.WAITING, PhaseEvent.RETRY): _P.RESTARTING,
    (_P.CAPTURING, PhaseEvent.STOP): _P.CATCHING_UP,
    (_P.CATCHING_UP, PhaseEvent.STOP_SENT): _P.DRAINING,
    (_P.CAPTURING, PhaseEvent.KILLED): _P.DRAINING,
    (_P.CATCHING_UP, PhaseEvent.KILLED): _P.DRAINING,
    (_P.DRAINING, PhaseEvent.KILLED): _P.DRAINING,
    **{(phase, PhaseEvent.FINISHED): _P.DONE for phase in TapPhase if phase is not _P.DONE},
}


@dataclass(frozen=True)
class TapConfig:
    interface: str
    rotate_seconds: float = 0.0
    rotate_bytes: int = 0
    duration: float = 0.0
    count_packets: int = 0
    max_outage: float = 0.0
    immediate_mode: bool = False


@dataclass
class TapState:
    phase: TapPhase = TapPhase.STARTING
    started: float = 0.0
    wall_offset: float = 0.0  # wall clock minus monotonic, from the last tick that said
    watch_interface: bool = False  # the interface said "up" at the start: watch it
    tcpdump_running: bool = False
    tcpdump_killed: bool = False
    packets_read: int = 0
    bytes_read: int = 0
    rows_pending: int = 0
    stream_ts: float = 0.0  # capture time of the newest packet
    last_data: float = 0.0
    last_flush: float = 0.0
    last_stats: float = 0.0
    file_opened: float | None = None  # when the file in progress got its first rows
    outages: list[Outage] = field(default_factory=list)
    outage: Outage | None = None
    backoff: float = RETRY_FIRST
    next_retry: float = 0.0
    stop_reason: str = ""
    stop_requested: float | None = None
    stop_wall: float = 0.0
    stop_sent: float | None = None
    signals: int = 0
    catch_up_seconds: float | None = None  # stop request -> tcpdump told to stop
    exit_code: int = ExitCode.OK
    error: str | None = None
    output_failed: bool = False
    shown: str = "capturing"  # the view's state line

    def down_seconds(self, now: float = 0.0) -> float:
        return sum(o.seconds(now) for o in self.outages)


class TapController:
    """``handle(event, now) -> actions``: the tap's decisions, over :class:`TapState`."""

    def __init__(self, config: TapConfig, now: float) -> None:
        self.config = config
        self.state = TapState(started=now, last_data=now, last_flush=now, last_stats=now)
        # Without --immediate-mode a packet reaches the pipe at most BLOCK_TIMEOUT after its capture.
        self.ring_delay = 0.0 if config.immediate_mode else BLOCK_TIMEOUT + 0.2
        self._handlers: dict[type, Callable[[Any, float], list[Action]]] = {
            Tick: self._tick,
            DataArrived: self._data,
            TcpdumpStarted: self._started,
            TcpdumpStartFailed: self._start_failed,
            TcpdumpExited: self._exited,
            InterfaceObserved: self._observed,
            StopRequested: self._stop_requested,
            FileGrew: self._file_grew,
            Failed: self._failed,
        }

    def handle(self, event: Event, now: float) -> list[Action]:
        if self.state.phase is TapPhase.DONE:
            return []
        return self._handlers[type(event)](event, now)

    def timeout(self, now: float) -> float:
        """How long the driver may wait for data before the next tick (seconds)."""
        s = self.state
        if s.phase in (TapPhase.CATCHING_UP, TapPhase.DRAINING):
            return 0.05
        if s.phase is TapPhase.WAITING:
            return min(0.2, max(0.0, s.next_retry - now))
        return 0.2

    @property
    def stopped_by(self) -> str:
        return self.state.stop_reason or ("count" if self.config.count_packets else "end of stream")

    # -- events ---------------------------------------------------------------------------------------

    def _tick(self, ev: Tick, now: float) -> list[Action]:
        s, cfg = self.state, self.config
        if ev.wall is not None:
            s.wall_offset = ev.wall - now
        if s.phase is TapPhase.STARTING:
            return []
        out: list[Action] = []
        if cfg.duration and now - s.started >= cfg.duration and s.stop_requested is None:
            out += self._stop("duration", now)
        o = s.outage
        if o is not None and cfg.max_outage and o.seconds(now) >= cfg.max_outage and s.stop_requested is None:
            o.ended_by = "max-outage"
            s.exit_code = ExitCode.INPUT
            s.error = (f"interface {cfg.interface} down for more than {cfg.max_outage:g}s (--max-outage; "
                       f"{o.reason}): stopped, what was captured is saved")
            out += self._stop("max-outage", now)
        if s.phase is TapPhase.DONE:
            return out
        if s.phase is TapPhase.WAITING and now >= s.next_retry:
            self._move(PhaseEvent.RETRY)
            out.append(StartTcpdump(self._count()))
        elif s.phase is TapPhase.CATCHING_UP:
            out += self._catch_up(now)
        elif s.phase is TapPhase.DRAINING and s.stop_sent is not None and now - s.stop_sent > STOP_GRACE:
            out += self._kill()
        out += self._show(self._outage_line(now))
        if s.file_opened is not None and cfg.rotate_seconds and now - s.file_opened >= cfg.rotate_seconds:
            s.file_opened = None  # before writing: a file spans --rotate seconds of writes
            out.append(RotateFile("time"))
        if s.rows_pending >= BATCH_ROWS or now - s.last_flush >= FLUSH_SECONDS:
            s.last_flush = now
            if s.rows_pending:
                s.rows_pending = 0
                out.append(WriteRows())
        if now - s.last_stats >= STATS_SECONDS:
            s.last_stats = now
            if s.phase in (TapPhase.CAPTURING, TapPhase.CATCHING_UP):
                out.append(RequestStats())
                if s.watch_interface:
                    out.append(ObserveInterface())
            out.append(Refresh())
        return out

    def _data(self, ev: DataArrived, now: float) -> list[Action]:
        s = self.state
        s.packets_read += ev.packets
        s.bytes_read += ev.nbytes
        s.rows_pending = ev.rows_pending
        s.last_data = now
        if ev.last_ts is not None:
            s.stream_ts = ev.last_ts
        return []

    def _started(self, ev: TcpdumpStarted, now: float) -> list[Action]:
        s = self.state
        s.tcpdump_running, s.tcpdump_killed, s.stop_sent = True, False, None
        s.last_data = now
        if s.phase is TapPhase.STARTING:
            self._move(PhaseEvent.LISTENING)
            s.watch_interface = ev.interface == "up"
            return []
        self._move(PhaseEvent.LISTENING if s.stop_requested is None else PhaseEvent.LISTENING_AFTER_STOP)
        if not s.watch_interface or ev.interface == "up":
            return self._end_outage("back", now)
        return []

    def _start_failed(self, ev: TcpdumpStartFailed, now: float) -> list[Action]:
        s = self.state
        if s.phase is TapPhase.STARTING:
            s.exit_code, s.error = ev.exit_code, ev.message
            return self._finish(now, write_totals=False)
        if s.stop_requested is not None or ev.cancelled:
            s.stop_reason = s.stop_reason or "stop requested"
            return self._finish(now)
        down = interface_outage(ev.stderr)
        if down is None:  # e.g. permission, filter: waiting will not help
            s.exit_code = ev.exit_code
            s.error = f"reopening the capture after an interface outage: {ev.message}"
            return self._finish(now)
        if s.outage is not None:
            s.outage.attempts += 1
            s.outage.last_error = down
        s.backoff = min(s.backoff * 2, RETRY_MAX)
        s.next_retry = now + s.backoff
        self._move(PhaseEvent.CAPTURE_LOST)
        return self._show(self._outage_line(now))

    def _exited(self, ev: TcpdumpExited, now: float) -> list[Action]:
        s = self.state
        s.tcpdump_running = False
        if s.stop_sent is not None or s.tcpdump_killed:
            return self._finish(now)
        lost = interface_outage(ev.stderr)
        if lost is None:
            if ev.returncode != 0:
                how = (f"killed by {ev.signal_name or f'signal {-ev.returncode}'}" if ev.returncode < 0
                       else f"exit {ev.returncode}: {last_error(ev.stderr)}")
                s.exit_code = ExitCode.INPUT
                s.error = f"tcpdump stopped unexpectedly ({how}); what it captured is saved"
            return self._finish(now)  # -c N packets captured, or the error above
        out = self._begin_outage(lost, True, ev.open_connections, now)
        s.backoff = RETRY_FIRST
        s.next_retry = now + s.backoff
        self._move(PhaseEvent.CAPTURE_LOST)
        if s.stop_requested is not None:
            s.stop_reason = s.stop_reason or "stop requested"
            return out + self._finish(now)
        return out + self._show(self._outage_line(now))

    def _observed(self, ev: InterfaceObserved, now: float) -> list[Action]:
        if ev.state in ("down", "no carrier"):  # "gone": tcpdump exits at once, and is started again
            return self._begin_outage(f"interface {ev.state}", False, ev.open_connections, now)
        if ev.state == "up" and self.state.outage is not None:
            return self._end_outage("back", now)
        return []

    def _stop_requested(self, ev: StopRequested, now: float) -> list[Action]:
        s = self.state
        if ev.signal:
            s.signals += 1
        s.stop_reason = s.stop_reason or ev.reason
        out = self._stop(ev.reason, now)
        if s.signals >= 2 and s.tcpdump_running and not s.tcpdump_killed:  # impatient: stop now, still drain
            out += self._kill()
        return out

    def _file_grew(self, ev: FileGrew, now: float) -> list[Action]:
        s, cfg = self.state, self.config
        if s.file_opened is None:
            s.file_opened = now
        if cfg.rotate_bytes and ev.size >= cfg.rotate_bytes:
            s.file_opened = None
            return [RotateFile("size")]
        return []

    def _failed(self, ev: Failed, now: float) -> list[Action]:
        s = self.state
        s.exit_code, s.error, s.output_failed = ev.code, ev.message, ev.output
        out = self._kill() if s.tcpdump_running and not s.tcpdump_killed else []
        return out + self._finish(now, write_totals=not ev.output)

    # -- transitions ----------------------------------------------------------------------------------

    def _stop(self, reason: str, now: float) -> list[Action]:
        s = self.state
        if s.stop_requested is not None:
            return []
        s.stop_reason = s.stop_reason or reason
        s.stop_requested = now
        s.stop_wall = now + s.wall_offset
        if s.phase is TapPhase.WAITING:
            return self._finish(now)
        if s.phase is TapPhase.CAPTURING:
            self._move(PhaseEvent.STOP)
            return self._show(f"stopping ({s.stop_reason}): catching up")
        return []  # starting/restarting: the start's outcome decides; draining: already stopping

    def _catch_up(self, now: float) -> list[Action]:
        s = self.state
        assert s.stop_requested is not None
        waited = now - s.stop_requested
        late = waited >= CATCH_UP_SECONDS
        if not (s.stream_ts >= s.stop_wall or late or s.signals >= 2
                or (waited >= self.ring_delay and now - s.last_data >= QUIET_SECONDS)):
            return []
        out: list[Action] = []
        if late and s.stream_ts < s.stop_wall:
            out.append(Warn(f"tap:{self.config.interface}: still {s.stop_wall - s.stream_ts:.1f}s behind the "
                            f"capture {CATCH_UP_SECONDS:.0f}s after the stop request; packets still in "
                            "tcpdump's buffer were not decoded"))
        self._move(PhaseEvent.STOP_SENT)
        s.stop_sent = now
        s.catch_up_seconds = waited
        out.append(StopTcpdump())
        return out + self._show(f"stopping ({s.stop_reason}): draining")

    def _kill(self) -> list[Action]:
        s = self.state
        s.tcpdump_killed = True
        self._move(PhaseEvent.KILLED)
        return [KillTcpdump()]

    def _finish(self, now: float, write_totals: bool = True) -> list[Action]:
        s = self.state
        if s.outage is not None:
            self._end_outage(s.outage.ended_by or "stopped", now)
        self._move(PhaseEvent.FINISHED)
        return [Finish(s.exit_code, s.error, write_totals and not s.output_failed)]

    def _move(self, event: PhaseEvent) -> None:
        """The phase ``event`` leads to (PHASE_MOVES)."""
        self.state.phase = move(PHASE_MOVES, self.state.phase, event)

    def _count(self) -> int:
        count = self.config.count_packets
        return max(1, count - self.state.packets_read) if count else 0

    def _begin_outage(self, reason: str, capture_lost: bool, open_connections: int, now: float) -> list[Action]:
        s, cfg = self.state, self.config
        if s.outage is not None:  # already down (the interface was seen down); now tcpdump exited too
            if capture_lost and not s.outage.tcpdump_exited:
                s.outage.tcpdump_exited = True
                s.outage.reason = reason
            return []
        s.outage = Outage(reason, now + s.wall_offset, now, open_connections, tcpdump_exited=capture_lost)
        s.outages.append(s.outage)
        limit = f"; giving up after {cfg.max_outage:g}s (--max-outage)" if cfg.max_outage else ""
        how = (f"restarting tcpdump every {RETRY_FIRST:g}-{RETRY_MAX:g}s until it listens again" if capture_lost
               else "capture kept open")
        return [Notice(f"interface {cfg.interface} is down ({reason}): waiting for it to come back ({how}{limit}); "
                       f"everything captured so far is kept"), *self._show(self._outage_line(now))]

    def _end_outage(self, ended_by: str, now: float) -> list[Action]:
        s = self.state
        outage = s.outage
        if outage is None:
            return []
        outage.ended_mono = now
        outage.ended_by = outage.ended_by or ended_by  # "max-outage" stays, even if it came back while stopping
        s.outage = None
        if outage.ended_by != "back":
            return []
        n = outage.open_connections
        gaps = (f"; {n} connection{'s' if n != 1 else ''} open across it may show gaps for the bytes missed"
                if n and outage.tcpdump_exited else "")
        return [Notice(f"interface {self.config.interface} is back after {outage.seconds():.1f}s: capturing again"
                       + (" (tcpdump restarted)" if outage.tcpdump_exited else "") + gaps),
                *self._show("capturing")]

    def _outage_line(self, now: float) -> str:
        s = self.state
        if s.outage is None or s.phase in (TapPhase.CATCHING_UP, TapPhase.DRAINING):
            return s.shown
        retry = f", next try in {max(0.0, s.next_retry - now):.1f}s" if s.phase is TapPhase.WAITING else ""
        return f"INTERFACE DOWN for {s.outage.seconds(now):.0f}s: waiting{retry}"

    def _show(self, text: str) -> list[Action]:
        if text == self.state.shown:
            return []
        self.state.shown = text
        return [ShowState(text)]
