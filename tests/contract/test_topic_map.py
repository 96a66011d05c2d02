"""The topic map's rules (contract/topic_map.py) on bodies written here: which topics a message counts for, by
name through the ``topics`` column, its record bytes and records, followers, and a consumer's group."""

from __future__ import annotations

from datetime import datetime

from contract.kafka import FETCH, JOIN_GROUP, PRODUCE, SHARE_FETCH
from contract.topic_map import (
    CONSUMER,
    PRODUCER,
    SOURCES,
    ZERO_UUID,
    Traffic,
    batch_records,
    build_topic_map,
    consumer_group,
    is_replica_fetch,
    message_topics,
    subscribed_topics,
)

ID_A, ID_B = "saK_Pp1wTIGdRNCyTARfcw", "x0Fq5sQvRW6y7bJmLyS9Ag"


def _records(size: int, *counts: int) -> dict:
    return {"size": size, "status": "ok", "batches": [{"magic": 2, "recordCount": n} for n in counts]}


def test_produce_sums_bytes_and_records_per_topic() -> None:
    body = {"TopicData": [
        {"Name": "orders", "PartitionData": [{"Index": 0, "Records": _records(100, 2, 3)},
                                             {"Index": 1, "Records": _records(50, 1)}]},
        {"Name": "audit", "PartitionData": [{"Index": 0, "Records": None}]},
        {"Name": "orders", "PartitionData": [{"Index": 2, "Records": _records(10, 4)}]}]}
    found = message_topics(SOURCES[(PRODUCE, "request")], body, "orders,audit")
    assert found == [Traffic("orders", 160, 10), Traffic("audit", None, None)]


def test_ids_are_named_as_the_topics_column_names_them() -> None:
    """Fetch v13+ names topics by id; the events' column says which names the capture had taught by then."""
    body = {"Responses": [{"TopicId": ID_A, "Partitions": [{"Records": _records(7, 1)}]},
                          {"TopicId": ID_B, "Partitions": []}, {"TopicId": ZERO_UUID, "Partitions": []}]}
    source = SOURCES[(FETCH, "response")]
    assert [t.topic for t in message_topics(source, body, f"payments,{ID_B}")] == ["payments", ID_B]
    # a column that does not pair with the body's references (one name for two ids): the ids stand
    assert [t.topic for t in message_topics(source, body, "payments")] == [ID_A, ID_B]


def test_a_fetch_request_counts_its_topics_not_the_forgotten_ones() -> None:
    body = {"ReplicaId": -1, "Topics": [{"TopicId": ID_A, "Partitions": [{"Partition": 0}]}],
            "ForgottenTopicsData": [{"TopicId": ID_B, "Partitions": [1]}]}
    found = message_topics(SOURCES[(FETCH, "request")], body, "orders,refunds")
    assert found == [Traffic("orders")]
    assert not is_replica_fetch(body)


def test_followers_are_recognised_at_every_version() -> None:
    assert is_replica_fetch({"ReplicaId": 2})
    assert is_replica_fetch({"ReplicaState": {"ReplicaId": 3, "ReplicaEpoch": 7}})  # Fetch v15+
    assert not is_replica_fetch({"ReplicaState": {"ReplicaId": -1}})
    assert not is_replica_fetch({})  # v15+ without the tagged field: a consumer


def test_share_fetch_names_topics_by_id_only() -> None:
    body = {"Responses": [{"TopicId": ID_A, "Partitions": [{"Records": _records(30, 2)}]}]}
    assert message_topics(SOURCES[(SHARE_FETCH, "response")], body, "shared") == [Traffic("shared", 30, 2)]


def test_records_of_old_message_formats() -> None:
    assert batch_records({"magic": 2, "recordCount": 9}) == 9
    assert batch_records({"magic": 1, "compression": "none"}) == 1
    assert batch_records({"magic": 0, "compression": "gzip"}) is None  # a wrapper: its header does not say
    body = {"TopicData": [{"Name": "legacy", "PartitionData": [
        {"Records": {"size": 240, "batches": [{"magic": 1, "compression": "gzip"}]}}]}]}
    assert message_topics(SOURCES[(PRODUCE, "request")], body, "legacy") == [Traffic("legacy", 240, None)]


def test_a_consumers_group() -> None:
    assert consumer_group({"g1": set()}, "orders") == "g1"
    assert consumer_group({"g1": {"orders"}, "g2": {"audit"}}, "orders") == "g1"
    assert consumer_group({"g1": {"orders"}, "g2": {"orders"}}, "orders") is None  # ambiguous
    assert consumer_group({}, "orders") is None  # assigns itself partitions


def test_rows_join_traffic_software_and_groups() -> None:
    t0, t1 = datetime(2026, 1, 1, 0, 0, 1), datetime(2026, 1, 1, 0, 0, 9)
    who = ("10.0.0.7", "billing", "User:svc")
    traffic = [(*who, "orders", CONSUMER, "b1:9092", t1, t1, 2, 100, 4),
               (*who, "orders", CONSUMER, "b2:9092", t0, t0, 0, None, None),
               (*who, "orders", PRODUCER, "b1:9092", t0, t1, 5, None, None)]
    rows = [r.row() for r in build_topic_map(traffic, [(*who, "billing-group", None)],
                                             [(*who, "librdkafka", "2.16.0"), (*who, "librdkafka", "2.12.0")])]
    assert [(r["role"], r["group_id"], r["requests"], r["records"], r["brokers"], r["first_seen"]) for r in rows] == [
        (CONSUMER, "billing-group", 2, 4, ["b1:9092", "b2:9092"], t0), (PRODUCER, None, 5, None, ["b1:9092"], t0)]
    assert {r["software_version"] for r in rows} == {"2.12.0"}


def test_a_joingroup_subscribes_to_topics() -> None:
    body = {"ProtocolType": "consumer", "Protocols": [
        {"Name": "range", "MetadataDecoded": {"status": "ok", "value": {"Topics": ["orders", "payments"]}}},
        {"Name": "roundrobin", "MetadataDecoded": {"status": "ok", "value": {"Topics": ["orders", "payments"]}}},
        {"Name": "odd", "MetadataDecoded": {"status": "invalid: truncated"}}]}
    assert subscribed_topics(JOIN_GROUP, body) == ["orders", "payments"]
    assert subscribed_topics(PRODUCE, body) == []
