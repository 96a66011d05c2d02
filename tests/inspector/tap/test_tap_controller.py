"""The tap's controller with synthetic time: events in, actions out; no process, file, clock or signal."""

from __future__ import annotations

from contract.errors import ExitCode
from inspector.tap.controller import TapConfig, TapController
from inspector.tap.tap_events import (
    Action,
    DataArrived,
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

GONE = ("tcpdump: listening on kitap1", "tcpdump: pcap_loop: The interface disappeared", "3 packets captured")
NO_DEVICE = ("tcpdump: kitap1: No such device exists (SIOCGIFHWADDR: No such device)",)


def capturing(**config: object) -> TapController:
    """A controller whose first tcpdump listens, at time 0 (wall clock 1000 s ahead of the monotonic one)."""
    ctl = TapController(TapConfig(interface="kitap1", **config), 0.0)  # type: ignore[arg-type]
    assert ctl.handle(TcpdumpStarted("up"), 0.0) == []
    assert ctl.handle(Tick(wall=1000.0), 0.0) == []
    return ctl


def kinds(actions: list[Action], *only: type) -> list[type]:
    return [type(a) for a in actions if not only or isinstance(a, only)]


def of(actions: list[Action], *kind: type) -> list[Action]:
    return [a for a in actions if isinstance(a, kind)]


# -- starting -------------------------------------------------------------------------------------------


def test_first_start_failing_finishes_without_totals() -> None:
    ctl = TapController(TapConfig(interface="eth9"), 0.0)
    assert ctl.handle(Tick(), 0.5) == []  # nothing happens before tcpdump listens
    actions = ctl.handle(TcpdumpStartFailed("bad capture filter 'tcp and (': syntax error", ExitCode.USAGE), 1.0)
    assert actions == [Finish(ExitCode.USAGE, "bad capture filter 'tcp and (': syntax error", write_totals=False)]
    assert ctl.state.phase == "done" and ctl.handle(Tick(), 2.0) == []


def test_first_start_decides_whether_the_interface_is_watched() -> None:
    watched = capturing()
    assert kinds(watched.handle(Tick(), 1.0)) == [RequestStats, ObserveInterface, Refresh]
    unknown = TapController(TapConfig(interface="any"), 0.0)
    unknown.handle(TcpdumpStarted(None), 0.0)
    assert kinds(unknown.handle(Tick(), 1.0)) == [RequestStats, Refresh]


# -- flushing and rotation ------------------------------------------------------------------------------


def test_rows_are_written_every_second_or_at_a_full_batch() -> None:
    ctl = capturing()
    ctl.handle(DataArrived(packets=3, nbytes=300, rows_pending=2, last_ts=1000.1), 0.1)
    assert of(ctl.handle(Tick(), 0.5), WriteRows) == []
    assert of(ctl.handle(Tick(), 1.0), WriteRows) == [WriteRows()]
    ctl.handle(DataArrived(packets=9000, nbytes=900_000, rows_pending=8192), 1.2)
    assert of(ctl.handle(Tick(), 1.2), WriteRows) == [WriteRows()]  # a full batch does not wait
    assert of(ctl.handle(Tick(), 2.0), WriteRows) == []  # nothing pending
    assert (ctl.state.packets_read, ctl.state.bytes_read, ctl.state.stream_ts) == (9003, 900_300, 1000.1)


def test_rotation_by_time_comes_before_the_write_even_without_new_rows() -> None:
    ctl = capturing(rotate_seconds=5.0)
    ctl.handle(DataArrived(1, 100, rows_pending=1), 0.5)
    assert of(ctl.handle(Tick(), 1.0), WriteRows, RotateFile) == [WriteRows()]
    assert ctl.handle(FileGrew(size=4000), 1.0) == []  # the file in progress opened at 1.0
    for t in (2.0, 3.0, 4.0, 5.0):
        assert of(ctl.handle(Tick(), t), RotateFile) == [], t
    ctl.handle(DataArrived(1, 100, rows_pending=1), 5.5)
    assert of(ctl.handle(Tick(), 6.0), WriteRows, RotateFile) == [RotateFile("time"), WriteRows()]
    ctl.handle(FileGrew(size=2000), 6.0)  # the next file opened at 6.0
    assert of(ctl.handle(Tick(), 10.9), RotateFile) == []
    assert of(ctl.handle(Tick(), 11.0), RotateFile) == [RotateFile("time")]  # idle: completed on time anyway
    assert of(ctl.handle(Tick(), 20.0), RotateFile) == []  # no file open, nothing to rotate


def test_rotation_by_size_after_the_write_that_filled_the_file() -> None:
    ctl = capturing(rotate_bytes=64 << 10, rotate_seconds=60.0)
    assert ctl.handle(FileGrew(size=30_000), 1.0) == []
    assert ctl.handle(FileGrew(size=65_535), 2.0) == []
    assert ctl.handle(FileGrew(size=65_536), 3.0) == [RotateFile("size")]
    assert ctl.handle(FileGrew(size=10), 4.0) == []  # a new file, opened at 4.0: its time starts there
    assert of(ctl.handle(Tick(), 63.9), RotateFile) == []
    assert of(ctl.handle(Tick(), 64.0), RotateFile) == [RotateFile("time")]
    off = capturing()  # --rotate-size 0 / --rotate 0: never
    assert off.handle(FileGrew(size=1 << 40), 1.0) == [] and of(off.handle(Tick(), 1e6), RotateFile) == []


# -- stopping -------------------------------------------------------------------------------------------


def test_stop_catches_up_with_the_ring_then_drains() -> None:
    ctl = capturing()
    actions = ctl.handle(StopRequested("SIGINT", signal=True), 10.0)
    assert actions == [ShowState("stopping (SIGINT): catching up")] and ctl.state.stop_wall == 1010.0
    ctl.handle(DataArrived(5, 500, rows_pending=5, last_ts=1009.8), 10.1)  # captured before the request
    assert of(ctl.handle(Tick(), 10.2), StopTcpdump) == []
    ctl.handle(DataArrived(1, 100, rows_pending=6, last_ts=1010.05), 10.3)  # captured after it: caught up
    actions = ctl.handle(Tick(), 10.3)
    assert kinds(actions, StopTcpdump, ShowState) == [StopTcpdump, ShowState]
    assert ctl.state.phase == "draining"
    assert round(ctl.state.catch_up_seconds or 0, 6) == 0.3
    assert of(ctl.handle(Tick(), 11.0), StopTcpdump) == []  # told once
    assert ctl.handle(TcpdumpExited(0, ("6 packets captured",)), 11.2) == [Finish(ExitCode.OK, None)]
    assert ctl.stopped_by == "SIGINT"


def test_stop_without_traffic_waits_for_the_block_timeout_and_a_quiet_pipe() -> None:
    ctl = capturing()
    ctl.handle(StopRequested("SIGTERM", signal=True), 10.0)
    assert of(ctl.handle(Tick(), 11.1), StopTcpdump) == []  # the ring may still hand a block over
    assert of(ctl.handle(Tick(), 11.25), StopTcpdump) == [StopTcpdump()]
    immediate = capturing(immediate_mode=True)  # no ring delay: a quiet pipe is enough
    immediate.handle(DataArrived(1, 100, 1, last_ts=1009.0), 9.9)
    immediate.handle(StopRequested("SIGTERM", signal=True), 10.0)
    assert of(immediate.handle(Tick(), 10.1), StopTcpdump) == []
    assert of(immediate.handle(Tick(), 10.25), StopTcpdump) == [StopTcpdump()]


def test_stop_gives_up_catching_up_after_30s_with_a_warning() -> None:
    ctl = capturing(immediate_mode=True)
    ctl.handle(StopRequested("SIGINT", signal=True), 10.0)
    for t in range(11, 40):  # traffic keeps coming, all of it captured long before the request
        ctl.handle(DataArrived(1, 100, 1, last_ts=990.0 + t / 10), float(t))
        assert of(ctl.handle(Tick(), float(t)), StopTcpdump) == [], t
    ctl.handle(DataArrived(1, 100, 1, last_ts=994.0), 40.0)
    actions = ctl.handle(Tick(), 40.0)
    [warn] = of(actions, Warn)
    assert kinds(actions, Warn, StopTcpdump) == [Warn, StopTcpdump]
    assert warn.text.startswith("tap:kitap1: still 16.0s behind the capture 30s after the stop request")


def test_second_signal_kills_tcpdump_and_a_stubborn_one_is_killed_after_the_grace() -> None:
    ctl = capturing()
    ctl.handle(StopRequested("SIGINT", signal=True), 10.0)
    assert ctl.handle(StopRequested("SIGINT", signal=True), 10.1) == [KillTcpdump()]
    assert ctl.handle(TcpdumpExited(-9, (), "SIGKILL"), 10.2) == [Finish(ExitCode.OK, None)]
    slow = capturing(immediate_mode=True)
    slow.handle(StopRequested("SIGTERM", signal=True), 10.0)
    assert of(slow.handle(Tick(), 10.5), StopTcpdump) == [StopTcpdump()]
    assert of(slow.handle(Tick(), 20.5), KillTcpdump) == []
    assert of(slow.handle(Tick(), 20.6), KillTcpdump) == [KillTcpdump()]
    assert slow.handle(TcpdumpExited(-9, (), "SIGKILL"), 20.7) == [Finish(ExitCode.OK, None)]


def test_duration_and_count_end_the_capture() -> None:
    ctl = capturing(duration=5.0)
    assert of(ctl.handle(Tick(), 4.9), ShowState) == []
    assert of(ctl.handle(Tick(), 5.0), ShowState) == [ShowState("stopping (duration): catching up")]
    counted = capturing(count_packets=12)
    counted.handle(DataArrived(12, 1200, 4), 1.0)
    assert counted.handle(TcpdumpExited(0, ("12 packets captured",)), 1.1) == [Finish(ExitCode.OK, None)]
    assert counted.stopped_by == "count" and capturing().stopped_by == "end of stream"


def test_tcpdump_dying_is_an_error_but_what_was_captured_is_written() -> None:
    ctl = capturing()
    actions = ctl.handle(TcpdumpExited(-9, ("tcpdump: listening on lo",), "SIGKILL"), 3.0)
    assert actions == [Finish(ExitCode.INPUT, "tcpdump stopped unexpectedly (killed by SIGKILL); what it captured "
                                              "is saved")]
    other = capturing()
    [finish] = other.handle(TcpdumpExited(1, ("tcpdump: listening on lo", "tcpdump: pcap_loop: error",
                                              "0 packets captured")), 3.0)
    assert finish == Finish(ExitCode.INPUT, "tcpdump stopped unexpectedly (exit 1: pcap_loop: error); what it "
                                            "captured is saved")


def test_failures_of_the_output_write_nothing_more() -> None:
    ctl = capturing()
    actions = ctl.handle(Failed(ExitCode.OUTPUT, "cannot write to out/events: No space left on device (ENOSPC)",
                                output=True), 2.0)
    assert actions == [KillTcpdump(), Finish(ExitCode.OUTPUT, "cannot write to out/events: No space left on device "
                                                              "(ENOSPC)", write_totals=False)]
    damaged = capturing()
    assert damaged.handle(Failed(ExitCode.INPUT, "tcpdump -i lo: stream damaged"), 2.0)[-1] == Finish(
        ExitCode.INPUT, "tcpdump -i lo: stream damaged", write_totals=True)


# -- interface outages ----------------------------------------------------------------------------------


def test_interface_down_keeps_the_capture_and_reports_both_ends() -> None:
    ctl = capturing()
    actions = ctl.handle(InterfaceObserved("down", open_connections=2), 5.0)
    [notice] = of(actions, Notice)
    assert notice.text == ("interface kitap1 is down (interface down): waiting for it to come back (capture kept "
                           "open); everything captured so far is kept")
    assert of(actions, ShowState) == [ShowState("INTERFACE DOWN for 0s: waiting")]
    assert ctl.handle(InterfaceObserved("down"), 6.0) == []  # still down: one line only
    assert of(ctl.handle(Tick(), 7.0), ShowState) == [ShowState("INTERFACE DOWN for 2s: waiting")]
    assert kinds(ctl.handle(Tick(), 8.0), RequestStats, StartTcpdump) == [RequestStats]  # tcpdump still runs
    actions = ctl.handle(InterfaceObserved("up"), 8.5)
    assert actions == [Notice("interface kitap1 is back after 3.5s: capturing again"), ShowState("capturing")]
    [outage] = ctl.state.outages
    assert outage.as_dict() == {"started": 1005.0, "seconds": 3.5, "reason": "interface down",
                                "tcpdump_exited": False, "open_connections": 2, "ended_by": "back",
                                "failed_starts": 0, "last_start_error": None}


def test_interface_gone_restarts_tcpdump_with_backoff_from_half_a_second_to_five() -> None:
    ctl = capturing()
    actions = ctl.handle(TcpdumpExited(0, GONE, open_connections=1), 10.0)
    [notice] = of(actions, Notice)
    assert notice.text == ("interface kitap1 is down (The interface disappeared): waiting for it to come back "
                           "(restarting tcpdump every 0.5-5s until it listens again); everything captured so far "
                           "is kept")
    assert ctl.state.phase == "waiting"
    starts: list[float] = []
    now = 10.0
    while now < 40.0:
        now = round(now + 0.05, 2)
        actions = ctl.handle(Tick(), now)
        assert of(actions, RequestStats) == []  # no tcpdump to ask
        if of(actions, StartTcpdump):
            starts.append(now)
            ctl.handle(TcpdumpStartFailed("no interface 'kitap1'", ExitCode.INPUT, NO_DEVICE), now)
    gaps = [round(b - a, 2) for a, b in zip([10.0, *starts], starts, strict=False)]
    assert gaps[:6] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0] and set(gaps[4:]) == {5.0}
    assert ctl.state.outage is not None and ctl.state.outage.attempts == len(starts)
    assert ctl.state.outage.last_error.startswith("kitap1: No such device exists")
    assert of(ctl.handle(Tick(), 40.1), ShowState)[0].text.startswith("INTERFACE DOWN for 30s: waiting, next try in")
    # Back: a start succeeds, capture resumes with the same state.
    while not of(ctl.handle(Tick(), now), StartTcpdump):
        now = round(now + 0.05, 2)
    actions = ctl.handle(TcpdumpStarted("up"), now + 0.1)
    [back] = of(actions, Notice)
    assert back.text.startswith("interface kitap1 is back after ") and back.text.endswith(
        "capturing again (tcpdump restarted); 1 connection open across it may show gaps for the bytes missed")
    assert ctl.state.phase == "capturing" and ctl.state.outage is None
    # The next outage starts the backoff at 0.5 s again.
    ctl.handle(TcpdumpExited(0, GONE), 100.0)
    assert of(ctl.handle(Tick(), 100.45), StartTcpdump) == []
    assert of(ctl.handle(Tick(), 100.5), StartTcpdump) == [StartTcpdump()]


def test_a_restart_asks_for_the_packets_still_wanted() -> None:
    ctl = capturing(count_packets=20)
    ctl.handle(DataArrived(14, 1400, 3), 1.0)
    ctl.handle(TcpdumpExited(0, GONE), 2.0)
    assert of(ctl.handle(Tick(), 2.5), StartTcpdump) == [StartTcpdump(6)]


def test_a_restart_failing_for_another_reason_stops_with_its_code() -> None:
    ctl = capturing()
    ctl.handle(TcpdumpExited(0, GONE), 2.0)
    ctl.handle(Tick(), 2.5)
    actions = ctl.handle(TcpdumpStartFailed("capture needs CAP_NET_RAW", ExitCode.INPUT,
                                            ("tcpdump: kitap1: You don't have permission",)), 2.6)
    assert actions == [Finish(ExitCode.INPUT, "reopening the capture after an interface outage: capture needs "
                                              "CAP_NET_RAW")]
    assert ctl.state.outages[0].ended_by == "stopped"


def test_max_outage_stops_a_waiting_tap_at_once_with_exit_3() -> None:
    ctl = capturing(max_outage=1.0)
    ctl.handle(TcpdumpExited(0, GONE), 2.0)
    assert of(ctl.handle(Tick(), 2.5), StartTcpdump) == [StartTcpdump()]
    ctl.handle(TcpdumpStartFailed("no interface", ExitCode.INPUT, NO_DEVICE), 2.6)
    assert of(ctl.handle(Tick(), 2.99), Finish) == []
    actions = ctl.handle(Tick(), 3.0)
    assert actions[-1] == Finish(ExitCode.INPUT, "interface kitap1 down for more than 1s (--max-outage; The "
                                                  "interface disappeared): stopped, what was captured is saved")
    assert ctl.stopped_by == "max-outage"
    [outage] = ctl.state.outages
    assert (outage.ended_by, outage.seconds(), outage.tcpdump_exited) == ("max-outage", 1.0, True)


def test_max_outage_with_tcpdump_still_running_drains_it_first() -> None:
    ctl = capturing(max_outage=1.0)
    ctl.handle(InterfaceObserved("no carrier"), 2.0)
    actions = ctl.handle(Tick(), 3.0)
    assert of(actions, ShowState) == [ShowState("stopping (max-outage): catching up")] and not of(actions, Finish)
    assert of(ctl.handle(Tick(), 4.1), StopTcpdump) == []  # the ring's block timeout first
    assert of(ctl.handle(Tick(), 4.2), StopTcpdump) == [StopTcpdump()]  # drained as on SIGTERM, not killed
    [finish] = ctl.handle(TcpdumpExited(0, ("tcpdump: listening on kitap1",)), 4.3)
    assert finish.code == ExitCode.INPUT and finish.error is not None and "(--max-outage; interface no carrier)" in \
        finish.error and finish.write_totals
    assert ctl.state.outages[0].ended_by == "max-outage"


def test_a_signal_stops_a_waiting_tap_at_once() -> None:
    ctl = capturing(max_outage=60.0)
    ctl.handle(TcpdumpExited(0, GONE), 2.0)
    assert ctl.handle(StopRequested("SIGTERM", signal=True), 3.0) == [Finish(ExitCode.OK, None)]
    assert ctl.stopped_by == "SIGTERM"
    [outage] = ctl.state.outages
    assert (outage.ended_by, outage.seconds()) == ("stopped", 1.0)
    assert ctl.state.down_seconds() == 1.0
    # A stop during a restart: the start was cancelled, and that ends it.
    restarting = capturing()
    restarting.handle(TcpdumpExited(0, GONE), 2.0)
    assert of(restarting.handle(Tick(), 2.5), StartTcpdump)
    assert restarting.handle(StopRequested("SIGINT", signal=True), 2.6) == []
    actions = restarting.handle(TcpdumpStartFailed("stopped while tcpdump was starting", cancelled=True), 2.7)
    assert actions == [Finish(ExitCode.OK, None)] and restarting.stopped_by == "SIGINT"


def test_a_disappearing_interface_seen_down_first_is_one_outage() -> None:
    ctl = capturing()
    ctl.handle(InterfaceObserved("down", open_connections=1), 5.0)
    assert ctl.handle(InterfaceObserved("gone"), 5.5) == []
    assert of(ctl.handle(TcpdumpExited(0, GONE, open_connections=1), 5.6), Notice) == []
    [outage] = ctl.state.outages
    assert outage.tcpdump_exited and outage.reason == "The interface disappeared"
    ctl.handle(Tick(), 6.1)
    assert ctl.handle(TcpdumpStarted("up"), 6.2)[0] == Notice(
        "interface kitap1 is back after 1.2s: capturing again (tcpdump restarted); 1 connection open across it "
        "may show gaps for the bytes missed")
