"""The project's one exception root and the exit codes it maps to.

Every exception the project raises on purpose derives from :class:`InspectorError`, so a caller (the CLI, a
test, an embedding program) can catch the project's own failures in one ``except`` and tell them from a bug.
Traffic that is bad is never one of them: it becomes an event with a status. What is raised is misuse (a bad
argument, filter or file, an output that cannot be written) or, inside a module, a signal its own caller turns
into such a status (``decoders._runtime.DecodeError``, ``inspector.tls.cipher.DecryptError``).

Each class says which documented exit code it means (:class:`ExitCode`); ``str()`` of an instance is the one
line a person reads.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "InspectorError"]


class ExitCode(IntEnum):
    """The command line's documented exit codes."""

    OK = 0
    USAGE = 2  # a bad argument, option or filter
    INPUT = 3  # a capture or events folder that cannot be read
    OUTPUT = 4  # an output that cannot be written
    INTERRUPTED = 130  # Ctrl-C / SIGINT


class InspectorError(Exception):
    """The root of the project's exceptions; ``exit_code``: what the command line exits with for one."""

    exit_code: int = ExitCode.USAGE
