"""KIP-1242 identity checks: broker identity learned from the traffic, ApiVersions v5 identities."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from pipelines import identity
from tests.pipelines.rows import B1, B2, CLIENT, details, events, exchange, expected, project

CLUSTER = "c-AAAA"


def metadata(t: float, conn: int, brokers: list[tuple[int, str, int]], cluster: str | None = CLUSTER,
             broker: str = B1, corr: int = 1) -> list[dict[str, object]]:
    body = {"ThrottleTimeMs": 0, "Brokers": [{"NodeId": n, "Host": h, "Port": p, "Rack": None} for n, h, p in brokers],
            "ClusterId": cluster, "ControllerId": 1, "Topics": []}
    return exchange(3, 12, {"Topics": []}, body, t=t, conn=conn, corr=corr, broker=broker,
                    resp_cols={"cluster_id": cluster})


def api_versions(t: float, conn: int, broker: str, cluster: str | None, node: int, error: int | None = 0,
                 version: int = 5) -> list[dict[str, object]]:
    req = {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1", "ClusterId": cluster, "NodeId": node}
    return exchange(18, version, req, None if error is None else {"ErrorCode": error, "ApiKeys": []}, t=t,
                    conn=conn, corr=7, broker=broker, client_port=40000 + conn,
                    req_cols={"cluster_id": cluster, "node_id": node}, answered=error is not None)


TWO_BROKERS = [(1, B1, 9092), (2, B2, 9092)]


def test_misrouted_api_versions_flags_identity_of_another_broker(spark: SparkSession) -> None:
    df = events(
        spark,
        metadata(0, 1, TWO_BROKERS),
        api_versions(1, 2, B2, CLUSTER, 1, error=129),  # meant node 1, reached node 2: caught by the broker
        api_versions(2, 3, B2, "other-cluster", 2, error=None),  # wrong cluster, no answer
        api_versions(3, 4, B1, CLUSTER, 1),  # right broker: fine
        api_versions(4, 5, B2, CLUSTER, 2),  # right broker: fine
        api_versions(5, 6, B2, None, -1),  # no identity: nothing to check
    )
    out = identity.misrouted_api_versions(df, identity.identity_observations(df))
    assertDataFrameEqual(project(out), expected(spark, [
        ("misrouted_api_versions", "warning", f"{CLIENT}:40002", f"{B2}:9092", None, [(2, 7)]),
        ("misrouted_api_versions", "error", f"{CLIENT}:40003", f"{B2}:9092", None, [(3, 7)]),
    ]))
    text = details(out)
    assert "asks for node 1 of cluster c-AAAA, but 198.51.100.2:9092 is node 2 of cluster c-AAAA" in text[0]
    assert "answered REBOOTSTRAP_REQUIRED (129)" in text[0]
    assert "did not answer" in text[1] and "cluster other-cluster" in text[1]


def test_misrouted_api_versions_uses_the_identity_at_that_time(spark: SparkSession) -> None:
    df = events(
        spark,
        metadata(0, 1, [(1, B1, 9092)]),
        api_versions(5, 2, B1, CLUSTER, 1),  # node 1 then: fine
        metadata(10, 3, [(7, B1, 9092)]),  # B1:9092 is node 7 from now on
        api_versions(15, 4, B1, CLUSTER, 1),  # still asks for node 1: misrouted now
        api_versions(16, 5, B1, CLUSTER, 7),  # fine
    )
    out = identity.misrouted_api_versions(df, identity.identity_observations(df))
    assertDataFrameEqual(project(out), expected(spark, [
        ("misrouted_api_versions", "error", f"{CLIENT}:40004", f"{B1}:9092", None, [(4, 7)]),
    ]))


def test_misrouted_api_versions_before_any_metadata_uses_the_first_identity_seen(spark: SparkSession) -> None:
    df = events(spark, api_versions(0, 2, B2, CLUSTER, 1), metadata(3, 1, TWO_BROKERS))
    out = identity.misrouted_api_versions(df, identity.identity_observations(df))
    assert [r["client"] for r in out.collect()] == [f"{CLIENT}:40002"]


def test_advertised_host_names_resolve_through_the_hosts_table(spark: SparkSession) -> None:
    df = events(spark, metadata(0, 1, [(1, "kafka-1.example", 9092), (2, "KAFKA-2.example", 9092)]),
                api_versions(1, 2, B2, CLUSTER, 1))
    without = identity.misrouted_api_versions(df, identity.identity_observations(df))
    # the connection's own endpoint (B1) learns only the cluster: B2 stays unknown
    assert without.count() == 0
    hosts = identity.hosts_frame(spark, [("kafka-1.example", B1), ("kafka-2.example", B2)])
    with_hosts = identity.misrouted_api_versions(df, identity.identity_observations(df, hosts))
    assertDataFrameEqual(project(with_hosts), expected(spark, [
        ("misrouted_api_versions", "error", f"{CLIENT}:40002", f"{B2}:9092", None, [(2, 7)]),
    ]))


def test_read_hosts_accepts_name_ip_and_etc_hosts_order(tmp_path: Path) -> None:
    f = tmp_path / "hosts"
    f.write_text("# brokers\nkafka-1 198.51.100.1\n198.51.100.2 kafka-2 kafka-2.internal\n\nbroken\n")
    assert identity.read_hosts(str(f)) == [
        ("kafka-1", "198.51.100.1"), ("kafka-2", "198.51.100.2"), ("kafka-2.internal", "198.51.100.2")]


def test_one_sided_identity(spark: SparkSession) -> None:
    df = events(
        spark,
        api_versions(0, 1, B1, CLUSTER, -1, error=42),  # only ClusterId, rejected as KIP-1242 says
        api_versions(1, 2, B1, None, 3, error=0),  # only NodeId, accepted: the broker is wrong too
        api_versions(2, 3, B1, CLUSTER, 3),  # both: not one-sided
        api_versions(3, 4, B1, None, -1),  # neither
        api_versions(4, 5, B1, None, 3, error=0, version=4),  # v4 has no identity fields
    )
    out = identity.api_versions_one_sided_identity(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("api_versions_one_sided_identity", "warning", f"{CLIENT}:40001", f"{B1}:9092", None, [(1, 7)]),
        ("api_versions_one_sided_identity", "error", f"{CLIENT}:40002", f"{B1}:9092", None, [(2, 7)]),
    ]))
    text = details(out)
    assert any("sets only ClusterId c-AAAA" in d and "answered INVALID_REQUEST (42)" in d for d in text)
    assert any("sets only NodeId 3" in d and "answered NONE (0)" in d for d in text)


def test_rebootstrap_required_counts_per_client_broker_and_api(spark: SparkSession) -> None:
    df = events(
        spark,
        api_versions(0, 1, B1, CLUSTER, 9, error=129),
        exchange(3, 13, {"Topics": []}, {"ErrorCode": 129, "Brokers": [], "Topics": []}, t=1, conn=1, corr=8,
                 client_port=40001),
        exchange(3, 13, {"Topics": []}, {"ErrorCode": 129, "Brokers": [], "Topics": []}, t=2, conn=1, corr=9,
                 client_port=40001),
        api_versions(3, 2, B1, CLUSTER, 1, error=0),
    )
    out = identity.rebootstrap_required(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("rebootstrap_required", "warning", f"{CLIENT}:40001", f"{B1}:9092", None, [(1, 7)]),
        ("rebootstrap_required", "warning", f"{CLIENT}:40001", f"{B1}:9092", None, [(1, 8), (1, 9)]),
    ]))
    assert any("answered 2 Metadata request(s)" in d for d in details(out))


def test_endpoint_identity_changed_node_and_cluster(spark: SparkSession) -> None:
    fc = exchange(10, 3, {"Key": "g", "KeyType": 0},
                  {"ErrorCode": 0, "NodeId": 1, "Host": B1, "Port": 9092, "ThrottleTimeMs": 0}, t=1, conn=1, corr=2)
    df = events(
        spark,
        metadata(0, 1, [(1, B1, 9092)]),
        fc,  # agrees (and names no cluster): no change
        metadata(50, 2, [(4, B1, 9092)], cluster="c-BBBB"),  # restarted as node 4 of another cluster
    )
    out = identity.endpoint_identity_changed(identity.identity_observations(df))
    assertDataFrameEqual(project(out), expected(spark, [
        ("endpoint_identity_changed", "warning", None, f"{B1}:9092", None, [(1, 2), (2, 1)]),
        ("endpoint_identity_changed", "warning", None, f"{B1}:9092", None, [(1, 1), (2, 1)]),
    ]))
    text = " ".join(details(out))
    assert "changed node id: it was node id 1" in text and "then node id 4" in text
    assert "changed cluster id: it was cluster id c-AAAA" in text and "then cluster id c-BBBB" in text


def test_endpoint_identity_changed_quiet_when_identity_is_stable(spark: SparkSession) -> None:
    df = events(spark, metadata(0, 1, TWO_BROKERS), metadata(10, 2, TWO_BROKERS, broker=B2),
                metadata(20, 3, TWO_BROKERS, cluster=None))  # Metadata v0/v1 carry no ClusterId
    assert identity.endpoint_identity_changed(identity.identity_observations(df)).count() == 0
