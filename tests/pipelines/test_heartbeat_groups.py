"""Heartbeat groups (KIP-848 consumer, KIP-1071 streams, KIP-932 share): overlapping assignments, fenced and
unknown members, and each member epoch as a rebalance; topic ids named from Metadata."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession

from contract.kafka import (
    CONSUMER_GROUP_HEARTBEAT,
    FENCED_MEMBER_EPOCH,
    METADATA,
    SHARE_GROUP_HEARTBEAT,
    STREAMS_GROUP_HEARTBEAT,
    UNRELEASED_INSTANCE_ID,
)
from pipelines.heartbeat_groups import group_member_errors, heartbeat_rebalances, overlapping_assignment
from pipelines.rebalances import rebalance_storm, rebalances
from tests.pipelines.rows import events, exchange

ORDERS = "AAAAAAAAAAAAAAAAAAAAAQ"  # a topic id, as Kafka writes them
_corr = iter(range(1, 10_000))


def _hb(t: float, member: str, epoch: int, answer_epoch: int | None = None,
        parts: list[int] | None = None, error: int = 0, api: int = CONSUMER_GROUP_HEARTBEAT, port: int = 50000,
        topic: str = ORDERS) -> list[dict[str, Any]]:
    """One heartbeat exchange of ``member`` (request epoch ``epoch``), answered with ``answer_epoch`` (default: the
    same) and, when ``parts`` is given, a new assignment of those partitions."""
    response: dict[str, Any] = {"ErrorCode": error, "MemberId": member,
                                "MemberEpoch": epoch if answer_epoch is None else answer_epoch}
    if parts is not None:
        if api == STREAMS_GROUP_HEARTBEAT:
            response["ActiveTasks"] = [{"SubtopologyId": "0", "Partitions": parts}]
        else:
            response["Assignment"] = {"TopicPartitions": [{"TopicId": topic, "Partitions": parts}]}
    elif api == STREAMS_GROUP_HEARTBEAT:
        response["ActiveTasks"] = None
    else:
        response["Assignment"] = None
    return exchange(api, 0, {"GroupId": "g", "MemberId": member, "MemberEpoch": epoch}, response,
                    t=t, corr=next(_corr), conn=port, client_port=port, req_cols={"group_id": "g"})


def _metadata(t: float) -> list[dict[str, Any]]:
    return exchange(METADATA, 12, {"Topics": None}, {"ClusterId": "c1", "Topics": [
        {"ErrorCode": 0, "Name": "orders", "TopicId": ORDERS, "Partitions": [{"PartitionIndex": 0}]}]},
        t=t, corr=next(_corr), conn=9, client_port=9)


def test_a_partition_moved_before_its_owner_let_go_is_an_overlap(spark: SparkSession) -> None:
    df = events(spark, _metadata(0),
                _hb(1, "a", 0, 1, parts=[0, 1], port=1), _hb(2, "b", 0, 2, parts=[1, 2], port=2),
                _hb(3, "a", 1, port=1),  # a goes on heartbeating, still holding 1
                _hb(4, "a", 1, 2, parts=[0], port=1))  # and is told to let go only now
    (f,) = overlapping_assignment(df).collect()
    assert f["kind"] == "overlapping_assignment" and f["severity"] == "error" and f["group_id"] == "g"
    assert "gave member b (192.0.2.10:2) of consumer group g, at epoch 2, 1 partition(s)" in f["detail"]
    assert "orders-1 -> a (epoch 1) + b (epoch 2)" in f["detail"]  # the id named from Metadata
    assert len(f["evidence"]) == 2


def test_revoked_first_then_reassigned_is_no_overlap(spark: SparkSession) -> None:
    df = events(spark,
                _hb(1, "a", 0, 1, parts=[0, 1], port=1),
                _hb(2, "a", 1, 2, parts=[0], port=1),  # a is told to let go of 1 first
                _hb(3, "b", 0, 2, parts=[1], port=2),
                _hb(4, "a", 2, port=1), _hb(5, "b", 2, port=2))
    assert overlapping_assignment(df).collect() == []


def test_an_owner_that_left_fenced_or_went_silent_does_not_overlap(spark: SparkSession) -> None:
    left = events(spark, _hb(1, "a", 0, 1, parts=[0], port=1), _hb(2, "a", -1, -1, port=1),
                  _hb(3, "b", 0, 2, parts=[0], port=2), _hb(4, "b", 2, port=2))
    fenced = events(spark, _hb(1, "a", 0, 1, parts=[0], port=1),
                    _hb(2, "a", 1, error=FENCED_MEMBER_EPOCH, port=1), _hb(3, "b", 0, 2, parts=[0], port=2),
                    _hb(4, "a", 0, 3, parts=[], port=1))
    silent = events(spark, _hb(1, "a", 0, 1, parts=[0], port=1), _hb(50, "b", 0, 2, parts=[0], port=2),
                    _hb(55, "b", 2, port=2))  # a died: the coordinator reassigned after its session timeout
    for df in (left, fenced, silent):
        assert overlapping_assignment(df).collect() == []


def test_streams_tasks_overlap_and_share_groups_never_do(spark: SparkSession) -> None:
    streams = events(spark, _hb(1, "a", 0, 1, parts=[0], api=STREAMS_GROUP_HEARTBEAT, port=1),
                     _hb(2, "b", 0, 2, parts=[0], api=STREAMS_GROUP_HEARTBEAT, port=2),
                     _hb(3, "a", 1, api=STREAMS_GROUP_HEARTBEAT, port=1))
    (f,) = overlapping_assignment(streams).collect()
    assert "of streams group g" in f["detail"] and "task 0-0 -> a (epoch 1) + b (epoch 2)" in f["detail"]
    assert "active task(s)" in f["detail"] and "StreamsGroupHeartbeat" in f["detail"]
    share = events(spark, _hb(1, "a", 0, 1, parts=[0], api=SHARE_GROUP_HEARTBEAT, port=1),
                   _hb(2, "b", 0, 2, parts=[0], api=SHARE_GROUP_HEARTBEAT, port=2),
                   _hb(3, "a", 1, api=SHARE_GROUP_HEARTBEAT, port=1))
    assert overlapping_assignment(share).collect() == []


def test_an_unnamed_topic_id_is_shown_as_the_id(spark: SparkSession) -> None:
    df = events(spark, _hb(1, "a", 0, 1, parts=[3], port=1), _hb(2, "b", 0, 2, parts=[3], port=2),
                _hb(3, "a", 1, port=1))
    (f,) = overlapping_assignment(df).collect()
    assert f"{ORDERS}-3 -> a (epoch 1) + b (epoch 2)" in f["detail"]


def test_member_errors_are_counted_per_member_and_error(spark: SparkSession) -> None:
    df = events(spark, _hb(1, "a", 3, error=FENCED_MEMBER_EPOCH, port=1),
                _hb(2, "a", 3, error=FENCED_MEMBER_EPOCH, port=1),
                _hb(3, "s", 0, error=UNRELEASED_INSTANCE_ID, port=2), _hb(4, "b", 1, port=3))
    found = sorted((r["client"], r["detail"], r["kind"], r["severity"]) for r in group_member_errors(df).collect())
    found = [(d, k, s) for _, d, k, s in found]
    assert [(k, s) for _, k, s in found] == [("group_member_errors", "warning")] * 2
    assert "answered 2 ConsumerGroupHeartbeat request(s) of member a (192.0.2.10:1, client id test-client) of " \
           "consumer group g with FENCED_MEMBER_EPOCH (110): its member epoch was stale" in found[0][0]
    assert "UNRELEASED_INSTANCE_ID (111): a static member" in found[1][0]


def test_each_member_epoch_is_a_rebalance_until_every_member_acknowledged(spark: SparkSession) -> None:
    df = events(spark,
                _hb(0, "a", 0, 1, parts=[0, 1, 2], port=1), _hb(1, "a", 1, port=1),
                _hb(10, "b", 0, 2, parts=[], port=2),  # b joins: epoch 2
                _hb(11, "a", 1, 2, parts=[0, 1], port=1), _hb(12, "b", 2, 2, parts=[2], port=2),
                _hb(13, "a", 2, port=1),  # a acknowledges epoch 2 last
                _hb(20, "b", -1, -1, port=2),  # b leaves: epoch 3, a alone acknowledges
                _hb(21, "a", 2, 3, parts=[0, 1, 2], port=1), _hb(22, "a", 3, port=1))
    rows = [r.asDict() for r in heartbeat_rebalances(df).orderBy("generation").collect()]
    assert [(r["protocol"], r["generation"], r["members"], r["joined"], r["left"], r["complete"]) for r in rows] == [
        ("consumer", 1, ["a"], ["a"], [], True), ("consumer", 2, ["a", "b"], ["b"], [], True),
        ("consumer", 3, ["a"], [], ["b"], True)]
    assert [r["duration_ms"] for r in rows] == [999.0, 2999.0, 999.0]  # first answer -> last acknowledgement
    both = rebalances(df).where("protocol = 'consumer'").count()
    assert both == 3 and rebalance_storm(df).collect() == []


def test_an_epoch_a_member_never_acknowledged_is_incomplete(spark: SparkSession) -> None:
    df = events(spark, _hb(0, "a", 0, 1, parts=[0], port=1), _hb(1, "b", 0, 2, parts=[], port=2),
                _hb(2, "a", 1, port=1), _hb(3, "a", 1, port=1))  # a keeps heartbeating at epoch 1
    rows = {r["generation"]: r for r in heartbeat_rebalances(df).collect()}
    assert rows[2]["complete"] is False and rows[2]["end"] is None and rows[2]["members"] == ["b"]
    assert rows[1]["complete"] is False  # epoch 2 began before a acknowledged epoch 1


def _join(t: float, member: str, port: int, epoch: int, parts: list[int]) -> list[dict[str, Any]]:
    """A member's first heartbeat (epoch 0, subscribing to orders), answered with ``epoch`` and ``parts``."""
    rows = _hb(t, member, 0, epoch, parts=parts, port=port)
    rows[0]["body"] = json.dumps({**json.loads(rows[0]["body"]), "SubscribedTopicNames": ["orders"]})
    return rows


def _three_partitions(t: float) -> list[dict[str, Any]]:
    return exchange(METADATA, 12, {"Topics": None}, {"ClusterId": "c1", "Topics": [
        {"ErrorCode": 0, "Name": "orders", "TopicId": ORDERS,
         "Partitions": [{"PartitionIndex": 0}, {"PartitionIndex": 1}, {"PartitionIndex": 2}]}]},
        t=t, corr=next(_corr), conn=9, client_port=9)


def test_a_stable_group_leaving_a_subscribed_partition_to_nobody(spark: SparkSession) -> None:
    from pipelines.heartbeat_coverage import STABLE_S, unassigned_partitions
    from pipelines.identity import identity_observations

    beats = [g for i in range(1, 2 * STABLE_S) for g in (_hb(2 + i, "a", 1, port=1), _hb(2.5 + i, "b", 2, port=2))]
    gap = events(spark, _three_partitions(0), _join(1, "a", 1, 1, [0]), _join(2, "b", 2, 2, [1]), *beats)
    (f,) = unassigned_partitions(gap, identity_observations(gap)).collect()
    assert f["kind"] == "unassigned_partitions" and f["group_id"] == "g"
    assert "KIP-848 consumer group g was stable" in f["detail"] and "orders [2] of 3" in f["detail"]
    covered = events(spark, _three_partitions(0), _join(1, "a", 1, 1, [0, 2]), _join(2, "b", 2, 2, [1]), *beats)
    assert unassigned_partitions(covered, identity_observations(covered)).collect() == []
    short = events(spark, _three_partitions(0), _join(1, "a", 1, 1, [0]), _join(2, "b", 2, 2, [1]),
                   _hb(5, "a", 1, 2, parts=[0, 2], port=1), *beats)  # the gap closed within STABLE_S
    assert unassigned_partitions(short, identity_observations(short)).collect() == []
