"""Admin write audit (KIP-4) and Envelope forwarding failures (KIP-590)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from pipelines import admin
from tests.pipelines.rows import B1, CLIENT, details, events, exchange, expected, project


def admin_traffic() -> list[list[dict[str, Any]]]:
    create_topics = exchange(
        19, 7,
        {"Topics": [{"Name": "orders", "NumPartitions": 6, "ReplicationFactor": 3, "Assignments": [], "Configs": []}],
         "TimeoutMs": 1000, "ValidateOnly": False},
        {"ThrottleTimeMs": 0, "Topics": [{"Name": "orders", "ErrorCode": 0, "ErrorMessage": None}]},
        t=0, conn=1, corr=1)
    create_acls = exchange(
        30, 3,
        {"Creations": [{"ResourceType": 2, "ResourceName": "orders", "ResourcePatternType": 3,
                        "Principal": "User:mallory", "Host": "*", "Operation": 4, "PermissionType": 3}]},
        {"ThrottleTimeMs": 0, "Results": [{"ErrorCode": 31, "ErrorMessage": None}]},
        t=1, conn=1, corr=2, resp_cols={"nested_error_codes": [31]})
    alter = exchange(
        44, 1,
        {"Resources": [{"ResourceType": 2, "ResourceName": "orders",
                        "Configs": [{"Name": "retention.ms", "ConfigOperation": 0, "Value": "7200000"}]}],
         "ValidateOnly": True},
        None, t=2, conn=2, corr=5, client_port=50002, answered=False)
    return [create_topics, create_acls, alter]


def test_admin_audit_rows(spark: SparkSession) -> None:
    audit = admin.admin_audit(events(spark, *admin_traffic()))
    got = audit.select("conn_id", "correlation_id", "client", "api_name", "targets", "validate_only", "outcome",
                       "error_codes")
    assertDataFrameEqual(got, spark.createDataFrame([
        (1, 1, f"{CLIENT}:50000", "CreateTopics", "topic orders (6 partitions, RF 3)", False, "ok", []),
        (1, 2, f"{CLIENT}:50000", "CreateAcls", "ALLOW User:mallory WRITE on TOPIC:orders from host *", False,
         "failed: CLUSTER_AUTHORIZATION_FAILED (31)", [31]),
        (2, 5, f"{CLIENT}:50002", "IncrementalAlterConfigs", "TOPIC:orders {SET retention.ms=7200000}", True,
         "no response", []),
    ], "conn_id long, correlation_id int, client string, api_name string, targets string, validate_only boolean, "
       "outcome string, error_codes array<smallint>"))


def test_admin_write_findings(spark: SparkSession) -> None:
    audit = admin.admin_audit(events(spark, *admin_traffic()))
    failed = admin.admin_write_failed(audit)
    assertDataFrameEqual(project(failed), expected(spark, [
        ("admin_write_failed", "error", f"{CLIENT}:50000", f"{B1}:9092", None, [(1, 2)]),
    ]))
    assert "not authorised" in details(failed)[0]
    unanswered = admin.admin_write_unanswered(audit)
    assertDataFrameEqual(project(unanswered), expected(spark, [
        ("admin_write_unanswered", "warning", f"{CLIENT}:50002", f"{B1}:9092", None, [(2, 5)]),
    ]))


def test_admin_audit_ignores_reads(spark: SparkSession) -> None:
    df = events(spark, exchange(32, 4, {"Resources": []}, {"ErrorCode": 0, "Results": []}))  # DescribeConfigs
    assert admin.admin_audit(df).count() == 0


def envelope(t: float, corr: int, error: int) -> list[dict[str, Any]]:
    inner = {"apiKey": 19, "apiName": "CreateTopics", "apiVersion": 7, "correlationId": 44, "clientId": "admin-cli",
             "status": "ok", "header": {}, "body": {}}
    req = {"RequestData": "00", "RequestDataDecoded": inner, "RequestPrincipal": "00",
           "RequestPrincipalDecoded": {"status": "ok", "value": {"Type": "User", "Name": "alice"}},
           "ClientHostAddress": "c0000205", "ClientHostAddressDecoded": "192.0.2.5"}
    return exchange(58, 0, req, {"ErrorCode": error, "ResponseData": None}, t=t, conn=3, corr=corr,
                    client_port=50003, port=9093)


def test_envelope_forwarding_failed(spark: SparkSession) -> None:
    df = events(spark, envelope(0, 1, 41), envelope(1, 2, 41), envelope(2, 3, 0), envelope(3, 4, 31))
    out = admin.envelope_forwarding_failed(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("envelope_forwarding_failed", "error", f"{CLIENT}:50003", f"{B1}:9093", None, [(3, 1), (3, 2)]),
        ("envelope_forwarding_failed", "error", f"{CLIENT}:50003", f"{B1}:9093", None, [(3, 4)]),
    ]))
    text = " ".join(details(out))
    assert "forwarded 2 CreateTopics v7 request(s) of principal User:alice (client host 192.0.2.5" in text
    assert "NOT_CONTROLLER (41)" in text and "CLUSTER_AUTHORIZATION_FAILED (31)" in text
