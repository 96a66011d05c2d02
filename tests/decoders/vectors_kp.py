"""Round-trip vectors written by kafka-python: its ApiMessage classes and the old Struct-based ones; cases,
messages, frames and the comparison with the decoded message (see vectors.py).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_message import ApiMessage  # noqa: E402
from kafka.protocol.old import types as kt  # noqa: E402
from kafka.protocol.old.api import Request as OldRequest  # noqa: E402
from kafka.protocol.old.api import Response as OldResponse  # noqa: E402
from kafka.protocol.schemas.fields.codecs import BitField as KpBitField  # noqa: E402

from tests.decoders.vectors import (
    DetSource,
    HypSource,
    body_keys,
    check_int,
    check_records,
    check_scalar,
    kafka_uuid,
    snake,
)

#: kafka-python field names that are not the Kafka spec's, keyed by (api key, name of the
#: enclosing struct or array field, kafka-python name) and valued by the Kafka name.
KP_RENAMES: dict[tuple[int, str, str], str] = {
    # TxnOffsetCommitRequest v3+: GenerationId became GenerationIdOrMemberEpoch (KIP-848).
    (28, "TxnOffsetCommitRequest", "GenerationId"): "GenerationIdOrMemberEpoch",
    # kafka-python patches its JSON to expose these int32 bit fields as sets of operations.
    (3, "MetadataResponse", "authorized_operations"): "ClusterAuthorizedOperations",
    (3, "Topics", "authorized_operations"): "TopicAuthorizedOperations",
    (60, "DescribeClusterResponse", "authorized_operations"): "ClusterAuthorizedOperations",
}


@dataclass(frozen=True)
class KpCase:
    api_key: int
    version: int
    kind: str
    cls: type

    @property
    def id(self) -> str:
        return f"{self.api_key:02d}-{self.cls.__name__}-v{self.version}"


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def kp_message_classes() -> list[type]:
    import kafka.protocol

    for mod in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in mod.name or mod.name.endswith(("generate_stubs", "__main__")):
            continue
        importlib.import_module(mod.name)
    seen = {}
    for cls in _subclasses(ApiMessage):
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None) is not None:
            seen[(cls.API_KEY, cls.type)] = cls
    return [seen[k] for k in sorted(seen)]


def kp_cases() -> list[KpCase]:
    """Every (class, version) kafka-python declares valid (its JSON's validVersions)."""
    cases = []
    for cls in kp_message_classes():
        lo, hi = cls._valid_versions
        for version in range(lo, hi + 1):
            cases.append(KpCase(cls.API_KEY, version, cls.type, cls))
    return cases


def _kp_simple(type_str: str, src: DetSource | HypSource) -> Any:
    ranges = {"int8": (-128, 127), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
              "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "uint32": (0, 2**32 - 1)}
    if type_str in ranges:
        return src.integer(*ranges[type_str])
    if type_str == "bool":
        return src.boolean()
    if type_str == "string":
        return src.text()
    if type_str in ("bytes", "records"):
        return src.binary()
    if type_str == "float64":
        return src.floating()
    if type_str == "uuid":
        return src.uuid()
    if type_str == "bitfield":  # kafka-python's set-of-bits view of an int32 operations field
        return {src.integer(0, 30), src.integer(0, 30)}
    raise TypeError(f"no value for kafka-python type {type_str!r}")


def kp_value(field: Any, version: int, src: DetSource | HypSource) -> Any:
    """A value for kafka-python schema field ``field`` at ``version``."""
    if field.nullable_for_version_q(version) and src.null():
        return None
    if field.is_struct_array():
        return [kp_struct(field, version, src) for _ in range(src.count())]
    if field.is_struct():
        return kp_struct(field, version, src)
    if field.is_array():
        return [_kp_simple(field.array_of.type_str, src) for _ in range(src.count())]
    return _kp_simple(field.type_str, src)


def kp_struct(field: Any, version: int, src: DetSource | HypSource) -> Any:
    values = {f.name: kp_value(f, version, src) for f in field.fields.values() if f.for_version_q(version)}
    return field.data_class(**values)


def kp_message(cls: type, version: int, src: DetSource | HypSource) -> Any:
    struct = cls._struct
    values = {f.name: kp_value(f, version, src) for f in struct.fields.values() if f.for_version_q(version)}
    return cls(version=version, **values)


def kp_frame(msg: Any, correlation_id: int = 0x0A0B0C0D, client_id: str = "kafka-python-client") -> bytes:
    msg.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(msg.encode(header=True))


def kp_has_records(cls: type, version: int) -> bool:
    def walk(fields: Any) -> bool:
        for f in fields:
            if not f.for_version_q(version):
                continue
            if f.type_str == "records":
                return True
            if (f.is_struct() or f.is_struct_array()) and walk(f.fields.values()):
                return True
        return False

    return walk(cls._struct.fields.values())


def kp_compare(field_struct: Any, expected: Any, ours: Any, version: int, api_key: int,
               path: str = "body") -> None:
    """Compare a kafka-python DataContainer (fields of ``field_struct``) with the decoder's dict."""
    assert isinstance(ours, dict), f"{path}: expected a struct, got {ours!r}"
    keys = body_keys(ours)
    assert "_unknownTaggedFields" not in keys, f"{path}: unexpected unknown tagged fields {ours}"
    matched = set()
    for f in field_struct.fields.values():
        if not f.for_version_q(version):
            continue
        value = getattr(expected, f.name)
        # kafka-python keeps the Kafka JSON name, except for KP_RENAMES.
        key = KP_RENAMES.get((api_key, field_struct._name, f._name), f._name)
        if key not in ours:
            assert f.tagged_field_q(version), f"{path}: no decoded field for {key!r} (decoded {sorted(keys)})"
            assert value == f.default, f"{path}: tagged field {key!r} = {value!r} was written but not decoded"
            continue
        matched.add(key)
        kp_field_value(f, value, ours[key], version, api_key, f"{path}.{key}")
    unmatched = keys - matched
    assert not unmatched, f"{path}: decoded fields {sorted(unmatched)} have no kafka-python counterpart"


def kp_field_value(f: Any, value: Any, ours: Any, version: int, api_key: int, path: str) -> None:
    if value is None and f.type_str not in ("uuid", "bitfield"):  # these two write a value for None
        assert ours is None, f"{path}: expected null, got {ours!r}"
        return
    if f.is_struct_array():
        assert isinstance(ours, list) and len(ours) == len(value), f"{path}: {ours!r} vs {len(value)} elements"
        for i, (v, o) in enumerate(zip(value, ours, strict=True)):
            kp_compare(f.array_of, v, o, version, api_key, f"{path}[{i}]")
    elif f.is_struct():
        kp_compare(f, value, ours, version, api_key, path)
    elif f.is_array():
        assert isinstance(ours, list) and len(ours) == len(value), f"{path}: {ours!r} vs {value!r}"
        for i, (v, o) in enumerate(zip(value, ours, strict=True)):
            _kp_scalar(f.array_of.type_str, v, o, f"{path}[{i}]")
    else:
        _kp_scalar(f.type_str, value, ours, path)


def _kp_scalar(type_str: str, value: Any, ours: Any, path: str) -> None:
    if type_str == "uuid":
        expected = value if isinstance(value, uuid.UUID) or value is None else uuid.UUID(value)
        assert ours == kafka_uuid(expected), f"{path}: {ours!r} != {kafka_uuid(expected)!r}"
    elif type_str == "records":
        check_records(value, ours, path)
    elif type_str == "bool":
        check_scalar(bool(value), ours, path)
    elif type_str == "bitfield":
        check_int(int.from_bytes(KpBitField.encode(value), "big", signed=True), ours, path)
    else:
        check_scalar(value, ours, path)


# --------------------------------------------------------------------------------------------
# kafka-python: old Struct-based classes (kafka.protocol.old)
# --------------------------------------------------------------------------------------------

#: Old kafka-python names that are not snake(Kafka name), keyed by (api key, kind, name of the
#: enclosing field or "" at the top, old name) and valued by snake(Kafka name).
OLD_RENAMES: dict[tuple[int, str, str, str], str] = {
    (3, "response", "", "authorized_operations"): "cluster_authorized_operations",
    (3, "response", "topics", "authorized_operations"): "topic_authorized_operations",
}


#: Arrays that the old classes write as arrays of a primitive where Kafka has an array of
#: single-field structs (the same bytes): (api key, kind, old name) -> the struct's Kafka field.
OLD_WRAPPED: dict[tuple[int, str, str], str] = {
    (3, "request", "topics"): "Name",  # MetadataRequest v0-v8: Topics[].Name
    (37, "request", "assignment"): "BrokerIds",  # CreatePartitionsRequest: Assignments[].BrokerIds
}


#: Old nested Schemas whose fields Kafka has directly in the enclosing struct (same bytes):
#: (api key, kind, old name).
OLD_INLINED: frozenset[tuple[int, str, str]] = frozenset({
    (37, "request", "new_partitions"),  # CreatePartitionsRequest: Count and Assignments
})


OLD_INLINED_RENAMES: dict[tuple[int, str, str], str] = {
    (37, "request", "assignment"): "assignments",
}


#: Old classes that write frames Kafka's spec does not allow; the decoder must refuse them
#: (a non-"ok" status), not crash. Keyed by (api key, version, kind).
OLD_ENCODER_BUGS: dict[tuple[int, int, str], str] = {
    (23, 4, "request"): "flexible version written with the v1 request header (no header tagged fields)",
    (23, 4, "response"): "flexible version written with the v0 response header (no header tagged fields)",
    (29, 2, "request"): "flexible version written with the v1 header and the non-compact v1 body",
    (29, 2, "response"): "flexible version written with the v0 header and the non-compact v1 body",
    (35, 0, "request"): "Topics[].Partitions written as one int32 instead of an array of int32",
}


@dataclass(frozen=True)
class OldCase:
    api_key: int
    version: int
    kind: str
    cls: type

    @property
    def id(self) -> str:
        return f"{self.api_key:02d}-{self.cls.__name__}"


def old_cases() -> list[OldCase]:
    import kafka.protocol.old as old

    found: dict[tuple[int, int, str], type] = {}
    for mod_info in pkgutil.iter_modules(old.__path__):
        mod = importlib.import_module(f"kafka.protocol.old.{mod_info.name}")
        for name, cls in vars(mod).items():
            if not (inspect.isclass(cls) and issubclass(cls, OldRequest | OldResponse)
                    and cls.__module__ == mod.__name__ and not inspect.isabstract(cls)):
                continue
            kind = "request" if cls.is_request() else "response"
            # A class whose name says another version than its API_VERSION is an alias.
            m = re.search(r"_v(\d+)$", name)
            if m is None or int(m.group(1)) != cls.API_VERSION:
                continue
            found[(cls.API_KEY, cls.API_VERSION, kind)] = cls
    return [OldCase(k[0], k[1], k[2], found[k]) for k in sorted(found)]


def old_value(tp: Any, src: DetSource | HypSource) -> Any:
    """A value for an old kafka-python ``types`` instance or class."""
    if isinstance(tp, kt.Schema):
        return tuple(old_value(t, src) for t in tp.fields)
    if isinstance(tp, kt.Array | kt.CompactArray):
        return [old_value(tp.array_of, src) for _ in range(src.count())]
    if tp is kt.TaggedFields:
        return {}
    if tp is kt.BitField:
        return {src.integer(0, 30), src.integer(0, 30)}
    simple = {kt.Int8: "int8", kt.Int16: "int16", kt.Int32: "int32", kt.Int64: "int64",
              kt.Boolean: "bool", kt.Bytes: "bytes", kt.CompactBytes: "bytes", kt.Float64: "float64",
              kt.UnsignedVarInt32: "uvarint", kt.VarInt32: "varint", kt.VarInt64: "varlong", kt.UUID: "uuid"}
    if isinstance(tp, kt.String | kt.CompactString):
        return src.text()
    name = simple.get(tp)
    if name == "uvarint":
        return src.integer(0, 2**31 - 1)
    if name == "varint":
        return src.integer(-(2**31), 2**31 - 1)
    if name == "varlong":
        return src.integer(-(2**63), 2**63 - 1)
    if name is not None:
        return _kp_simple(name, src)
    raise TypeError(f"no value for old kafka-python type {tp!r}")


def old_message(cls: type, src: DetSource | HypSource) -> Any:
    return cls(*[old_value(t, src) for t in cls.SCHEMA.fields])


def old_frame(msg: Any, correlation_id: int = 0x11223344, client_id: str = "kafka-python-old") -> bytes:
    msg.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(msg.encode(header=True))


def old_compare(schema: Any, values: Any, ours: Any, ctx: tuple[int, str], parent: str = "",
                path: str = "body") -> None:
    """Compare an old kafka-python Schema's values with the decoder's dict, by name."""
    assert isinstance(ours, dict), f"{path}: expected a struct, got {ours!r}"
    keys = body_keys(ours)
    assert "_unknownTaggedFields" not in keys, f"{path}: unexpected unknown tagged fields {ours}"
    matched: set[str] = set()
    _old_fields(schema, values, ours, keys, ctx, parent, path, matched)
    unmatched = keys - matched
    assert not unmatched, f"{path}: decoded fields {sorted(unmatched)} have no kafka-python counterpart"


def _old_fields(schema: Any, values: Any, ours: dict[str, Any], keys: set[str], ctx: tuple[int, str],
                parent: str, path: str, matched: set[str]) -> None:
    api_key, kind = ctx
    by_snake = {snake(k): k for k in keys}
    for name, tp, value in zip(schema.names, schema.fields, values, strict=True):
        if tp is kt.TaggedFields:
            assert value == {}, f"{path}: the test writes no tagged fields"
            continue
        if (api_key, kind, name) in OLD_INLINED:
            _old_fields(tp, value, ours, keys, ctx, name, path, matched)
            continue
        target = OLD_RENAMES.get((api_key, kind, parent, name)) or OLD_INLINED_RENAMES.get((api_key, kind, name))
        key = by_snake.get(target or name)
        assert key is not None, f"{path}: no decoded field for {name!r} (decoded {sorted(keys)})"
        matched.add(key)
        old_field_value(tp, value, ours[key], ctx, name, f"{path}.{key}")


def old_field_value(tp: Any, value: Any, ours: Any, ctx: tuple[int, str], name: str, path: str) -> None:
    if isinstance(tp, kt.Schema):
        old_compare(tp, value, ours, ctx, name, path)
    elif isinstance(tp, kt.Array | kt.CompactArray):
        if value is None:
            assert ours is None, f"{path}: expected a null array, got {ours!r}"
            return
        assert isinstance(ours, list) and len(ours) == len(value), f"{path}: {ours!r} vs {value!r}"
        wrapped = OLD_WRAPPED.get((ctx[0], ctx[1], name))
        for i, (v, o) in enumerate(zip(value, ours, strict=True)):
            if wrapped is not None:
                assert isinstance(o, dict) and body_keys(o) == {wrapped}, f"{path}[{i}]: {o!r}"
                o = o[wrapped]
            old_field_value(tp.array_of, v, o, ctx, f"{name}[]" if wrapped else name, f"{path}[{i}]")
    elif tp is kt.UUID:
        assert ours == kafka_uuid(value), f"{path}: {ours!r} != {kafka_uuid(value)!r}"
    elif tp is kt.BitField:
        bits = {31} if value is None else value
        check_int(int.from_bytes(kt.BitField.encode(bits), "big", signed=True), ours, path)
    elif name == "records" and tp in (kt.Bytes, kt.CompactBytes):
        check_records(value, ours, path)
    else:
        check_scalar(value, ours, path)
