"""The tap's driver: the process, the clock and the files around the sans-I/O controller.

It starts tcpdump (``inspector.tap.tcpdump``), reads its pipe (``os.read`` of whatever the pipe holds, never
waiting for a full chunk) into the decoder (``inspector.tap.decode``), turns SIGINT/SIGTERM, the clock and
what it sees into events for :class:`~inspector.tap.controller.TapController`, and carries out the actions
it returns: start, stop or kill tcpdump, write rows, rotate the Parquet file, print a line, show the live
view, finish. Then it writes what is left, ``connections.parquet`` and ``summary.json``.

Kernel drops: tcpdump prints its libpcap counters (``pcap_stats``) on stderr when it exits and whenever it
gets SIGUSR1; they are asked for once a second, shown live, written to ``summary.json`` and warned about.

Full disk: when writing fails (``ENOSPC``, ``EDQUOT``, ``EIO``, any ``OSError`` on write, close or rename)
the writer removes the file in progress and tcpdump is stopped; the files completed before stay, and
``connections.parquet`` and ``summary.json`` are not written. Exit code 4.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from contract.errors import ExitCode
from inspector.capture.parser import CaptureError
from inspector.read.decode_options import read_options
from inspector.read.reader import _fewer_collections
from inspector.rows.writers import OutputError, ParquetDatasetWriter, output_error
from inspector.tap.controller import TapConfig, TapController
from inspector.tap.decode import TapDecoder
from inspector.tap.live_view import LiveStats, LiveView, TapCounters
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
from inspector.tap.tcpdump import (
    READ_CHUNK,
    TCPDUMP_FIX,
    CaptureStats,
    Tcpdump,
    TcpdumpError,
    available_interfaces,
    build_filter,
    interface_state,
)
from inspector.tap.totals import write_totals
from inspector.tls.keylog_file import KeyLogFile

if TYPE_CHECKING:
    import pyarrow as pa

    from inspector.tap.metrics import TapMetrics
    from inspector.tap.metrics_http import MetricsServer


def error_line(message: str) -> None:
    """One line on stderr, never wrapped."""
    print(f"kafka-inspector: error: {message}", file=sys.stderr, flush=True)


class _Cancel:
    """Whether a wait for tcpdump to start should give up: a signal came or ``stop`` was set."""

    def __init__(self, signals: list[int], stop: threading.Event) -> None:
        self._signals, self._stop = signals, stop

    def is_set(self) -> bool:
        return bool(self._signals) or self._stop.is_set()


class TapDriver:
    """One capture session: tcpdump pipe → decoder → Parquet, steered by the controller."""

    def __init__(self, args: argparse.Namespace, stop: threading.Event | None = None, console: Any = None) -> None:
        self.args = args
        options = read_options(args)
        self.out: Path = args.output
        self.bpf = build_filter(args.filter, options.ports)
        self.stop_event = stop or threading.Event()  # set by the caller: stop as on SIGINT
        self.capture_name = f"tap:{args.interface}"
        # The TLS key log, read as it grows: what was appended is read before each piece of the pipe is decoded.
        self.keylog = KeyLogFile(options.tls_keylog) if options.tls_keylog is not None else None
        self.decoder = TapDecoder(options, self.capture_name, f"tcpdump -i {args.interface}",
                                  keylog=self.keylog.keylog if self.keylog is not None else None)
        self.live_stats = LiveStats()
        self.counters = TapCounters()
        self.console = console
        self.view: LiveView | None = None
        # --metrics: the model (sans-I/O, fed per batch and per refresh) and its HTTP server
        self.metrics: TapMetrics | None = None
        self.metrics_server: MetricsServer | None = None
        self.writer: ParquetDatasetWriter | None = None
        self.tcpdump: Tcpdump | None = None  # the running (or last) tcpdump
        self.binary = args.tcpdump
        self.started_wall = time.time()
        self.started = time.monotonic()
        self.controller = TapController(TapConfig(
            interface=args.interface, rotate_seconds=args.rotate, rotate_bytes=args.rotate_size,
            duration=args.duration, count_packets=args.count_packets, max_outage=args.max_outage,
            immediate_mode=args.immediate_mode), self.started)
        self.earlier_stats = CaptureStats()  # the counters of the tcpdump runs that ended
        self._signals: list[int] = []
        self._stop_told = False
        self._fd: int | None = None
        self._poller = select.poll()
        self._do: dict[type, Callable[[Any], Event | None]] = {
            StartTcpdump: self._start, StopTcpdump: self._stop_tcpdump, KillTcpdump: self._kill_tcpdump,
            RequestStats: self._request_stats, ObserveInterface: self._observe, WriteRows: self._write,
            RotateFile: self._rotate, Refresh: self.refresh, ShowState: self._show, Notice: self._notice,
            Warn: self._warn,
        }

    # -- totals over tcpdump runs ---------------------------------------------------------------------

    @property
    def capture_stats(self) -> CaptureStats:
        """tcpdump's counters summed over every run (the capture is reopened after an interface outage)."""
        current = self.tcpdump
        if current is None or current.accounted:
            return self.earlier_stats.plus(CaptureStats())
        return self.earlier_stats.plus(current.stats)

    def _retire(self, tcpdump: Tcpdump) -> int:
        """Wait for a tcpdump that ended (or was stopped) and add its counters to the totals; its exit code."""
        rc = tcpdump.wait()
        if not tcpdump.accounted:
            tcpdump.accounted = True
            self.earlier_stats.add(tcpdump.stats)
            self.decoder.summary.warnings.extend(f"{self.capture_name}: {w}" for w in self.decoder.end_stream())
        return rc

    # -- the session ----------------------------------------------------------------------------------

    def run(self) -> int:
        args = self.args
        binary = shutil.which(args.tcpdump)
        if binary is None:
            error_line(TCPDUMP_FIX)
            return ExitCode.INPUT
        self.binary = binary
        iface = args.interface
        names = available_interfaces()
        if iface != "any" and not iface.isdigit() and names and iface not in names:
            error_line(f"no interface {iface!r}: available: {', '.join(names)}")
            return ExitCode.INPUT
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            # Rotation is the controller's: the writer rotates when told to.
            self.writer = ParquetDatasetWriter(self.out, rows_per_file=0, on_file=self._file_done)
        except OSError as exc:
            error_line(str(output_error(self.out, exc)))
            return ExitCode.OUTPUT
        if args.metrics is not None and not self._serve_metrics(*args.metrics):
            return ExitCode.USAGE
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            first = self._start(StartTcpdump(args.count_packets))
            for action in self.controller.handle(first, time.monotonic()):
                if isinstance(action, Finish):
                    error_line(action.error or "tcpdump did not start")
                    return action.code
            if not args.quiet:
                from rich.console import Console

                self.console = self.console or Console(stderr=True)
                self.console.print(f"[bold]kafka-inspector tap[/]: listening on {iface} "
                                   f"(filter: {self.bpf}) → {self.out}", highlight=False)
                self.view = LiveView(self.console, interface=iface, bpf=self.bpf, output=self.out)
                self.view.start()
            with _fewer_collections():  # as `read`: the collector would walk the rows waiting for their batch
                code, error = self._session()
        finally:
            if self.view is not None:
                self.view.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            tcpdump = self.tcpdump
            if tcpdump is not None and tcpdump.proc is not None and tcpdump.proc.poll() is None:
                tcpdump.kill()
                tcpdump.wait()
            if self.metrics_server is not None:
                self.metrics_server.stop()
        if error:
            error_line(error)  # after the live view stopped: one line, not torn by a refresh
        return code

    def _serve_metrics(self, host: str, port: int) -> bool:
        from inspector.tap.metrics import TapMetrics
        from inspector.tap.metrics_http import MetricsServer

        self.metrics, server = TapMetrics(), MetricsServer(host, port)
        try:
            server.start()
        except OSError as exc:
            error_line(exc.strerror or str(exc))
            return False
        self.metrics_server = server
        server.publish(self.metrics.snapshot())
        shown_host, shown_port = server.address
        shown_host = f"[{shown_host}]" if ":" in shown_host else shown_host
        print(f"kafka-inspector tap: metrics on http://{shown_host}:{shown_port}/metrics", file=sys.stderr, flush=True)
        return True

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._signals.append(signum)

    def _session(self) -> tuple[int, str | None]:
        """Capture until the controller says finish; then write what is left. The exit code and error line."""
        finish = self._loop()
        tcpdump = self.tcpdump
        if tcpdump is not None and not tcpdump.accounted:
            if finish.code != ExitCode.OK:
                tcpdump.kill()
            self._retire(tcpdump)
        if not finish.write_totals:
            return finish.code, finish.error  # the disk refused: write nothing more
        try:
            write_totals(self)
        except OSError as exc:  # OutputError from the writer or from _finish: one line saying what is kept
            return ExitCode.OUTPUT, str(output_error(self.out, exc))
        return finish.code, finish.error

    def _loop(self) -> Finish:
        events: deque[Event] = deque()
        try:
            while True:
                events.append(Tick(time.time()))
                finish = self._dispatch(events)
                if finish is not None:
                    return finish
                timeout = self.controller.timeout(time.monotonic())
                if self._fd is None:  # no tcpdump (the interface is gone): wait for the next retry
                    self.stop_event.wait(timeout)
                    continue
                if self._poller.poll(int(timeout * 1000)):
                    data = os.read(self._fd, READ_CHUNK)
                    events.append(self._decode(data) if data else self._ended())
        except CaptureError as exc:
            failed = Failed(ExitCode.INPUT, str(exc))
        except OutputError as exc:  # from the writer, which removed the file in progress
            failed = Failed(ExitCode.OUTPUT, str(exc), output=True)
        except OSError as exc:
            failed = Failed(ExitCode.OUTPUT, str(output_error(self.out, exc)))
        finish = self._dispatch(deque([failed]))
        assert finish is not None
        return finish

    def _dispatch(self, events: deque[Event]) -> Finish | None:
        """Hand the events to the controller (stop requests first) and carry out its actions, whose replies are
        events too; the Finish action when it comes."""
        while events or self._stop_pending():
            self._stop_requests(events)
            event = events.popleft()
            actions: list[Action] = self.controller.handle(event, time.monotonic())
            for action in actions:
                if isinstance(action, Finish):
                    return action
                reply = self._do[type(action)](action)
                if reply is not None:
                    events.append(reply)
        return None

    def _stop_pending(self) -> bool:
        return bool(self._signals) or (self.stop_event.is_set() and not self._stop_told)

    def _stop_requests(self, events: deque[Event]) -> None:
        while self._signals:
            signum = self._signals.pop()
            events.appendleft(StopRequested(signal.Signals(signum).name, signal=True))
            self._stop_told = True
        if self.stop_event.is_set() and not self._stop_told:
            events.appendleft(StopRequested("stop requested"))
            self._stop_told = True

    # -- events from the pipe -------------------------------------------------------------------------

    def _decode(self, data: bytes) -> DataArrived:
        if self.keylog is not None:
            self.keylog.poll()
        packets = self.decoder.feed(data)
        return DataArrived(packets, len(data), len(self.decoder.table),
                           self.decoder.stream_ts if packets else None)

    def _ended(self) -> TcpdumpExited:
        """tcpdump's pipe ended: tcpdump exited (or is about to)."""
        assert self._fd is not None and self.tcpdump is not None
        self._poller.unregister(self._fd)
        self._fd = None
        tcpdump = self.tcpdump
        rc = self._retire(tcpdump)
        name = None
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = None
        return TcpdumpExited(rc, tcpdump.stderr(), name, self.decoder.open_connections()[0])

    # -- actions --------------------------------------------------------------------------------------

    def _start(self, action: StartTcpdump) -> Event:
        args = self.args
        tcpdump = Tcpdump(self.binary, args.interface, self.bpf, buffer_bytes=args.buffer, count=action.count,
                          immediate=args.immediate_mode)
        try:
            fd = tcpdump.start(cancel=_Cancel(self._signals, self.stop_event))  # type: ignore[arg-type]
        except TcpdumpError as exc:
            if tcpdump.proc is not None:
                tcpdump.wait(2)  # reap it and close its pipes: retries may go on for hours
            return TcpdumpStartFailed(str(exc), exc.exit_code, tcpdump.stderr(), exc.cancelled)
        self.tcpdump = tcpdump
        self._fd = fd
        self._poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        return TcpdumpStarted(interface_state(args.interface))

    def _stop_tcpdump(self, _action: StopTcpdump) -> None:
        if self.tcpdump is not None:
            self.tcpdump.stop()

    def _kill_tcpdump(self, _action: KillTcpdump) -> None:
        if self.tcpdump is not None:
            self.tcpdump.kill()

    def _request_stats(self, _action: RequestStats) -> None:
        if self.tcpdump is not None:
            self.tcpdump.request_stats()

    def _observe(self, _action: ObserveInterface) -> InterfaceObserved:
        return InterfaceObserved(interface_state(self.args.interface), self.decoder.open_connections()[0])

    def _write(self, _action: WriteRows) -> FileGrew | None:
        assert self.writer is not None
        batch = self.decoder.take()
        if batch is None:
            return None
        self.writer.write(batch)
        self.wrote(batch)
        path = self.writer.open_file  # written as .NAME.inprogress until complete
        return FileGrew((path.parent / f".{path.name}.inprogress").stat().st_size if path is not None else 0)

    def wrote(self, batch: pa.RecordBatch) -> None:
        """An event batch was written: the live view's (when shown) and the metrics' totals take it."""
        if self.view is not None:
            self.live_stats.add_batch(batch)
        if self.metrics is not None:
            self.metrics.add_batch(batch)

    def _rotate(self, _action: RotateFile) -> None:
        assert self.writer is not None
        self.writer.rotate()

    def refresh(self, _action: Refresh | None = None) -> None:
        self.decoder.drain_closed()
        s, c, state = self.decoder.summary, self.counters, self.controller.state
        c.packets = s.packets
        c.wire_bytes = self.decoder.wire_bytes
        c.frames = s.frames
        c.messages = s.messages
        c.decode_failures = s.decode_failures
        c.decode_warnings = s.decode_warnings
        c.gap_bytes = s.stream_issues.get("gap", 0)
        c.skipped_bytes = s.stream_issues.get("skipped", 0) + s.stream_issues.get("oversized", 0)
        c.open_connections, c.other_connections = self.decoder.open_connections()
        if self.writer is not None:
            c.events_in_current_file = self.writer.rows_in_file if self.writer.open_file is not None else 0
        st = self.capture_stats
        c.kernel_dropped, c.received_by_filter = st.kernel_dropped, st.received
        c.interface_dropped = st.interface_dropped or 0
        c.outages = len(state.outages)
        c.outage_seconds = state.down_seconds(time.monotonic())
        if self.view is not None:
            self.view.refresh(c, self.live_stats)
        if self.metrics is not None and self.metrics_server is not None:
            m = self.metrics
            m.add_failures(self.decoder.take_failures())
            m.set_bytes(self.decoder.byte_totals())
            m.set_capture(packets=c.packets, kernel_dropped=c.kernel_dropped, open_connections=c.open_connections,
                          outages=c.outages, last_packet_ts=self.decoder.stream_ts or None)
            self.metrics_server.publish(m.snapshot())

    def _show(self, action: ShowState) -> None:
        if self.view is not None:
            self.view.state = action.text

    def _notice(self, action: Notice) -> None:
        """One line for a person: on stderr in quiet mode, above the live view otherwise."""
        if self.console is not None and not self.args.quiet:
            self.console.print(f"kafka-inspector tap: {action.text}", highlight=False, markup=False, soft_wrap=True)
        else:
            print(f"kafka-inspector tap: {action.text}", file=sys.stderr, flush=True)

    def _warn(self, action: Warn) -> None:
        self.decoder.summary.warnings.append(action.text)

    def _file_done(self, path: Path, rows: int, size: int) -> None:
        self.counters.files_written += 1
        self.counters.last_file = path.name
        try:
            shown = path.relative_to(Path.cwd())
        except ValueError:
            shown = path
        drops = self.capture_stats.kernel_dropped
        if self.args.quiet:
            print(f"kafka-inspector tap: wrote {shown} ({rows:,} events, {size:,} bytes; "
                  f"kernel drops so far: {drops if drops is not None else '?'})", file=sys.stderr, flush=True)
