"""Tagged fields and record sets spend the per-message element budget (``--max-elements``), as arrays do.

An ApiVersions v3 request whose header carried 5 M empty unknown tagged fields (a 23 MB frame) took ``read`` to
1.22 GB and was decoded "ok": tagged fields were not charged. A Produce of 1.6 M empty record batches (a 98 MB
frame) took it to 2.45 GB: neither were record sets. Now each tagged field costs one element and each batch
the values of its summary (20), spent before anything is built; past the budget the message's status is a
``limit: ...`` one, on the compiled readers, the JSON text writers and the plain generated readers alike.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decoders import decode_request, decode_response
from decoders.api import decode_request_bytes
from decoders.element_budget import BATCH_ELEMENTS, record_set_elements
from decoders.records import decode_records
from tests.decoders.record_builders import SAMPLE, all_inputs, legacy_set, v2_batch
from tests.frames import kstr

#: A batch's headers-level summary, from the protocol (KIP-98's RecordBatch header): where it starts, its 13
#: header fields, the 5 things its attributes say (compression, timestamp type, transactional, control,
#: delete horizon) and its status.
SUMMARY_VALUES = 1 + 13 + 5 + 1


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str) -> bytes:
    return uvarint(len(s) + 1) + s.encode()


def unknown_tags(n: int, first: int = 100) -> bytes:
    """``n`` empty tagged fields numbered from ``first`` (none known to ApiVersions or its header)."""
    return uvarint(n) + b"".join(uvarint(first + i) + b"\x00" for i in range(n))


def api_versions_v3(header_tags: bytes = b"\x00", body_tags: bytes = b"\x00") -> bytes:
    """An ApiVersions v3 request (request header v2): the frame without its length prefix."""
    return struct.pack(">hhi", 18, 3, 7) + kstr("tagger") + header_tags + cstr("client") + cstr("1.0") + body_tags


def produce_v3(record_set: bytes) -> bytes:
    """A Produce v3 request, one topic, one partition holding ``record_set``."""
    body = kstr(None) + struct.pack(">hi", 1, 1000) + struct.pack(">i", 1) + kstr("t")
    body += struct.pack(">iii", 1, 0, len(record_set)) + record_set
    return struct.pack(">hhi", 0, 3, 9) + kstr("producer") + body


# ----------------------------------------------------------------------------------------------------
# Tagged fields


@pytest.mark.parametrize("where", ["header", "body"])
def test_each_tagged_field_costs_one_element(where: str) -> None:
    tags = unknown_tags(50)
    frame = api_versions_v3(header_tags=tags) if where == "header" else api_versions_v3(body_tags=tags)
    msg = decode_request(frame, max_elements=50)
    assert msg.ok, msg.status
    holder = msg.header if where == "header" else msg.body
    assert holder is not None and len(holder["_unknownTaggedFields"]) == 50
    short = decode_request(frame, max_elements=49)
    prefix = "header " if where == "header" else ""
    assert short.status.startswith(f"{prefix}limit: 50 tagged fields exceed the elements left of this message's "
                                   "budget (--max-elements) at _tagged"), short.status
    assert short.body is None


def test_known_tagged_fields_are_charged_too() -> None:
    """A known tag repeated is read again each time (the last one kept): each costs an element."""
    # ApiVersions v3 response (response header v0): ErrorCode, ApiKeys (compact, empty), ThrottleTimeMs, then
    # tag 3 (ZkMigrationReady, a boolean) three times.
    tags = uvarint(3) + b"\x03\x01\x01" * 3
    frame = struct.pack(">ih", 7, 0) + b"\x01" + struct.pack(">i", 0) + tags
    msg = decode_response(frame, 18, 3, max_elements=3)
    assert msg.ok and msg.body is not None and msg.body["ZkMigrationReady"] is True, msg.status
    assert decode_response(frame, 18, 3, max_elements=2).status.startswith("limit: 3 tagged fields")


def test_tags_are_spent_before_any_is_read() -> None:
    """2 M unknown tags with the default budget of 1 M: stopped at the count (no entry built)."""
    msg = decode_request(api_versions_v3(header_tags=uvarint(2_000_000) + b"\x09\x00" * 2_000_000))
    assert msg.status.startswith("header limit: 2000000 tagged fields exceed"), msg.status


def test_a_count_that_cannot_fit_is_truncation_before_the_budget() -> None:
    msg = decode_request(api_versions_v3(header_tags=uvarint(10_000) + b"\x09\x00" * 10), max_elements=1)
    assert msg.status.startswith("header truncated: count 10000") or msg.status.startswith("truncated"), msg.status


# ----------------------------------------------------------------------------------------------------
# Record sets


def empty_batch() -> bytes:
    """The smallest v2 batch: a 61-byte header and no records (built with kafka-python)."""
    batch = v2_batch([])
    assert len(batch) == 61
    return batch


def test_a_batch_costs_the_values_of_its_summary() -> None:
    assert BATCH_ELEMENTS == SUMMARY_VALUES
    summary = decode_records(v2_batch(SAMPLE))["batches"][0]
    assert len(summary) == SUMMARY_VALUES  # the dict path builds one value per key


@pytest.mark.parametrize("text", [False, True], ids=["dict", "text"])
def test_each_batch_of_a_record_set_spends_the_budget(text: bool) -> None:
    frame = produce_v3(empty_batch() * 10)
    cost = 10 * SUMMARY_VALUES + 2  # the topics and partitions arrays, one element each
    msg = decode_request_bytes(frame, True, cost, text)
    assert msg.ok, msg.status
    short = decode_request_bytes(frame, True, cost - 1, text)
    assert short.status.startswith(f"limit: record set of 10 batches ({10 * SUMMARY_VALUES} elements) exceeds the "
                                   "elements left of this message's budget (--max-elements)"), short.status
    assert short.body is None and short.text is None


def test_default_budget_stops_a_frame_of_tiny_batches() -> None:
    batches = 1_000_000 // SUMMARY_VALUES + 1
    for text in (False, True):
        msg = decode_request_bytes(produce_v3(empty_batch() * batches), True, 1_000_000, text)
        assert msg.status.startswith(f"limit: record set of {batches} batches"), msg.status


@pytest.mark.parametrize("data", all_inputs() + [legacy_set(0, "none", [(i, 0, b"k", b"v") for i in range(7)]),
                                                 empty_batch() * 3 + b"\x00" * 30, b"", b"\xff" * 80])
def test_record_set_cost_counts_the_batches_decode_records_lists(data: bytes) -> None:
    listed = len(decode_records(data)["batches"])
    assert record_set_elements(b"xyz" + data + b"tail", 3, len(data)) == listed * SUMMARY_VALUES


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.sampled_from([empty_batch(), v2_batch(SAMPLE), legacy_set(1, "none", [(0, 5, None, b"v")])]),
                max_size=6), st.binary(max_size=90), st.integers(0, 200))
def test_record_set_cost_whatever_the_bytes(batches: list[bytes], tail: bytes, cut: int) -> None:
    data = (b"".join(batches) + tail)[cut:]
    assert record_set_elements(data, 0, len(data)) == len(decode_records(data)["batches"]) * SUMMARY_VALUES
