"""One finding, one problem, for the classic group kinds (pipelines/README.md, "Episode keys"): two problems of
one member, leader or group are two findings; repeats of one problem one finding whose detail, count and span are
true for it."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession

from pipelines import group_inventory, groups, identity, lag, rebalances
from pipelines.findings import episodes
from tests.pipelines.rows import B1, by_subject, events, exchange, naive, pairs_of
from tests.pipelines.test_groups import GROUP, join, sub, sync, topic_metadata
from tests.pipelines.test_rebalances import _join as rejoin
from tests.pipelines.test_rebalances import _sync as resync


def test_inconsistent_group_protocol_one_finding_per_offer(spark: SparkSession) -> None:
    df = events(spark, join(0, 1, "m-1", ["roundrobin"], selected="roundrobin"),
                join(5, 2, "", ["range"], error=23), join(10, 2, "", ["range"], error=23),
                join(15, 2, "", ["sticky"], error=23))
    found = by_subject(groups.inconsistent_group_protocol(df))
    assert set(found) == {"JoinGroup protocol type [consumer] offering [range]",
                          "JoinGroup protocol type [consumer] offering [sticky]"}
    range_ = found["JoinGroup protocol type [consumer] offering [range]"]
    assert (range_["occurrences"], range_["ts_first"], range_["ts_last"]) == (1, naive(5), naive(10.001))
    assert "rejected 2 JoinGroup request(s)" in range_["detail"] and "offering [range]" in range_["detail"]
    assert pairs_of(range_) == [(2, 105), (2, 110)] and range_["group_id"] == GROUP


def test_group_protocol_mismatch_types_apart_from_names_and_generations_together(spark: SparkSession) -> None:
    """The key is the group and what is inconsistent: the same two types in generations 3 and 5 are one finding
    that names both generations."""
    df = events(spark, join(0, 1, "m-1", ["range"], gen=3, resp_type=None),
                join(1, 2, "m-2", ["range"], gen=3, ptype="connect", resp_type=None),
                join(10, 1, "m-1", ["range"], gen=4), sync(11, 1, "m-1", 4, {"m-1": {"orders": [0]}}, pname="sticky"),
                join(20, 1, "m-1", ["range"], gen=5, resp_type=None),
                join(21, 2, "m-2", ["range"], gen=5, ptype="connect", resp_type=None))
    found = by_subject(groups.group_protocol_mismatch(df))
    assert set(found) == {"protocol types 'connect' vs 'consumer'", "protocol names 'range' vs 'sticky'"}
    types = found["protocol types 'connect' vs 'consumer'"]
    assert (types["occurrences"], types["ts_first"], types["ts_last"]) == (2, naive(0), naive(21))
    assert "Generation 3 of group" in types["detail"] and "Generation 5 of group" in types["detail"]
    assert pairs_of(types) == [(1, 100), (1, 120), (2, 101), (2, 121)]
    assert found["protocol names 'range' vs 'sticky'"]["occurrences"] == 1


def test_undecodable_group_metadata_every_failure_counted(spark: SparkSession) -> None:
    truncated, unknown = "truncated: 3 bytes, no version", "unknown version 9 of ConsumerProtocolSubscription"
    df = events(spark, join(0, 1, "m-1", ["range"], status=truncated), join(5, 1, "m-1", ["range"], status=unknown),
                join(10, 1, "m-1", ["range"], status=truncated),
                sync(12, 1, "m-1", 1, {"m-1": {"orders": [0]}}, status=unknown.replace("Subscription", "Assignment")))
    found = by_subject(groups.undecodable_group_metadata(df))
    assert set(found) == {"JoinGroup request metadata as 'consumer'", "SyncGroup request assignment as 'consumer'"}
    metadata = found["JoinGroup request metadata as 'consumer'"]
    assert (metadata["ts_first"], metadata["ts_last"]) == (naive(0), naive(10))
    assert "3 JoinGroup request metadata blob(s)" in metadata["detail"]
    assert f"{truncated} (2), {unknown} (1)" in metadata["detail"], metadata["detail"]
    assert pairs_of(metadata) == [(1, 100), (1, 105), (1, 110)]


def test_overlapping_assignment_one_finding_per_assignor_of_a_leader(spark: SparkSession) -> None:
    twice = {"m-1": {"orders": [0, 1]}, "m-2": {"orders": [1]}}
    df = events(spark, sync(0, 1, "m-1", 2, twice), sync(10, 1, "m-1", 3, twice),
                sync(20, 1, "m-1", 4, twice, pname="sticky"))
    found = by_subject(groups.overlapping_assignment(df))
    assert set(found) == {"assignor range", "assignor sticky"}
    range_ = found["assignor range"]
    assert (range_["occurrences"], range_["ts_first"], range_["ts_last"]) == (2, naive(0), naive(10))
    assert "for generation 2 of group" in range_["detail"] and "for generation 3 of group" in range_["detail"]
    assert "Seen 2 times" in range_["detail"] and pairs_of(range_) == [(1, 200), (1, 210)]


def test_unassigned_partitions_one_finding_per_topics_left_out(spark: SparkSession) -> None:
    members = [("m-1", sub(["orders", "audit"])), ("m-2", sub(["orders", "audit"]))]

    def generation(t: float, gen: int, orders: list[int], audit: list[int]) -> list[dict[str, Any]]:
        return join(t, 1, "m-1", ["range"], gen=gen, members=members) + sync(
            t + 1, 1, "m-1", gen, {"m-1": {"orders": [0, 1], "audit": audit}, "m-2": {"orders": orders}})
    df = events(spark, topic_metadata(0, 4), topic_metadata(0.5, 2, "audit"), generation(1, 2, [2], [0, 1]),
                generation(10, 3, [2, 3], [0]), generation(20, 4, [2], [0, 1]))
    found = by_subject(groups.unassigned_partitions(df, identity.identity_observations(df)))
    assert set(found) == {"topics orders", "topics audit"}
    orders = found["topics orders"]
    assert (orders["occurrences"], orders["ts_first"], orders["ts_last"]) == (2, naive(2), naive(21))
    assert "generation 2 of group" in orders["detail"] and "generation 4 of group" in orders["detail"]
    assert "orders [3] of 4" in orders["detail"] and pairs_of(orders) == [(1, 202), (1, 221)]
    assert "audit [1] of 2" in found["topics audit"]["detail"]


def _as(rows: list[dict[str, Any]], client_id: str | None = None, group: str | None = None) -> list[dict[str, Any]]:
    """``rows`` of another client id, or of another group."""
    for r in rows:
        if client_id is not None:
            r["client_id"] = client_id
        if group is not None and r["group_id"] is not None:
            r["group_id"] = group
            r["body"] = r["body"].replace(json.dumps(GROUP), json.dumps(group))
    return rows


def _software(t: float, conn: int, name: str, version: str, client_id: str) -> list[dict[str, Any]]:
    return _as(exchange(18, 3, {"ClientSoftwareName": name, "ClientSoftwareVersion": version},
                        {"ErrorCode": 0, "ApiKeys": []}, t=t, conn=conn, corr=1, client_port=41000 + conn),
               client_id)


def test_classic_group_can_move_one_finding_per_group(spark: SparkSession) -> None:
    """Its key is the group (and its coordinator): there is one thing to do per group, moving it; every member
    client that can move is named in that one finding, and another group is another finding."""
    df = events(spark, _software(0, 1, "apache-kafka-java", "4.0.0", "a"), _software(0, 2, "librdkafka", "2.12.0", "b"),
                _software(0, 3, "kafka-python", "2.0.2", "c"),
                _as(join(1, 1, "m-1", ["range"]), "a"), _as(join(2, 2, "m-2", ["range"]), "b"),
                _as(join(3, 3, "m-3", ["range"]), "c"), _as(join(4, 1, "m-1", ["range"], gen=2), "a"),
                _as(join(5, 3, "m-4", ["range"]), "c", group="billing"),
                _as(join(6, 1, "m-5", ["range"]), "a", group="billing"))
    the_lag = lag.lag_of(df, identity.identity_observations(df))
    out = group_inventory.classic_group_can_move(df, group_inventory.inventory(df, the_lag))
    found = {r["group_id"]: r.asDict(recursive=True) for r in episodes(out).collect()}
    assert set(found) == {GROUP, "billing"}
    orders = found[GROUP]
    assert (orders["occurrences"], orders["ts_first"], orders["ts_last"]) == (1, naive(1), naive(4))
    assert "2 of its member client(s) run software that supports the consumer group protocol" in orders["detail"]
    assert "a (192.0.2.10; apache-kafka-java 4.0.0); b (192.0.2.10; librdkafka 2.12.0)" in orders["detail"]
    assert "Not known to support it: c (192.0.2.10; kafka-python 2.0.2)" in orders["detail"]
    assert orders["broker"] == f"{B1}:9092" and pairs_of(orders) == [(1, 101), (2, 102)]


def test_rebalance_storm_one_finding_per_group_naming_each_storm(spark: SparkSession) -> None:
    """The key is the group and its protocol: a group that storms twice, an hour apart, is one finding, whose
    detail tells each storm with its count, generations and time; another group is another finding."""
    n = rebalances.STORM_REBALANCES
    step = rebalances.STORM_WINDOW_S / n * 0.9

    def storm(start: float, gen: int, corr: int) -> list[list[dict[str, Any]]]:
        return [g for i in range(n) for g in (rejoin(start + i * step, f"m{gen + i}", gen + i, corr + 2 * i),
                                              resync(start + i * step + 1, f"m{gen + i}", gen + i, corr + 2 * i + 1))]
    df = events(spark, *storm(0, 1, 1), *storm(3600, n + 1, 1000),
                *[_as(g, group="h") for g in storm(0, 1, 5000)])
    found = {r["group_id"]: r.asDict(recursive=True) for r in episodes(rebalances.rebalance_storm(df)).collect()}
    assert set(found) == {"g", "h"}
    g = found["g"]
    assert (g["occurrences"], g["ts_first"], g["ts_last"]) == (1, naive(0), naive(3600 + (n - 1) * step + 1.1))
    assert f"rebalanced in 2 storms: {n} times within" in g["detail"], g["detail"]
    assert f"(generations 1 to {n}, from 2024-05-01 12:00:00.000)" in g["detail"]
    assert f"(generations {n + 1} to {2 * n}, from 2024-05-01 13:00:00.000)" in g["detail"]
