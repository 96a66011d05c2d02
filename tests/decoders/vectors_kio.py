"""Round-trip vectors written by kio (Aiven): cases, deterministic instances, frames and the comparison with
the decoded message (see vectors.py).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import types
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

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

from tests.decoders.vectors import (
    ZERO_UUID,
    DetSource,
    body_keys,
    check_int,
    check_records,
    check_scalar,
    kafka_uuid,
    match_names,
    snake,
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


def untagged(value: Any) -> Any:
    """A kio entity with every tagged field at its default, nested entities too (the text writers give up on
    tagged fields: they are not on the wire there)."""
    if isinstance(value, tuple):
        return tuple(untagged(v) for v in value)
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    changes = {}
    for f in dataclasses.fields(value):
        if "tag" in f.metadata:
            changes[f.name] = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        else:
            changes[f.name] = untagged(getattr(value, f.name))
    return dataclasses.replace(value, **changes)
