"""The Cython renderer's JSON writers, for the APIs in :data:`TEXT_APIS` (Produce and Fetch).

Each struct at each version also becomes a ``cdef`` function (``_t``) writing the body's JSON text into
``_out`` as it reads the frame: the same reads and checks as the readers (``render_cy_read``), no dicts built.
Its entries (``_x``, the ``REQUEST_TEXT``/``RESPONSE_TEXT`` tables) are held to the decoded dict's text by
``tests/decoders/test_text.py``. As they write them, the writers collect the topics the message names (the
fields ``decoders.codegen.topic_model`` says name one: ``_tname``, ``_tid``), the references ``decoders/topics.py``
finds walking the decoded dict (``tests/decoders/test_topics.py``).
"""

from __future__ import annotations

import json
from typing import Any

from decoders import _runtime as rt
from decoders.codegen.model import FIXED, Field, Struct, is_flexible, resolve_struct, versions_of
from decoders.codegen.plan import Array, Fixed, Nested, Prefixed, step
from decoders.codegen.render_cy_base import READ, CFunc, CyBuilderBase
from decoders.codegen.topic_model import ID, NAME, NAMES, PAIR, topic_role, topic_steps

#: APIs whose compiled decoders also write each body's JSON text straight from the frame (Produce and Fetch:
#: nearly every frame of a busy cluster), for ``decoders.api``'s ``text`` mode (``read``'s events). The text is
#: what the events' body column writes for the decoded dict; anything else (tagged fields, a string that is not
#: ASCII, a float, a record set the records twin leaves) makes the writer give up, and the dict path decodes the
#: frame. ``tests/decoders/test_text.py`` holds the two equal.
TEXT_APIS = frozenset({0, 1})

#: Writer of each fixed-width type read at ``c``, ``p + {off}`` (decoders/accel/_text.pxd); float64: none.
_WRITE: dict[str, str] = {
    "bool": "jbool(&_out, c[p + {off}] != 0)",
    "int8": "jint(&_out, rd8(c, p + {off}))",
    "int16": "jint(&_out, rd16(c, p + {off}))",
    "uint16": "jint(&_out, ru16(c, p + {off}))",
    "int32": "jint(&_out, rd32(c, p + {off}))",
    "uint32": "jint(&_out, ru32(c, p + {off}))",
    "int64": "jint(&_out, rd64(c, p + {off}))",
    "uuid": "juuid(&_out, c + p + {off})",
}
#: Integer types: a top-level field of one of these is also kept in the message's (partial) body.
_INTEGER = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
#: The JSON writers' statement for a null string, bytes, array or struct.
_JSON_NULL = "jput(&_out, b'null', 4)"


def _c_text(text: str) -> str:
    """A Cython bytes literal of ASCII ``text`` (a JSON key and its punctuation)."""
    assert text.isascii() and "\\" not in text and "'" not in text
    return f"b'{text}'"


class CyTextWriters(CyBuilderBase):
    """The JSON writers of :class:`~decoders.codegen.render_cy.CyModuleBuilder`."""

    def text_fn(self, st: Struct, top: bool = False) -> str:
        """A cdef function writing ``st``'s JSON text into ``_out`` as it reads it; it returns the top-level
        integer fields as a dict when ``top`` (the message's partial body), else None."""
        # A response struct naming a topic both ways would collect a pair; no text API has one (see topics.py).
        assert all(s.op != PAIR for s in topic_steps(st, True)), st.name
        fn = CFunc()
        fn.emit(1, "cdef Py_ssize_t p = pp[0]")
        kept: list[tuple[str, str]] | None = [] if top else None
        for i, f in enumerate(st.fields):
            key = ("{" if i == 0 else ",") + json.dumps(f.name) + ":"
            fn.emit(1, f"jput(&_out, {_c_text(key)}, {len(key)})")
            self._text_field(fn, f, 1, kept)
        fn.emit(1, "jput(&_out, b'}', 1)" if st.fields else "jput(&_out, b'{}', 2)")
        if st.flexible:
            fn.emit(1, "p = uvar(c, p, L, &t)")
            fn.emit(1, "if t: raise ValueError('tagged fields')")  # the dict path places them
        fn.emit(1, "pp[0] = p")
        if kept is None:
            fn.emit(1, "d = None")
        else:
            fn.emit(1, "d = {" + ", ".join(f"{json.dumps(n)}: {v}" for n, v in kept) + "}")
        fn.emit(1, "return d")
        return self._add(fn, st.flexible, text=True)

    def _text_fixed(self, fn: CFunc, f: Field, ind: int, kept: list[tuple[str, str]] | None) -> None:
        """Write one fixed-width value at ``p`` (its bytes checked) and step over it."""
        if f.type_name == "float64":
            fn.emit(ind, "raise ValueError('float')")  # a float's text is left to the body writer (the dict path)
            return
        size = FIXED[f.type_name][1]
        fn.emit(ind, f"need(p, {size}, L)")
        if topic_role(f) == ID:  # a topic's id: written, then collected (the zero id is none)
            fn.emit(ind, _WRITE[f.type_name].format(off=0))
            fn.emit(ind, "_tid(c + p)")
            fn.emit(ind, f"p += {size}")
            return
        code = f.name == "ErrorCode" and f.type_name in _INTEGER
        if (kept is not None or code) and f.type_name in _INTEGER:
            m = fn.var("m")
            fn.emit(ind, f"{m} = {READ[f.type_name].format(off=0)}")
            fn.emit(ind, f"jint(&_out, {m})")
            if code:
                fn.emit(ind, f"if {m}: _code({m})")
            if kept is not None:
                kept.append((f.name, m))
        else:
            fn.emit(ind, _WRITE[f.type_name].format(off=0))
        fn.emit(ind, f"p += {size}")

    def _text_field(self, fn: CFunc, f: Field, ind: int, kept: list[tuple[str, str]] | None = None,
                    name: bool = False) -> None:
        """Write field ``f`` (``name``: an element of an array of topic names)."""
        s = step(f)
        if isinstance(s, Fixed):
            self._text_fixed(fn, f, ind, kept)
            return
        if isinstance(s, Prefixed):
            n = self._length(fn, f.compact, ind, int16=s.int16)
            fn.emit(ind, f"if {n} >= 0:")
            fn.emit(ind + 1, f"need(p, {n}, L)")
            write = {"string": "jstr", "bytes": "jhex", "records": "jrecords"}[f.kind]
            if f.kind == "records":  # its batches spend the budget, as _rt.records spends it on the dict path
                fn.emit(ind + 1, f"B.left -= record_set_elements(b, p, {n})")
                fn.emit(ind + 1, f"if B.left < 0: raise ValueError({rt.OVER_BUDGET!r})")
            if name or topic_role(f) == NAME:  # a topic's name: written (ASCII, or given up), then collected
                fn.emit(ind + 1, f"{write}(&_out, c + p, {n})")
                fn.emit(ind + 1, f"if {n}: _tname(c + p, {n})")
                fn.emit(ind + 1, f"p += {n}")
            else:
                fn.emit(ind + 1, f"{write}(&_out, c + p, {n}); p += {n}")
            self._null_or_negative(fn, n, ind, _JSON_NULL)
            return
        if isinstance(s, Nested):
            assert f.struct is not None
            self._struct_call(fn, f, ind, f"{self.text_fn(f.struct)}(b, c, L, &p, B)", _JSON_NULL)
            return
        assert isinstance(s, Array)
        self._text_array(fn, s, ind)

    def _text_array(self, fn: CFunc, s: Array, ind: int) -> None:
        """An array, checked and counted against the budget as :meth:`_array` does."""
        f, elem = s.field, s.element
        n = self._length(fn, f.compact, ind, int16=False)
        fn.emit(ind, f"if {n} >= 0:")
        self._array_guard(fn, s, n, ind + 1)
        i = fn.var("i")
        fn.emit(ind + 1, "jput(&_out, b'[', 1)")
        fn.emit(ind + 1, f"for {i} in range({n}):")
        fn.emit(ind + 2, f"if {i}: jput(&_out, b',', 1)")
        if elem.kind == "struct":
            assert elem.struct is not None
            fn.emit(ind + 2, f"{self.text_fn(elem.struct)}(b, c, L, &p, B)")
        else:
            self._text_field(fn, elem, ind + 2, name=topic_role(f) == NAMES)
        fn.emit(ind + 1, "jput(&_out, b']', 1)")
        self._null_or_negative(fn, n, ind, _JSON_NULL)

    def text_entry(self, cname: str) -> str:
        """A Python-callable ``(b, p, budget) -> (text, codes, partial body, topics) | None`` around the JSON
        writer ``cname``."""
        name = self.text_entries.get(cname)
        if name is None:
            name = f"_x{cname[2:]}"
            self.text_entries[cname] = name
        return name


    def text_table(self, variants: list[dict[str, Any]], root: str) -> dict[int, str]:
        """Version -> name of the JSON writer entry of the root struct at that version."""
        table: dict[int, str] = {}
        for variant in variants:
            for version in versions_of(variant):
                st = resolve_struct(root, variant["fields"], version, is_flexible(variant, version))
                table[version] = self.text_entry(self.text_fn(st, top=True))
        return table
