"""The read plan (decoders/codegen/plan.py): the layout decisions every renderer spells, made once."""

from __future__ import annotations

import json
from pathlib import Path

from decoders.codegen.model import FIXED, is_flexible, resolve_struct, versions_of
from decoders.codegen.plan import Array, Fixed, Nested, Prefixed, element_min_size, steps

SCHEMA = Path(__file__).resolve().parents[2] / "decoders" / "schema"


def _struct(file: str, kind: str, version: int):  # type: ignore[no-untyped-def]
    doc = json.loads((SCHEMA / file).read_text())
    variant = next(v for v in doc[kind] if version in versions_of(v))
    return resolve_struct(doc["name"] + kind.title(), variant["fields"], version, is_flexible(variant, version))


def test_metadata_response_v12_plan() -> None:
    st = _struct("api-003-Metadata.json", "response", 12)
    plan = steps(st)
    # ThrottleTimeMs, Brokers, ClusterId, ControllerId, Topics (in wire order; the two ints are not adjacent)
    assert [type(s) for s in plan] == [Fixed, Array, Prefixed, Fixed, Array]
    assert [f.name for s in plan for f in (s.fields if isinstance(s, Fixed) else (s.field,))] == [
        f.name for f in st.fields]
    brokers = plan[1]
    assert isinstance(brokers, Array) and brokers.element.kind == "struct"
    # NodeId int32, Host compact string, Port int32, Rack compact nullable string, tagged-field count.
    assert brokers.min_size == 4 + 1 + 4 + 1 + 1
    cluster = plan[2]
    assert isinstance(cluster, Prefixed) and cluster.int16 and cluster.field.compact  # compact: a uvarint here


def test_consecutive_fixed_fields_are_one_step() -> None:
    st = _struct("api-018-ApiVersions.json", "response", 0)
    (error, keys) = steps(st)
    assert isinstance(error, Fixed) and [f.name for f in error.fields] == ["ErrorCode"]
    assert isinstance(keys, Array)
    (ranges,) = [s for s in steps(keys.element.struct) if isinstance(s, Fixed)]  # type: ignore[arg-type]
    assert [f.name for f in ranges.fields] == ["ApiKey", "MinVersion", "MaxVersion"] and ranges.size == 6


def test_element_sizes() -> None:
    st = _struct("api-003-Metadata.json", "request", 0)
    (topics,) = steps(st)
    assert isinstance(topics, Array) and topics.min_size == 2  # an int16-prefixed string: its length alone
    for step in steps(_struct("api-001-Fetch.json", "response", 12)):
        if isinstance(step, Array):
            assert step.min_size == element_min_size(step.element) > 0
    assert all(size > 0 for _, size in FIXED.values())


def test_nested_struct_step() -> None:
    st = _struct("api-058-Envelope.json", "request", 0)
    assert not any(isinstance(s, Nested) for s in steps(st))  # bytes and a compact string, no struct
    assert [type(s) for s in steps(st)] == [Prefixed, Prefixed, Prefixed]
