"""The array element budget of one message (``--max-elements``), passed explicitly to every reader.

A frame's bytes bound its allocations, but a Python object per array element costs far more than the byte
or two an element can take on the wire. Each message is decoded with one :class:`ElementBudget`: every
array the readers meet (the message's, its header's, its embedded structures' and an Envelope's inner
message's) spends its count from ``left``, and a reader that finds it spent stops with a ``limit`` status.
``decoders.api`` makes the budget of each decode; nothing about it is kept between messages.
"""

from __future__ import annotations

__all__ = ["MAX_ELEMENTS", "ElementBudget"]

#: The default budget: array elements one message may decode, all its arrays together.
MAX_ELEMENTS = 1_000_000


class ElementBudget:
    """What is left of one message's array element budget (compiled, an extension type: ``element_budget.pxd``;
    the compiled readers spend ``left`` as a C integer).

    ``stops`` counts the embedded structures (group metadata, assignments, an Envelope's principal) that
    stopped at the budget while the message was postprocessed: the message's notes say how many.
    """

    __slots__ = ("left", "stops")

    def __init__(self, left: int = MAX_ELEMENTS) -> None:
        self.left = left
        self.stops = 0

    def __repr__(self) -> str:
        return f"ElementBudget(left={self.left}, stops={self.stops})"
