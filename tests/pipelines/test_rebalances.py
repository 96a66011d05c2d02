"""Classic rebalances, one row per generation (start, end, members joined and left, reasons), and the
rebalance_storm finding beyond STORM_REBALANCES in STORM_WINDOW_S."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from contract.kafka import JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP
from pipelines.rebalances import STORM_REBALANCES, STORM_WINDOW_S, classic_rebalances, rebalance_storm
from tests.pipelines.rows import events, exchange


def _join(t: float, member: str, generation: int, corr: int, reason: str | None = None) -> list[dict[str, Any]]:
    request = {"GroupId": "g", "MemberId": "", **({"Reason": reason} if reason else {})}
    return exchange(JOIN_GROUP, 9, request, {"ErrorCode": 0, "GenerationId": generation, "MemberId": member},
                    t=t, corr=corr, latency_ms=500.0, req_cols={"group_id": "g"},
                    resp_cols={"generation_id": generation, "member_id": member})


def _sync(t: float, member: str, generation: int, corr: int) -> list[dict[str, Any]]:
    return exchange(SYNC_GROUP, 5, {"GroupId": "g", "GenerationId": generation, "MemberId": member},
                    {"ErrorCode": 0}, t=t, corr=corr, latency_ms=100.0,
                    req_cols={"group_id": "g", "generation_id": generation, "member_id": member})


def test_each_generation_is_a_rebalance_with_who_joined_and_left(spark: SparkSession) -> None:
    df = events(spark, _join(0, "a", 1, 1), _sync(1, "a", 1, 2),
                _join(10, "a", 2, 3), _join(11, "b", 2, 4, reason="rebalance failed due to timeout"),
                _sync(12, "a", 2, 5), _sync(12.5, "b", 2, 6),
                _join(20, "b", 3, 7))  # a left; no SyncGroup of generation 3 in the capture
    rows = [r.asDict() for r in classic_rebalances(df).orderBy("generation").collect()]
    assert [(r["generation"], r["members"], r["joined"], r["left"], r["complete"]) for r in rows] == [
        (1, ["a"], ["a"], [], True), (2, ["a", "b"], ["b"], [], True), (3, ["b"], [], ["a"], False)]
    assert [r["duration_ms"] for r in rows] == [1100.0, 2600.0, 500.0]  # first JoinGroup -> last SyncGroup answer
    assert rows[1]["reasons"] == ["rebalance failed due to timeout"]
    assert rebalance_storm(df).collect() == []


def test_a_storm_is_many_rebalances_in_the_window(spark: SparkSession) -> None:
    step = STORM_WINDOW_S / STORM_REBALANCES * 0.9
    storm = [g for i in range(STORM_REBALANCES) for g in (_join(i * step, f"m{i}", i + 1, 2 * i + 1),
                                                            _sync(i * step + 1, f"m{i}", i + 1, 2 * i + 2))]
    (f,) = rebalance_storm(events(spark, *storm)).collect()
    assert f["kind"] == "rebalance_storm" and f["severity"] == "warning" and f["group_id"] == "g"
    assert f"rebalanced {STORM_REBALANCES} times within {STORM_WINDOW_S // 60} minutes (generations 1 to " \
           f"{STORM_REBALANCES})" in f["detail"]
    assert "members joining: m0, m1, m2, m3, m4" in f["detail"]
    slow = [g for i in range(STORM_REBALANCES) for g in (_join(i * STORM_WINDOW_S / 2, f"m{i}", i + 1, 2 * i + 1),)]
    assert rebalance_storm(events(spark, *slow)).collect() == []


def test_leave_reasons_count_for_the_next_generation(spark: SparkSession) -> None:
    leave = exchange(LEAVE_GROUP, 5, {"GroupId": "g", "Members": [
        {"MemberId": "a", "GroupInstanceId": None, "Reason": "the consumer is being closed"}]},
        {"ErrorCode": 0}, t=5, corr=9, req_cols={"group_id": "g"})
    df = events(spark, _join(0, "a", 1, 1), _sync(1, "a", 1, 2), leave, _join(10, "b", 2, 3), _sync(11, "b", 2, 4))
    rows = {r["generation"]: r for r in classic_rebalances(df).collect()}
    assert rows[1]["reasons"] == [] and rows[2]["reasons"] == ["LeaveGroup: the consumer is being closed"]
    assert rows[2]["left"] == ["a"] and rows[2]["protocol"] == "classic"
