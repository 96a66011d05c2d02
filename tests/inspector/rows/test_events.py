"""Event rows: the promoted columns read from the body's JSON text, and the row columns' typed twin."""

from __future__ import annotations

import dataclasses

import orjson
import pyarrow as pa
import pytest

from inspector.read.reader import iter_capture
from inspector.rows import event_table as events
from inspector.rows.summary import Summary
from tests.error_code_regex import nested_error_codes
from tests.inspector.capture_frames import CAPTURES


def _codes(body: object, top: int | None) -> list[int] | None:
    return nested_error_codes(orjson.dumps(body), top)


def test_nested_error_codes() -> None:
    zero = {"ErrorCode": 0, "Topics": [{"ErrorCode": 0, "P": [{"ErrorCode": 0}]}]}
    assert _codes(zero, 0) is None
    assert _codes({"Topics": []}, None) is None
    assert nested_error_codes(None, None) is None
    assert _codes({"ErrorCode": 0, "Topics": [{"ErrorCode": 3}, {"ErrorCode": 0}, {"ErrorCode": 3}]}, 0) == [3]
    assert _codes({"ErrorCode": 7, "Topics": [{"ErrorCode": 0}]}, 7) is None  # the top level is not nested
    assert _codes({"ErrorCode": 7, "Topics": [{"ErrorCode": 7}, {"ErrorCode": -1}]}, 7) == [-1, 7]
    assert _codes({"Topics": [{"ErrorCode": 10}, {"ErrorCode": 0}]}, None) == [10]
    assert _codes({"Topics": [{"ErrorCode": 100}]}, None) == [100]
    assert _codes({"Name": 'x"ErrorCode":5,'}, None) is None  # text inside a string is escaped


# ---------------------------------------------------------------------------------------------------------
# The row columns' typed twin (inspector/native/_columns.pyx) against pyarrow's own conversion

KINDS = b"qihdsbt"
TYPES = [pa.int64(), pa.int32(), pa.int16(), pa.float64(), pa.string(), pa.string(), pa.int64()]


def _by_pyarrow(rows: list[tuple[object, ...]]) -> list[pa.Array]:
    columns = list(zip(*rows, strict=True))
    columns[-1] = [None if ts is None else round(ts * 1_000_000) for ts in columns[-1]]  # t: seconds to µs
    return [pa.array(col, type=pa.binary() if kind == ord("b") else t).view(t)
            for col, kind, t in zip(columns, KINDS, TYPES, strict=True)]


def _by_twin(rows: list[tuple[object, ...]]) -> list[pa.Array] | None:
    assert events._columns is not None
    buffers = events._columns(rows, KINDS)
    if buffers is None:
        return None
    out = []
    for (validity, offsets, data, nulls), t in zip(buffers, TYPES, strict=True):
        parts = [None if validity is None else pa.py_buffer(validity)]
        parts += [pa.py_buffer(offsets)] if offsets is not None else []
        out.append(pa.Array.from_buffers(t, len(rows), parts + [pa.py_buffer(data)], null_count=nulls))
    return out


def test_twin_builds_what_pyarrow_builds() -> None:
    rows = [
        (1, 2, 3, 4.5, "a", b"{}", 1_700_000_000.123456),
        (None, None, None, None, None, None, None),
        (-(1 << 63), -(1 << 31), -(1 << 15), -0.0, "", b"", -0.0000005),
        ((1 << 63) - 1, (1 << 31) - 1, (1 << 15) - 1, float("inf"), "é☃\U0001f600", "ü".encode(), 9.2e12),
    ] * 5
    # microseconds rounded half to even, as round() does: .5 exactly (2**-k seconds) and just around it
    rows += [(0, 0, 0, 0.0, "", b"", ts) for ts in (0.5e-6, 1.5e-6, 2.5e-6, 0.0000025000001, 2**-21, 3 * 2**-21,
                                                     -(2**-21), 1_699_999_999.9999995, 1e-300, -1e-7)]
    got = _by_twin(rows)
    assert got is not None
    for a, b in zip(got, _by_pyarrow(rows), strict=True):
        a.validate(full=True)
        assert a.equals(b)


@pytest.mark.parametrize("bad", [
    (1 << 63, 0, 0, 0.0, "", b"", 0.0), (0, 1 << 31, 0, 0.0, "", b"", 0.0), (0, 0, 1 << 15, 0.0, "", b"", 0.0),
    (True, 0, 0, 0.0, "", b"", 0.0), (1.0, 0, 0, 0.0, "", b"", 0.0), (0, 0, 0, 1, "", b"", 0.0),
    (0, 0, 0, 0.0, b"", b"", 0.0), (0, 0, 0, 0.0, "", "", 0.0), (0, 0, 0, 0.0, "\ud800", b"", 0.0),
    (0, 0, 0, 0.0, ""), (0, 0, 0, 0.0, "", b"", 1), (0, 0, 0, 0.0, "", b"", float("nan")),
    (0, 0, 0, 0.0, "", b"", float("inf")), (0, 0, 0, 0.0, "", b"", 9.3e12),
])
def test_twin_leaves_other_values_to_pyarrow(bad: tuple[object, ...]) -> None:
    assert _by_twin([(1, 2, 3, 4.0, "x", b"y", 1.0), bad]) is None


@pytest.mark.parametrize("capture", CAPTURES[:8] + CAPTURES[-4:], ids=lambda p: p.name)
def test_event_batches_are_the_same_where_values_are_left_to_pyarrow(
        capture: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row columns built by the typed pass equal pyarrow's conversion (what the events table does for the
    values the typed pass leaves); a body the body column leaves to orjson (a float) sits between the others."""
    messages = list(iter_capture(str(capture), Summary()))
    # One body the body column's twin leaves to orjson (a float), between the others.
    first = messages[0]
    odd = dataclasses.replace(first, message=dataclasses.replace(first.message, body={"x": 1.5, "ErrorCode": 3}))
    messages.insert(len(messages) // 2, odd)
    batches = []
    typed = events._columns
    for columns in (typed, lambda rows, kinds: None):
        monkeypatch.setattr(events, "_columns", columns)
        table = events.EventTable(capture="x")
        for m in messages:
            table.add(m)
        batches.append(table.take())
    batches[0].validate(full=True)
    assert batches[0].num_rows == len(messages)
    for other in batches[1:]:
        assert batches[0].equals(other)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_event_batches_are_the_same_with_bodies_written_by_the_decoders(capture: object) -> None:
    """``read`` has the decoders write Produce and Fetch bodies as JSON text (``takes_text``): the same batch as
    from the decoded dicts, and the same summary."""
    batches, summaries, texts = [], [], []
    for body_text in (False, True):
        summary = Summary()
        table = events.EventTable(capture="x")
        messages = list(iter_capture(str(capture), summary, body_text=body_text))
        for m in messages:
            table.add(m)
        batches.append(table.take())
        summaries.append((summary.rows(), summary.accounting(), summary.frames, summary.messages,
                          summary.decode_failures, summary.decode_warnings, summary.limits))
        texts.append(sum(m.message.text is not None for m in messages))
    assert batches[0].equals(batches[1])
    assert summaries[0] == summaries[1]
    assert texts[0] == 0
    has_text_apis = any(key in (0, 1) for key in batches[0].column("api_key").to_pylist())
    assert (texts[1] > 0) == has_text_apis


def test_bodies_come_as_text_only_for_the_headers_level() -> None:
    assert events.EventTable().takes_text == (events._BodyColumn is not None)
    assert not events.EventTable(records=events.RecordsOptions(level="records")).takes_text
    assert not events.EventTable(records=events.RecordsOptions(level="size")).takes_text
