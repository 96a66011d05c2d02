"""Each ``.pxd`` beside a ``.py`` (Cython's augmenting declarations: the ``.py`` is the only source of the
behaviour, the ``.pxd`` gives its classes C slots and its functions C signatures) declares what that ``.py``
defines, no more and no less: every extension type's attributes are the attributes its class sets (its dataclass
fields, its ``__slots__``, what its methods assign to ``self``), every declared function and method exists, every
declared module variable is assigned. Cython reads only the ``.pxd`` for the layout of an extension type, so a
field added to the class and not declared fails at run time in the compiled build alone (``AttributeError``); this
test names it first, with the file to change."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The folders whose ``.pxd`` files augment a ``.py`` (``decoders/accel`` and the native folders hold ``.pyx``
#: modules, whose ``.pxd`` declares a ``.pyx``: nothing restated there).
FOLDERS = ("decoders", "inspector")
AUGMENTING = sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.pxd") if p.with_suffix(".py").exists())

_CLASS = re.compile(r"^cdef class (\w+)")
_FUNCTION = re.compile(r"^\s*(?:cpdef|cdef)\b[^(=]*?\b(\w+)\s*\(")
_VARIABLES = re.compile(r"^\s*cdef\s+(?:(?:public|readonly)\s+)?(.+)$")


@dataclass
class Declared:
    """What a ``.pxd`` declares: extension types with their attributes and methods, functions, module variables."""

    classes: dict[str, set[str]] = field(default_factory=dict)
    methods: dict[str, set[str]] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)
    variables: set[str] = field(default_factory=set)


def _names(declaration: str) -> list[str]:
    """The names a ``cdef [public|readonly] TYPE a, b, c`` line declares (after the type's words)."""
    first, *rest = (part.strip() for part in declaration.split(","))
    return [first.split()[-1], *rest]


def declared(pxd: Path) -> Declared:
    out = Declared()
    current: str | None = None
    for line in pxd.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "@", "cimport", "from ")):
            continue
        if (m := _CLASS.match(line)) is not None:
            current = m.group(1)
            out.classes[current] = set()
            out.methods[current] = set()
            continue
        inside = line.startswith((" ", "\t"))
        if not inside:
            current = None
        if (m := _FUNCTION.match(line)) is not None:
            if inside and current is not None:
                out.methods[current].add(m.group(1))
            elif not inside:
                out.functions.add(m.group(1))
        elif (m := _VARIABLES.match(line)) is not None:
            names = _names(m.group(1))
            if inside and current is not None:
                out.classes[current].update(names)
            elif not inside:
                out.variables.update(names)
    return out


@dataclass
class Defined:
    """What a ``.py`` defines: classes with the attributes their instances get and their methods, functions,
    module-level names."""

    classes: dict[str, set[str]] = field(default_factory=dict)
    methods: dict[str, set[str]] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)
    variables: set[str] = field(default_factory=set)


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    attrs: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" not in ast.unparse(stmt.annotation):
                attrs.add(stmt.target.id)  # a dataclass field
        elif isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["__slots__"]:
            attrs.update(ast.literal_eval(stmt.value))
    for node in ast.walk(cls):
        for target in _targets(node):
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in elements:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    attrs.add(t.attr)
    return attrs


def defined(py: Path) -> Defined:
    out = Defined()
    for stmt in ast.parse(py.read_text()).body:
        if isinstance(stmt, ast.ClassDef):
            out.classes[stmt.name] = _instance_attributes(stmt)
            out.methods[stmt.name] = {s.name for s in stmt.body if isinstance(s, ast.FunctionDef)}
        elif isinstance(stmt, ast.FunctionDef):
            out.functions.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out.variables.update(alias.asname or alias.name for alias in stmt.names)  # `import x as _x` too
        else:
            for target in _targets(stmt):
                out.variables.update(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
    return out


def problems(pxd: Path) -> list[str]:
    """How ``pxd`` and the ``.py`` beside it disagree (nothing when they agree)."""
    have, source = declared(pxd), defined(pxd.with_suffix(".py"))
    out = []
    for name, attrs in have.classes.items():
        if name not in source.classes:
            out.append(f"no class {name}")
            continue
        if attrs != source.classes[name]:
            out.append(f"{name}'s declared attributes differ from those its class sets: only declared "
                       f"{sorted(attrs - source.classes[name])}, not declared {sorted(source.classes[name] - attrs)}")
        if missing := have.methods[name] - source.methods[name]:
            out.append(f"{name} declares methods its class lacks: {sorted(missing)}")
    if missing := have.functions - source.functions:
        out.append(f"functions declared, not defined: {sorted(missing)}")
    if missing := have.variables - source.variables:
        out.append(f"module variables declared, not assigned: {sorted(missing)}")
    return out


def test_the_augmenting_declarations_are_found() -> None:
    assert len(AUGMENTING) >= 20
    assert REPO / "inspector" / "kafka" / "framing.pxd" in AUGMENTING
    parsed = declared(REPO / "inspector" / "kafka" / "framing.pxd")
    assert parsed.classes["Frame"] == {"ts", "first_ts", "offset", "data"}
    assert {"data", "_whole_frames", "_drain_synced"} <= parsed.methods["Framer"]
    assert "_new_frame" in parsed.functions


def test_a_difference_is_named(tmp_path: Path) -> None:
    """A field added to the class and not declared, a declared method renamed, a variable gone: each named."""
    (tmp_path / "m.pxd").write_text(
        "cimport cython\n\ncdef long long _MASK, _GONE\n\n@cython.final\ncdef class Box:\n"
        "    cdef public object a\n    cdef readonly long long b\n\n    cpdef put(self, x)\n\n"
        "cpdef object make(a, b)\n")
    (tmp_path / "m.py").write_text(
        "from dataclasses import dataclass\n\n_MASK = 3\n\n\n@dataclass\nclass Box:\n    a: object\n"
        "    b: int\n    c: int\n\n    def store(self, x):\n        self.a = x\n\n\ndef make(a, b):\n"
        "    return Box(a, b, 0)\n")
    assert problems(tmp_path / "m.pxd") == [
        "Box's declared attributes differ from those its class sets: only declared [], not declared ['c']",
        "Box declares methods its class lacks: ['put']",
        "module variables declared, not assigned: ['_GONE']",
    ]
    (tmp_path / "m.py").write_text((tmp_path / "m.py").read_text().replace("    c: int\n", "").replace(
        "def store", "def put").replace(", 0)", ")").replace("_MASK = 3", "_MASK = _GONE = 3"))
    assert problems(tmp_path / "m.pxd") == []


@pytest.mark.parametrize("pxd", AUGMENTING, ids=lambda p: str(p.relative_to(REPO)))
def test_a_pxd_declares_what_its_py_defines(pxd: Path) -> None:
    assert not problems(pxd), f"{pxd.relative_to(REPO)} against {pxd.with_suffix('.py').name}: {problems(pxd)}"
