"""What the pipeline knows of a connection, as states moved by tables (:mod:`inspector.transitions`).

:class:`Mode`: whether the connection is Kafka. A broker port given (``--port``) decides at the start; else it
is undecided until a message decodes (Kafka) or the detection budget is spent, or the connection closes, with
none (not Kafka). :class:`TlsState`: whether its bytes are TLS, from its first stream bytes (of the side that
sent first): unseen before them, sniffing while too few tell, then plaintext or TLS for good.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from inspector.transitions import move

__all__ = ["MODE_MOVES", "TLS_MOVES", "Mode", "ModeEvent", "TlsEvent", "TlsState", "move"]


class Mode(Enum):
    """Whether a connection is Kafka traffic."""

    UNDECIDED = "undecided"  # no message decoded yet: its events are held
    KAFKA = "kafka"  # decoded (or on a --port broker port): its events go out
    NOT_KAFKA = "not kafka"  # nothing decoded within the detection budget, or not on a --port port: counted


class ModeEvent(Enum):
    DECODED = "a message decoded"
    NOTHING_DECODED = "the detection budget spent, or the connection closed, with no message decoded"


MODE_MOVES: Final[dict[tuple[Mode, ModeEvent], Mode]] = {
    (Mode.UNDECIDED, ModeEvent.DECODED): Mode.KAFKA,
    (Mode.UNDECIDED, ModeEvent.NOTHING_DECODED): Mode.NOT_KAFKA,
}


class TlsState(Enum):
    """Whether a connection's stream bytes are TLS."""

    UNSEEN = "unseen"  # no stream byte yet
    SNIFFING = "sniffing"  # its first bytes are held: too few tell (fewer than a record header and a type)
    PLAIN = "plain"  # not TLS: the bytes go to its framers
    TLS = "tls"  # TLS: the bytes go to its TlsStream


class TlsEvent(Enum):
    TOO_FEW = "too few bytes to tell"
    SAID_PLAIN = "not TLS (or a gap, or the close, before enough bytes told)"
    SAID_TLS = "a ClientHello, or TLS records seen from the middle of the connection"


TLS_MOVES: Final[dict[tuple[TlsState, TlsEvent], TlsState]] = {
    (TlsState.UNSEEN, TlsEvent.TOO_FEW): TlsState.SNIFFING,
    (TlsState.UNSEEN, TlsEvent.SAID_PLAIN): TlsState.PLAIN,
    (TlsState.UNSEEN, TlsEvent.SAID_TLS): TlsState.TLS,
    (TlsState.SNIFFING, TlsEvent.TOO_FEW): TlsState.SNIFFING,
    (TlsState.SNIFFING, TlsEvent.SAID_PLAIN): TlsState.PLAIN,
    (TlsState.SNIFFING, TlsEvent.SAID_TLS): TlsState.TLS,
}
