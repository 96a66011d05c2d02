"""Consumer lag from the wire: committed offsets (OffsetCommit, TxnOffsetCommit, OffsetFetch) against log ends
(Fetch high watermarks, ListOffsets latest), per partition and per group over time, and consumer_lag_growing."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from contract.kafka import FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, TXN_OFFSET_COMMIT
from pipelines.identity import identity_observations
from pipelines.lag import MIN_GROWTH, consumer_lag, consumer_lag_growing, lag_of
from tests.pipelines.rows import at, events, exchange

ORDERS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_corr = iter(range(1, 100_000))


def _commit(t: float, offsets: dict[int, int], errors: dict[int, int] | None = None, api: int = OFFSET_COMMIT,
            version: int = 9) -> list[dict[str, Any]]:
    parts = [{"PartitionIndex": p, "CommittedOffset": o} for p, o in offsets.items()]
    answers = [{"PartitionIndex": p, "ErrorCode": (errors or {}).get(p, 0)} for p in offsets]
    return exchange(api, version, {"GroupId": "g", "Topics": [{"Name": "orders", "Partitions": parts}]},
                    {"Topics": [{"Name": "orders", "Partitions": answers}]}, t=t, corr=next(_corr),
                    req_cols={"group_id": "g"}, conn=1)


def _fetch(t: float, watermarks: dict[int, int], by_id: bool = False) -> list[dict[str, Any]]:
    topic = {"TopicId": ORDERS_ID} if by_id else {"Topic": "orders"}
    parts = [{"PartitionIndex": p, "ErrorCode": 0, "HighWatermark": w} for p, w in watermarks.items()]
    return exchange(FETCH, 16 if by_id else 12, {}, {"ErrorCode": 0, "Responses": [{**topic, "Partitions": parts}]},
                    t=t, corr=next(_corr), conn=2, client_port=50002)


def _metadata(t: float) -> list[dict[str, Any]]:
    return exchange(METADATA, 12, {"Topics": None}, {"ClusterId": "c1", "Topics": [
        {"ErrorCode": 0, "Name": "orders", "TopicId": ORDERS_ID, "Partitions": [{"PartitionIndex": 0}]}]},
        t=t, corr=next(_corr), conn=3, client_port=50003)


def _lag(df: DataFrame) -> list[tuple[Any, ...]]:
    rows = consumer_lag(lag_of(df, identity_observations(df))).orderBy("ts", "partition").collect()
    return [(r["source"], r["partition"], r["committed_offset"], r["log_end_offset"], r["lag"]) for r in rows]


def test_accepted_commits_against_the_latest_log_end(spark: SparkSession) -> None:
    df = events(spark, _fetch(0, {0: 100, 1: 50}), _commit(1, {0: 40, 1: 45}, errors={1: 27}),
                _fetch(2, {0: 130}), _commit(3, {0: 90}, api=TXN_OFFSET_COMMIT, version=3))
    assert _lag(df) == [("OffsetCommit", 0, 40, 100, 60), ("TxnOffsetCommit", 0, 90, 130, 40)]
    (first, _) = consumer_lag(lag_of(df, identity_observations(df))).orderBy("ts").collect()
    naive = [at(s).replace(tzinfo=None) for s in (0.001, 1.001)]  # the commit counts when accepted
    assert [first["log_end_ts"], first["ts"]] == naive


def test_topic_ids_are_named_and_list_offsets_counts_and_offset_fetch_reports(spark: SparkSession) -> None:
    listed = exchange(LIST_OFFSETS, 7, {}, {"Topics": [{"Name": "orders", "Partitions": [
        {"PartitionIndex": 1, "ErrorCode": 0, "Timestamp": -1, "Offset": 70}]}]}, t=0.5, corr=next(_corr), conn=4)
    fetched_v8 = exchange(OFFSET_FETCH, 8, {}, {"Groups": [{"GroupId": "g", "ErrorCode": 0, "Topics": [
        {"Name": "orders", "Partitions": [{"PartitionIndex": 1, "CommittedOffset": 20, "ErrorCode": 0},
                                          {"PartitionIndex": 2, "CommittedOffset": -1, "ErrorCode": 0}]}]}]},
        t=2, corr=next(_corr), conn=1)
    fetched_v5 = exchange(OFFSET_FETCH, 5, {"GroupId": "old"}, {"ErrorCode": 0, "Topics": [
        {"Name": "orders", "Partitions": [{"PartitionIndex": 1, "CommittedOffset": 5, "ErrorCode": 0}]}]},
        t=3, corr=next(_corr), conn=1, req_cols={"group_id": "old"})
    df = events(spark, _metadata(0), _fetch(0.2, {0: 500}, by_id=True), listed, _commit(1, {0: 400}),
                fetched_v8, fetched_v5)
    rows = consumer_lag(lag_of(df, identity_observations(df))).orderBy("ts").collect()
    assert [(r["group_id"], r["topic"], r["partition"], r["lag"], r["source"]) for r in rows] == [
        ("g", "orders", 0, 100, "OffsetCommit"), ("g", "orders", 1, 50, "OffsetFetch"),
        ("old", "orders", 1, 65, "OffsetFetch")]


def _falling_behind(growth: int) -> list[list[dict[str, Any]]]:
    """The log end grows by 100 + growth per second, the group commits 100 more per second."""
    out = []
    for i in range(10):
        out.append(_fetch(i, {0: 1000 + i * (100 + growth)}))
        out.append(_commit(i + 0.5, {0: 900 + i * 100}))
    return out


def test_a_group_falling_behind_is_a_finding_and_one_keeping_up_is_not(spark: SparkSession) -> None:
    behind = events(spark, *_falling_behind(50))
    (f,) = consumer_lag_growing(lag_of(behind, identity_observations(behind))).collect()
    assert f["kind"] == "consumer_lag_growing" and f["severity"] == "warning" and f["group_id"] == "g"
    assert "Group g keeps committing on topic orders (10 commits on 1 partition(s)) while its lag grows" in f["detail"]
    points = lag_of(behind, identity_observations(behind)).points.orderBy("point").collect()
    assert [p["lag"] for p in points][-1] == 100 + 9 * 50 and points[-1]["commits"] == 10
    keeping_up = events(spark, *_falling_behind(0))
    assert consumer_lag_growing(lag_of(keeping_up, identity_observations(keeping_up))).collect() == []
    stuck = events(spark, *[g for i in range(10) for g in (_fetch(i, {0: 1000 + i * 300}), _commit(i + .5, {0: 900}))])
    assert consumer_lag_growing(lag_of(stuck, identity_observations(stuck))).collect() == []  # no progress
    assert 9 * 50 >= MIN_GROWTH
