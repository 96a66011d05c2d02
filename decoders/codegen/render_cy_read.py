"""The Cython renderer's readers: each struct at each version as a ``cdef`` function building its dict.

They read the frame through a C pointer with typed positions and lengths, checking every read against the
bytes present; the struct readers are the ``REQUEST``/``RESPONSE``/``VERSIONS`` entries of ``render_cy``.
"""

from __future__ import annotations

import json

from decoders.codegen.model import FIXED, Field, Struct
from decoders.codegen.plan import Array, Fixed, Nested, Prefixed, step, steps
from decoders.codegen.render_cy_base import READ, CFunc, CyBuilderBase


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
        items = ", ".join(f"{json.dumps(n)}: {v}" for n, v in names)
        fn.emit(1, f"d = {{{items}}}")
        if st.flexible:
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
        fn.emit(ind, f"need(p, {size}, L)")
        off = 0
        for f in group:
            v = fn.var()
            fn.emit(ind, f"{v} = {READ[f.type_name].format(off=off)}")
            names.append((f.name, v))
            off += FIXED[f.type_name][1]
        fn.emit(ind, f"p += {size}")

    def _field(self, fn: CFunc, f: Field, ind: int) -> str:
        v = fn.var()
        s = step(f)
        if isinstance(s, Fixed):
            size = FIXED[f.type_name][1]
            fn.emit(ind, f"need(p, {size}, L)")
            fn.emit(ind, f"{v} = {READ[f.type_name].format(off=0)}; p += {size}")
            return v
        if isinstance(s, Prefixed):
            n = self._length(fn, f.compact, ind, int16=s.int16)
            fn.emit(ind, f"if {n} >= 0:")
            fn.emit(ind + 1, f"need(p, {n}, L)")
            if f.kind == "string":
                fn.emit(ind + 1, f"{v} = b[p:p + {n}].decode('utf-8', 'backslashreplace'); p += {n}")
            elif f.kind == "bytes":
                fn.emit(ind + 1, f"{v} = b[p:p + {n}]; p += {n}")
            else:
                fn.emit(ind + 1, f"{v} = _rt.records(b, p, {n}, B); p += {n}")  # spends B: its batches
            self._null_or_negative(fn, n, ind, f"{v} = None")
            return v
        if isinstance(s, Nested):
            assert f.struct is not None
            self._struct_call(fn, f, ind, f"{v} = {self.struct_fn(f.struct)}(b, c, L, &p, B)", f"{v} = None")
            return v
        assert isinstance(s, Array)
        return self._array(fn, s, v, ind)

    def _array(self, fn: CFunc, s: Array, v: str, ind: int) -> str:
        f, elem = s.field, s.element
        n = self._length(fn, f.compact, ind, int16=False)
        fn.emit(ind, f"if {n} >= 0:")
        self._array_guard(fn, s, n, ind + 1)
        if elem.kind == "fixed":
            fmt, size = FIXED[elem.type_name]
            if elem.type_name == "uuid":
                fn.emit(ind + 1, f"{v} = _rt.uuid_array(b, p, {n}); p += {n} * 16")
            else:
                fn.emit(ind + 1, f"{v} = arr_fixed(c, p, L, {n}, b'{fmt}'); p += {n} * {size}")
        else:
            sub = ""
            if elem.kind == "struct":
                assert elem.struct is not None
                sub = self.struct_fn(elem.struct)
            i = fn.var("i")
            fn.emit(ind + 1, f"{v} = []")
            fn.emit(ind + 1, f"for {i} in range({n}):")
            if elem.kind == "struct":
                fn.emit(ind + 2, f"{v}.append({sub}(b, c, L, &p, B))")
            else:
                x = self._field(fn, elem, ind + 2)
                fn.emit(ind + 2, f"{v}.append({x})")
        self._null_or_negative(fn, n, ind, f"{v} = None")
        return v

    def _tagged(self, fn: CFunc, st: Struct, ind: int, target: str) -> None:
        entries = [f"{t.tag}: ({json.dumps(t.name)}, {self.wrapper(self.value_fn(t))})" for t in st.tagged]
        text = "{" + ", ".join(entries) + "}"
        if text not in self.tables:
            self.tables[text] = f"_T{len(self.tables)}"
        fn.emit(ind, "p = uvar(c, p, L, &t)")
        fn.emit(ind, f"if t: p = _rt.tags(b, p, t, {self.tables[text]}, {target}, B)")
