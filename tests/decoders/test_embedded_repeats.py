"""Group metadata repeated within one JoinGroup (decoders/embedded.py ``_decode_each_metadata``): bytes equal to
ones already decoded in the message give the same result and cost the same elements as decoding them again."""

from __future__ import annotations

from typing import Any

from decoders import _runtime as rt
from decoders.api import decode_request_within, decode_response_within
from decoders.element_budget import ElementBudget
from decoders.embedded import decode_versioned
from tests.decoders.test_embedded import join_group_request, join_group_response, subscription

SCHEMA = "ConsumerProtocolSubscription"


def sub(version: int = 1, topics: tuple[str, ...] = ("orders", "payments")) -> bytes:
    s = subscription(version)
    s.topics = list(topics)
    return bytes(s.encode())


def fresh(raw: bytes) -> tuple[dict[str, Any], int]:
    """What decoding ``raw`` alone gives, and the elements it spends."""
    budget = ElementBudget()
    result = decode_versioned(SCHEMA, raw, budget)
    result["inferred"] = False
    return result, rt.MAX_ELEMENTS - budget.left


def spent(frame: bytes, postprocess: bool, response: bool = False) -> tuple[Any, int]:
    budget = ElementBudget()
    if response:
        msg = decode_response_within(frame, 11, 7, None, postprocess, budget)
    else:
        msg = decode_request_within(frame, postprocess, budget)
    assert msg.ok, msg.status
    return msg, rt.MAX_ELEMENTS - budget.left


def test_repeated_subscriptions_decode_and_cost_as_each_alone() -> None:
    same, other = sub(), sub(topics=("audit",))
    frame = join_group_request(7, "consumer", [("cooperative-sticky", same), ("range", same), ("roundrobin", other),
                                               ("sticky", same)])
    msg, total = spent(frame, True)
    _, raw_total = spent(frame, False)
    decoded = [p["MetadataDecoded"] for p in msg.body["Protocols"]]
    expected = [fresh(raw) for raw in (same, same, other, same)]
    assert decoded == [result for result, _ in expected]
    assert all(d["status"] == "ok" for d in decoded)
    assert len({id(d) for d in decoded}) == 4  # each protocol has a result of its own
    assert total == raw_total + sum(cost for _, cost in expected)
    assert total > raw_total + 3  # the repeats were charged, not free


def test_a_repeat_the_budget_cannot_pay_stops_like_a_fresh_decode() -> None:
    same = sub(topics=("a", "b", "c", "d"))
    frame = join_group_request(7, "consumer", [("range", same), ("roundrobin", same)])
    _, raw_total = spent(frame, False)
    _, cost = fresh(same)
    exact = decode_request_within(frame, True, ElementBudget(raw_total + 2 * cost))
    assert [p["MetadataDecoded"]["status"] for p in exact.body["Protocols"]] == ["ok", "ok"]
    assert not exact.notes
    short = decode_request_within(frame, True, ElementBudget(raw_total + 2 * cost - 1))
    first, second = (p["MetadataDecoded"] for p in short.body["Protocols"])
    assert first["status"] == "ok"
    assert second["status"].startswith("limit: array of"), second
    assert short.notes and short.notes[-1].startswith("embedded: 1 structure(s) not decoded")


def test_many_members_alike_and_apart() -> None:
    # More distinct subscriptions than the few remembered, interleaved with repeats.
    raws = [sub(topics=(f"t{i % 7}",)) for i in range(30)]
    frame = join_group_response(7, "consumer", [(f"m-{i}", raw) for i, raw in enumerate(raws)])
    msg, total = spent(frame, True, response=True)
    _, raw_total = spent(frame, False, response=True)
    expected = [fresh(raw) for raw in raws]
    assert [m["MetadataDecoded"] for m in msg.body["Members"]] == [result for result, _ in expected]
    assert total == raw_total + sum(cost for _, cost in expected)
