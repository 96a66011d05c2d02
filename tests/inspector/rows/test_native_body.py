"""The one writer of bodies' JSON (inspector/native/_body.pyx) writes what orjson, an independent encoder, writes
wherever orjson can write it, and finds the same non-zero ErrorCode values as the regex over that text."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from contract.limits import DEFAULT_LIMITS
from decoders.records import Records
from inspector.read.reader import iter_capture
from inspector.rows import event_table as events
from inspector.rows.event_table import RecordsOptions, _RecordsSummary, body_json
from inspector.rows.summary import Summary
from tests.error_code_regex import error_codes
from tests.inspector.capture_frames import CAPTURES

pytestmark = pytest.mark.skipif(events._BodyColumn is None, reason="inspector/native not built (pure install)")
LEVELS = ("headers", "records", "size")


def _column(level: str = "headers", **kw: Any) -> Any:
    assert events._BodyColumn is not None
    return events._BodyColumn(Records, events._headers_writer if level == "headers" else None, **kw)


def _texts(column: Any) -> list[bytes | None]:
    """The column's values, through Arrow (what the events table makes of its buffers)."""
    taken = column.take()
    if type(taken) is list:
        return taken
    validity, offsets, data, nulls = taken
    n = len(offsets) // 4 - 1
    array = pa.Array.from_buffers(pa.binary(), n, [None if validity is None else pa.py_buffer(validity),
                                                   pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)
    array.validate(full=True)
    return array.to_pylist()


def _orjson_default(summary: _RecordsSummary) -> Any:
    """What orjson is given for what it does not know: bytes-likes as hex, record sets as their summary."""
    def default(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).hex()
        return summary(value)
    return default


def _same_as_orjson(body: Any, level: str = "headers") -> bool:
    """Write ``body`` with the column and with orjson; True when both wrote it and the texts are equal (False:
    orjson refuses it; the column's text is then checked to be JSON)."""
    options = RecordsOptions(level=level)
    ours, theirs = _RecordsSummary(options, DEFAULT_LIMITS), _RecordsSummary(options, DEFAULT_LIMITS)
    column = _column(level)
    codes = column.append(body, ours)
    (text,) = _texts(column)
    assert text is not None and body_json(body, options) == text.decode()
    try:
        expected = orjson.dumps(body, default=_orjson_default(theirs))
    except orjson.JSONEncodeError:
        json.loads(text)
        return False
    assert text == expected
    assert codes == error_codes(expected)
    assert ours.problems == theirs.problems
    return True


def _batch(n: int, codec: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i in range(n):
        builder.append(i, 1_700_000_000_000 + i, f"k{i}".encode(), b"v" * (i * 7), [("h", b"x")])
    return bytes(builder.build())


def test_every_body_of_the_captures() -> None:
    written = total = 0
    for path in CAPTURES:
        for ev in iter_capture(str(path), Summary()):
            for msg in (ev.message, ev.message.inner):
                if msg is not None and msg.body is not None:
                    total += 1
                    written += _same_as_orjson(msg.body)
    assert total > 1000 and written == total, (written, total)


def test_record_sets_at_every_level() -> None:
    data = _batch(3) + _batch(1)
    bodies = [
        {"Records": Records(data)},
        {"Records": Records(memoryview(data))},
        {"Records": Records(data + data[:70])},  # a partial last batch
        {"Records": Records(data[:30])},  # too short for a batch header: the pure decoder's summary
        {"Records": Records(b"")},
        {"Topics": [{"Records": Records(_batch(2, codec=1)), "ErrorCode": 0}, {"Records": None}]},
    ]
    for level in LEVELS:
        for body in bodies:
            assert _same_as_orjson(body, level), (level, body)


def test_strings_numbers_and_containers() -> None:
    every_ascii = "".join(chr(i) for i in range(128))
    assert _same_as_orjson({"s": every_ascii, "u": "é☃\U0001f600\u2028\ufeff", "": ""})
    assert _same_as_orjson({"i": [0, -1, 1, -(1 << 63), (1 << 63) - 1], "b": [True, False], "n": None})
    assert _same_as_orjson({"t": (1, (2, [3])), "e": {}, "l": [], "x": b"\x00\xff", "y": bytearray(b"ab"),
                            "m": memoryview(b"cd")})


def test_strings_escaped_as_orjson_does_at_every_position() -> None:
    """Strings are copied eight bytes at a time where none needs escaping: every character that does (each
    control character, '"', a backslash), and multi-byte UTF-8, at every position of strings of 0..24
    characters, is written as orjson writes it."""
    specials = [chr(c) for c in range(0x20)] + ['"', "\\", "\x7f", "\u00e9", "\u20ac", "\U0001f600"]
    for n in range(25):
        for special in specials:
            for at in range(n):
                text = "a" * at + special + "b" * (n - at - 1)
                assert _same_as_orjson({"s": text, "k" + text: [text]})
        assert _same_as_orjson({"s": "x" * n})


def test_integers_around_every_power_of_ten() -> None:
    """Integers are written two digits at a time: each number of digits, its bounds and both signs."""
    values = [0, 1, -1, (1 << 63) - 1, -(1 << 63), -(1 << 63) + 1]
    for digits in range(1, 20):
        for v in (10 ** digits - 1, 10 ** digits, 10 ** digits + 1, 10 ** digits // 2 + 7):
            values += [v, -v] if v < (1 << 63) else []
    assert _same_as_orjson({"i": values, "n": len(values)})


def test_error_codes_as_the_regex_finds_them() -> None:
    column = _column()
    body = {"ErrorCode": 7, "T": [{"ErrorCode": 0}, {"ErrorCode": -1, "P": [{"ErrorCode": 7}]}],
            "Name": 'x"ErrorCode":5,', "TopicErrorCode": 3, "K": {"ErrorCode\n": 4}}
    assert column.append(body, None) == [7, -1, 7] == error_codes(orjson.dumps(body))
    assert column.append({"ErrorCode": True, "E": {"ErrorCode": None}}, None) is None
    assert column.append({"ErrorCode": 0}, None) is None
    big = {"ErrorCode": 1 << 63, "T": [{"ErrorCode": -(1 << 70)}, {"ErrorCode": 3}]}  # beyond 64 bits too
    assert column.append(big, None) == [1 << 63, -(1 << 70), 3] == error_codes(body_json(big).encode())


@pytest.mark.parametrize(("body", "text"), [
    ({"f": 1.5, "g": -0.0, "h": 1e16, "k": 1e-5, "m": 2.5e-7}, b'{"f":1.5,"g":-0.0,"h":1e+16,"k":0.00001,"m":2.5e-7}'),
    ({"n": math.nan, "i": math.inf, "j": -math.inf}, b'{"n":null,"i":null,"j":null}'),
    ({"i": 1 << 63, "j": -(1 << 63) - 1, "k": 1 << 70}, b'{"i":9223372036854775808,"j":-9223372036854775809,'
                                                          b'"k":1180591620717411303424}'),
    ({"s": "\ud800x"}, b'{"s":"\\\\ud800x"}'),  # a lone surrogate: its escape, visible (orjson refuses it)
    (OrderedDict(a=1), b'{"a":1}'), ({"d": OrderedDict(a=1)}, b'{"d":{"a":1}}'),
    ({"m": memoryview(b"abcd")[::2]}, b'{"m":"6163"}'), ({"a": [1, {"b": 2.0}]}, b'{"a":[1,{"b":2.0}]}'),
], ids=lambda v: None if isinstance(v, dict) and "m" in v else str(v))  # no object address in an id
def test_other_shapes_are_written(body: Any, text: bytes) -> None:
    column = _column()
    column.append({"before": 1}, None)
    assert column.append(body, None) is None
    assert _texts(column) == [b'{"before":1}', text]
    json.loads(text)


@pytest.mark.parametrize("body", [{1: "non-str key"}, {"o": object()}, {"f": orjson.Fragment(b"1"), "g": 2}],
                         ids=["non-str-key", "object", "fragment"])
def test_what_json_cannot_hold_is_refused_and_nothing_is_left_behind(body: Any) -> None:
    column = _column()
    column.append({"before": 1}, None)
    with pytest.raises(TypeError):
        column.append(body, None)
    column.append({"after": 2}, None)
    assert _texts(column) == [b'{"before":1}', b'{"after":2}']


def test_floats_as_orjson_writes_them() -> None:
    values = [0.0, -0.0, 5e-324, 1.7976931348623157e308] + [k * 10.0 ** e for k in (1, 1.5, 1.2345, 9.99)
                                                             for e in range(-320, 300)]
    assert _same_as_orjson({"f": values})


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    body: Any = []
    for _ in range(300):
        body = [body]
    column = _column()
    with pytest.raises(ValueError, match="nested deeper"):
        column.append({"x": body}, None)
    assert len(column) == 0


def test_nulls_and_the_list_for_large_batches() -> None:
    for max_text in (1 << 31, 10):
        column = _column(max_text=max_text)
        assert column.append(None, None) is None
        column.append({"a": "x" * 20}, None)
        column.append(None, None)
        column.append_text(b"{}")
        assert _texts(column) == [None, b'{"a":"' + b"x" * 20 + b'"}', None, b"{}"]
        assert len(column) == 0 and _texts(column) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(1 << 64), max_value=1 << 64) | st.text()
    | st.binary(max_size=8) | st.floats(allow_nan=False) | st.characters().map(lambda c: c * 3),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=6) | st.just("ErrorCode"), inner, max_size=4),
    max_leaves=24,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=6) | st.just("ErrorCode"), json_values, max_size=5))
def test_random_bodies(body: dict[str, Any]) -> None:
    # Always written; equal to orjson's text unless orjson refuses it: an integer beyond its range or a string
    # that is not valid UTF-8 (a lone surrogate).
    assert _same_as_orjson(body) == (not _has_big_int(body) and not _has_surrogate(body))


def _walk(value: Any) -> Any:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk(v)


def _has_surrogate(body: Any) -> bool:
    """A key or string value that UTF-8 cannot encode."""
    def bad(s: Any) -> bool:
        try:
            s.encode()
        except UnicodeEncodeError:
            return True
        return False
    return any(isinstance(v, str) and bad(v) or isinstance(v, dict) and any(bad(k) for k in v) for v in _walk(body))


def _has_big_int(body: Any) -> bool:
    """An integer orjson refuses (it writes -2**63 .. 2**64 - 1)."""
    return any(type(v) is int and not -(1 << 63) <= v < (1 << 64) for v in _walk(body))


def test_taken_text_outlives_the_column() -> None:
    """take() hands its buffer over: an Arrow array made from it stays valid while the column goes on (and
    after it is gone)."""
    column = _column()
    column.append({"a": "first"}, None)
    validity, offsets, data, nulls = column.take()
    array = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    del data
    for i in range(1000):
        column.append({"b": "x" * i}, None)
    column.take()
    del column
    assert array.to_pylist() == ['{"a":"first"}']
    with pytest.raises(TypeError):
        memoryview(_column().take()[2]).cast("B")[0:1] = b"x"  # read-only


def test_the_next_batch_writes_into_the_text_handed_over_only_once_it_is_free() -> None:
    """The buffer handed over at take() is written again by a later batch once nothing refers to its text (the
    batch was written and dropped), and never while something does."""
    column = _column()

    def batch(text: str, n: int = 200) -> tuple[pa.Array, int]:
        for _ in range(n):
            column.append({"t": text}, None)
        validity, offsets, data, nulls = column.take()
        buffer = pa.py_buffer(data)
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), buffer]), buffer.address

    first, address = batch("a" * 50)
    kept = first.to_pylist()
    second, address2 = batch("b" * 50)  # the first batch's text is still referred to: a buffer of its own
    assert address2 != address and first.to_pylist() == kept == ['{"t":"' + "a" * 50 + '"}'] * 200
    del second
    third, _ = batch("c" * 80, 400)  # the second's text is free again: written over, grown as needed
    assert third.to_pylist() == ['{"t":"' + "c" * 80 + '"}'] * 400 and first.to_pylist() == kept
    del third
    fourth, address4 = batch("d")
    assert fourth.to_pylist() == ['{"t":"d"}'] * 200 and first.to_pylist() == kept
    fourth_text = fourth.to_pylist()
    del fourth
    fifth, address5 = batch("e")
    assert address5 == address4  # the same buffer, batch after batch, while each is dropped before the next
    assert fifth.to_pylist() == ['{"t":"e"}'] * 200 and fourth_text == ['{"t":"d"}'] * 200


def test_drop_last_and_text_must_be_bytes() -> None:
    column = _column()
    column.append({"a": 1}, None)
    column.append(None, None)
    column.drop_last()
    column.append({"b": 2}, None)
    column.drop_last()
    column.append({"c": 3}, None)
    with pytest.raises(TypeError):
        column.append_text(None)
    assert _texts(column) == [b'{"a":1}', b'{"c":3}']


def test_a_row_that_fails_leaves_the_body_column_in_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row whose values cannot be made after its body was written: the body is taken back, so every later
    row keeps its own body."""
    messages = [m for m in iter_capture(str(CAPTURES[0]), Summary()) if m.direction == "response"][:3]
    table = events.EventTable(capture="x")
    table.add(messages[0])

    def boom(key: object) -> None:  # the api name's look-up, failing: a value of the row after the body
        raise RuntimeError("boom")

    monkeypatch.setattr(events, "_api_name", boom)
    with pytest.raises(RuntimeError):
        table.add(messages[1])
    monkeypatch.undo()
    table.add(messages[2])
    bodies = table.take().column("body").to_pylist()
    assert bodies == [events.body_json(m.message.body) for m in (messages[0], messages[2])]


def test_keys_written_again_are_the_same_text() -> None:
    # The column remembers each key string's text by the string's address (256 places): keys shared by
    # many bodies, keys that evict each other, escaped keys, a key too long to remember, and a key string
    # freed and another made (perhaps at its address) with other text.
    column = _column()
    shared = [f"Field{i}" for i in range(600)]  # more than the places: they evict each other
    odd = ['quo"te', "back\\slash", "tab\there", "é☃", "x" * 60, ""]
    bodies: list[dict[str, Any]] = []
    for round_ in range(3):
        for start in range(0, 600, 50):
            bodies.append({key: round_ for key in shared[start:start + 50]} | {k: start for k in odd})
    for round_ in range(200):
        made = "".join(["Key", str(round_)])  # a new string each time, freed after its body is written
        bodies.append({made: round_})
    encoder = _RecordsSummary(RecordsOptions(), DEFAULT_LIMITS)
    for body in bodies:
        assert column.append(body, encoder) is None
    assert _texts(column) == [orjson.dumps(body) for body in bodies]


def test_promoted_is_whether_a_top_level_key_is_promoted() -> None:
    keys = frozenset(("GroupId", "MemberId", "NodeId", "ProtocolType", "ClusterId"))
    column = events._BodyColumn(Records, None, promoted_keys=keys)  # type: ignore[misc]
    encoder = _RecordsSummary(RecordsOptions(), DEFAULT_LIMITS)
    seen = {True: 0, False: 0}
    bodies: list[dict[str, Any] | None] = [
        {"GroupId": "g"}, {"Topics": [{"GroupId": "nested, not top-level"}]}, None, {"NodeId": 1, "x": 2},
        {"x" * 70: 1, "MemberId": "m"}, {"x" * 70: 1},
    ]
    for path in CAPTURES[:6]:
        bodies += [m.body for ev in iter_capture(str(path), Summary()) for m in (ev.message, ev.message.inner)
                   if m is not None]
    for body in bodies * 2:  # the second time from the remembered keys
        column.append(body, encoder)
        expected = body is not None and any(key in keys for key in body)
        assert column.promoted == expected, body
        seen[expected] += 1
    assert seen[True] > 20 and seen[False] > 20
