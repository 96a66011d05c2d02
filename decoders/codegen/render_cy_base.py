"""What the Cython renderer's readers (``render_cy_read``) and JSON writers (``render_cy_text``) share.

A ``cdef`` function under construction (:class:`CFunc`), the module's collected functions and tables
(:class:`CyBuilderBase`, which both mixins extend), and the steps both emit alike: a length prefix, its null
or negative end, a nullable struct's marker, an array's checks against the bytes left and the element budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from decoders import _runtime as rt
from decoders.codegen.model import Field
from decoders.codegen.plan import Array

#: C reader expression of each fixed-width type at ``c``, ``p + {off}``.
READ: dict[str, str] = {
    "bool": "(c[p + {off}] != 0)",
    "int8": "rd8(c, p + {off})",
    "int16": "rd16(c, p + {off})",
    "uint16": "ru16(c, p + {off})",
    "int32": "rd32(c, p + {off})",
    "uint32": "ru32(c, p + {off})",
    "int64": "rd64(c, p + {off})",
    "float64": "rf64(c, p + {off})",
    "uuid": "_rt.uuid(b[p + {off}:p + {off} + 16])",
}


@dataclass
class CFunc:
    """A ``cdef`` function body under construction: its lines and its typed locals; for a reader, the field each
    line reads (``where``: name and loop variable, as the plain reader's line table names it)."""

    lines: list[str] = field(default_factory=list)
    where: tuple[str, str | None] | None = None  # the field being read: name, loop variable or None
    inline: tuple[str, str] | None = None  # reading an array element in the loop: the array, its loop variable
    uses_t: bool = False  # a tag count is read (a C local ``t``)
    calls: bool = False  # calls another reader (a C local ``w``, the field it is called for)
    counter: int = 0
    longs: list[str] = field(default_factory=list)  # C long long locals
    sizes: list[str] = field(default_factory=list)  # Py_ssize_t locals
    objects: list[str] = field(default_factory=list)  # object locals, declared so Cython never infers

    def var(self, prefix: str = "v") -> str:
        self.counter += 1
        name = f"{prefix}{self.counter}"
        if prefix == "n" or prefix == "m":
            self.longs.append(name)
        elif prefix == "i":
            self.sizes.append(name)
        else:
            self.objects.append(name)
        return name

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)


@dataclass
class CyBuilderBase:
    """One compiled module's deduplicated ``cdef`` functions, their Python-callable wrappers and tables."""

    functions: dict[str, str] = field(default_factory=dict)  # canonical text -> name
    text_functions: dict[str, str] = field(default_factory=dict)  # canonical text -> name (JSON writers)
    text_entries: dict[str, str] = field(default_factory=dict)  # cdef name -> def wrapper name (JSON writers)
    ordered: list[tuple[str, str]] = field(default_factory=list)  # (name, text)
    tables: dict[str, str] = field(default_factory=dict)
    wrappers: dict[str, str] = field(default_factory=dict)  # cdef name -> def wrapper name

    def _add(self, fn: CFunc, uses_t: bool, text: bool = False) -> str:
        decls = []
        uses_t = uses_t or fn.uses_t
        if fn.longs or uses_t:
            decls.append("    cdef long long " + ", ".join(fn.longs + (["t"] if uses_t else [])))
        if fn.calls:
            decls.append("    cdef Where w")
        if fn.sizes:
            decls.append("    cdef Py_ssize_t " + ", ".join(fn.sizes))
        objects = fn.objects + ["d"]
        decls.append("    cdef object " + ", ".join(objects))
        if fn.calls:
            decls.append("    w.up = up")
        body = "\n".join(decls + fn.lines)
        functions, prefix = (self.text_functions, "_t") if text else (self.functions, "_f")
        name = functions.get(body)
        if name is None:
            name = f"{prefix}{len(functions)}"
            functions[body] = name
            self.ordered.append((name, body))
        return name

    def wrapper(self, cname: str) -> str:
        """A Python-callable ``(b, p, budget) -> (value, p)`` around the cdef function ``cname``."""
        name = self.wrappers.get(cname)
        if name is None:
            name = f"_w{cname[2:]}"
            self.wrappers[cname] = name
        return name

    def _length(self, fn: CFunc, compact: bool, ind: int, int16: bool, at: str | None = None) -> str:
        """Read a length or count into a new C local; ``at``: a reader's field (the ``_at`` helpers' last
        arguments, a failure says where), else a JSON writer's (a failure raises without detail)."""
        n = fn.var("n")
        if compact:
            fn.emit(ind, f"p = uvar_at(c, p, L, &{n}, {at})" if at else f"p = uvar(c, p, L, &{n})")
            if at:
                fn.emit(ind, "if p < 0: return FAILED")
            fn.emit(ind, f"{n} -= 1")
        elif int16:
            fn.emit(ind, f"if need_at(p, 2, L, {at}): return FAILED" if at else "need(p, 2, L)")
            fn.emit(ind, f"{n} = rd16(c, p); p += 2")
        else:
            fn.emit(ind, f"if need_at(p, 4, L, {at}): return FAILED" if at else "need(p, 4, L)")
            fn.emit(ind, f"{n} = rd32(c, p); p += 4")
        return n

    def _null_or_negative(self, fn: CFunc, n: str, ind: int, on_null: str, at: str | None = None) -> None:
        """The end of a length-prefixed read or write: a length of -1 runs ``on_null``, any other negative
        length is invalid."""
        fn.emit(ind, f"elif {n} == -1:")
        fn.emit(ind + 1, on_null)
        fn.emit(ind, "else:")
        fn.emit(ind + 1, f"return failed(NEGATIVE, {n}, p, L, {at})" if at else "raise ValueError('negative length')")

    def _struct_call(self, fn: CFunc, f: Field, ind: int, call: str, on_null: str, at: str | None = None,
                     check: str | None = None) -> None:
        """Emit ``call`` (a struct's reader or writer at p), then ``check`` (a reader's: its failure returned);
        a nullable struct is preceded by its int8 marker, and a negative marker runs ``on_null`` instead."""
        if not f.nullable:
            fn.emit(ind, call)
            if check:
                fn.emit(ind, check)
            return
        m = fn.var("m")
        fn.emit(ind, f"if need_at(p, 1, L, {at}): return FAILED" if at else "need(p, 1, L)")
        fn.emit(ind, f"{m} = rd8(c, p); p += 1")
        fn.emit(ind, f"if {m} < 0:")
        fn.emit(ind + 1, on_null)
        fn.emit(ind, "else:")
        fn.emit(ind + 1, call)
        if check:
            fn.emit(ind + 1, check)

    def _array_guard(self, fn: CFunc, s: Array, n: str, ind: int, at: str | None = None) -> None:
        """An array's ``n`` elements checked against the bytes left (at their smallest size) and spent from
        the element budget, as the pure decoder checks and spends them."""
        min_size = s.min_size
        if min_size:
            fn.emit(ind, f"if {n} * {min_size} > L - p: " + (f"return failed(SHORT_COUNT, {n}, p, L, {at})" if at
                                                             else "raise IndexError('truncated')"))
        else:
            fn.emit(ind, f"if {n} > {_max_empty()}: " + (f"return failed(TOO_MANY, {n}, p, L, {at})" if at
                                                         else "raise ValueError('too many elements')"))
        fn.emit(ind, f"B.left -= {n}")
        fn.emit(ind, "if B.left < 0: " + (f"return failed(OVER_BUDGET, {n}, p, L, {at})" if at
                                          else f"raise ValueError({rt.OVER_BUDGET!r})"))


def _max_empty() -> int:
    from decoders._runtime import MAX_EMPTY_ELEMENTS

    return MAX_EMPTY_ELEMENTS
