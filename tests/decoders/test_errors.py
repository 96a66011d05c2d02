"""Kafka's error names (``contract.kafka``), checked against kafka-python's table (an independent copy of
Errors.java), and the named codes and API keys the detectors use, checked against the names."""

from __future__ import annotations

import inspect

import kafka.errors

import contract.kafka
from contract.kafka import ERROR_NAMES, error_name

#: Codes kafka-python still names as older Kafka releases did (ours follow Errors.java today).
OLD_NAMES = {-1: "UNKNOWN", 0: "NO_ERROR", 6: "NOT_LEADER_FOR_PARTITION", 10: "MESSAGE_SIZE_TOO_LARGE",
             17: "INVALID_TOPIC", 39: "INVALID_REPLICATION_ASSIGNMENT"}


def test_names_agree_with_kafka_python() -> None:
    theirs = {cls.errno: cls.message for _, cls in inspect.getmembers(kafka.errors, inspect.isclass)
              if issubclass(cls, kafka.errors.BrokerResponseError) and getattr(cls, "errno", None) is not None}
    assert len(theirs) > 120
    for code, name in theirs.items():
        assert ERROR_NAMES.get(code) == name or OLD_NAMES.get(code) == name, (code, name, ERROR_NAMES.get(code))


def test_codes_are_contiguous_and_named_once() -> None:
    assert sorted(ERROR_NAMES) == list(range(-1, max(ERROR_NAMES) + 1))
    assert len(set(ERROR_NAMES.values())) == len(ERROR_NAMES)
    assert error_name(67) == "INVALID_PRINCIPAL_TYPE"  # the live view once called it COORDINATOR_NOT_AVAILABLE
    assert error_name(15) == "COORDINATOR_NOT_AVAILABLE" and error_name(9999) == "error 9999"


#: The named error codes and API keys of contract.kafka, as Kafka names them (names written here, not derived).
NAMED_ERRORS = ("INCONSISTENT_GROUP_PROTOCOL", "CLUSTER_AUTHORIZATION_FAILED", "UNSUPPORTED_VERSION", "NOT_CONTROLLER",
                "INVALID_REQUEST", "MEMBER_ID_REQUIRED", "MISMATCHED_ENDPOINT_TYPE", "UNSUPPORTED_ENDPOINT_TYPE",
                "REBOOTSTRAP_REQUIRED", "OUT_OF_ORDER_SEQUENCE_NUMBER", "DUPLICATE_SEQUENCE_NUMBER",
                "INVALID_PRODUCER_EPOCH", "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "UNRELEASED_INSTANCE_ID")
NAMED_APIS = {"PRODUCE": "Produce", "FETCH": "Fetch", "LIST_OFFSETS": "ListOffsets", "OFFSET_COMMIT": "OffsetCommit",
              "OFFSET_FETCH": "OffsetFetch", "TXN_OFFSET_COMMIT": "TxnOffsetCommit", "METADATA": "Metadata",
              "FIND_COORDINATOR": "FindCoordinator", "JOIN_GROUP": "JoinGroup", "LEAVE_GROUP": "LeaveGroup",
              "SYNC_GROUP": "SyncGroup", "DESCRIBE_GROUPS": "DescribeGroups",
              "API_VERSIONS": "ApiVersions", "ADD_PARTITIONS_TO_TXN": "AddPartitionsToTxn",
              "ADD_OFFSETS_TO_TXN": "AddOffsetsToTxn", "END_TXN": "EndTxn", "ENVELOPE": "Envelope",
              "DESCRIBE_CLUSTER": "DescribeCluster", "CREATE_TOPICS": "CreateTopics",
              "CONSUMER_GROUP_HEARTBEAT": "ConsumerGroupHeartbeat", "CONSUMER_GROUP_DESCRIBE": "ConsumerGroupDescribe",
              "DESCRIBE_TOPIC_PARTITIONS": "DescribeTopicPartitions", "SHARE_GROUP_HEARTBEAT": "ShareGroupHeartbeat",
              "STREAMS_GROUP_HEARTBEAT": "StreamsGroupHeartbeat"}


def test_named_codes_and_keys_match_their_names() -> None:
    for name in NAMED_ERRORS:
        assert ERROR_NAMES[getattr(contract.kafka, name)] == name
    for constant, api in NAMED_APIS.items():
        assert contract.kafka.API_NAMES[getattr(contract.kafka, constant)] == api
