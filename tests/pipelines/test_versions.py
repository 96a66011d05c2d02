"""Requests at versions the broker did not advertise; KIP-919 controller endpoints."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from pipelines import version_discipline as versions
from tests.pipelines.rows import B1, B2, CLIENT, details, events, exchange, expected, project


def api_versions(t: float, conn: int, broker: str = B1) -> list[dict[str, Any]]:
    keys = [{"ApiKey": 1, "MinVersion": 4, "MaxVersion": 12}, {"ApiKey": 3, "MinVersion": 0, "MaxVersion": 12}]
    return exchange(18, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"},
                    {"ErrorCode": 0, "ApiKeys": keys, "ThrottleTimeMs": 0}, t=t, conn=conn, corr=0, broker=broker,
                    client_port=42000 + conn)


def request(t: float, conn: int, key: int, version: int, corr: int, broker: str = B1) -> list[dict[str, Any]]:
    return exchange(key, version, {}, {"ErrorCode": 0}, t=t, conn=conn, corr=corr, broker=broker,
                    client_port=42000 + conn)


def test_unadvertised_version(spark: SparkSession) -> None:
    df = events(
        spark,
        api_versions(0, 1),
        request(1, 1, 1, 12, 1),  # Fetch v12: advertised
        request(2, 1, 1, 13, 2),  # Fetch v13: above 12
        request(3, 1, 0, 9, 3),  # Produce: not advertised at all
        request(4, 2, 1, 16, 1),  # another connection without ApiVersions: the broker's answer on conn 1 counts
        request(5, 3, 1, 16, 1, broker=B2),  # a broker never seen advertising: cannot judge
    )
    out = versions.unadvertised_version(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("unadvertised_version", "warning", f"{CLIENT}:42001", f"{B1}:9092", None, [(1, 2)]),
        ("unadvertised_version", "warning", f"{CLIENT}:42001", f"{B1}:9092", None, [(1, 3)]),
        ("unadvertised_version", "warning", f"{CLIENT}:42002", f"{B1}:9092", None, [(2, 1)]),
    ]))
    text = details(out)
    assert any("Fetch v13 request(s)" in d and "advertises Fetch v4-12 in its ApiVersions response on that "
               "connection" in d for d in text)
    assert any("does not advertise Produce at all" in d for d in text)
    assert any("Fetch v16" in d and "on another connection" in d for d in text)


def describe_cluster(t: float, conn: int, endpoint_type: int, error: int) -> list[dict[str, Any]]:
    return exchange(60, 1, {"IncludeClusterAuthorizedOperations": False, "EndpointType": endpoint_type},
                    {"ThrottleTimeMs": 0, "ErrorCode": error, "ErrorMessage": None, "EndpointType": endpoint_type,
                     "ClusterId": "c", "ControllerId": 1, "Brokers": []},
                    t=t, conn=conn, corr=1, client_port=43000 + conn, port=9093)


def test_endpoint_type_mismatch(spark: SparkSession) -> None:
    df = events(spark, describe_cluster(0, 1, 2, 114), describe_cluster(1, 2, 1, 115), describe_cluster(2, 3, 1, 0))
    out = versions.endpoint_type_mismatch(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("endpoint_type_mismatch", "warning", f"{CLIENT}:43001", f"{B1}:9093", None, [(1, 1)]),
        ("endpoint_type_mismatch", "warning", f"{CLIENT}:43002", f"{B1}:9093", None, [(2, 1)]),
    ]))
    text = " ".join(details(out))
    assert "asked for controller endpoints and got MISMATCHED_ENDPOINT_TYPE (114)" in text
    assert "--bootstrap-controller" in text and "UNSUPPORTED_ENDPOINT_TYPE (115)" in text


def test_controller_direct_access(spark: SparkSession) -> None:
    df = events(spark, describe_cluster(0, 1, 2, 0), describe_cluster(1, 2, 2, 0), describe_cluster(2, 3, 1, 0),
                describe_cluster(3, 4, 2, 114))
    out = versions.controller_direct_access(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("controller_direct_access", "info", None, f"{B1}:9093", None, [(1, 1), (2, 1)]),
    ]))
    assert "2 DescribeCluster request(s) with EndpointType=controller over 2 connection(s)" in details(out)[0]
