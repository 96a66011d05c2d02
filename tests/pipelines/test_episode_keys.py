"""One finding, one problem: per kind, two distinct problems of one client are two findings, and repeats of one
problem one finding whose detail, count and span are true for it (pipelines/README.md, "Episode keys")."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from pipelines import client_usage as clients
from pipelines import groups, hotspots, identity
from pipelines import version_discipline as versions
from pipelines.findings import episodes
from tests.pipelines.rows import B1, B2, CLIENT, by_subject, events, exchange, naive, pairs_of
from tests.pipelines.test_groups import join
from tests.pipelines.test_identity import TWO_BROKERS, api_versions, metadata
from tests.pipelines.test_versions import api_versions as advertised


def req(t: float, key: int, version: int, corr: int, conn: int = 1) -> list[dict[str, Any]]:
    return exchange(key, version, {}, {"ErrorCode": 0}, t=t, conn=conn, corr=corr, client_port=42000 + conn)


def test_removed_in_kafka_4_one_finding_per_removed_version(spark: SparkSession) -> None:
    # the client: Produce v2 (twice), Fetch v3, ListOffsets v0, OffsetCommit v1, on one connection
    df = events(spark, req(0, 0, 2, 1), req(1, 1, 3, 2), req(2, 2, 0, 3), req(3, 8, 1, 4), req(4, 0, 2, 5),
                req(5, 0, 9, 6))
    found = by_subject(clients.removed_in_kafka_4(df))
    who = f"{CLIENT} client id test-client: "
    assert set(found) == {who + "Produce v2", who + "Fetch v3", who + "ListOffsets v0", who + "OffsetCommit v1"}
    produce = found[who + "Produce v2"]
    assert produce["ts_first"] == naive(0) and produce["ts_last"] == naive(4)
    assert "sent 2 Produce request(s) at v2" in produce["detail"] and "move to Produce v3 or later" in produce["detail"]
    assert [(e["conn_id"], e["correlation_id"]) for e in produce["evidence"]] == [(1, 1), (1, 5)]
    assert "Fetch request(s) at v3" in found[who + "Fetch v3"]["detail"]
    assert all("first is described" not in f["detail"] for f in found.values())


def test_unadvertised_version_one_finding_per_version(spark: SparkSession) -> None:
    df = events(spark, advertised(0, 1), req(1, 1, 13, 1), req(2, 1, 13, 2), req(3, 1, 14, 3),
                req(4, 1, 13, 4, conn=2))  # Fetch v13 again on a second connection: the same problem
    found = by_subject(versions.unadvertised_version(df))
    assert set(found) == {f"{CLIENT} client id test-client: Fetch v13", f"{CLIENT} client id test-client: Fetch v14"}
    v13 = found[f"{CLIENT} client id test-client: Fetch v13"]
    assert "3 Fetch v13 request(s)" in v13["detail"] and len(v13["evidence"]) == 3 and v13["client"] is None


def test_hot_spots_one_finding_per_broker_and_api(spark: SparkSession) -> None:
    def failing(key: int, start: int, n: int) -> list[dict[str, Any]]:
        return [r for i in range(n) for r in exchange(key, 4, {}, {"ErrorCode": 7}, t=start + i, conn=start + i,
                                                          corr=1)]
    found = by_subject(hotspots.error_hotspot(events(spark, failing(0, 0, 4), failing(1, 10, 5))))
    assert set(found) == {"Produce", "Fetch"}
    assert "4 of 4 responses" in found["Produce"]["detail"] and "5 of 5 responses" in found["Fetch"]["detail"]


def test_misrouted_api_versions_apart_by_identity_and_repeats_together(spark: SparkSession) -> None:
    df = events(spark, metadata(0, 1, TWO_BROKERS), api_versions(1, 2, B1, "c-AAAA", 2, error=None),
                api_versions(2, 2, B1, "c-AAAA", 2, error=None), api_versions(3, 2, B1, "c-AAAA", 9, error=None))
    found = by_subject(identity.misrouted_api_versions(df, identity.identity_observations(df)))
    assert set(found) == {"asks for node 2 of cluster c-AAAA", "asks for node 9 of cluster c-AAAA"}
    node2 = found["asks for node 2 of cluster c-AAAA"]
    assert node2["occurrences"] == 2 and node2["detail"].endswith(
        "Seen 2 times from 2024-05-01 12:00:01.000 to 2024-05-01 12:00:02.000.")


def test_group_protocol_not_offered_every_generation_one_finding(spark: SparkSession) -> None:
    df = events(spark, join(0, 1, "m-1", ["range"], selected="roundrobin", gen=4),
                join(10, 1, "m-1", ["range"], selected="roundrobin", gen=5),
                join(20, 1, "m-1", ["range"], selected="sticky", gen=6),
                join(30, 1, "m-9", ["range"], selected="roundrobin", gen=7))  # rejoined under another member id
    found = by_subject(groups.group_protocol_not_offered(df))
    assert set(found) == {"selected roundrobin, offered [range]", "selected sticky, offered [range]"}
    assert "for generations 4, 5, 7 of group orders-app, but members m-1, m-9 (192.0.2.10:41001) offered only " \
           "[range]" in found["selected roundrobin, offered [range]"]["detail"]


def test_old_message_format_produced_apart_from_fetched(spark: SparkSession) -> None:
    def message_set(rows: list[dict[str, Any]], at_: int) -> list[dict[str, Any]]:
        rows[at_]["body"] = '{"Records":{"batches":[{"magic":1}]}}'
        return rows
    df = events(spark, message_set(exchange(0, 2, None, {"ErrorCode": 0}, t=0, corr=1), 0),
                message_set(exchange(1, 3, None, {"ErrorCode": 0}, t=1, corr=2), 1),
                message_set(exchange(0, 2, None, {"ErrorCode": 0}, t=2, corr=3), 0))
    found = by_subject(clients.old_message_format(df))
    who = f"{CLIENT} client id test-client: "
    assert set(found) == {who + "produced MessageSet v0/v1", who + "fetched MessageSet v0/v1"}
    produced = found[who + "produced MessageSet v0/v1"]
    assert (produced["occurrences"], produced["ts_first"], produced["ts_last"]) == (1, naive(0), naive(2))
    assert "sent 2 Produce request(s) with record sets in message format v0/v1" in produced["detail"]
    assert pairs_of(produced) == [(1, 1), (1, 3)] and produced["client"] == f"{CLIENT}:50000"
    assert "received 1 Fetch response(s)" in found[who + "fetched MessageSet v0/v1"]["detail"]


def _describe_cluster(t: float, conn: int, endpoint_type: int, error: int, corr: int = 1,
                      broker: str = B1) -> list[dict[str, Any]]:
    return exchange(60, 1, {"IncludeClusterAuthorizedOperations": False, "EndpointType": endpoint_type},
                    {"ThrottleTimeMs": 0, "ErrorCode": error, "ErrorMessage": None, "EndpointType": endpoint_type,
                     "ClusterId": "c", "ControllerId": 1, "Brokers": []},
                    t=t, conn=conn, corr=corr, client_port=43000 + conn, port=9093, broker=broker)


def test_controller_direct_access_one_finding_per_controller_reached(spark: SparkSession) -> None:
    """Its key is the client (address and client id) and the controller endpoint: two controllers reached are two
    findings, the same one reached over two connections one (its ``client`` then names no one endpoint)."""
    df = events(spark, _describe_cluster(0, 1, 2, 0), _describe_cluster(1, 2, 2, 0),
                _describe_cluster(2, 1, 2, 0, corr=2), _describe_cluster(3, 3, 2, 0, broker=B2))
    found = {r["broker"]: r.asDict() for r in episodes(versions.controller_direct_access(df)).collect()}
    assert set(found) == {f"{B1}:9093", f"{B2}:9093"}
    b1 = found[f"{B1}:9093"]
    assert b1["subject"] == f"{CLIENT} client id test-client: EndpointType=controller" and b1["client"] is None
    assert (b1["ts_first"], b1["ts_last"]) == (naive(0), naive(2.001)) and pairs_of(b1) == [(1, 1), (1, 2), (2, 1)]
    assert "3 DescribeCluster request(s) with EndpointType=controller over 2 connection(s)" in b1["detail"]
    assert found[f"{B2}:9093"]["client"] == f"{CLIENT}:43003"


def test_endpoint_type_mismatch_one_finding_per_endpoint_type_and_error(spark: SparkSession) -> None:
    said = _describe_cluster(2, 1, 2, 114, corr=3)
    said[1]["body"] = said[1]["body"].replace('"ErrorMessage": null', '"ErrorMessage": "not a controller"')
    df = events(spark, _describe_cluster(0, 1, 2, 114, corr=1), _describe_cluster(1, 1, 1, 115, corr=2), said)
    found = by_subject(versions.endpoint_type_mismatch(df))
    assert set(found) == {"controller endpoints: MISMATCHED_ENDPOINT_TYPE (114)",
                          "broker endpoints: UNSUPPORTED_ENDPOINT_TYPE (115)"}
    mismatched = found["controller endpoints: MISMATCHED_ENDPOINT_TYPE (114)"]
    assert (mismatched["ts_first"], mismatched["ts_last"]) == (naive(0), naive(2.001))
    assert "got MISMATCHED_ENDPOINT_TYPE (114) 2 time(s) ('not a controller'):" in mismatched["detail"]
    assert pairs_of(mismatched) == [(1, 1), (1, 3)] and mismatched["client"] == f"{CLIENT}:43001"


def test_latency_hot_spots_one_finding_per_api_of_a_broker(spark: SparkSession) -> None:
    def slow(key: int, start: int, broker: str = B1) -> list[dict[str, Any]]:
        return [r for i in range(5) for r in exchange(key, 4, {}, {"ErrorCode": 0}, t=start + i, conn=start + i,
                                                       corr=1, broker=broker, latency_ms=1500.0 + i)]
    found = hotspots.latency_hotspot(events(spark, slow(3, 0), slow(2, 10), slow(3, 20, broker=B2)))
    by = {(r["subject"], r["broker"]): r.asDict() for r in episodes(found).collect()}
    assert set(by) == {("Metadata", f"{B1}:9092"), ("ListOffsets", f"{B1}:9092"), ("Metadata", f"{B2}:9092")}
    metadata_b1 = by[("Metadata", f"{B1}:9092")]
    assert (metadata_b1["ts_first"], metadata_b1["ts_last"]) == (naive(1.5), naive(5.504))
    assert "over 5 responses" in metadata_b1["detail"] and pairs_of(metadata_b1) == [(4, 1)]  # the slowest


def _api_versions(t: float, corr: int, cluster: str | None, node: int, error: int = 42,
                  conn: int = 1) -> list[dict[str, Any]]:
    req = {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1", "ClusterId": cluster, "NodeId": node}
    return exchange(18, 5, req, {"ErrorCode": error, "ApiKeys": []}, t=t, conn=conn, corr=corr,
                    client_port=40000 + conn, req_cols={"cluster_id": cluster, "node_id": node})


def test_one_sided_identity_only_cluster_apart_from_only_node(spark: SparkSession) -> None:
    df = events(spark, _api_versions(0, 1, "c-AAAA", -1), _api_versions(1, 2, None, 3),
                _api_versions(2, 3, "c-AAAA", -1))
    found = by_subject(identity.api_versions_one_sided_identity(df))
    assert set(found) == {"only ClusterId c-AAAA", "only NodeId 3"}
    cluster = found["only ClusterId c-AAAA"]
    assert (cluster["occurrences"], cluster["ts_first"], cluster["ts_last"]) == (2, naive(0), naive(2.001))
    assert cluster["detail"].endswith("Seen 2 times from 2024-05-01 12:00:00.000 to 2024-05-01 12:00:02.001.")
    assert "sets only ClusterId c-AAAA" in cluster["detail"] and pairs_of(cluster) == [(1, 1), (1, 3)]


def test_rebootstrap_required_one_finding_per_api(spark: SparkSession) -> None:
    def refused(t: float, key: int, corr: int) -> list[dict[str, Any]]:
        return exchange(key, 13, {}, {"ErrorCode": 129}, t=t, corr=corr)
    found = by_subject(identity.rebootstrap_required(events(spark, refused(0, 3, 1), refused(1, 18, 2),
                                                        refused(2, 3, 3))))
    assert set(found) == {"Metadata", "ApiVersions"}
    metadata_ = found["Metadata"]
    assert (metadata_["ts_first"], metadata_["ts_last"]) == (naive(0.001), naive(2.001))
    assert "answered 2 Metadata request(s)" in metadata_["detail"] and pairs_of(metadata_) == [(1, 1), (1, 3)]


def test_endpoint_identity_changed_one_finding_per_change(spark: SparkSession) -> None:
    """Node 1 -> 4 twice (the address flapped between two brokers) is one finding naming both times, 4 -> 1 and a
    cluster change other ones."""
    df = events(spark, metadata(0, 1, [(1, B1, 9092)], corr=1), metadata(10, 1, [(4, B1, 9092)], corr=2),
                metadata(20, 1, [(1, B1, 9092)], corr=3), metadata(30, 1, [(4, B1, 9092)], corr=4))
    found = by_subject(identity.endpoint_identity_changed(identity.identity_observations(df)))
    assert set(found) == {"node id 1 -> 4", "node id 4 -> 1"}
    there = found["node id 1 -> 4"]
    assert (there["ts_first"], there["ts_last"]) == (naive(0.001), naive(30.001))
    assert pairs_of(there) == [(1, 1), (1, 2), (1, 3), (1, 4)]
    said = "last said by a Metadata response at 2024-05-01 12:00:{:06.3f}), then node id 4 (first said by a " \
           "Metadata response at 2024-05-01 12:00:{:06.3f})"
    assert f"changed node id from 1 to 4 2 times: node id 1 ({said.format(0.001, 10.001)}; node id 1 (" \
           f"{said.format(20.001, 30.001)}. A broker was replaced" in there["detail"]
