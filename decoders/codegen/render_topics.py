"""Render every message's topic steps (``decoders.codegen.topic_model``) as data:
``decoders/generated/topic_fields.py``.

Per kind, API key and version (written as spans of consecutive versions with the same steps), a tuple of steps
``(key, op, child)`` that ``decoders/topics.py`` walks a decoded body by: ``op`` is one of ``topics``' NAME,
NAMES, ID (``child`` None), STRUCT, STRUCTS (``child`` the nested struct's steps) or PAIR (``key`` the name's,
``child`` the id's). Messages that name no topic have no entry.
"""

from __future__ import annotations

import json
from typing import Any

from decoders.codegen import topic_model as T
from decoders.codegen.model import is_flexible, resolve_struct, versions_of
from decoders.codegen.shared import HEADER


class _Tables:
    """The steps of each struct as a module constant, each distinct tuple once."""

    def __init__(self) -> None:
        self.constants: dict[str, str] = {}  # tuple text -> name

    def spec(self, steps: tuple[T.TopicStep, ...]) -> str:
        items = []
        for s in steps:
            if s.op == T.PAIR:
                assert s.other is not None
                child = json.dumps(s.other.name)
            elif s.op in (T.STRUCT, T.STRUCTS):
                child = self.spec(s.children)
            else:
                child = "None"
            items.append(f"({json.dumps(s.field.name)}, {_OPS[s.op]}, {child})")
        text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        name = self.constants.get(text)
        if name is None:
            name = self.constants[text] = f"_S{len(self.constants)}"
        return name


_OPS = {T.NAME: "NAME", T.NAMES: "NAMES", T.ID: "ID", T.STRUCT: "STRUCT", T.STRUCTS: "STRUCTS", T.PAIR: "PAIR"}


def render_topic_fields(apis: list[dict[str, Any]]) -> str:
    """The text of ``decoders/generated/topic_fields.py`` for the API schema documents ``apis``."""
    tables = _Tables()
    kinds: dict[str, dict[int, dict[int, str]]] = {"request": {}, "response": {}}
    for doc in sorted(apis, key=lambda d: d["apiKey"]):
        for kind in kinds:
            root = doc["name"] + kind.capitalize()
            for variant in doc[kind]:
                for version in versions_of(variant):
                    st = resolve_struct(root, variant["fields"], version, is_flexible(variant, version))
                    steps = T.topic_steps(st, kind == "response")
                    if steps:
                        kinds[kind].setdefault(doc["apiKey"], {})[version] = tables.spec(steps)
    lines = [
        HEADER.rstrip("\n"),
        '"""Where each message names topics (decoders/codegen/topic_model.py): steps ``(key, op, child)`` by kind,',
        'API key and version, walked by decoders/topics.py."""',
        "",
        "from typing import Any",
        "",
        f"NAME, NAMES, ID, STRUCT, STRUCTS, PAIR = {T.NAME}, {T.NAMES}, {T.ID}, {T.STRUCT}, {T.STRUCTS}, {T.PAIR}",
        "",
    ]
    lines += [f"{name}: Any = {text}" for text, name in tables.constants.items()]
    lines += [
        "",
        "",
        "def _versions(*spans: tuple[int, int, Any]) -> dict[int, Any]:",
        '    """Version -> steps, from (first, last version, steps) spans."""',
        "    return {v: steps for first, last, steps in spans for v in range(first, last + 1)}",
    ]
    for kind, table in kinds.items():
        lines.append("")
        lines.append("")
        lines.append(f"{kind.upper()}: dict[int, dict[int, Any]] = {{")
        for key, versions in table.items():
            lines.append(f"    {key}: _versions(" + ", ".join(_spans(versions)) + "),")
        lines.append("}")
    return "\n".join(lines) + "\n"


def _spans(versions: dict[int, str]) -> list[str]:
    """``(first, last, steps)`` of each run of consecutive versions with the same steps."""
    out: list[list[Any]] = []
    for v, steps in sorted(versions.items()):
        if out and out[-1][1] == v - 1 and out[-1][2] == steps:
            out[-1][1] = v
        else:
            out.append([v, v, steps])
    return [f"({first}, {last}, {steps})" for first, last, steps in out]
