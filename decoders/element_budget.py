"""The element budget of one message (``--max-elements``), passed explicitly to every reader.

A frame's bytes bound its allocations, but a Python object per element costs far more than the byte or two an
element can take on the wire. Each message is decoded with one :class:`ElementBudget`: every array the readers
meet (the message's, its header's, its embedded structures' and an Envelope's inner message's) spends its
count from ``left``, every tagged-field section its number of fields (known or not: an unknown one is kept
as a ``{"tag", "data"}`` entry), every record set :func:`record_set_elements`; a reader that finds it spent
stops with a ``limit`` status. ``decoders.api`` makes the budget of each decode; nothing about it is kept
between messages.
"""

from __future__ import annotations

from contract.limits import DEFAULT_LIMITS
from decoders.record_batches import LEGACY_MIN_SIZE, LOG_OVERHEAD, MAGIC_POS, V2_MIN_LENGTH
from decoders.record_header import ATTRIBUTES, FIELDS

__all__ = ["BATCH_ELEMENTS", "MAX_ELEMENTS", "ElementBudget", "record_set_elements"]

#: The default budget: elements one message may decode, all its arrays, tagged fields and record sets together.
MAX_ELEMENTS = DEFAULT_LIMITS.max_elements

#: What one batch of a record set costs: the values of its summary (``decoders.record_header``: where it
#: starts, the header's fields, what the attributes say, its status), each an object of the dict it
#: becomes and a key and value of the text written for it (~380 bytes of JSON for a 61-byte batch).
BATCH_ELEMENTS = 2 + len(FIELDS) + len(ATTRIBUTES)

# The smallest batch length of each magic (what decoders.records.decode_records accepts).
_V2_MIN = V2_MIN_LENGTH
_V0_MIN = LEGACY_MIN_SIZE[0]
_V1_MIN = LEGACY_MIN_SIZE[1]
_OVERHEAD = LOG_OVERHEAD
_MAGIC = MAGIC_POS


class ElementBudget:
    """What is left of one message's element budget (compiled, an extension type: ``element_budget.pxd``;
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


def record_set_elements(b: bytes, p: int, n: int) -> int:
    """What the record set ``b[p:p + n]`` costs: :data:`BATCH_ELEMENTS` for each batch its summary lists.

    The batches are framed as ``decoders.records.decode_records`` frames them (a length, at least the minimum
    of the batch's magic, that fits; an unknown magic, a bad length or a partial last batch ends them), from
    their length fields only: nothing is decoded. Compiled, a C loop (the generated fast readers cimport it).
    """
    end = p + n
    count = 0
    while end - p > _MAGIC:
        q = p + 8  # the batch length, a signed 32-bit integer
        b0 = b[q]
        b1 = b[q + 1]
        b2 = b[q + 2]
        b3 = b[q + 3]
        length = ((b0 ^ 0x80) - 0x80) * 16777216 + b1 * 65536 + b2 * 256 + b3
        magic = b[p + _MAGIC]
        if magic == 2:
            minimum = _V2_MIN
        elif magic == 1:
            minimum = _V1_MIN
        elif magic == 0:
            minimum = _V0_MIN
        else:
            break
        if length < minimum or length > end - p - _OVERHEAD:
            break
        count += 1
        p += _OVERHEAD + length
    return count * BATCH_ELEMENTS
