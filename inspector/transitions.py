"""State tables, applied one way (h11's ``_state.py``): a table of the allowed (state, event) -> state moves,
and :func:`move`, which applies one and raises :class:`IllegalTransition` on any move the table does not allow.

A state machine of the project is an enum of states, an enum of the events that move it and such a table:
a connection's mode and its TLS state (:mod:`inspector.kafka.connection_state`), the tap's phase
(:mod:`inspector.tap.controller`). The code decides which event happened; the table says where it leads, so a
move nobody wrote down is a bug found where it happens, not a state that drifts.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from contract.errors import InspectorError

__all__ = ["IllegalTransition", "move"]

S = TypeVar("S", bound=Enum)
E = TypeVar("E", bound=Enum)


class IllegalTransition(InspectorError):
    """A state machine was told of an event its table does not allow in its state (a bug, never traffic)."""


def move(table: Mapping[tuple[S, E], S], state: S, event: E) -> S:
    """The state ``event`` leads to from ``state``, by ``table``."""
    try:
        return table[state, event]
    except KeyError:
        raise IllegalTransition(f"{type(event).__name__}.{event.name} is not allowed in "
                                f"{type(state).__name__}.{state.name}") from None
