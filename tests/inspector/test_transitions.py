"""The state tables: every move they allow, and the one error for a move they do not."""

from __future__ import annotations

import pytest

from contract.errors import InspectorError
from contract.events import EVENT_COLUMNS, Direction
from inspector.kafka.connection_state import MODE_MOVES, TLS_MOVES, Mode, ModeEvent, TlsEvent, TlsState
from inspector.tap.controller import PHASE_MOVES, PhaseEvent, TapPhase
from inspector.transitions import IllegalTransition, move


def test_mode_is_decided_once() -> None:
    assert move(MODE_MOVES, Mode.UNDECIDED, ModeEvent.DECODED) is Mode.KAFKA
    assert move(MODE_MOVES, Mode.UNDECIDED, ModeEvent.NOTHING_DECODED) is Mode.NOT_KAFKA
    for decided in (Mode.KAFKA, Mode.NOT_KAFKA):
        for event in ModeEvent:
            with pytest.raises(IllegalTransition, match=f"ModeEvent.{event.name} is not allowed in Mode"):
                move(MODE_MOVES, decided, event)


def test_tls_state_is_decided_once() -> None:
    state = move(TLS_MOVES, TlsState.UNSEEN, TlsEvent.TOO_FEW)
    assert state is TlsState.SNIFFING and move(TLS_MOVES, state, TlsEvent.TOO_FEW) is TlsState.SNIFFING
    assert move(TLS_MOVES, state, TlsEvent.SAID_TLS) is TlsState.TLS
    assert move(TLS_MOVES, TlsState.UNSEEN, TlsEvent.SAID_PLAIN) is TlsState.PLAIN
    for decided in (TlsState.PLAIN, TlsState.TLS):
        for event in TlsEvent:
            with pytest.raises(IllegalTransition):
                move(TLS_MOVES, decided, event)


def test_tap_phases() -> None:
    assert move(PHASE_MOVES, TapPhase.STARTING, PhaseEvent.LISTENING) is TapPhase.CAPTURING
    assert move(PHASE_MOVES, TapPhase.RESTARTING, PhaseEvent.LISTENING_AFTER_STOP) is TapPhase.CATCHING_UP
    assert move(PHASE_MOVES, TapPhase.WAITING, PhaseEvent.RETRY) is TapPhase.RESTARTING
    assert {move(PHASE_MOVES, p, PhaseEvent.FINISHED) for p in TapPhase if p is not TapPhase.DONE} == {TapPhase.DONE}
    # done is final; a stop is only a move while capturing
    assert not [key for key in PHASE_MOVES if key[0] is TapPhase.DONE]
    with pytest.raises(IllegalTransition):
        move(PHASE_MOVES, TapPhase.WAITING, PhaseEvent.STOP)
    assert TapPhase.CATCHING_UP == "catching_up"  # the phase's text, as the controller's callers read it


def test_an_illegal_move_is_a_project_error() -> None:
    assert issubclass(IllegalTransition, InspectorError)


def test_direction_is_its_column_text() -> None:
    assert [str(d) for d in Direction] == ["request", "response"]
    assert f"{Direction.REQUEST}" == "request" and Direction.RESPONSE == "response"
    assert next(c for c in EVENT_COLUMNS if c.name == "direction").meaning == "request or response"
