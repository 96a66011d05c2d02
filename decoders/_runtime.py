"""Small helpers shared by the generated decoders (``decoders/generated``, and ``decoders/accel`` for what is rare).

The generated code does the per-field work inline; this module holds what is rare (long varints,
tagged fields, error annotation) or shared (record sets, UUID formatting).
"""

from __future__ import annotations

import array
import base64
import struct
import sys
from collections.abc import Callable
from typing import Any

from contract.errors import InspectorError
from decoders.element_budget import BATCH_ELEMENTS, ElementBudget, record_set_elements
from decoders.element_budget import MAX_ELEMENTS as MAX_ELEMENTS
from decoders.records import _new_records
from decoders.status import StatusKind

#: A generated reader: ``(frame, position, the message's element budget) -> (value, position after it)``.
Reader = Callable[[bytes, int, ElementBudget], tuple[Any, int]]

#: Arrays whose elements can take zero bytes are bounded by this count instead of the bytes left.
MAX_EMPTY_ELEMENTS = 1 << 16


class DecodeError(InspectorError):
    """Raised inside the generated decoders; caught by ``decoders.api`` and turned into a status (its kind
    and its text)."""

    def __init__(self, kind: StatusKind, reason: str, offset: int | None = None) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.offset = offset
        self.path: list[str] = []

    def describe(self) -> str:
        return describe_at(self.reason, path_text(self.path), self.offset)


def path_text(path: list[str]) -> str:
    """A field path as a status names it: its fields, outermost first, joined by "." (none: "<message>")."""
    return ".".join(path) if path else "<message>"


def describe_at(reason: str, where: str, offset: int | None) -> str:
    """A failure's status text: its reason, the field it was reading (:func:`path_text`) and the byte offset."""
    return f"{reason} at {where} (offset {offset})"


# Each failure a reader can meet, as its status kind and reason text (``*_reason``), and as the DecodeError the
# readers raise. The compiled readers note a failure and give its text without raising where the caller only
# wants the status (decoders/accel/_where.pyx).
Reason = tuple[StatusKind, str]
# The kinds, looked up once (an enum member's lookup costs more than a module global's).
_TRUNCATED = StatusKind.TRUNCATED
_INVALID = StatusKind.INVALID
_LIMIT = StatusKind.LIMIT


def short_reason(n: int, available: int) -> Reason:
    return _TRUNCATED, f"truncated: length {n} exceeds the {available} bytes left"


def short(n: int, available: int) -> DecodeError:
    return DecodeError(*short_reason(n, available))


def short_count_reason(n: int, available: int) -> Reason:
    return _TRUNCATED, f"truncated: count {n} cannot fit in the {available} bytes left"


def short_count(n: int, available: int) -> DecodeError:
    return DecodeError(*short_count_reason(n, available))


def too_many_reason(n: int) -> Reason:
    return _INVALID, f"invalid: count {n} of empty elements exceeds {MAX_EMPTY_ELEMENTS}"


def too_many(n: int) -> DecodeError:
    return DecodeError(*too_many_reason(n))


#: How the reason (and a message's status) starts when the budget is spent: ``limit: array of N elements ...``.
ELEMENTS_LIMIT = "limit: array of "
#: What the compiled JSON writers (decoders/accel, generated with this text) raise at the budget, giving the
#: message up to the readers: ``ValueError(OVER_BUDGET)``; and ``decoders.api``'s word for a decode stopped there.
OVER_BUDGET = "over budget"


def over_budget_reason(n: int) -> Reason:
    return _LIMIT, (f"{ELEMENTS_LIMIT}{n} elements exceeds the elements left of this message's budget "
                    f"(--max-elements)")


def over_budget(n: int) -> DecodeError:
    return DecodeError(*over_budget_reason(n))


def over_budget_tags(n: int) -> DecodeError:
    return DecodeError(StatusKind.LIMIT, f"limit: {n} tagged fields exceed the elements left of this message's "
                       f"budget (--max-elements)")


def over_budget_records(cost: int) -> DecodeError:
    return DecodeError(StatusKind.LIMIT, f"limit: record set of {cost // BATCH_ELEMENTS} batches ({cost} elements) "
                       f"exceeds the elements left of this message's budget (--max-elements)")


def spent_budget(err: DecodeError) -> bool:
    """Whether ``err`` is a decode stopping at the element budget (:func:`over_budget` and its kin)."""
    return err.kind is _LIMIT


def negative_reason(n: int) -> Reason:
    return _INVALID, f"invalid: negative length {n}"


def negative(n: int) -> DecodeError:
    return DecodeError(*negative_reason(n))


#: An unsigned varint of more than 5 bytes (at the offset it was read at).
LONG_VARINT_REASON: Reason = (StatusKind.INVALID, "invalid: unsigned varint longer than 5 bytes")


def long_varint(p: int) -> DecodeError:
    return DecodeError(*LONG_VARINT_REASON, p)


#: A read past the end of the bytes (at the offset of the read).
TRUNCATED_REASON: Reason = (StatusKind.TRUNCATED, "truncated")


def uvarint(b: bytes, p: int, first: int) -> tuple[int, int]:
    """Continue an unsigned varint whose first byte ``first`` (>127) was read before ``p``."""
    value = first & 0x7F
    shift = 7
    while True:
        if shift > 28:
            raise long_varint(p)
        byte = b[p]
        p += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, p
        shift += 7


def read_uvarint(b: bytes, p: int) -> tuple[int, int]:
    first = b[p]
    if first < 0x80:
        return first, p + 1
    return uvarint(b, p + 1, first)


def tags(b: bytes, p: int, n: int, table: dict[int, tuple[str, Reader]], out: dict[str, Any],
         budget: ElementBudget) -> int:
    """Read ``n`` tagged fields at ``p`` into ``out``: known tags by name (their readers spend ``budget``),
    unknown ones kept raw. Each field, known or not, costs an element of ``budget`` (an unknown one becomes an
    entry of ``_unknownTaggedFields``; a known one repeated is read again each time), spent before any is read."""
    size_left = len(b) - p
    if n * 2 > size_left:
        raise short_count(n, size_left)
    budget.left -= n
    if budget.left < 0:
        raise over_budget_tags(n)
    unknown: list[dict[str, Any]] | None = None
    for _ in range(n):
        tag, p = read_uvarint(b, p)
        size, p = read_uvarint(b, p)
        end = p + size
        if end > len(b):
            raise short(size, len(b) - p)
        entry = table.get(tag)
        if entry is None:
            if unknown is None:
                unknown = out.setdefault("_unknownTaggedFields", [])
            unknown.append({"tag": tag, "data": b[p:end].hex()})
        else:
            name, reader = entry
            try:
                value, q = reader(b, p, budget)
            except DecodeError as err:
                err.path.insert(0, name)
                raise
            if q != end:
                mismatch = DecodeError(StatusKind.INVALID,
                                       f"invalid: tagged field {tag} declared {size} bytes, decoded {q - p}", p)
                mismatch.path.insert(0, name)
                raise mismatch
            out[name] = value
        p = end
    return p


def located(exc: BaseException, p: int) -> DecodeError:
    """``exc``, raised reading at offset ``p``, as a DecodeError (one that has no offset yet gets ``p``)."""
    if isinstance(exc, DecodeError):
        if exc.offset is None:
            exc.offset = p
        return exc
    if isinstance(exc, (struct.error, IndexError)):
        return DecodeError(*TRUNCATED_REASON, p)
    return DecodeError(StatusKind.INVALID, f"invalid: {type(exc).__name__}: {exc}", p)


def annotate(exc: BaseException, lines: dict[int, tuple[str, str | None]], loc: dict[str, Any],
             p: int) -> DecodeError:
    """Turn ``exc`` into a DecodeError and prepend the field the current frame was decoding (the compiled
    readers name the same fields: decoders/accel/_where.pyx)."""
    err = located(exc, p)
    tb = exc.__traceback__
    entry = lines.get(tb.tb_lineno) if tb is not None else None
    if entry is not None:
        name, index = entry
        if "{}" in name and index:  # a field of an array element decoded inline: "Array[{}].Field"
            name = name.replace("{}", str(loc.get(index)), 1)
        elif index:
            name = f"{name}[{loc.get(index)}]"
        err.path.insert(0, name)
    return err


def uuid(raw: bytes) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


#: Big-endian integer arrays are read with array.array (one C call) where its item sizes match.
_ARRAY_CODES = {code: code for code in "bhiq" if array.array(code).itemsize == struct.calcsize(code)}
_SWAP = sys.byteorder == "little"


def fixed_array(fmt: str, size: int, b: bytes, p: int, n: int) -> list[Any]:
    if n * size > len(b) - p:
        raise short_count(n, len(b) - p)
    code = _ARRAY_CODES.get(fmt)
    if code is not None:
        values = array.array(code, b[p : p + n * size])
        if _SWAP and size > 1:
            values.byteswap()
        return values.tolist()
    return list(struct.unpack_from(f">{n}{fmt}", b, p))


#: Arrays up to this many elements are read with a precompiled struct per count.
_SMALL_ARRAY = 32


def array_reader(fmt: str) -> Callable[[bytes, int, int], list[Any]]:
    """A reader of ``n`` big-endian values of struct format ``fmt``: ``read(b, p, n) -> list``."""
    size = struct.calcsize(">" + fmt)
    small = [struct.Struct(f">{n}{fmt}").unpack_from for n in range(_SMALL_ARRAY + 1)]

    def read(b: bytes, p: int, n: int) -> list[Any]:
        if n <= _SMALL_ARRAY:
            if n * size > len(b) - p:
                raise short_count(n, len(b) - p)
            return list(small[n](b, p))
        return fixed_array(fmt, size, b, p, n)

    return read


def uuid_array(b: bytes, p: int, n: int) -> list[str]:
    if n * 16 > len(b) - p:
        raise short_count(n, len(b) - p)
    return [uuid(b[p + 16 * i : p + 16 * (i + 1)]) for i in range(n)]


def records(b: bytes, p: int, n: int, budget: ElementBudget) -> Any:
    """A lazy view over a ``records`` field (decoded on demand by ``decoders.records``); its batches spend
    ``budget`` now (:func:`~decoders.element_budget.record_set_elements`), whatever level they are decoded at."""
    cost = record_set_elements(b, p, n)
    if cost:
        budget.left -= cost
        if budget.left < 0:
            raise over_budget_records(cost)
    return _new_records(memoryview(b)[p : p + n])
