"""The Spark schemas of the bodies the detectors read: generated from the message specs, a missing field an error."""

from __future__ import annotations

import json

import pytest

import contract.body_schemas as generated
from decoders.codegen import render_schemas
from decoders.codegen.render_schemas import BODY_SCHEMAS, SchemaError, record_set_types
from decoders.codegen.render_schemas import body_schemas as make
from decoders.spec.convert import SCHEMA_DIR

DOCS = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(SCHEMA_DIR.glob("*.json"))]


def test_each_schema_is_generated_and_typed_by_the_specs() -> None:
    made = make(DOCS)
    assert made == {name: getattr(generated, name) for name in BODY_SCHEMAS}
    assert record_set_types(DOCS) == {"RECORD_SET_SUMMARY": generated.RECORD_SET_SUMMARY}
    assert "HighWatermark: BIGINT" in made["FETCH_RESPONSE"]  # int64
    assert made["DESCRIBE_CLUSTER_REQUEST"] == "EndpointType TINYINT"  # int8
    # a consumer subscription decoded beside its bytes: the data structure's own field
    assert "MetadataDecoded: STRUCT<status: STRING, inferred: BOOLEAN, value: STRUCT<Topics: ARRAY<STRING>>>" in (
        made["JOIN_GROUP_REQUEST"])
    # the record set summary: from its model (decoders.record_header)
    assert "producerEpoch: INT, baseSequence: INT, lastOffsetDelta: INT, isTransactional: BOOLEAN" in (
        made["PRODUCE_REQUEST"])


def test_a_field_the_model_lacks_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = (("OffsetCommit",), "request", "Topics{Partitions{ErrorCode}}")  # the response's field, not the request's
    monkeypatch.setitem(render_schemas.BODY_SCHEMAS, "BAD", bad)
    with pytest.raises(SchemaError, match=r"OffsetCommit request\.Topics\.Partitions: no field ErrorCode"):
        make(DOCS)
