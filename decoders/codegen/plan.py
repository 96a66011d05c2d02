"""The read plan of a struct: the decisions about its wire layout, made once for every renderer.

The renderers (``render`` for the plain Python readers, ``render_cy_read`` for the compiled readers,
``render_cy_text`` for the compiled JSON writers) spell the same plan in their own language; what is read
in which order, which fixed-width fields are read together, how a length is prefixed and what an array's
elements must at least take is decided here:

* :func:`steps`: a struct's fields in wire order, consecutive fixed-width fields in one :class:`Fixed` step
  (one bounds check, one read);
* :class:`Prefixed`: a string, bytes or record set behind its length (a uvarint + 1 when compact, else int16
  for strings and int32 for the rest; -1 is null, any other negative length invalid);
* :class:`Nested`: a struct, behind an int8 marker when nullable;
* :class:`Array`: a count, then its elements; ``min_size`` is the fewest bytes an element can take (the count
  is checked against the bytes left, or bounded by ``MAX_EMPTY_ELEMENTS`` when elements can be empty) before
  the count is spent from the element budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from decoders.codegen.model import FIXED, Field, Struct, field_min_size


@dataclass(frozen=True)
class Fixed:
    """Consecutive fixed-width fields, read together: ``size`` bytes."""

    fields: tuple[Field, ...]

    @property
    def size(self) -> int:
        return sum(FIXED[f.type_name][1] for f in self.fields)


@dataclass(frozen=True)
class Prefixed:
    """A string, bytes or record set behind its length."""

    field: Field

    @property
    def int16(self) -> bool:
        """Whether a non-compact length is an int16 (strings) rather than an int32."""
        return self.field.kind == "string"


@dataclass(frozen=True)
class Nested:
    """A struct (behind an int8 marker when nullable)."""

    field: Field


@dataclass(frozen=True)
class Array:
    """A count (compact: uvarint + 1, else int32; -1 null), then that many elements."""

    field: Field

    @property
    def element(self) -> Field:
        assert self.field.element is not None
        return self.field.element

    @property
    def min_size(self) -> int:
        """The fewest bytes one element can take; 0 when elements can be empty."""
        return element_min_size(self.element)


Step = Fixed | Prefixed | Nested | Array


def element_min_size(elem: Field) -> int:
    """The fewest bytes an array element can take (an element is never null: a struct element is its struct)."""
    if elem.kind == "struct":
        assert elem.struct is not None
        return elem.struct.min_size()
    return field_min_size(elem)


def step(f: Field) -> Step:
    """The step reading field ``f`` alone."""
    if f.kind == "fixed":
        return Fixed((f,))
    if f.kind in ("string", "bytes", "records"):
        return Prefixed(f)
    if f.kind == "struct":
        return Nested(f)
    if f.kind == "array":
        return Array(f)
    raise AssertionError(f.kind)


def steps(st: Struct) -> list[Step]:
    """``st``'s regular fields in wire order, consecutive fixed-width ones grouped (its tagged fields follow
    them, when it is flexible)."""
    out: list[Step] = []
    pending: list[Field] = []
    for f in st.fields:
        if f.kind == "fixed":
            pending.append(f)
            continue
        if pending:
            out.append(Fixed(tuple(pending)))
            pending = []
        out.append(step(f))
    if pending:
        out.append(Fixed(tuple(pending)))
    return out
