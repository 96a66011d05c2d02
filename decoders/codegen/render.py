"""Render the resolved model into straight-line Python decoder modules.

Each struct at each version becomes one function ``f(b, p, B) -> (dict, p)`` that reads its fields
in wire order with precompiled ``struct`` formats (consecutive fixed-width fields share one
unpack). Identical functions are emitted once per module, so versions that did not change the
wire format share code. A line table maps each source line to the field it decodes, which is how
a failure is reported with its field path at no cost on the success path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from decoders.codegen.model import FIXED, Field, Struct
from decoders.codegen.plan import Array, Fixed, Nested, Prefixed, step, steps
from decoders.codegen.shared import HEADER, versioned_table


@dataclass
class _Func:
    """A function body under construction: lines plus the field each line decodes."""

    lines: list[str] = field(default_factory=list)
    fields: list[tuple[str, str | None] | None] = field(default_factory=list)
    counter: int = 0
    current: tuple[str, str | None] | None = None

    def var(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)
        self.fields.append(self.current)


@dataclass
class ModuleBuilder:
    """Collects deduplicated functions and struct formats for one generated module."""

    functions: dict[str, str] = field(default_factory=dict)  # canonical text -> name
    ordered: list[tuple[str, list[str], list[tuple[str, str | None] | None]]] = field(default_factory=list)
    formats: dict[str, str] = field(default_factory=dict)  # struct format -> constant name
    tables: dict[str, str] = field(default_factory=dict)  # table text -> constant name
    arrays: dict[str, str] = field(default_factory=dict)  # struct format -> array reader constant

    def fmt(self, fmt: str) -> str:
        if fmt not in self.formats:
            self.formats[fmt] = f"_U{len(self.formats)}"
        return self.formats[fmt]

    def array(self, fmt: str) -> str:
        """Module constant holding the array reader of struct format ``fmt``."""
        name = f"_A{fmt}" if fmt.isalpha() else f"_A{len(self.arrays)}"
        self.arrays[fmt] = name
        return name

    def table(self, text: str) -> str:
        if text not in self.tables:
            self.tables[text] = f"_T{len(self.tables)}"
        return self.tables[text]

    def add(self, fn: _Func) -> str:
        canonical = "\n".join(fn.lines) + repr(fn.fields)
        name = self.functions.get(canonical)
        if name is None:
            name = f"_f{len(self.functions)}"
            self.functions[canonical] = name
            self.ordered.append((name, fn.lines, fn.fields))
        return name

    # -- structs ---------------------------------------------------------------------------

    def struct_fn(self, st: Struct) -> str:
        fn = _Func()
        fn.emit(1, "L = len(b)")
        fn.emit(1, "try:")
        names: list[tuple[str, str]] = []
        for s in steps(st):
            if isinstance(s, Fixed):
                self._fixed_group(fn, list(s.fields), names)
            else:
                names.append((s.field.name, self._field(fn, s.field, 2)))
        fn.current = None
        items = ", ".join(f"{json.dumps(n)}: {v}" for n, v in names)
        fn.emit(2, f"d = {{{items}}}")
        if st.flexible:
            self._tagged(fn, st, 2)
        fn.emit(1, "except Exception as e:")
        fn.emit(2, "raise _rt.annotate(e, _LINES, locals(), p) from None")
        fn.emit(1, "return d, p")
        return self.add(fn)

    def value_fn(self, f: Field) -> str:
        """A function reading one (tagged) field's value: ``(b, p, B) -> (value, p)``."""
        fn = _Func()
        fn.emit(1, "L = len(b)")
        fn.emit(1, "try:")
        names: list[tuple[str, str]] = []
        if f.kind == "fixed":
            self._fixed_group(fn, [f], names)
            var = names[0][1]
        else:
            var = self._field(fn, f, 2)
        fn.current = None
        fn.emit(1, "except Exception as e:")
        fn.emit(2, "raise _rt.annotate(e, _LINES, locals(), p) from None")
        fn.emit(1, f"return {var}, p")
        return self.add(fn)

    def _fixed_group(self, fn: _Func, group: list[Field], names: list[tuple[str, str]], ind: int = 2) -> None:
        fmt = "".join(FIXED[f.type_name][0] for f in group)
        size = sum(FIXED[f.type_name][1] for f in group)
        fn.current = (group[0].name, None) if len(group) == 1 else ("+".join(f.name for f in group), None)
        vars_ = [fn.var() for _ in group]
        fn.emit(ind, f"{', '.join(vars_)}, = {self.fmt('>' + fmt)}(b, p); p += {size}")
        for f, v in zip(group, vars_, strict=True):
            names.append((f.name, f"_rt.uuid({v})" if f.type_name == "uuid" else v))

    def _length(self, fn: _Func, compact: bool, ind: int, int16: bool) -> str:
        n = fn.var("n")
        if compact:
            fn.emit(ind, f"{n} = b[p]; p += 1")
            fn.emit(ind, f"if {n} > 127: {n}, p = _rt.uvarint(b, p, {n})")
            fn.emit(ind, f"{n} -= 1")
        elif int16:
            fn.emit(ind, f"{n}, = {self.fmt('>h')}(b, p); p += 2")
        else:
            fn.emit(ind, f"{n}, = {self.fmt('>i')}(b, p); p += 4")
        return n

    def _null_or_negative(self, fn: _Func, n: str, v: str, ind: int) -> None:
        """The end of a length-prefixed read: -1 is null, any other negative length is invalid."""
        fn.emit(ind, f"elif {n} == -1:")
        fn.emit(ind + 1, f"{v} = None")
        fn.emit(ind, "else:")
        fn.emit(ind + 1, f"raise _rt.negative({n})")

    def _field(self, fn: _Func, f: Field, ind: int, index: str | None = None) -> str:
        """Emit code reading field ``f``; return the variable holding its value."""
        if f.name:
            fn.current = (f.name, index)
        v = fn.var()
        s = step(f)
        if isinstance(s, Fixed):
            fmt, size = FIXED[f.type_name]
            fn.emit(ind, f"{v}, = {self.fmt('>' + fmt)}(b, p); p += {size}")
            if f.type_name == "uuid":
                fn.emit(ind, f"{v} = _rt.uuid({v})")
            return v
        if isinstance(s, Prefixed):
            n = self._length(fn, f.compact, ind, int16=s.int16)
            fn.emit(ind, f"if {n} >= 0:")
            fn.emit(ind + 1, f"if {n} > L - p: raise _rt.short({n}, L - p)")
            if f.kind == "string":
                fn.emit(ind + 1, f"{v} = b[p:p + {n}].decode('utf-8', 'backslashreplace'); p += {n}")
            elif f.kind == "bytes":
                fn.emit(ind + 1, f"{v} = b[p:p + {n}]; p += {n}")
            else:
                fn.emit(ind + 1, f"{v} = _rt.records(b, p, {n}, B); p += {n}")  # spends B: its batches
            self._null_or_negative(fn, n, v, ind)
            return v
        if isinstance(s, Nested):
            assert f.struct is not None
            sub = self.struct_fn(f.struct)
            if f.name:
                fn.current = (f.name, index)
            if f.nullable:
                m = fn.var("m")
                fn.emit(ind, f"{m}, = {self.fmt('>b')}(b, p); p += 1")
                fn.emit(ind, f"if {m} < 0:")
                fn.emit(ind + 1, f"{v} = None")
                fn.emit(ind, "else:")
                fn.emit(ind + 1, f"{v}, p = {sub}(b, p, B)")
            else:
                fn.emit(ind, f"{v}, p = {sub}(b, p, B)")
            return v
        assert isinstance(s, Array)
        return self._array(fn, s, v, ind, index)

    def _array(self, fn: _Func, s: Array, v: str, ind: int, index: str | None) -> str:
        f, elem = s.field, s.element
        n = self._length(fn, f.compact, ind, int16=False)
        fn.emit(ind, f"if {n} >= 0:")
        spend = [f"B.left -= {n}", f"if B.left < 0: raise _rt.over_budget({n})"]
        if elem.kind == "fixed":
            fmt, size = FIXED[elem.type_name]
            # The bytes first (a count that cannot fit is truncation), then the element budget.
            fn.emit(ind + 1, f"if {n} * {size} > L - p: raise _rt.short_count({n}, L - p)")
            for line in spend:
                fn.emit(ind + 1, line)
            if elem.type_name == "uuid":
                fn.emit(ind + 1, f"{v} = _rt.uuid_array(b, p, {n}); p += {n} * 16")
            else:
                fn.emit(ind + 1, f"{v} = {self.array(fmt)}(b, p, {n}); p += {n} * {size}")
        else:
            min_size = s.min_size
            sub = ""
            if elem.kind == "struct":
                assert elem.struct is not None
                sub = self.struct_fn(elem.struct)
                fn.current = (f.name, index)
            if min_size:
                fn.emit(ind + 1, f"if {n} * {min_size} > L - p: raise _rt.short_count({n}, L - p)")
            else:
                fn.emit(ind + 1, f"if {n} > _rt.MAX_EMPTY_ELEMENTS: raise _rt.too_many({n})")
            for line in spend:
                fn.emit(ind + 1, line)
            i = fn.var("i")
            fn.emit(ind + 1, f"{v} = []")
            fn.emit(ind + 1, f"for {i} in range({n}):")
            fn.current = (f.name, i)
            if elem.kind == "struct" and _inlinable(elem.struct):
                assert elem.struct is not None
                self._inline_struct(fn, elem.struct, f.name, i, v, ind + 2)
            elif elem.kind == "struct":
                x = fn.var("x")
                fn.emit(ind + 2, f"{x}, p = {sub}(b, p, B)")
                fn.emit(ind + 2, f"{v}.append({x})")
            else:
                x = self._field(fn, elem, ind + 2, i)
                fn.current = (f.name, i)
                fn.emit(ind + 2, f"{v}.append({x})")
            fn.current = (f.name, index)
        self._null_or_negative(fn, n, v, ind)
        return v

    def _inline_struct(self, fn: _Func, st: Struct, array: str, index: str, target: str, ind: int) -> None:
        """Decode an array element in the loop itself (no call) when it holds no nested struct.

        Its lines report failures as ``Array[i].Field``.
        """
        first_line = len(fn.lines)
        names: list[tuple[str, str]] = []
        for s in steps(st):
            if isinstance(s, Fixed):
                fn.current = None
                self._fixed_group(fn, list(s.fields), names, ind)
            else:
                names.append((s.field.name, self._field(fn, s.field, ind)))
        for line in range(first_line, len(fn.lines)):
            entry = fn.fields[line]
            fn.fields[line] = (f"{array}[{{}}].{entry[0]}" if entry else f"{array}[{{}}]", index)
        fn.current = (array, index)
        d = fn.var("d")
        items = ", ".join(f"{json.dumps(n)}: {x}" for n, x in names)
        fn.emit(ind, f"{d} = {{{items}}}")
        if st.flexible:
            table = self._tag_table(st)
            fn.emit(ind, "t = b[p]; p += 1")
            fn.emit(ind, "if t > 127: t, p = _rt.uvarint(b, p, t)")
            fn.emit(ind, f"if t: p = _rt.tags(b, p, t, {table}, {d}, B)")
        fn.emit(ind, f"{target}.append({d})")

    def _tag_table(self, st: Struct) -> str:
        entries = [f"{t.tag}: ({json.dumps(t.name)}, {self.value_fn(t)})" for t in st.tagged]
        return self.table("{" + ", ".join(entries) + "}")

    def _tagged(self, fn: _Func, st: Struct, ind: int) -> None:
        entries = []
        for t in st.tagged:
            entries.append(f"{t.tag}: ({json.dumps(t.name)}, {self.value_fn(t)})")
        table = self.table("{" + ", ".join(entries) + "}")
        fn.current = ("_tagged", None)
        fn.emit(ind, "t = b[p]; p += 1")
        fn.emit(ind, "if t > 127: t, p = _rt.uvarint(b, p, t)")
        fn.emit(ind, f"if t: p = _rt.tags(b, p, t, {table}, d, B)")
        fn.current = None

    # -- module text -----------------------------------------------------------------------

    def render(self, tail: list[str]) -> str:
        out = [HEADER.rstrip("\n"), "# ruff: noqa", "import struct as _struct", "",
               "from decoders import _runtime as _rt"]
        for fmt, name in self.formats.items():
            out.append(f"{name} = _struct.Struct({fmt!r}).unpack_from")
        for fmt, name in self.arrays.items():
            out.append(f"{name} = _rt.array_reader({fmt!r})")
        out.append("")
        line_table: dict[int, tuple[str, str | None]] = {}
        # Tables reference functions, so functions come first; they reference tables lazily.
        for name, lines, fields in self.ordered:
            out.append("")
            out.append(f"def {name}(b, p, B):")
            base = len(out) + 1  # 1-based line number of the first body line
            for offset, (line, fld) in enumerate(zip(lines, fields, strict=True)):
                out.append(line)
                if fld is not None:
                    line_table[base + offset] = fld
        out.append("")
        for text, name in self.tables.items():
            out.append(f"{name} = {text}")
        out.append("")
        out.extend(tail)
        out.append("")
        out.append(f"_LINES = {line_table!r}")
        return "\n".join(out) + "\n"


def _inlinable(st: Struct | None) -> bool:
    """Array elements without nested structs (partitions, api key ranges, ...) are decoded inline."""
    return st is not None and bool(st.fields) and all(
        f.kind != "struct" and (f.kind != "array" or (f.element is not None and f.element.kind != "struct"))
        for f in st.fields)


def _dict_text(table: dict[int, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(table.items())) + "}"


def render_api(doc: dict[str, Any]) -> str:
    builder = ModuleBuilder()
    request = versioned_table(builder, doc["request"], doc["name"] + "Request")
    response = versioned_table(builder, doc["response"], doc["name"] + "Response")
    tail = [
        f"API_KEY = {doc['apiKey']}",
        f"NAME = {doc['name']!r}",
        f"REQUEST = {_dict_text(request)}",
        f"RESPONSE = {_dict_text(response)}",
    ]
    return builder.render(tail)


def render_data(doc: dict[str, Any], extra_versions: range | None = None) -> str:
    builder = ModuleBuilder()
    variants = doc["variants"]
    if extra_versions is not None:
        # RequestHeader v0 (ControlledShutdown v0) is described by the v1 fields' version ranges.
        variants = [{**variants[0], "versions": f"{extra_versions.start}-{extra_versions.stop - 1}"}]
    table = versioned_table(builder, variants, doc["name"])
    tail = [f"NAME = {doc['name']!r}", f"VERSIONS = {_dict_text(table)}"]
    return builder.render(tail)
