"""One finding, one problem: per kind, two distinct problems of one client are two findings, and repeats of one
problem one finding whose detail, count and span are true for it (pipelines/README.md, "Episode keys")."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from pipelines import client_usage as clients
from pipelines import groups, hotspots, identity
from pipelines import version_discipline as versions
from pipelines.findings import episodes
from tests.pipelines.rows import B1, CLIENT, at, events, exchange
from tests.pipelines.test_groups import join
from tests.pipelines.test_identity import TWO_BROKERS, api_versions, metadata
from tests.pipelines.test_versions import api_versions as advertised


def _found(df: DataFrame) -> dict[str, dict[str, Any]]:
    """The episodes by subject."""
    out = {r["subject"]: r.asDict(recursive=True) for r in episodes(df).collect()}
    assert all(s is not None for s in out)
    return out


def req(t: float, key: int, version: int, corr: int, conn: int = 1) -> list[dict[str, Any]]:
    return exchange(key, version, {}, {"ErrorCode": 0}, t=t, conn=conn, corr=corr, client_port=42000 + conn)


def test_removed_in_kafka_4_one_finding_per_removed_version(spark: SparkSession) -> None:
    # the client: Produce v2 (twice), Fetch v3, ListOffsets v0, OffsetCommit v1, on one connection
    df = events(spark, req(0, 0, 2, 1), req(1, 1, 3, 2), req(2, 2, 0, 3), req(3, 8, 1, 4), req(4, 0, 2, 5),
                req(5, 0, 9, 6))
    found = _found(clients.removed_in_kafka_4(df))
    who = f"{CLIENT} client id test-client: "
    assert set(found) == {who + "Produce v2", who + "Fetch v3", who + "ListOffsets v0", who + "OffsetCommit v1"}
    produce = found[who + "Produce v2"]
    assert produce["ts_first"] == at(0).replace(tzinfo=None) and produce["ts_last"] == at(4).replace(tzinfo=None)
    assert "sent 2 Produce request(s) at v2" in produce["detail"] and "move to Produce v3 or later" in produce["detail"]
    assert [(e["conn_id"], e["correlation_id"]) for e in produce["evidence"]] == [(1, 1), (1, 5)]
    assert "Fetch request(s) at v3" in found[who + "Fetch v3"]["detail"]
    assert all("first is described" not in f["detail"] for f in found.values())


def test_unadvertised_version_one_finding_per_version(spark: SparkSession) -> None:
    df = events(spark, advertised(0, 1), req(1, 1, 13, 1), req(2, 1, 13, 2), req(3, 1, 14, 3),
                req(4, 1, 13, 4, conn=2))  # Fetch v13 again on a second connection: the same problem
    found = _found(versions.unadvertised_version(df))
    assert set(found) == {f"{CLIENT} client id test-client: Fetch v13", f"{CLIENT} client id test-client: Fetch v14"}
    v13 = found[f"{CLIENT} client id test-client: Fetch v13"]
    assert "3 Fetch v13 request(s)" in v13["detail"] and len(v13["evidence"]) == 3 and v13["client"] is None


def test_hot_spots_one_finding_per_broker_and_api(spark: SparkSession) -> None:
    def failing(key: int, start: int, n: int) -> list[dict[str, Any]]:
        return [r for i in range(n) for r in exchange(key, 4, {}, {"ErrorCode": 7}, t=start + i, conn=start + i,
                                                          corr=1)]
    found = _found(hotspots.error_hotspot(events(spark, failing(0, 0, 4), failing(1, 10, 5))))
    assert set(found) == {"Produce", "Fetch"}
    assert "4 of 4 responses" in found["Produce"]["detail"] and "5 of 5 responses" in found["Fetch"]["detail"]


def test_misrouted_api_versions_apart_by_identity_and_repeats_together(spark: SparkSession) -> None:
    df = events(spark, metadata(0, 1, TWO_BROKERS), api_versions(1, 2, B1, "c-AAAA", 2, error=None),
                api_versions(2, 2, B1, "c-AAAA", 2, error=None), api_versions(3, 2, B1, "c-AAAA", 9, error=None))
    found = _found(identity.misrouted_api_versions(df, identity.identity_observations(df)))
    assert set(found) == {"asks for node 2 of cluster c-AAAA", "asks for node 9 of cluster c-AAAA"}
    node2 = found["asks for node 2 of cluster c-AAAA"]
    assert node2["occurrences"] == 2 and node2["detail"].endswith(
        "Seen 2 times from 2024-05-01 12:00:01.000 to 2024-05-01 12:00:02.000.")


def test_group_protocol_not_offered_every_generation_one_finding(spark: SparkSession) -> None:
    df = events(spark, join(0, 1, "m-1", ["range"], selected="roundrobin", gen=4),
                join(10, 1, "m-1", ["range"], selected="roundrobin", gen=5),
                join(20, 1, "m-1", ["range"], selected="sticky", gen=6))
    found = _found(groups.group_protocol_not_offered(df))
    assert set(found) == {"selected roundrobin, offered [range]", "selected sticky, offered [range]"}
    assert "for generations 4, 5 of group" in found["selected roundrobin, offered [range]"]["detail"]
