"""A stop signal's meaning to ``read`` wherever it lands: 130 only with DIR as it was, 0 only with the run published.

Each test sends the process itself a real SIGINT or SIGTERM at one of the places the crash-consistency test
(``test_crash_consistency.py``) can only hit at random, and which broke the promise before: a KeyboardInterrupt that
third-party code turned into another error, one that Python dropped, one that came after the run published.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract.errors import ExitCode
from inspector.cli import read_command
from inspector.cli.main import main
from inspector.cli.stop_signals import Phase, StopSignals

from .test_read_output import GROUP, TXN, _check_dataset, _read, _state

STOPS = (signal.SIGINT, signal.SIGTERM)


def _handlers() -> dict[signal.Signals, Any]:
    return {signum: signal.getsignal(signum) for signum in STOPS}


def _signalled_in_write_connections(monkeypatch: pytest.MonkeyPatch, signum: signal.Signals,
                                    then: Callable[[], None]) -> None:
    """``write_connections`` (after decoding, before the commit) sends ``signum`` and handles the interrupt with
    ``then``."""
    real = read_command.write_connections

    def signalled(*args: Any, **kwargs: Any) -> None:
        try:
            os.kill(os.getpid(), signum)
        except KeyboardInterrupt:
            then()
        real(*args, **kwargs)

    monkeypatch.setattr(read_command, "write_connections", signalled)


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_an_interrupt_turned_into_another_error_is_the_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 signum: signal.Signals) -> None:
    """pyarrow reports a KeyboardInterrupt raised while it imports zoneinfo as ``ArrowInvalid`` (the traceback
    the crash-consistency test found): the run is interrupted (130), DIR as it was, not a traceback (exit 1)."""
    out = tmp_path / "out"
    assert _read(out, GROUP) == ExitCode.OK
    before = _state(out)

    def disguised() -> None:
        raise ValueError("The zoneinfo module or pytz package must be installed.")

    _signalled_in_write_connections(monkeypatch, signum, disguised)
    handlers = _handlers()
    assert _read(out, TXN, extra=("--append",)) == ExitCode.INTERRUPTED
    assert _state(out) == before
    assert _handlers() == handlers


def test_an_interrupt_dropped_on_its_way_stops_the_run_before_it_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """A KeyboardInterrupt that Python drops (raised in a destructor: printed as "Exception ignored", and the code
    goes on) still stops the run: DIR as it was, exit 130, and no traceback printed."""
    out = tmp_path / "out"
    assert _read(out, GROUP) == ExitCode.OK
    before = _state(out)

    class SignalsAsItGoes:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)

    real = read_command.write_connections

    def dropped(*args: Any, **kwargs: Any) -> None:
        SignalsAsItGoes()  # freed at once: its KeyboardInterrupt is "ignored"
        real(*args, **kwargs)

    monkeypatch.setattr(read_command, "write_connections", dropped)
    capfd.readouterr()
    assert _read(out, TXN, extra=("--append",)) == ExitCode.INTERRUPTED
    assert _state(out) == before
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err


def test_a_swallowed_interrupt_stops_the_run_before_it_commits(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    assert _read(out, GROUP) == ExitCode.OK
    before = _state(out)
    _signalled_in_write_connections(monkeypatch, signal.SIGTERM, lambda: None)
    assert _read(out, TXN, extra=("--overwrite",)) == ExitCode.INTERRUPTED
    assert _state(out) == before


def test_a_stop_that_comes_once_the_run_has_published_is_dropped(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT and SIGTERM arriving after the run published (here, as it prints its summary) change nothing: the run
    is complete and says so (exit 0, not "interrupted", 130, of a dataset that changed); the command puts the
    process's handlers back as it returns."""
    printed = read_command.print_summary

    def stopped_while_printing(*args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        printed(*args, **kwargs)

    monkeypatch.setattr(read_command, "print_summary", stopped_while_printing)
    handlers = _handlers()
    out = tmp_path / "out"
    assert main(["read", str(GROUP), "--output", str(out)]) == ExitCode.OK
    summary, rows = _check_dataset(out)
    assert summary["messages"] == len(rows) > 0
    assert _handlers() == handlers


def test_the_process_that_ends_with_the_command_keeps_dropping_stops_to_its_exit() -> None:
    """The console script's process ends when ``read`` returns: the handler stays (a signal between the return and
    the exit is dropped, not a KeyboardInterrupt out of ``run``, exit -SIGINT, of a published dataset)."""
    handlers = _handlers()
    stop = StopSignals()
    try:
        with stop.installed(restore=False), stop.publishing():
            pass
        assert stop.phase is Phase.PUBLISHED
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.dropped == 2 and not stop.stopped
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def test_a_stop_held_back_over_the_commit_is_raised_before_it_and_dropped_after() -> None:
    """Inside a held step a stop signal does not cut it (another thread of the process, which does not block it,
    may take it from the kernel: Python runs the handler in the step); it interrupts as the step ends."""
    stop = StopSignals()
    finished = []
    other = threading.Event()
    thread = threading.Thread(target=other.wait)  # as pyarrow's: it does not block the stop signals
    thread.start()
    try:
        with stop.installed():
            with pytest.raises(KeyboardInterrupt), stop.held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.02)  # Python's checks for handlers to run come and go: the step goes on
                finished.append(True)
            assert finished and stop.requested is signal.SIGTERM
            with pytest.raises(KeyboardInterrupt), stop.publishing():  # an earlier stop: nothing is committed
                pytest.fail("committed after a stop")
        again = StopSignals()
        with again.installed(), again.publishing():
            os.kill(os.getpid(), signal.SIGINT)  # comes during the commit: the run completes
            time.sleep(0.02)
        assert again.phase is Phase.PUBLISHED and not again.dropped
    finally:
        other.set()
        thread.join()
