"""One finding, one problem, for the heartbeat group kinds and the lag (pipelines/README.md, "Episode keys"): two
problems of one group are two findings; repeats of one problem one finding whose detail, count and span are true
for it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from contract.kafka import (
    CONSUMER_GROUP_HEARTBEAT,
    FENCED_MEMBER_EPOCH,
    FETCH,
    METADATA,
    OFFSET_COMMIT,
    UNKNOWN_MEMBER_ID,
)
from pipelines import heartbeat_coverage, heartbeat_groups, identity, lag
from tests.pipelines.rows import by_subject, events, exchange, naive
from tests.pipelines.test_heartbeat_groups import ORDERS, _hb

AUDIT = "AAAAAAAAAAAAAAAAAAAAAg"  # another topic id
_corr = iter(range(50_000, 100_000))


def test_heartbeat_overlapping_assignment_one_finding_per_member_given(spark: SparkSession) -> None:
    """The key is the member given partitions another still held: b given them at epochs 2 and 4 is one finding
    naming both epochs, c another."""
    df = events(spark, _hb(1, "a", 0, 1, parts=[0, 1, 2], port=1), _hb(2, "b", 0, 2, parts=[1], port=2),
                _hb(3, "c", 0, 3, parts=[2], port=3), _hb(4, "a", 1, port=1),
                _hb(5, "b", 2, 4, parts=[0, 1], port=2), _hb(6, "a", 1, port=1))
    found = by_subject(heartbeat_groups.overlapping_assignment(df))
    assert set(found) == {"consumer group member b", "consumer group member c"}
    b = found["consumer group member b"]
    assert (b["occurrences"], b["ts_first"], b["ts_last"], b["client"]) == (2, naive(2.001), naive(5.001),
                                                                            "192.0.2.10:2")
    assert "at epoch 2, 1 partition(s)" in b["detail"] and "at epoch 4, 2 partition(s)" in b["detail"]
    assert f"{ORDERS}-0 -> a (epoch 1) + b (epoch 4)" in b["detail"]
    assert {e["conn_id"] for e in b["evidence"]} == {1, 2}
    assert "at epoch 3, 1 partition(s)" in found["consumer group member c"]["detail"]


def test_group_member_errors_one_finding_per_member_and_error(spark: SparkSession) -> None:
    df = events(spark, _hb(1, "a", 3, error=FENCED_MEMBER_EPOCH, port=1),
                _hb(2, "a", 3, error=FENCED_MEMBER_EPOCH, port=1), _hb(3, "a", 0, error=UNKNOWN_MEMBER_ID, port=1))
    found = by_subject(heartbeat_groups.group_member_errors(df))
    assert set(found) == {"consumer group member a: FENCED_MEMBER_EPOCH (110)",
                          "consumer group member a: UNKNOWN_MEMBER_ID (25)"}
    fenced = found["consumer group member a: FENCED_MEMBER_EPOCH (110)"]
    assert (fenced["occurrences"], fenced["ts_first"], fenced["ts_last"]) == (1, naive(1.001), naive(2.001))
    assert "answered 2 ConsumerGroupHeartbeat request(s) of member a" in fenced["detail"]
    assert len(fenced["evidence"]) == 2


def _beat(t: float, member: str, epoch: int, port: int, answer: int | None = None,
          parts: dict[str, list[int]] | None = None, subscribe: list[str] | None = None) -> list[dict[str, Any]]:
    """A ConsumerGroupHeartbeat of ``member`` (its epoch ``epoch``, subscribing to ``subscribe``), answered with
    ``answer`` and, when ``parts`` is given, an assignment of those partitions by topic id."""
    assignment = None if parts is None else {"TopicPartitions": [{"TopicId": k, "Partitions": p}
                                                                 for k, p in parts.items()]}
    return exchange(CONSUMER_GROUP_HEARTBEAT, 0,
                    {"GroupId": "g", "MemberId": member, "MemberEpoch": epoch, "SubscribedTopicNames": subscribe},
                    {"ErrorCode": 0, "MemberId": member, "MemberEpoch": epoch if answer is None else answer,
                     "Assignment": assignment}, t=t, corr=next(_corr), conn=port, client_port=port,
                    req_cols={"group_id": "g"})


def test_heartbeat_unassigned_partitions_one_finding_per_topics_left_out(spark: SparkSession) -> None:
    """A stable KIP-848 group leaving orders-2 to nobody, then audit-1, then orders-2 again: the two orders gaps
    are one finding (its client names no member: the gap is the group's assignor's)."""
    topics = exchange(METADATA, 12, {"Topics": None}, {"ClusterId": "c1", "Topics": [
        {"ErrorCode": 0, "Name": "orders", "TopicId": ORDERS, "Partitions": [{"PartitionIndex": i} for i in range(3)]},
        {"ErrorCode": 0, "Name": "audit", "TopicId": AUDIT, "Partitions": [{"PartitionIndex": i} for i in range(2)]}]},
        t=0, corr=next(_corr), conn=9, client_port=9)
    both = ["orders", "audit"]
    beats = [g for i in range(3, 51) for g in (_beat(i, "a", 1 if i < 25 else 3 if i < 38 else 4, 1),
                                               _beat(i + 0.5, "b", 2, 2))]
    df = events(spark, topics, _beat(1, "a", 0, 1, 1, {ORDERS: [0], AUDIT: [0, 1]}, both),
                _beat(2, "b", 0, 2, 2, {ORDERS: [1]}, both), *beats,
                _beat(25, "a", 1, 1, 3, {ORDERS: [0, 2], AUDIT: [0]}),
                _beat(38, "a", 3, 1, 4, {ORDERS: [0], AUDIT: [0, 1]}))
    found = by_subject(heartbeat_coverage.unassigned_partitions(df, identity.identity_observations(df)))
    assert set(found) == {"topics orders", "topics audit"}
    orders = found["topics orders"]
    assert (orders["occurrences"], orders["ts_first"], orders["ts_last"]) == (2, naive(2.001), naive(38.001))
    assert orders["client"] is None and "orders [2] of 3" in orders["detail"]
    assert "from 12:00:02.001" in orders["detail"] and "from 12:00:38.001" in orders["detail"]
    assert "audit [1] of 2" in found["topics audit"]["detail"]


def _commit(t: float, topic: str, offset: int) -> list[dict[str, Any]]:
    return exchange(OFFSET_COMMIT, 9, {"GroupId": "g", "Topics": [
        {"Name": topic, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": offset}]}]},
        {"Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "ErrorCode": 0}]}]}, t=t, corr=next(_corr),
        req_cols={"group_id": "g"}, conn=1)


def _fetch(t: float, topic: str, watermark: int) -> list[dict[str, Any]]:
    return exchange(FETCH, 12, {}, {"ErrorCode": 0, "Responses": [{"Topic": topic, "Partitions": [
        {"PartitionIndex": 0, "ErrorCode": 0, "HighWatermark": watermark}]}]}, t=t, corr=next(_corr), conn=2,
        client_port=50002)


def test_consumer_lag_growing_one_finding_per_topic(spark: SparkSession) -> None:
    """The key is the group and the topic (within a report, one finding per group and topic whatever the number of
    commits): a group falling behind on two topics is two findings."""
    behind = [g for topic, growth in (("orders", 50), ("audit", 80)) for i in range(10)
              for g in (_fetch(i, topic, 1000 + i * (100 + growth)), _commit(i + 0.5, topic, 900 + i * 100))]
    df = events(spark, *behind)
    found = by_subject(lag.consumer_lag_growing(lag.lag_of(df, identity.identity_observations(df))))
    assert set(found) == {"topic orders", "topic audit"}
    orders = found["topic orders"]
    # the commits as accepted (their responses)
    assert (orders["occurrences"], orders["ts_first"], orders["ts_last"]) == (1, naive(0.501), naive(9.501))
    assert "(10 commits on 1 partition(s)) while its lag grows: 100 records behind early on, 550 at its last commit" \
        in orders["detail"]
    assert len(orders["evidence"]) == 10 and orders["group_id"] == "g"
    assert "100 records behind early on, 820 at its last commit" in found["topic audit"]["detail"]
