"""The schema resolved at one version: which fields are on the wire, and how each is encoded.

This is the validated model between the schema JSON (``decoders/schema``) and the renderer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.errors import InspectorError
from decoders.spec.versions import VersionRange

#: Fixed-width primitives: struct format character and size in bytes.
FIXED: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}
VARIABLE = ("string", "bytes", "records")


class ModelError(InspectorError):
    """The schema describes something the renderer cannot encode."""


@dataclass(frozen=True, slots=True)
class Field:
    """One field as it is on the wire at one version."""

    name: str
    kind: str  # "fixed" | "string" | "bytes" | "records" | "array" | "struct"
    type_name: str  # Kafka's type ("int32", "[]string", "Topic", ...)
    compact: bool  # flexible encoding of lengths (uvarint) for this field
    nullable: bool
    element: Field | None = None  # array element (name "" ) or None
    struct: Struct | None = None  # nested struct for kind "struct", or array of structs
    tag: int | None = None  # tagged field number when tagged at this version
    entity_type: str | None = None


@dataclass(frozen=True, slots=True)
class Struct:
    """A struct at one version: regular fields in order, then tagged fields by tag."""

    name: str
    flexible: bool
    fields: tuple[Field, ...]
    tagged: tuple[Field, ...]

    def min_size(self) -> int:
        """Smallest number of bytes any encoding of this struct can take."""
        return sum(field_min_size(f) for f in self.fields) + (1 if self.flexible else 0)


def field_min_size(f: Field) -> int:
    if f.kind == "fixed":
        return FIXED[f.type_name][1]
    if f.kind == "struct":
        assert f.struct is not None
        return 1 if f.nullable else f.struct.min_size()  # a null one is its -1 marker byte alone
    if f.kind in ("string",):
        return 1 if f.compact else 2
    # bytes, records, arrays
    return 1 if f.compact else 4


def _in(text: str | None, version: int) -> bool:
    rng = VersionRange.parse(text)
    return rng is not None and version in rng


def resolve_struct(
    name: str, fields: list[dict[str, Any]], version: int, flexible: bool
) -> Struct:
    regular: list[Field] = []
    tagged: list[Field] = []
    for raw in fields:
        if not _in(raw["versions"], version):
            continue
        is_tagged = flexible and "tag" in raw and _in(raw.get("taggedVersions"), version)
        field = resolve_field(raw, version, flexible, tag=raw["tag"] if is_tagged else None)
        (tagged if is_tagged else regular).append(field)
        if "tag" in raw and not is_tagged and raw.get("taggedVersions") and flexible:
            # A field declared tagged in other versions is regular here: fine, as Kafka does.
            pass
    tagged.sort(key=lambda f: f.tag if f.tag is not None else -1)
    return Struct(name, flexible, tuple(regular), tuple(tagged))


def resolve_field(raw: dict[str, Any], version: int, flexible: bool, tag: int | None = None) -> Field:
    type_name: str = raw["type"]
    name: str = raw["name"]
    nullable = _in(raw.get("nullableVersions"), version)
    compact = flexible and ("flexibleVersions" not in raw or _in(raw["flexibleVersions"], version))
    entity = raw.get("entityType")
    if type_name.startswith("[]"):
        elem_type = type_name[2:]
        element = _element(name, elem_type, raw, version, flexible)
        return Field(name, "array", type_name, compact, nullable, element=element,
                     struct=element.struct, tag=tag, entity_type=entity)
    if type_name in FIXED:
        return Field(name, "fixed", type_name, False, False, tag=tag, entity_type=entity)
    if type_name in VARIABLE:
        return Field(name, type_name, type_name, compact, nullable, tag=tag, entity_type=entity)
    if "fields" not in raw:
        raise ModelError(f"field {name}: unknown type {type_name}")
    struct = resolve_struct(type_name, raw["fields"], version, flexible)
    return Field(name, "struct", type_name, compact, nullable, struct=struct, tag=tag, entity_type=entity)


def _element(name: str, elem_type: str, raw: dict[str, Any], version: int, flexible: bool) -> Field:
    if elem_type in FIXED:
        return Field("", "fixed", elem_type, False, False)
    if elem_type in ("string", "bytes"):
        return Field("", elem_type, elem_type, flexible, False)
    if "fields" not in raw:
        raise ModelError(f"field {name}: unknown element type {elem_type}")
    struct = resolve_struct(elem_type, raw["fields"], version, flexible)
    return Field("", "struct", elem_type, flexible, False, struct=struct)


def versions_of(variant: dict[str, Any]) -> range:
    rng = VersionRange.parse(variant["versions"])
    if rng is None:
        return range(0)
    return range(rng.lo, rng.hi + 1)


def is_flexible(variant: dict[str, Any], version: int) -> bool:
    return _in(variant.get("flexibleVersions"), version)
