"""Group protocol checks (KIP-559) and assignment checks beyond the broker."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from pipelines import groups, identity
from tests.pipelines.rows import B1, CLIENT, details, events, exchange, expected, project

GROUP = "orders-app"
OK_SUB = {"schema": "ConsumerProtocolSubscription", "version": 0, "status": "ok", "inferred": False,
          "value": {"Topics": ["orders"], "UserData": ""}}


def sub(topics: list[str], status: str = "ok", inferred: bool = False) -> dict[str, Any]:
    return {"schema": "ConsumerProtocolSubscription", "version": 0, "status": status, "inferred": inferred,
            "value": {"Topics": topics, "UserData": ""}}


def assignment(parts: dict[str, list[int]], status: str = "ok") -> dict[str, Any]:
    return {"schema": "ConsumerProtocolAssignment", "version": 0, "status": status, "inferred": False,
            "value": {"AssignedPartitions": [{"Topic": t, "Partitions": p} for t, p in parts.items()],
                      "UserData": ""}}


def join(t: float, conn: int, member: str, offered: list[str], *, error: int = 0, gen: int = 1,
         selected: str = "range", ptype: str = "consumer", resp_type: str | None = "consumer",
         members: list[tuple[str, dict[str, Any]]] | None = None, status: str = "ok") -> list[dict[str, Any]]:
    req = {"GroupId": GROUP, "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": member,
           "GroupInstanceId": None, "ProtocolType": ptype,
           "Protocols": [{"Name": n, "Metadata": "00", "MetadataDecoded": sub(["orders"], status)} for n in offered]}
    resp: dict[str, Any] = {"ThrottleTimeMs": 0, "ErrorCode": error, "GenerationId": gen if error == 0 else -1,
                            "ProtocolName": selected if error == 0 else None, "Leader": "", "MemberId": member,
                            "Members": [{"MemberId": m, "GroupInstanceId": None, "Metadata": "00",
                                         "MetadataDecoded": d} for m, d in (members or [])]}
    if resp_type is not None:
        resp["ProtocolType"] = resp_type
    return exchange(11, 7, req, resp, t=t, conn=conn, corr=int(t) + 100, client_port=41000 + conn,
                    req_cols={"group_id": GROUP, "member_id": member, "protocol_type": ptype,
                              "protocol_name": ",".join(offered)},
                    resp_cols={"generation_id": gen if error == 0 else -1, "member_id": member,
                               "protocol_name": selected if error == 0 else None})


def sync(t: float, conn: int, member: str, gen: int, assignments: dict[str, dict[str, list[int]]], *,
         pname: str = "range", ptype: str = "consumer", status: str = "ok") -> list[dict[str, Any]]:
    req = {"GroupId": GROUP, "GenerationId": gen, "MemberId": member, "GroupInstanceId": None, "ProtocolType": ptype,
           "ProtocolName": pname,
           "Assignments": [{"MemberId": m, "Assignment": "00", "AssignmentDecoded": assignment(a, status)}
                           for m, a in assignments.items()]}
    resp = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ProtocolType": ptype, "ProtocolName": pname, "Assignment": "00",
            "AssignmentDecoded": assignment(assignments.get(member, {}))}
    return exchange(14, 5, req, resp, t=t, conn=conn, corr=int(t) + 200, client_port=41000 + conn,
                    req_cols={"group_id": GROUP, "member_id": member, "generation_id": gen, "protocol_type": ptype,
                              "protocol_name": pname})


def topic_metadata(t: float, partitions: int, topic: str = "orders") -> list[dict[str, Any]]:
    body = {"ThrottleTimeMs": 0, "Brokers": [{"NodeId": 1, "Host": B1, "Port": 9092, "Rack": None}],
            "ClusterId": "c1", "ControllerId": 1,
            "Topics": [{"ErrorCode": 0, "Name": topic, "IsInternal": False,
                        "Partitions": [{"ErrorCode": 0, "PartitionIndex": i} for i in range(partitions)]}]}
    return exchange(3, 12, {"Topics": [{"Name": topic}]}, body, t=t, conn=9, corr=int(t) + 300,
                    resp_cols={"cluster_id": "c1"})


def test_inconsistent_group_protocol_names_what_the_group_runs(spark: SparkSession) -> None:
    df = events(
        spark,
        join(0, 1, "m-1", ["roundrobin"], selected="roundrobin"),
        join(5, 2, "", ["range"], error=23),
        join(10, 2, "", ["range"], error=23),
    )
    out = groups.inconsistent_group_protocol(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("inconsistent_group_protocol", "error", f"{CLIENT}:41002", f"{B1}:9092", GROUP, [(2, 105), (2, 110)]),
    ]))
    (text,) = details(out)
    assert "rejected 2 JoinGroup request(s)" in text and "INCONSISTENT_GROUP_PROTOCOL (23)" in text
    assert "offering [range]" in text and "members run [roundrobin]" in text


def test_inconsistent_group_protocol_quiet_without_error_23(spark: SparkSession) -> None:
    df = events(spark, join(0, 1, "m-1", ["range"]), join(1, 2, "m-2", ["range", "roundrobin"]),
                join(2, 3, "", ["range"], error=79))
    assert groups.inconsistent_group_protocol(df).count() == 0


def test_group_protocol_not_offered(spark: SparkSession) -> None:
    df = events(spark, join(0, 1, "m-1", ["range"], selected="roundrobin", gen=4),
                join(1, 2, "m-2", ["roundrobin", "range"], selected="roundrobin", gen=4))
    out = groups.group_protocol_not_offered(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("group_protocol_not_offered", "error", f"{CLIENT}:41001", f"{B1}:9092", GROUP, [(1, 100)]),
    ]))
    assert "selected protocol roundrobin for generation 4" in details(out)[0]


def test_group_protocol_mismatch_types_and_names_within_a_generation(spark: SparkSession) -> None:
    df = events(
        spark,
        join(0, 1, "m-1", ["range"], gen=3, ptype="consumer", resp_type=None),
        join(1, 2, "m-2", ["range"], gen=3, ptype="connect", resp_type=None),
        sync(2, 1, "m-1", 3, {"m-1": {"orders": [0]}, "m-2": {"orders": [1]}}, pname="range", ptype="consumer"),
        sync(3, 2, "m-2", 3, {}, pname="sticky", ptype="consumer"),
    )
    out = groups.group_protocol_mismatch(df)
    rows = sorted((r["kind"], r["group_id"], r["client"]) for r in out.collect())
    assert rows == [("group_protocol_mismatch", GROUP, None)] * 2
    text = " ".join(details(out))
    assert "declared with protocol types 'connect' (JoinGroup request of 192.0.2.10:41002)" in text
    assert "'consumer' (" in text
    assert "declared with protocol names 'range' (" in text and "'sticky' (SyncGroup " in text


def test_group_protocol_mismatch_quiet_when_all_agree(spark: SparkSession) -> None:
    df = events(
        spark,
        join(0, 1, "m-1", ["range"], gen=3),
        join(1, 2, "m-2", ["range", "roundrobin"], gen=3),
        sync(2, 1, "m-1", 3, {"m-1": {"orders": [0]}, "m-2": {"orders": [1]}}),
        sync(3, 2, "m-2", 3, {}),
    )
    assert groups.group_protocol_mismatch(df).count() == 0


def test_undecodable_group_metadata(spark: SparkSession) -> None:
    df = events(
        spark,
        join(0, 1, "m-1", ["range"], status="truncated: 3 bytes, no version"),
        join(1, 2, "m-2", ["range"]),
        sync(2, 1, "m-1", 1, {"m-1": {"orders": [0]}}, status="unknown version 9 of ConsumerProtocolAssignment"),
    )
    out = groups.undecodable_group_metadata(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("undecodable_group_metadata", "warning", f"{CLIENT}:41001", f"{B1}:9092", GROUP, [(1, 100)]),
        ("undecodable_group_metadata", "warning", f"{CLIENT}:41001", f"{B1}:9092", GROUP, [(1, 202)]),
    ]))
    text = " ".join(details(out))
    assert "JoinGroup request metadata blob(s)" in text and "truncated: 3 bytes" in text
    assert "do not decode as protocol type 'consumer'" in text


def test_undecodable_group_metadata_ignores_unknown_protocol_types(spark: SparkSession) -> None:
    custom = "not decoded: no embedded schema for protocol type 'sr'"
    df = events(spark, join(0, 1, "m-1", ["v0"], ptype="sr", status=custom))
    assert groups.undecodable_group_metadata(df).count() == 0


def test_overlapping_assignment(spark: SparkSession) -> None:
    df = events(
        spark,
        sync(0, 1, "m-1", 2, {"m-1": {"orders": [0, 1]}, "m-2": {"orders": [1, 2], "audit": [0]},
                              "m-3": {"audit": [0]}}),
        sync(1, 1, "m-1", 3, {"m-1": {"orders": [0, 1]}, "m-2": {"orders": [2]}}),  # next generation: fine
    )
    out = groups.overlapping_assignment(df)
    assertDataFrameEqual(project(out), expected(spark, [
        ("overlapping_assignment", "error", f"{CLIENT}:41001", f"{B1}:9092", GROUP, [(1, 200)]),
    ]))
    text = details(out)[0]
    assert "gives 2 partition(s) to more than one member: audit-0 -> m-2 + m-3; orders-1 -> m-1 + m-2" in text


def test_unassigned_partitions(spark: SparkSession) -> None:
    members = [("m-1", sub(["orders"])), ("m-2", sub(["orders"]))]
    df = events(
        spark,
        topic_metadata(0, 4),
        join(1, 1, "m-1", ["range"], gen=2, members=members),
        sync(2, 1, "m-1", 2, {"m-1": {"orders": [0, 1]}, "m-2": {"orders": [2]}}),  # orders-3 to nobody
        join(10, 1, "m-1", ["range"], gen=3, members=members),
        sync(11, 1, "m-1", 3, {"m-1": {"orders": [0, 1]}, "m-2": {"orders": [2, 3]}}),  # complete
    )
    obs = identity.identity_observations(df)
    out = groups.unassigned_partitions(df, obs)
    assertDataFrameEqual(project(out), expected(spark, [
        ("unassigned_partitions", "warning", f"{CLIENT}:41001", f"{B1}:9092", GROUP, [(1, 202)]),
    ]))
    assert "orders [3] of 4" in details(out)[0]


def test_unassigned_partitions_cooperative_rebalance_assigns_in_the_next_generation(spark: SparkSession) -> None:
    members = [("m-1", sub(["orders"])), ("m-2", sub(["orders"]))]
    coop = "cooperative-sticky"
    df = events(
        spark,
        topic_metadata(0, 3),
        join(1, 1, "m-1", [coop], gen=5, selected=coop, members=members),
        sync(2, 1, "m-1", 5, {"m-1": {"orders": [0]}, "m-2": {"orders": [1]}}, pname=coop),  # 2 being moved
        join(3, 1, "m-1", [coop], gen=6, selected=coop, members=members),
        sync(4, 1, "m-1", 6, {"m-1": {"orders": [0]}, "m-2": {"orders": [1, 2]}}, pname=coop),
    )
    assert groups.unassigned_partitions(df).count() == 0


def test_unassigned_partitions_needs_partition_counts(spark: SparkSession) -> None:
    members = [("m-1", sub(["orders"]))]
    df = events(spark, join(1, 1, "m-1", ["range"], gen=2, members=members),
                sync(2, 1, "m-1", 2, {"m-1": {"orders": [0]}}))  # no Metadata: cannot judge
    assert groups.unassigned_partitions(df).count() == 0
