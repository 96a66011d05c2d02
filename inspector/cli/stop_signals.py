"""What SIGINT and SIGTERM mean to a ``read`` while it runs: a stop before the run publishes, nothing after.

The promise ``read`` keeps is that its exit code tells what became of DIR: 130 (interrupted) only if DIR is as it
was, 0 only if the run was published whole. A Python signal handler that raises ``KeyboardInterrupt`` keeps it
only where the exception reaches ``read`` as itself, and two things break that:

* third-party code turns it into another error (pyarrow, importing ``zoneinfo`` on its first timestamp, reports a
  KeyboardInterrupt raised in the import as ``ArrowInvalid: The zoneinfo module or pytz package must be
  installed``), or Python drops it (raised in a callback such as the import system's weakref callbacks, it is
  printed, "Exception ignored in", and the code goes on);
* a signal that lands once the run has published (printing the summary, returning) would say "interrupted" of a
  dataset that changed.

So a stop signal is *remembered* as well as raised: :attr:`StopSignals.stopped` tells the command that a failure
it sees was the interrupt in disguise, or that one it never saw was dropped (whose "Exception ignored" print is
left out: the stop is not lost), and the command stops before it commits. Each stop signal raises until the
command acts on one (a dropped one is not acted on: pressing Ctrl-C again stops the run); from then on, while it
cleans up, and from the commit on, they are noted and dropped. A process that ends when the command returns (the
console script) keeps that to its exit; a caller in the same process gets its own handlers back.
"""

from __future__ import annotations

import enum
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

#: The signals that stop a run (SIGTERM as SIGINT: a service manager's stop is a Ctrl-C).
STOP = frozenset({signal.SIGINT, signal.SIGTERM})


class Phase(enum.Enum):
    """Where the run is, as the signal handler sees it."""

    RUNNING = "a stop signal interrupts the run (KeyboardInterrupt) and is remembered"
    HOLDING = "a step that must not be cut in two: a stop signal is remembered, and raised as the step ends"
    STOPPING = "the run is being undone (an interrupt, an error): a stop signal is noted and dropped"
    PUBLISHED = "the run is complete: a stop signal is noted and dropped"


class StopSignals:
    """SIGINT and SIGTERM for one run of a command (:meth:`installed`)."""

    def __init__(self) -> None:
        self._previous_hook = sys.unraisablehook
        self.phase = Phase.RUNNING
        self.requested: signal.Signals | None = None
        self.dropped = 0

    @property
    def stopped(self) -> bool:
        """A stop signal came while the run was running."""
        return self.requested is not None

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.phase is Phase.RUNNING:
            self.requested = signal.Signals(signum)
            raise KeyboardInterrupt
        if self.phase is Phase.HOLDING:
            self.requested = self.requested or signal.Signals(signum)
            return
        self.dropped += 1

    def stopping(self) -> None:
        """The command undoes the run (it stops): signals from now on are dropped, the undoing is not cut short."""
        self.phase = Phase.STOPPING

    def _unraisable(self, unraisable: Any) -> None:
        if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and self.stopped):
            self._previous_hook(unraisable)

    @contextmanager
    def installed(self, *, restore: bool = True) -> Iterator[StopSignals]:
        """The handler in place for the span of the block; the previous ones put back after it unless ``restore``
        is False (the process ends when the command returns: a signal until then is dropped, not a traceback)."""
        self._previous_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        previous: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int | None] = {
            signum: signal.signal(signum, self._handle) for signum in STOP}
        try:
            yield self
        finally:
            if restore:
                for signum, handler in previous.items():
                    signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
                sys.unraisablehook = self._previous_hook

    @contextmanager
    def held(self) -> Iterator[None]:
        """Stop signals held back for the block (a step that must not be cut in two); one that came meanwhile
        interrupts as the block ends.

        Blocking the signals is not enough on its own: one the kernel delivered just before is handled by Python
        later, at its next check, which can fall inside the block; so the handler only remembers it there."""
        self.phase = Phase.HOLDING
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP)
        try:
            yield
        finally:
            if self.phase is Phase.HOLDING:
                self.phase = Phase.RUNNING
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP)  # one held back by the kernel is handled here
        if self.phase is Phase.RUNNING and self.stopped:  # one that Python handled inside the block
            raise KeyboardInterrupt

    @contextmanager
    def publishing(self) -> Iterator[None]:
        """Stop signals held back while the run commits and publishes; from the end of the block they are dropped
        (the run is complete), including one that came meanwhile. A stop that came before the block, and was
        swallowed on its way (see the module's doc), is raised here: nothing is committed. One that Python handles
        inside the block came as it began: it is taken as coming after (the run completes, exit 0)."""
        with self.held():
            if self.stopped:
                raise KeyboardInterrupt
            yield
            self.phase = Phase.PUBLISHED  # before the signals are let through: one held back is dropped
