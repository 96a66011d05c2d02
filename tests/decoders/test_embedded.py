"""Protocols embedded in Kafka messages: group member metadata and assignments (Envelope: test_embedded_envelope.py).

* Consumer protocol subscriptions and assignments (v0-v3) are written by kafka-python's
  ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` (and the old
  ``ConsumerProtocolMemberMetadata_v0``) inside JoinGroup/SyncGroup/DescribeGroups frames written
  by kafka-python or kio.
* Kafka Connect worker metadata and assignments are built by hand from Kafka Connect's
  ``ConnectProtocol``/``IncrementalCooperativeConnectProtocol`` layouts.
* Envelope requests/responses are written by kio around complete CreateTopics frames written by
  kio; the principal is built by hand (and checked against kio's DefaultPrincipalData writer).
"""

from __future__ import annotations

import datetime
import struct
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsResponse
from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberMetadata_v0
from kio.schema.join_group.v7.request import JoinGroupRequest as KioJoinGroupRequest
from kio.schema.join_group.v7.request import JoinGroupRequestProtocol as KioJoinGroupProtocol
from kio.static.primitive import i32Timedelta

from decoders import decode_request, decode_response
from tests.decoders import vectors_kio as VK
from tests.decoders import vectors_kp as VP

# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def string(s: str) -> bytes:
    raw = s.encode()
    return i16(len(raw)) + raw


def nullable_bytes(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s: str) -> bytes:
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def subscription(version: int) -> Any:
    """A kafka-python ConsumerProtocolSubscription using every field of ``version``."""
    tp = ConsumerProtocolSubscription.TopicPartition
    return ConsumerProtocolSubscription(
        version=version, topics=["orders", "payments-\u00e9"], user_data=b"\x00\x01sticky",
        owned_partitions=[tp(topic="orders", partitions=[0, 3, 7]), tp(topic="payments-\u00e9", partitions=[])],
        generation_id=41, rack_id="rack-b")


def assignment(version: int) -> Any:
    tp = ConsumerProtocolAssignment.TopicPartition
    return ConsumerProtocolAssignment(
        version=version, assigned_partitions=[tp(topic="orders", partitions=[1, 2]), tp(topic="audit", partitions=[9])],
        user_data=b"ud-\xff")


def check_consumer(decoded: dict[str, Any], obj: Any, schema: str, version: int, inferred: bool) -> None:
    assert decoded["schema"] == schema
    assert decoded["version"] == version
    assert decoded["status"] == "ok", decoded
    assert decoded["inferred"] is inferred
    VP.kp_compare(type(obj)._struct, obj, decoded["value"], version, -1, "value")


def join_group_request(version: int, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bytes:
    proto = JoinGroupRequest.JoinGroupRequestProtocol
    msg = JoinGroupRequest(version=version, group_id="group-1", session_timeout_ms=45000,
                           rebalance_timeout_ms=300000, member_id="member-1", group_instance_id=None,
                           protocol_type=protocol_type,
                           protocols=[proto(name=name, metadata=meta) for name, meta in protocols], reason=None)
    return VP.kp_frame(msg)


def join_group_response(version: int, protocol_type: str | None, members: list[tuple[str, bytes]]) -> bytes:
    member = JoinGroupResponse.JoinGroupResponseMember
    msg = JoinGroupResponse(version=version, throttle_time_ms=0, error_code=0, generation_id=7,
                            protocol_type=protocol_type, protocol_name="range", leader="m-0",
                            skip_assignment=False, member_id="m-0",
                            members=[member(member_id=m, group_instance_id=None, metadata=meta)
                                     for m, meta in members])
    return VP.kp_frame(msg)


def sync_group_request(version: int, protocol_type: str | None, assignments: list[tuple[str, bytes]]) -> bytes:
    item = SyncGroupRequest.SyncGroupRequestAssignment
    msg = SyncGroupRequest(version=version, group_id="group-1", generation_id=7, member_id="m-0",
                           group_instance_id=None, protocol_type=protocol_type, protocol_name="range",
                           assignments=[item(member_id=m, assignment=a) for m, a in assignments])
    return VP.kp_frame(msg)


def sync_group_response(version: int, protocol_type: str | None, raw: bytes) -> bytes:
    msg = SyncGroupResponse(version=version, throttle_time_ms=0, error_code=0, protocol_type=protocol_type,
                            protocol_name="range", assignment=raw)
    return VP.kp_frame(msg)


def describe_groups_response(version: int, protocol_type: str, metadata: bytes, assignment_raw: bytes) -> bytes:
    group = DescribeGroupsResponse.DescribedGroup
    member = group.DescribedGroupMember
    msg = DescribeGroupsResponse(
        version=version, throttle_time_ms=0,
        groups=[group(error_code=0, error_message=None, group_id="group-1", group_state="Stable",
                      protocol_type=protocol_type, protocol_data="range",
                      members=[member(member_id="m-0", group_instance_id=None, client_id="c-0",
                                      client_host="/10.0.0.1", member_metadata=metadata,
                                      member_assignment=assignment_raw)],
                      authorized_operations=None)])
    return VP.kp_frame(msg)


# --------------------------------------------------------------------------------------------
# Consumer protocol
# --------------------------------------------------------------------------------------------

JG_VERSIONS = range(0, 10)


SG_VERSIONS = range(0, 6)


CONSUMER_VERSIONS = range(0, 4)


@pytest.mark.parametrize("sub_version", CONSUMER_VERSIONS)
@pytest.mark.parametrize("jg_version", JG_VERSIONS)
def test_join_group_request_consumer_subscription(jg_version: int, sub_version: int) -> None:
    sub = subscription(sub_version)
    frame = join_group_request(jg_version, "consumer", [("cooperative-sticky", sub.encode()), ("range", b"")])
    msg = decode_request(frame)
    assert msg.ok, msg.status
    protocols = msg.body["Protocols"]
    assert protocols[0]["Metadata"] == sub.encode()  # raw bytes are kept
    check_consumer(protocols[0]["MetadataDecoded"], sub, "ConsumerProtocolSubscription", sub_version, False)
    assert protocols[1]["MetadataDecoded"] == {"schema": "ConsumerProtocolSubscription", "status": "empty",
                                               "inferred": False}


def test_join_group_request_old_kafka_python_encoder() -> None:
    meta = ConsumerProtocolMemberMetadata_v0(0, ["t1", "t2"], b"").encode()
    msg = decode_request(join_group_request(5, "consumer", [("range", meta)]))
    decoded = msg.body["Protocols"][0]["MetadataDecoded"]
    assert decoded == {"schema": "ConsumerProtocolSubscription", "version": 0, "status": "ok", "inferred": False,
                       "value": {"Topics": ["t1", "t2"], "UserData": b""}}


@pytest.mark.parametrize("sub_version", CONSUMER_VERSIONS)
def test_join_group_request_written_by_kio(sub_version: int) -> None:
    sub = subscription(sub_version)
    req = KioJoinGroupRequest(
        group_id="g", session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=45)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=300)),
        member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=(KioJoinGroupProtocol(name="range", metadata=sub.encode()),))
    msg = decode_request(VK.kio_frame(req))
    assert msg.ok, msg.status
    check_consumer(msg.body["Protocols"][0]["MetadataDecoded"], sub, "ConsumerProtocolSubscription", sub_version,
                   False)


def test_newer_subscription_version_read_with_newest_layout() -> None:
    """A v4 subscription (not in the spec yet) is read with the v3 layout, like Kafka's
    deserializers do; bytes a future version appends are ignored."""
    sub = subscription(3)
    raw = i16(4) + sub.encode()[2:] + b"\x00\x00\x00\x2a"
    msg = decode_request(join_group_request(9, "consumer", [("range", raw)]))
    decoded = msg.body["Protocols"][0]["MetadataDecoded"]
    assert decoded["version"] == 4 and decoded["status"] == "ok", decoded
    VP.kp_compare(ConsumerProtocolSubscription._struct, sub, decoded["value"], 3, -1, "value")


def test_negative_subscription_version() -> None:
    msg = decode_request(join_group_request(9, "consumer", [("range", i16(-3) + b"\x00" * 8)]))
    decoded = msg.body["Protocols"][0]["MetadataDecoded"]
    assert decoded["status"] == "invalid: negative version -3" and "value" not in decoded


def test_truncated_subscription_is_reported_not_raised() -> None:
    raw = subscription(1).encode()[:-3]
    msg = decode_request(join_group_request(9, "consumer", [("range", raw)]))
    assert msg.ok  # the outer message is fine
    decoded = msg.body["Protocols"][0]["MetadataDecoded"]
    assert decoded["status"].startswith("truncated") and "value" not in decoded
    assert msg.body["Protocols"][0]["Metadata"] == raw


@pytest.mark.parametrize("jg_version", JG_VERSIONS)
def test_join_group_response_members(jg_version: int) -> None:
    subs = [subscription(v) for v in CONSUMER_VERSIONS]
    frame = join_group_response(jg_version, "consumer", [(f"m-{v}", s.encode()) for v, s in enumerate(subs)])
    msg = decode_response(frame, 11, jg_version)
    assert msg.ok, msg.status
    # JoinGroupResponse carries ProtocolType from v7 on; before that the consumer schema is inferred.
    inferred = jg_version < 7
    for v, (member, sub) in enumerate(zip(msg.body["Members"], subs, strict=True)):
        check_consumer(member["MetadataDecoded"], sub, "ConsumerProtocolSubscription", v, inferred)


def test_join_group_response_null_protocol_type_is_inferred() -> None:
    sub = subscription(2)
    msg = decode_response(join_group_response(9, None, [("m-0", sub.encode())]), 11, 9)
    check_consumer(msg.body["Members"][0]["MetadataDecoded"], sub, "ConsumerProtocolSubscription", 2, True)


@pytest.mark.parametrize("asg_version", CONSUMER_VERSIONS)
@pytest.mark.parametrize("sg_version", SG_VERSIONS)
def test_sync_group_request_assignments(sg_version: int, asg_version: int) -> None:
    asg = assignment(asg_version)
    frame = sync_group_request(sg_version, "consumer", [("m-0", asg.encode()), ("m-1", b"")])
    msg = decode_request(frame)
    assert msg.ok, msg.status
    inferred = sg_version < 5  # SyncGroupRequest carries ProtocolType from v5 on
    first, second = msg.body["Assignments"]
    assert first["Assignment"] == asg.encode()
    check_consumer(first["AssignmentDecoded"], asg, "ConsumerProtocolAssignment", asg_version, inferred)
    if inferred:
        assert second["AssignmentDecoded"] == {"status": "empty", "inferred": True}
    else:
        assert second["AssignmentDecoded"] == {"schema": "ConsumerProtocolAssignment", "status": "empty",
                                               "inferred": False}


@pytest.mark.parametrize("sg_version", SG_VERSIONS)
def test_sync_group_response_assignment(sg_version: int) -> None:
    asg = assignment(sg_version % 4)
    msg = decode_response(sync_group_response(sg_version, "consumer", asg.encode()), 14, sg_version)
    assert msg.ok, msg.status
    check_consumer(msg.body["AssignmentDecoded"], asg, "ConsumerProtocolAssignment", sg_version % 4,
                   sg_version < 5)


@pytest.mark.parametrize("dg_version", range(0, 7))
def test_describe_groups_response_members(dg_version: int) -> None:
    sub, asg = subscription(dg_version % 4), assignment((dg_version + 1) % 4)
    frame = describe_groups_response(dg_version, "consumer", sub.encode(), asg.encode())
    msg = decode_response(frame, 15, dg_version)
    assert msg.ok, msg.status
    member = msg.body["Groups"][0]["Members"][0]
    check_consumer(member["MemberMetadataDecoded"], sub, "ConsumerProtocolSubscription", dg_version % 4, False)
    check_consumer(member["MemberAssignmentDecoded"], asg, "ConsumerProtocolAssignment", (dg_version + 1) % 4,
                   False)


# --------------------------------------------------------------------------------------------
# Kafka Connect protocol (ConnectProtocol v0, IncrementalCooperativeConnectProtocol v1/v2)
# --------------------------------------------------------------------------------------------


def connect_worker_state(version: int, url: str, offset: int, allocation: bytes | None = None) -> bytes:
    """Version int16, Url string, ConfigOffset int64 [, Allocation nullable bytes (v1+)]."""
    out = i16(version) + string(url) + i64(offset)
    if version >= 1:
        out += nullable_bytes(allocation)
    return out


def connector_assignments(items: list[tuple[str, list[int]]] | None) -> bytes:
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(string(c) + i32(len(t)) + b"".join(i32(x) for x in t) for c, t in items)


def connect_assignment(version: int, error: int, leader: str, leader_url: str, offset: int,
                       assigned: list[tuple[str, list[int]]] | None,
                       revoked: list[tuple[str, list[int]]] | None = None, delay: int = 0) -> bytes:
    """ConnectProtocol ASSIGNMENT_V0 / IncrementalCooperativeConnectProtocol ASSIGNMENT_V1, with
    the int16 version header."""
    out = i16(version) + i16(error) + string(leader) + string(leader_url) + i64(offset)
    out += connector_assignments(assigned)
    if version >= 1:
        out += connector_assignments(revoked) + i32(delay)
    return out


def as_dicts(items: list[tuple[str, list[int]]] | None) -> list[dict[str, Any]] | None:
    return None if items is None else [{"Connector": c, "Tasks": t} for c, t in items]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_connect_worker_state(version: int) -> None:
    raw = connect_worker_state(version, "http://worker-1:8083/", 1234567890123)
    frame = join_group_request(7, "connect", [({0: "default", 1: "compatible", 2: "sessioned"}[version], raw)])
    msg = decode_request(frame)
    assert msg.ok, msg.status
    decoded = msg.body["Protocols"][0]["MetadataDecoded"]
    value = {"Url": "http://worker-1:8083/", "ConfigOffset": 1234567890123}
    if version >= 1:
        value["Allocation"] = None
    assert decoded == {"schema": "ConnectProtocolWorkerState", "version": version, "status": "ok",
                       "inferred": False, "value": value}


@pytest.mark.parametrize("version", [1, 2])
def test_connect_worker_state_allocation(version: int) -> None:
    """DECODER BUG (decoders/protocols/ConnectProtocolAllocation.json): the v1/v2 worker metadata's
    Allocation is the worker's previous assignment serialized by
    IncrementalCooperativeConnectProtocol.serializeAssignment, i.e. int16 version + ASSIGNMENT_V1
    (Error, Leader, LeaderUrl, ConfigOffset, Assignment, Revoked, ScheduledDelay); deserializeMetadata
    reads it back with deserializeAssignment. The decoders read it as int16 version + a bare array of
    connector assignments instead."""
    assigned, revoked = [("jdbc-source", [-1, 0, 1])], [("s3-sink", [2])]
    allocation = connect_assignment(version, 0, "worker-2", "http://worker-2:8083/", 77, assigned, revoked, 1500)
    raw = connect_worker_state(version, "http://worker-1:8083/", 78, allocation)
    msg = decode_request(join_group_request(7, "connect", [("compatible", raw)]))
    decoded = msg.body["Protocols"][0]["MetadataDecoded"]
    assert decoded["status"] == "ok", decoded
    assert decoded["value"]["Allocation"] == allocation
    alloc = decoded["value"]["AllocationDecoded"]
    assert alloc["status"] == "ok", alloc
    assert alloc["version"] == version
    assert alloc["value"] == {"Error": 0, "Leader": "worker-2", "LeaderUrl": "http://worker-2:8083/",
                              "ConfigOffset": 77, "Assignment": as_dicts(assigned), "Revoked": as_dicts(revoked),
                              "Delay": 1500}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_connect_assignment_in_sync_group(version: int) -> None:
    assigned = [("jdbc-source", [-1, 0, 1]), ("s3-sink", [3])]
    revoked = None if version == 0 else [("old-connector", [-1])]
    raw = connect_assignment(version, 0, "worker-1", "http://worker-1:8083/", 99, assigned, revoked, 2500)
    msg = decode_request(sync_group_request(5, "connect", [("worker-1", raw)]))
    assert msg.ok, msg.status
    decoded = msg.body["Assignments"][0]["AssignmentDecoded"]
    value: dict[str, Any] = {"Error": 0, "Leader": "worker-1", "LeaderUrl": "http://worker-1:8083/",
                             "ConfigOffset": 99, "Assignment": as_dicts(assigned)}
    if version >= 1:
        value.update({"Revoked": as_dicts(revoked), "Delay": 2500})
    assert decoded == {"schema": "ConnectProtocolAssignment", "version": version, "status": "ok",
                       "inferred": False, "value": value}


def test_connect_assignment_in_sync_group_response_null_arrays() -> None:
    raw = connect_assignment(1, 1, "worker-1", "http://worker-1:8083/", -1, None, None, 0)
    msg = decode_response(sync_group_response(5, "connect", raw), 14, 5)
    decoded = msg.body["AssignmentDecoded"]
    assert decoded["status"] == "ok", decoded
    assert decoded["value"] == {"Error": 1, "Leader": "worker-1", "LeaderUrl": "http://worker-1:8083/",
                                "ConfigOffset": -1, "Assignment": None, "Revoked": None, "Delay": 0}


def test_connect_in_describe_groups() -> None:
    meta = connect_worker_state(0, "http://w:8083/", 5)
    asg = connect_assignment(0, 0, "w", "http://w:8083/", 5, [("c", [-1])])
    msg = decode_response(describe_groups_response(5, "connect", meta, asg), 15, 5)
    member = msg.body["Groups"][0]["Members"][0]
    assert member["MemberMetadataDecoded"]["schema"] == "ConnectProtocolWorkerState"
    assert member["MemberMetadataDecoded"]["value"] == {"Url": "http://w:8083/", "ConfigOffset": 5}
    assert member["MemberAssignmentDecoded"]["value"]["Assignment"] == [{"Connector": "c", "Tasks": [-1]}]


# --------------------------------------------------------------------------------------------
# Unknown protocol types and inference
# --------------------------------------------------------------------------------------------


def test_unknown_protocol_type_is_not_decoded() -> None:
    raw = b"\x00\x01opaque"
    msg = decode_request(join_group_request(9, "mystery", [("p", raw)]))
    assert msg.ok
    proto = msg.body["Protocols"][0]
    assert proto["Metadata"] == raw
    assert proto["MetadataDecoded"] == {"status": "not decoded: no embedded schema for protocol type 'mystery'",
                                        "protocolType": "mystery"}
    msg = decode_response(describe_groups_response(6, "mystery", raw, raw), 15, 6)
    member = msg.body["Groups"][0]["Members"][0]
    assert member["MemberMetadataDecoded"]["protocolType"] == "mystery"
    assert member["MemberAssignmentDecoded"]["status"].startswith("not decoded")


@pytest.mark.parametrize("sg_version", [0, 1, 2, 3, 4])
def test_inferred_consumer_schema_on_non_consumer_bytes(sg_version: int) -> None:
    """Before SyncGroup v5 the protocol type is not in the message: the consumer schema is tried
    (inferred) and a Connect assignment fails to parse as one, with a status, not an exception."""
    raw = connect_assignment(0, 0, "leader", "http://l:8083/", 1, [("c", [0])])
    msg = decode_request(sync_group_request(sg_version, None, [("m", raw)]))
    assert msg.ok, msg.status
    decoded = msg.body["Assignments"][0]["AssignmentDecoded"]
    assert decoded["inferred"] is True
    assert decoded["schema"] == "ConsumerProtocolAssignment"
    # Error int16 0 + "leader" length 6 are read as the AssignedPartitions count (6), then "le" as
    # a topic length of 0x6c65 bytes.
    assert decoded["status"].startswith("truncated"), decoded
    assert msg.body["Assignments"][0]["Assignment"] == raw
