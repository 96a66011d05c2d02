"""Round-trip vectors made by encoders that are independent of ``decoders``.

Two encoders write the frames:

* kio (Aiven): one frozen dataclass per API key, version and direction (``kio.schema``), written
  with ``kio.serial.entity_writer``; values come from hypothesis (``st.from_type``, kio registers
  strategies for its primitive types) or from :func:`kio_instance`, which fills every field with a
  deterministic non-default value.
* kafka-python: the JSON-driven ``ApiMessage`` classes of kafka-python 3.x and the old
  ``Struct``-based ``kafka.protocol.old`` classes; values come from :class:`DetSource` or from a
  hypothesis ``st.data()`` (:class:`HypSource`).

The expected values always come from the encoder's own objects; the decoder under test is only
ever the thing being checked. Field names are matched by converting Kafka's CamelCase to the
encoder's snake_case (:func:`snake`), plus the explicit renames and layout equivalences listed in
:data:`KIO_RENAMES`, :data:`KP_RENAMES`, :data:`OLD_RENAMES`, :data:`OLD_WRAPPED` and
:data:`OLD_INLINED`; every field on both sides must be matched, and a field missing from the decoded
dict is only accepted for a tagged field the encoder left at its default (and so did not write).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import importlib
import inspect
import io
import pkgutil
import re
import types
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from decoders import DecodedMessage, decode_request, decode_response

# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

#: Keys that ``decoders.embedded`` adds next to raw fields; never part of the wire format.
POSTPROCESS_KEYS = frozenset({
    "MetadataDecoded", "AssignmentDecoded", "MemberMetadataDecoded", "MemberAssignmentDecoded",
    "RequestDataDecoded", "RequestPrincipalDecoded", "ClientHostAddressDecoded", "ResponseDataDecoded",
})

try:  # the generated code imports decoders.records lazily, only for `records` fields
    import decoders.records  # noqa: F401

    HAVE_RECORDS = True
except ImportError:
    HAVE_RECORDS = False

RECORDS_MISSING = ("decoders.records does not exist yet: `records` fields cannot be decoded, so "
                   "messages that carry them are not compared")


def snake(name: str) -> str:
    """Kafka's CamelCase field name in snake_case, as kio and kafka-python spell it:
    ``ThrottleTimeMs`` -> ``throttle_time_ms``, ``KRaftVersion`` -> ``k_raft_version``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def kafka_uuid(value: uuid.UUID | None) -> str:
    """Kafka's Uuid.toString() (URL-safe base64, no padding); None is written as the zero UUID."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def records_view(obj: Any) -> bytes | None:
    """The raw bytes behind a ``decoders.records.Records`` object (its ``data``), if it has them."""
    raw = getattr(obj, "data", None)
    return bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else None


def check_records(expected: bytes | None, ours: Any, path: str) -> None:
    """A ``records`` field: compare the length and the raw bytes (not the record contents)."""
    if expected is None:
        assert ours is None, f"{path}: expected null records, got {ours!r}"
        return
    assert ours is not None, f"{path}: expected {len(expected)} bytes of records, got null"
    assert len(ours) == len(expected), f"{path}: records length {len(ours)} != {len(expected)}"
    assert records_view(ours) == bytes(expected), f"{path}: records bytes differ"


def check_int(expected: int, ours: Any, path: str) -> None:
    assert isinstance(ours, int) and not isinstance(ours, bool), f"{path}: expected int {expected}, got {ours!r}"
    assert ours == int(expected), f"{path}: {ours!r} != {int(expected)!r}"


def check_scalar(expected: Any, ours: Any, path: str) -> None:
    if isinstance(expected, bool):
        assert isinstance(ours, bool) and ours == expected, f"{path}: {ours!r} != {expected!r}"
    elif isinstance(expected, int):
        check_int(expected, ours, path)
    elif isinstance(expected, float):
        assert isinstance(ours, float) and ours == expected, f"{path}: {ours!r} != {expected!r}"
    elif isinstance(expected, str):
        assert isinstance(ours, str) and ours == expected, f"{path}: {ours!r} != {expected!r}"
    elif isinstance(expected, bytes | bytearray | memoryview):
        assert isinstance(ours, bytes) and ours == bytes(expected), f"{path}: {ours!r} != {bytes(expected)!r}"
    elif expected is None:
        assert ours is None, f"{path}: expected null, got {ours!r}"
    else:  # pragma: no cover - a new type in an encoder
        raise AssertionError(f"{path}: no comparison for {type(expected).__name__}")


def check_message(msg: DecodedMessage, frame: bytes, kind: str, api_key: int, version: int,
                  correlation_id: int, client_id: str | None) -> None:
    """The envelope of a decoded message: status, size, header."""
    assert msg.status == "ok", (f"{kind} {api_key} v{version}: status {msg.status!r} "
                                f"(path {msg.error_path}, offset {msg.error_offset}) frame={frame.hex()}")
    assert msg.kind == kind
    assert msg.api_key == api_key and msg.api_version == version
    assert msg.correlation_id == correlation_id
    assert msg.size == len(frame)
    assert msg.body is not None
    assert msg.header is not None and msg.header["CorrelationId"] == correlation_id
    if kind == "request":
        assert msg.header["RequestApiKey"] == api_key
        assert msg.header["RequestApiVersion"] == version
        assert msg.client_id == client_id, f"client id {msg.client_id!r} != {client_id!r}"


def decode(frame: bytes, kind: str, api_key: int, version: int) -> DecodedMessage:
    if kind == "request":
        return decode_request(frame)
    return decode_response(frame, api_key, version)


def body_keys(body: dict[str, Any]) -> set[str]:
    return {k for k in body if k not in POSTPROCESS_KEYS}


def match_names(our_keys: set[str], encoder_names: list[str], renames: dict[str, str]) -> dict[str, str]:
    """Map each encoder (snake_case) name to the decoder's CamelCase key present in ``our_keys``."""
    by_snake: dict[str, str] = {}
    for key in our_keys:
        by_snake.setdefault(snake(key), key)
    out: dict[str, str] = {}
    for name in encoder_names:
        target = renames.get(name, name)
        key = by_snake.get(target)
        if key is not None:
            out[name] = key
    return out


# --------------------------------------------------------------------------------------------
# Deterministic and hypothesis value sources (kafka-python; kio uses st.from_type)
# --------------------------------------------------------------------------------------------


class DetSource:
    """Deterministic, non-default values: every nullable is set, every array has two elements."""

    def __init__(self, seed: int = 1) -> None:
        self.n = seed

    def _next(self) -> int:
        self.n += 1
        return self.n

    def integer(self, lo: int, hi: int) -> int:
        n = self._next()
        span = hi - lo + 1
        v = lo + (n * 2654435761 + 12345) % span
        if v in (0, -1):
            v = lo + n % span if lo + n % span not in (0, -1) else hi
        return v

    def boolean(self) -> bool:
        return True

    def text(self) -> str:
        return f"s{self._next()}-\u00e9\u20ac\U0001d11e"

    def binary(self) -> bytes:
        n = self._next()
        return bytes((n + i * 37) % 256 for i in range(3 + n % 5))

    def floating(self) -> float:
        return self._next() + 0.25

    def count(self) -> int:
        return 2

    def null(self) -> bool:
        return False

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(int=(self._next() * 0x9E3779B97F4A7C15) & ((1 << 128) - 1) | 1)


class HypSource:
    """Values drawn from a hypothesis ``st.data()`` object."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data = data
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def boolean(self) -> bool:
        return self.data.draw(self.st.booleans())

    def text(self) -> str:
        return self.data.draw(self.st.text(max_size=12))

    def binary(self) -> bytes:
        return self.data.draw(self.st.binary(max_size=24))

    def floating(self) -> float:
        return self.data.draw(self.st.floats(allow_nan=False))

    def count(self) -> int:
        return self.data.draw(self.st.integers(0, 3))

    def null(self) -> bool:
        return self.data.draw(self.st.booleans())

    def uuid(self) -> uuid.UUID:
        return self.data.draw(self.st.uuids())


# --------------------------------------------------------------------------------------------
# kio
# --------------------------------------------------------------------------------------------

import kio.schema.request_header.v1.header as _kio_rh1  # noqa: E402
import kio.schema.request_header.v2.header as _kio_rh2  # noqa: E402
import kio.schema.response_header.v0.header as _kio_sh0  # noqa: E402
import kio.schema.response_header.v1.header as _kio_sh1  # noqa: E402
from kio.index import load_request_schema, load_response_schema  # noqa: E402
from kio.schema.errors import ErrorCode  # noqa: E402
from kio.schema.index import api_key_map, schema_name_map  # noqa: E402
from kio.serial import entity_writer  # noqa: E402
from kio.serial._implicit_defaults import get_tagged_field_default  # noqa: E402
from kio.serial._introspect import get_field_tag  # noqa: E402
from kio.static.constants import EntityType  # noqa: E402
from kio.static.primitive import (  # noqa: E402
    Interval,
    Records,
    TZAware,
    f64,
    i32Timedelta,
    i64Timedelta,
)

#: kio names that are not the snake_case of the Kafka name, keyed by (api key, kio name) and
#: valued by snake(Kafka name). kio is generated from an older copy of Kafka's specs; Kafka
#: later renamed these fields without changing their wire layout at these versions.
#: Besides these, two rules apply to every class: kio appends "_" to Python keywords (``id_``),
#: and drops the ``_ms`` unit of fields it types as ``timedelta``/``datetime``.
KIO_RENAMES: dict[tuple[int, str], str] = {
    # TxnOffsetCommitRequest v3+: GenerationId became GenerationIdOrMemberEpoch (KIP-848).
    (28, "generation_id"): "generation_id_or_member_epoch",
    # StreamsGroupHeartbeatResponse v0: the int32 lag became AcceptableRecoveryLagLegacy when
    # v1 added an int64 AcceptableRecoveryLag.
    (88, "acceptable_recovery_lag"): "acceptable_recovery_lag_legacy",
}
_KIO_UNIT_SUFFIXES = ("_ms",)


@dataclass(frozen=True)
class KioCase:
    api_key: int
    version: int
    kind: str  # "request" | "response"
    cls: type

    @property
    def id(self) -> str:
        return f"{self.api_key:02d}-{api_key_map[self.api_key]}-v{self.version}-{self.kind}"


def kio_cases() -> list[KioCase]:
    cases = []
    for api_key, name in sorted(api_key_map.items()):
        for version in sorted(schema_name_map[name]):
            cases.append(KioCase(api_key, version, "request", load_request_schema(api_key, version)))
            cases.append(KioCase(api_key, version, "response", load_response_schema(api_key, version)))
    return cases


def _strip_none(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (types.UnionType, Union):
        args = [a for a in get_args(tp) if a is not type(None)]
        assert len(args) == 1, tp
        return args[0], len(args) != len(get_args(tp))
    return tp, False


def _unwrap(tp: Any) -> tuple[Any, bool, bool]:
    """(element type, is array, is nullable) of a kio field annotation."""
    tp, nullable = _strip_none(tp)
    if get_origin(tp) is tuple:
        elem, ellipsis = get_args(tp)
        assert ellipsis is Ellipsis
        return _strip_none(elem)[0], True, nullable
    return tp, False, nullable


def _register_kio_records_strategy() -> None:
    """kio registers strategies for its primitives but not for ``Records``: opaque bytes here
    (``records`` fields are compared by length and raw bytes only)."""
    from hypothesis import strategies as st

    st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


_register_kio_records_strategy()


def kio_is_records_type(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Records)


def kio_has_records(cls: type) -> bool:
    for f in dataclasses.fields(cls):
        elem, _, _ = _unwrap(f.type)
        if kio_is_records_type(elem):
            return True
        if dataclasses.is_dataclass(elem) and kio_has_records(elem):
            return True
    return False


def _kio_scalar(tp: Any, src: DetSource) -> Any:
    if tp is bool:
        return src.boolean()
    if isinstance(tp, type) and issubclass(tp, ErrorCode):
        members = [e for e in ErrorCode if e.value != 0]
        return members[src.integer(0, len(members) - 1)]
    if isinstance(tp, type) and issubclass(tp, Interval):
        return tp(src.integer(tp.__low__, tp.__high__))
    if tp is i32Timedelta:
        return i32Timedelta.parse(datetime.timedelta(milliseconds=src.integer(1, 2**31 - 1)))
    if tp is i64Timedelta:
        return i64Timedelta.parse(datetime.timedelta(milliseconds=src.integer(1, 2**40)))
    if tp is TZAware:  # kio's TZAware has whole-second precision
        seconds = src.integer(1, 2**32)
        return TZAware.parse(datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC))
    if kio_is_records_type(tp):
        return tp(src.binary())
    if tp is f64 or tp is float:
        return f64(src.floating())
    if tp is uuid.UUID:
        return src.uuid()
    if isinstance(tp, type) and issubclass(tp, str):
        return src.text()
    if tp is bytes:
        return src.binary()
    raise TypeError(f"no deterministic value for kio type {tp!r}")


def kio_instance(cls: type, src: DetSource | None = None) -> Any:
    """An instance of kio entity ``cls`` with every field set to a non-default value."""
    src = src or DetSource()
    kwargs = {}
    for f in dataclasses.fields(cls):
        elem, is_array, _nullable = _unwrap(f.type)
        make: Callable[[], Any]
        if dataclasses.is_dataclass(elem):
            def make(elem: Any = elem) -> Any:
                return kio_instance(elem, src)
        else:
            def make(elem: Any = elem) -> Any:
                return _kio_scalar(elem, src)
        kwargs[f.name] = tuple(make() for _ in range(src.count())) if is_array else make()
    return cls(**kwargs)


def kio_header(case_cls: type, correlation_id: int, client_id: str | None) -> Any:
    header_cls = case_cls.__header_schema__
    if header_cls in (_kio_rh1.RequestHeader, _kio_rh2.RequestHeader):
        return header_cls(request_api_key=case_cls.__api_key__, request_api_version=case_cls.__version__,
                          correlation_id=correlation_id, client_id=client_id)
    assert header_cls in (_kio_sh0.ResponseHeader, _kio_sh1.ResponseHeader), header_cls
    return header_cls(correlation_id=correlation_id)


def kio_frame(instance: Any, correlation_id: int = 0x01020304, client_id: str | None = "kio-client") -> bytes:
    """Header + body as kio writes them (no length prefix)."""
    cls = type(instance)
    buf = io.BytesIO()
    header = kio_header(cls, correlation_id, client_id)
    entity_writer(type(header))(buf, header)
    entity_writer(cls)(buf, instance)
    return buf.getvalue()


def kio_kind(cls: type) -> str:
    return "request" if cls.__type__ is EntityType.request else "response"


def _kio_ms(value: datetime.timedelta | datetime.datetime) -> int:
    if isinstance(value, datetime.datetime):
        delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    else:
        delta = value
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    assert micros % 1000 == 0, f"kio value {value!r} is not a whole number of milliseconds"
    return micros // 1000


def _kio_names(cls: type, our_keys: set[str]) -> dict[str, str]:
    names = [f.name for f in dataclasses.fields(cls)]
    api_key = getattr(cls, "__api_key__", None)
    renames = {name: KIO_RENAMES.get((api_key, name), name.rstrip("_")) for name in names}
    mapping = match_names(our_keys, names, renames)
    by_snake = {snake(k): k for k in our_keys}
    for f in dataclasses.fields(cls):
        if f.name in mapping:
            continue
        elem, _, _ = _unwrap(f.type)
        if elem in (i32Timedelta, i64Timedelta, TZAware):
            for suffix in _KIO_UNIT_SUFFIXES:
                key = by_snake.get(f.name + suffix)
                if key is not None:
                    mapping[f.name] = key
    return mapping


def kio_compare(expected: Any, ours: Any, path: str = "body") -> None:
    """Compare a kio entity with the decoder's dict, field by field."""
    cls = type(expected)
    assert isinstance(ours, dict), f"{path}: expected a struct, got {ours!r}"
    keys = body_keys(ours)
    assert "_unknownTaggedFields" not in keys, f"{path}: unexpected unknown tagged fields {ours}"
    mapping = _kio_names(cls, keys)
    for f in dataclasses.fields(cls):
        value = getattr(expected, f.name)
        key = mapping.get(f.name)
        tag = get_field_tag(f)
        if key is None:
            # kio only writes a tagged field whose value differs from its default.
            assert tag is not None, f"{path}: no decoded field for kio field {f.name!r} (decoded keys {sorted(keys)})"
            assert value == get_tagged_field_default(f), (
                f"{path}: tagged field {f.name!r} (tag {tag}) = {value!r} was written but not decoded")
            continue
        kio_value(value, f.type, ours[key], f"{path}.{key}")
    unmatched = keys - set(mapping.values())
    assert not unmatched, f"{path}: decoded fields {sorted(unmatched)} have no kio counterpart in {cls.__name__}"


def kio_value(value: Any, tp: Any, ours: Any, path: str) -> None:
    elem, is_array, _nullable = _unwrap(tp)
    if value is None:
        if elem is uuid.UUID:
            assert ours == ZERO_UUID, f"{path}: null uuid should decode as the zero uuid, got {ours!r}"
        elif elem is TZAware and not is_array:  # kio writes a null timestamp as -1
            check_int(-1, ours, path)
        else:
            assert ours is None, f"{path}: expected null, got {ours!r}"
        return
    if is_array:
        assert isinstance(ours, list), f"{path}: expected an array, got {ours!r}"
        assert len(ours) == len(value), f"{path}: {len(ours)} elements != {len(value)}"
        for i, (v, o) in enumerate(zip(value, ours, strict=True)):
            kio_value(v, elem, o, f"{path}[{i}]")
        return
    if dataclasses.is_dataclass(elem):
        kio_compare(value, ours, path)
    elif kio_is_records_type(elem):
        check_records(bytes(value), ours, path)
    elif elem is uuid.UUID:
        assert ours == kafka_uuid(value), f"{path}: {ours!r} != {kafka_uuid(value)!r} ({value})"
    elif elem in (i32Timedelta, i64Timedelta, TZAware):
        check_int(_kio_ms(value), ours, path)
    elif isinstance(value, enum.Enum):
        check_int(value.value, ours, path)
    else:
        check_scalar(value, ours, path)


# --------------------------------------------------------------------------------------------
# kafka-python 3.x: JSON-driven ApiMessage classes
# --------------------------------------------------------------------------------------------

from kafka.protocol.api_message import ApiMessage  # noqa: E402
from kafka.protocol.schemas.fields.codecs import BitField as KpBitField  # noqa: E402

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

from kafka.protocol.old import types as kt  # noqa: E402
from kafka.protocol.old.api import Request as OldRequest  # noqa: E402
from kafka.protocol.old.api import Response as OldResponse  # noqa: E402

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


# --------------------------------------------------------------------------------------------
# A flat list of valid frames for property tests
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vector:
    id: str
    kind: str
    api_key: int
    version: int
    frame: bytes


def all_vectors() -> list[Vector]:
    """One deterministic frame per kio case, kafka-python case and (spec-conformant) old case."""
    out = [Vector(f"kio-{c.id}", c.kind, c.api_key, c.version, kio_frame(kio_instance(c.cls)))
           for c in kio_cases()]
    out += [Vector(f"kp-{c.id}", c.kind, c.api_key, c.version,
                   kp_frame(kp_message(c.cls, c.version, DetSource())))
            for c in kp_cases()]
    out += [Vector(f"old-{c.id}", c.kind, c.api_key, c.version, old_frame(old_message(c.cls, DetSource())))
            for c in old_cases() if (c.api_key, c.version, c.kind) not in OLD_ENCODER_BUGS]
    return out
