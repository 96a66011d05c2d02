"""The per-message element budget (``max_elements``, the CLI's ``--max-elements``)."""

from __future__ import annotations

import struct

import pytest

from decoders import _runtime as rt
from decoders import decode_request, decode_response
from decoders.api import decode_request_within
from decoders.element_budget import ElementBudget
from tests.frames import metadata_request_v0, metadata_response_v0


def test_all_arrays_of_a_message_share_one_budget() -> None:
    # MetadataResponse v0: 3 brokers + 4 topics, each topic with an empty Partitions array -> 7 elements.
    frame = metadata_response_v0(5, [(1, "a", 9092), (2, "b", 9092), (3, "c", 9092)], ["t1", "t2", "t3", "t4"])
    assert decode_response(frame, 3, 0, max_elements=7).ok
    short = decode_response(frame, 3, 0, max_elements=6)
    assert short.status.startswith("limit: array of 4 elements") and "--max-elements" in short.status
    assert short.error_path == "Topics" and short.body is None


def test_budget_is_per_message_not_per_process() -> None:
    frame = metadata_request_v0(1, [f"t{i}" for i in range(10)])
    for _ in range(3):
        assert decode_request(frame, max_elements=10).ok
    assert not decode_request(frame, max_elements=9).ok
    assert decode_request(frame).ok
    budget = ElementBudget(10)
    assert decode_request_within(frame, False, budget).ok and budget.left == 0  # the 10 topics spent it
    assert decode_request_within(frame, False, budget).status.startswith("limit: array of 10 elements")
    assert not decode_request_within(frame, False, ElementBudget(9)).ok


@pytest.mark.parametrize("count", [rt.MAX_ELEMENTS + 1, 3_500_000])
def test_default_budget_stops_a_frame_of_tiny_elements(count: int) -> None:
    # MetadataRequest v0 with empty topic names: 2 bytes an element.
    body = struct.pack(">i", count) + b"\x00\x00" * count
    frame = struct.pack(">hhih", 3, 0, 7, 1) + b"x" + body
    msg = decode_request(frame)
    assert msg.status.startswith(f"limit: array of {count} elements"), msg.status
    if count == rt.MAX_ELEMENTS + 1:
        assert decode_request(frame, max_elements=count).ok


def test_truncation_is_reported_before_the_budget() -> None:
    frame = struct.pack(">hhih", 3, 0, 7, 1) + b"x" + struct.pack(">i", 2**31 - 1)
    assert decode_request(frame, max_elements=0).status.startswith("truncated: count 2147483647")
