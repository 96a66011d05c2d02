"""The two renderings of the record batch header model (``decoders.record_header``): the JSON writer rendered into
``decoders/native/_records.pyx`` and the dict of ``v2_summary``, the same text or no answer.

``headers_json`` must write exactly what ``orjson.dumps(decode_records(data, "headers"))`` writes
whenever it answers, and answer for the common shapes (whole magic-2 batches, a partial last one).
Batches come from kafka-python's builder (a third-party encoder) and from hand-packed headers with
extreme values; every real capture's record fields too.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import random
import struct
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from decoders import decode_request, decode_response
from decoders.native import _records as records_native
from decoders.records import Records, decode_records
from tests.inspector.capture_frames import capture_frames

HEADER = struct.Struct(">qiibIhiqqqhii")


def _reference(data: bytes) -> bytes:
    return orjson.dumps(decode_records(data, "headers"))


def _check(data: bytes) -> bytes | None:
    assert records_native is not None
    text: bytes | None = records_native.headers_json(data)
    if text is not None:
        assert text == _reference(data)
        json.loads(text)
    return text


def _batch(n_records: int, codec: int = 0, transactional: bool = False, pid: int = -1) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, transactional, pid, 0 if pid >= 0 else -1,
                                        0 if pid >= 0 else -1, 1 << 20)
    for i in range(n_records):
        builder.append(i, 1_700_000_000_000 + i, f"k{i}".encode(), b"v" * (i * 7), [("h", b"x")])
    return bytes(builder.build())


def _packed(values: tuple[Any, ...], body: bytes = b"") -> bytes:
    head = bytearray(HEADER.size)
    HEADER.pack_into(head, 0, *values)
    struct.pack_into(">i", head, 8, HEADER.size - 12 + len(body))
    return bytes(head) + body


def test_common_shapes_are_answered_and_identical() -> None:
    batches = [_batch(1), _batch(5, codec=0), _batch(3, transactional=True, pid=77), _batch(0)]
    for batch in batches:
        assert _check(batch) is not None
    joined = b"".join(batches)
    assert _check(joined) is not None
    assert _check(b"") is not None
    for cut in range(len(joined)):  # a partial last batch is common (Fetch); shorter shapes go to the pure code
        _check(joined[:cut])


def test_every_attribute_and_extreme_header_values() -> None:
    extremes = [(-(1 << 63), -(1 << 31), -128 + 130, 0, -(1 << 15), -(1 << 31), -(1 << 63), -(1 << 63),
                 -(1 << 63), -(1 << 15), -(1 << 31), -(1 << 31)),
                ((1 << 63) - 1, (1 << 31) - 1, 2, (1 << 32) - 1, (1 << 15) - 1, (1 << 31) - 1, (1 << 63) - 1,
                 (1 << 63) - 1, (1 << 63) - 1, (1 << 15) - 1, (1 << 31) - 1, (1 << 31) - 1)]
    for base, epoch, magic, crc, attrs, delta, bts, mts, pid, pepoch, seq, count in extremes:
        header = (base, 0, epoch, magic, crc, attrs, delta, bts, mts, pid, pepoch, seq, count)
        assert _check(_packed(header)) is not None
    for attrs in range(-(1 << 15), 1 << 15, 97):
        assert _check(_packed((1, 0, 0, 2, 5, attrs, 0, 0, 0, -1, -1, -1, 0), b"abc")) is not None


def test_other_shapes_are_left_to_the_pure_decoder() -> None:
    good = _batch(2)
    legacy = bytearray(good)
    legacy[16] = 1
    short_length = bytearray(good)
    struct.pack_into(">i", short_length, 8, 48)
    for data in (bytes(legacy), bytes(short_length), good[:60], good + good[:30]):
        assert records_native is not None
        # shapes with a problem or a legacy batch: the pure decoder reports them
        if records_native.headers_json(data) is None:
            assert decode_records(data, "headers") is not None
    assert records_native.headers_json(bytes(legacy)) is None
    assert records_native.headers_json(bytes(short_length)) is None


def test_random_bytes() -> None:
    rng = random.Random(7)
    good = _batch(3)
    for _ in range(3000):
        data = bytearray(good * rng.randint(1, 3))
        for _ in range(rng.randint(0, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        _check(bytes(data[: rng.randint(0, len(data))]))
        _check(rng.randbytes(rng.randint(0, 200)))


def _record_fields(value: Any) -> Iterator[Records]:
    if isinstance(value, Records):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _record_fields(v)
    elif isinstance(value, list):
        for v in value:
            yield from _record_fields(v)


def test_every_record_field_of_the_real_captures() -> None:
    answered = total = 0
    for kind, api_key, api_version, frame in capture_frames():
        if api_key not in (0, 1):
            continue
        msg = decode_request(frame) if kind == "request" else decode_response(frame, api_key, api_version)
        for field in _record_fields(msg.body):
            total += 1
            answered += _check(bytes(field.data)) is not None
    assert total and answered >= total * 0.9, (answered, total)


# ---------------------------------------------------------------------------------------------------------
# the hot path's record classes and their constructors

HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class statement's class, not a compiled extension type


def _hot_classes() -> list[tuple[type, Any, tuple[Any, ...]]]:
    """(class, the hot path's constructor of it, every field's value in order)."""
    from decoders import api
    from decoders.api import DecodedMessage
    from inspector.capture.packets import Segment
    from inspector.kafka import connection
    from inspector.kafka.connection import Endpoint, KafkaMessage, PendingRequest
    from inspector.kafka.framing import Frame
    from inspector.tcp.stream_events import StreamData

    e = Endpoint("10.0.0.1", 9092)
    msg = DecodedMessage("request", 0, 9, 7, "ok", {"Acks": 1}, 100)
    return [
        (Segment, Segment, (1.5, "a", 1, "b", 2, 3, 4, 5, memoryview(b"xy"), False, 0)),
        (StreamData, StreamData, (1, 0, 2.5, 10, memoryview(b"z"), e, e)),
        (Frame, Frame, (1.0, 0.5, 3, b"frame")),
        (PendingRequest, PendingRequest, (0, 9, 1.0, "client", None, None)),
        (KafkaMessage, connection._new_message, (1.0, 2, e, e, "request", 0, msg, "c", None, False, (), None,
                                                      "User:alice", "PLAIN")),
        (DecodedMessage, api._new_message,
         ("response", 1, 12, 5, "ok", {}, 4, None, 1, {}, None, None, None, (), None)),
    ]


@pytest.mark.parametrize("index", range(6))
def test_hot_constructors_build_what_the_class_builds(index: int) -> None:
    """Each hot-path class is built with every field positionally, whether compiled (an extension type, its
    fields in the object) or from source; frozen ones stay read-only."""
    cls, make, values = _hot_classes()[index]
    made = make(*values)
    assert type(made) is cls and made == cls(*values)
    fields = dataclasses.fields(cls)
    assert [getattr(made, f.name) for f in fields[:len(values)]] == list(values)
    # Fields the constructor leaves at their defaults (DecodedMessage.text and codes: set after, when at all).
    assert [getattr(made, f.name) for f in fields[len(values):]] == [f.default for f in fields[len(values):]]
    compiled = not cls.__flags__ & HEAP_TYPE
    if compiled or "__slots__" in cls.__dict__:
        assert not hasattr(made, "__dict__")
    if cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        with pytest.raises(AttributeError):  # FrozenInstanceError from source; a read-only field compiled
            made.ts = 0.0
    if make is not cls:
        with pytest.raises(TypeError):  # the hot path's constructors take every field
            make(*values[:-1])


def test_compiled_classes_are_extension_types() -> None:
    """The hot-path classes are extension types (their fields read from C)."""
    for cls, _make, _values in _hot_classes():
        assert not cls.__flags__ & HEAP_TYPE, cls


def test_hot_constructors_keep_references_right() -> None:
    for _cls, make, values in _hot_classes():
        probe = object()
        args = (*values[:1], probe, *values[2:])
        before = sys.getrefcount(probe)
        made = [make(*args) for _ in range(100)]
        assert sys.getrefcount(probe) == before + 100
        del made
        gc.collect()
        assert sys.getrefcount(probe) == before
