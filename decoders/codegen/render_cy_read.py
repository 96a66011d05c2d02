"""The Cython renderer's readers: each struct at each version as a ``cdef`` function building its dict.

They read the frame through a C pointer with typed positions and lengths, checking every read against the
bytes present; the struct readers are the ``REQUEST``/``RESPONSE``/``VERSIONS`` entries of ``render_cy``.

A read that fails notes the failure the plain reader (``render``) raises for the same bytes: the same status,
field path and offset, and returns ``FAILED``, as each reader that called it then does; the entry point raises
the DecodeError, or gives the status (decoders/accel/_where.pyx). So each line names the field it reads as the
plain reader's line table does (``CFunc.where``), array elements without nested structs are read in the loop
itself as the plain reader reads them (their fields named ``Array[i].Field``), and a reader is given its
caller's field (``Where* up``, on the C stack).
"""

from __future__ import annotations

import json

from decoders.codegen.model import FIXED, Field, Struct
from decoders.codegen.plan import Array, Fixed, Nested, Prefixed, step, steps
from decoders.codegen.render_cy_base import READ, CFunc, CyBuilderBase

#: Structures of this many fields (inclusive) are built in a dict made with room for them: CPython's empty dict
#: holds 5 keys, a literal of 6 to 8 grows once as it is filled (Cython presizes from 9).
PRESIZED = (6, 8)


def inlinable(st: Struct | None) -> bool:
    """Array elements without nested structs (partitions, api key ranges, ...) are read in the loop (the plain
    reader's rule: its failures name the field alike)."""
    return st is not None and bool(st.fields) and all(
        f.kind != "struct" and (f.kind != "array" or (f.element is not None and f.element.kind != "struct"))
        for f in st.fields)


def at(fn: CFunc) -> str:
    """The last arguments of a check at the current line: the caller's field, this line's field and its index."""
    where = fn.where
    if fn.inline is not None:
        array, index = fn.inline
        name = f"{array}[{{}}].{where[0]}" if where is not None else f"{array}[{{}}]"
        return f"up, b'{name}', {index}"
    if where is None:
        return "up, NULL, -1"
    name, var = where
    return f"up, b'{name}', {var or -1}"


def _emit_dict(fn: CFunc, ind: int, d: str, names: list[tuple[str, str]]) -> None:
    """``d`` = the structure's fields ``names`` (name, variable), in their order."""
    if PRESIZED[0] <= len(names) <= PRESIZED[1]:
        fn.emit(ind, f"{d} = new_dict({len(names)})")
        for n, v in names:
            fn.emit(ind, f"PyDict_SetItem({d}, {json.dumps(n)}, {v})")
    else:
        items = ", ".join(f"{json.dumps(n)}: {v}" for n, v in names)
        fn.emit(ind, f"{d} = {{{items}}}")


class CyReaders(CyBuilderBase):
    """The readers of :class:`~decoders.codegen.render_cy.CyModuleBuilder`."""

    def struct_fn(self, st: Struct) -> str:
        fn = CFunc()
        fn.emit(1, "cdef Py_ssize_t p = pp[0]")
        names: list[tuple[str, str]] = []
        for s in steps(st):
            if isinstance(s, Fixed):
                self._fixed_group(fn, list(s.fields), names, 1)
            else:
                names.append((s.field.name, self._field(fn, s.field, 1)))
        fn.where = None
        _emit_dict(fn, 1, "d", names)
        if st.flexible:
            fn.where = ("_tagged", None)
            self._tagged(fn, st, 1, "d")
        fn.emit(1, "pp[0] = p")
        fn.emit(1, "return d")
        return self._add(fn, st.flexible)

    def value_fn(self, f: Field) -> str:
        fn = CFunc()
        fn.emit(1, "cdef Py_ssize_t p = pp[0]")
        if f.kind == "fixed":
            names: list[tuple[str, str]] = []
            self._fixed_group(fn, [f], names, 1)
            var = names[0][1]
        else:
            var = self._field(fn, f, 1)
        fn.emit(1, "pp[0] = p")
        fn.emit(1, f"d = {var}")
        fn.emit(1, "return d")
        return self._add(fn, False)

    def _fixed_group(self, fn: CFunc, group: list[Field], names: list[tuple[str, str]], ind: int) -> None:
        size = sum(FIXED[f.type_name][1] for f in group)
        fn.where = (group[0].name, None) if len(group) == 1 else ("+".join(f.name for f in group), None)
        fn.emit(ind, f"if need_at(p, {size}, L, {at(fn)}): return FAILED")
        off = 0
        for f in group:
            v = fn.var()
            fn.emit(ind, f"{v} = {READ[f.type_name].format(off=off)}")
            names.append((f.name, v))
            off += FIXED[f.type_name][1]
        fn.emit(ind, f"p += {size}")

    def _call(self, fn: CFunc, sub: str) -> tuple[str, str]:
        """A call of the struct reader ``sub`` for the current line's field: the statement giving it that field,
        and the call."""
        fn.calls = True
        name, var = fn.where if fn.where is not None else (None, None)
        setup = f"w.name = {f'b{name!r}' if name is not None else 'NULL'}; w.index = {var or -1}"
        return setup, f"{sub}(b, c, L, &p, B, &w)"

    def _field(self, fn: CFunc, f: Field, ind: int, index: str | None = None) -> str:
        if f.name:
            fn.where = (f.name, index)
        v = fn.var()
        s = step(f)
        if isinstance(s, Fixed):
            size = FIXED[f.type_name][1]
            fn.emit(ind, f"if need_at(p, {size}, L, {at(fn)}): return FAILED")
            fn.emit(ind, f"{v} = {READ[f.type_name].format(off=0)}; p += {size}")
            return v
        if isinstance(s, Prefixed):
            n = self._length(fn, f.compact, ind, s.int16, at(fn))
            fn.emit(ind, f"if {n} >= 0:")
            fn.emit(ind + 1, f"if need_len(p, {n}, L, {at(fn)}): return FAILED")
            if f.kind == "string":
                fn.emit(ind + 1, f"{v} = utf8_text(<const char*>c + p, {n}); p += {n}")
            elif f.kind == "bytes":
                fn.emit(ind + 1, f"{v} = PyBytes_FromStringAndSize(<const char*>c + p, {n}); p += {n}")
            else:  # spends B: its batches
                fn.emit(ind + 1, f"{v} = records_at(b, p, {n}, B, {at(fn)})")
                fn.emit(ind + 1, f"if {v} is FAILED: return FAILED")
                fn.emit(ind + 1, f"p += {n}")
            self._null_or_negative(fn, n, ind, f"{v} = None", at(fn))
            return v
        if isinstance(s, Nested):
            assert f.struct is not None
            sub = self.struct_fn(f.struct)
            if f.name:
                fn.where = (f.name, index)
            setup, call = self._call(fn, sub)
            self._struct_call(fn, f, ind, f"{setup}; {v} = {call}", f"{v} = None", at(fn),
                              f"if {v} is FAILED: return FAILED")
            return v
        assert isinstance(s, Array)
        return self._array(fn, s, v, ind, index)

    def _array(self, fn: CFunc, s: Array, v: str, ind: int, index: str | None) -> str:
        f, elem = s.field, s.element
        n = self._length(fn, f.compact, ind, False, at(fn))
        fn.emit(ind, f"if {n} >= 0:")
        self._array_guard(fn, s, n, ind + 1, at(fn))
        if elem.kind == "fixed":
            fmt, size = FIXED[elem.type_name]
            if elem.type_name == "uuid":
                fn.emit(ind + 1, f"{v} = _rt.uuid_array(b, p, {n}); p += {n} * 16")
            else:
                fn.emit(ind + 1, f"{v} = arr_fixed(c, p, L, {n}, b'{fmt}'); p += {n} * {size}")
        else:
            i = fn.var("i")
            fn.emit(ind + 1, f"{v} = PyList_New(<Py_ssize_t>{n})")  # filled slot by slot (list_put)
            fn.emit(ind + 1, f"for {i} in range({n}):")
            fn.where = (f.name, i)
            if elem.kind == "struct" and inlinable(elem.struct):
                assert elem.struct is not None
                self._inline_struct(fn, elem.struct, f.name, i, v, ind + 2)
            elif elem.kind == "struct":
                assert elem.struct is not None
                sub = self.struct_fn(elem.struct)
                setup, call = self._call(fn, sub)
                x = fn.var()
                fn.emit(ind + 2, setup)
                fn.emit(ind + 2, f"{x} = {call}")
                fn.emit(ind + 2, f"if {x} is FAILED: return FAILED")
                fn.emit(ind + 2, f"list_put({v}, {i}, {x})")
            else:
                x = self._field(fn, elem, ind + 2, i)
                fn.where = (f.name, i)
                fn.emit(ind + 2, f"list_put({v}, {i}, {x})")
            fn.where = (f.name, index)
        self._null_or_negative(fn, n, ind, f"{v} = None", at(fn))
        return v

    def _inline_struct(self, fn: CFunc, st: Struct, array: str, index: str, target: str, ind: int) -> None:
        """Read an array element in the loop itself; its lines name their field ``Array[i].Field``."""
        fn.inline = (array, index)
        names: list[tuple[str, str]] = []
        for s in steps(st):
            if isinstance(s, Fixed):
                self._fixed_group(fn, list(s.fields), names, ind)
            else:
                names.append((s.field.name, self._field(fn, s.field, ind)))
        fn.inline = None
        fn.where = (array, index)
        d = fn.var("d")
        _emit_dict(fn, ind, d, names)
        if st.flexible:
            self._tagged(fn, st, ind, d)
        fn.emit(ind, f"list_put({target}, {index}, {d})")

    def _tagged(self, fn: CFunc, st: Struct, ind: int, target: str) -> None:
        entries = [f"{t.tag}: ({json.dumps(t.name)}, {self.wrapper(self.value_fn(t))})" for t in st.tagged]
        text = "{" + ", ".join(entries) + "}"
        if text not in self.tables:
            self.tables[text] = f"_T{len(self.tables)}"
        fn.uses_t = True
        fn.emit(ind, f"p = uvar_at(c, p, L, &t, {at(fn)})")
        fn.emit(ind, "if p < 0: return FAILED")
        fn.emit(ind, "if t:")
        fn.emit(ind + 1, f"p = tags_at(b, p, t, {self.tables[text]}, {target}, B, {at(fn)})")
        fn.emit(ind + 1, "if p < 0: return FAILED")
