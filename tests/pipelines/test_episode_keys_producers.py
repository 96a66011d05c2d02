"""One finding, one problem, for the producer and admin kinds (pipelines/README.md, "Episode keys"): two problems
of one client are two findings; repeats of one problem one finding whose detail, count and span are true for it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from contract.kafka import END_TXN
from pipelines import admin, producers
from tests.pipelines.rows import by_subject, events, exchange, naive, pairs_of
from tests.pipelines.test_admin import envelope
from tests.pipelines.test_producers import _add, _batch, _produce, _txn


def test_producer_sequence_gap_one_finding_per_partition_and_problem(spark: SparkSession) -> None:
    """Two gaps on orders-0 are one finding that names both, a gap on orders-1 another, the broker's own sequence
    errors a third."""
    df = events(spark, _produce(1, _batch(0, 5)), _produce(2, _batch(8, 2)), _produce(3, _batch(10, 5)),
                _produce(4, _batch(20, 1), errors=[45]),
                _produce(5, _batch(0, 1), partition=1), _produce(6, _batch(4, 1), partition=1, errors=[45]))
    found = by_subject(producers.producer_sequence_gap(df))
    assert set(found) == {"producer id 7 orders-0: gap", "producer id 7 orders-1: gap",
                          "client id test-client: the broker's sequence errors"}
    gaps = found["producer id 7 orders-0: gap"]
    assert (gaps["occurrences"], gaps["ts_first"], gaps["ts_last"]) == (1, naive(2), naive(4))
    assert "sent 2 batches starting at sequence 8 where 5 was next, at 20 where 15 was next (8 record(s) skipped " \
           "in all)" in gaps["detail"], gaps["detail"]
    assert pairs_of(gaps) == [(1, 2), (1, 4)]
    assert "a batch starting at sequence 4 where 1 was next (3 record(s)" in found[
        "producer id 7 orders-1: gap"]["detail"]
    said = found["client id test-client: the broker's sequence errors"]
    assert "answered 2 Produce request(s)" in said["detail"] and "OUT_OF_ORDER_SEQUENCE_NUMBER (45) x2" in said[
        "detail"]
    assert (said["ts_first"], said["ts_last"]) == (naive(4), naive(6.001))


def test_transaction_anomaly_one_finding_per_anomaly_of_a_transactional_id(spark: SparkSession) -> None:
    df = events(spark, _txn(END_TXN, 1, Committed=True), _txn(END_TXN, 2, Committed=True), _add(3, 0))
    found = by_subject(producers.transaction_anomaly(df))
    assert set(found) == {"empty EndTxn: transactional id tx-1", "open: transactional id tx-1"}
    empty = found["empty EndTxn: transactional id tx-1"]
    assert (empty["occurrences"], empty["ts_first"], empty["ts_last"]) == (2, naive(1), naive(2))
    assert "ended with EndTxn (commit) without adding any partition" in empty["detail"]
    assert empty["detail"].endswith("Seen 2 times from 2024-05-01 12:00:01.000 to 2024-05-01 12:00:02.000.")
    assert pairs_of(empty) == [(1, 1), (1, 2)]


def test_envelope_forwarding_failed_one_finding_per_error(spark: SparkSession) -> None:
    older = envelope(1, 2, 41)
    older[0]["body"] = older[0]["body"].replace('"apiVersion": 7', '"apiVersion": 6')
    found = by_subject(admin.envelope_forwarding_failed(events(spark, envelope(0, 1, 41), older, envelope(2, 3, 31))))
    assert set(found) == {"CreateTopics of User:alice: NOT_CONTROLLER (41)",
                          "CreateTopics of User:alice: CLUSTER_AUTHORIZATION_FAILED (31)"}
    stale = found["CreateTopics of User:alice: NOT_CONTROLLER (41)"]
    assert (stale["occurrences"], stale["ts_first"], stale["ts_last"]) == (1, naive(0), naive(1.001))
    assert "forwarded 2 CreateTopics v6, v7 request(s)" in stale["detail"] and pairs_of(stale) == [(3, 1), (3, 2)]


def _acls(t: float, corr: int, error: int) -> list[dict[str, Any]]:
    return exchange(30, 3, {"Creations": [{"ResourceType": 2, "ResourceName": f"topic-{corr}", "ResourcePatternType": 3,
                                           "Principal": "User:mallory", "Host": "*", "Operation": 4,
                                           "PermissionType": 3}]},
                    {"ThrottleTimeMs": 0, "Results": [{"ErrorCode": error, "ErrorMessage": None}]},
                    t=t, corr=corr, resp_cols={"nested_error_codes": [error]})


def test_admin_write_failed_one_finding_per_api_and_errors(spark: SparkSession) -> None:
    audit = admin.admin_audit(events(spark, _acls(0, 1, 31), _acls(1, 2, 31), _acls(2, 3, 42)))
    found = by_subject(admin.admin_write_failed(audit))
    who = "CreateAcls by no principal (client id test-client): "
    assert set(found) == {who + "CLUSTER_AUTHORIZATION_FAILED (31)", who + "INVALID_REQUEST (42)"}
    denied = found[who + "CLUSTER_AUTHORIZATION_FAILED (31)"]
    assert (denied["occurrences"], denied["ts_first"], denied["ts_last"]) == (1, naive(0), naive(1))
    assert "2 CreateAcls request(s) from" in denied["detail"] and pairs_of(denied) == [(1, 1), (1, 2)]
    assert "on TOPIC:topic-1 from host *; ALLOW User:mallory WRITE on TOPIC:topic-2" in denied["detail"]


def test_admin_write_unanswered_every_outcome_counted(spark: SparkSession) -> None:
    """Its key is the API, the principal and the client: requests that got no answer and one whose answer did not
    decode are one finding, which counts each outcome."""
    def alter(t: float, corr: int, answered: bool = False) -> list[dict[str, Any]]:
        return exchange(44, 1, {"Resources": [{"ResourceType": 2, "ResourceName": "orders", "Configs": [
            {"Name": "retention.ms", "ConfigOperation": 0, "Value": str(corr)}]}], "ValidateOnly": False},
            {"ErrorCode": 0}, t=t, corr=corr, answered=answered, resp_cols={"decode_status": "truncated"})
    found = by_subject(admin.admin_write_unanswered(admin.admin_audit(events(spark, alter(0, 1), alter(1, 2, True),
                                                                         alter(2, 3)))))
    assert set(found) == {"IncrementalAlterConfigs by no principal (client id test-client)"}
    (f,) = found.values()
    assert (f["occurrences"], f["ts_first"], f["ts_last"]) == (1, naive(0), naive(2))
    assert "3 IncrementalAlterConfigs request(s)" in f["detail"], f["detail"]
    assert "(no response for 2, response undecodable: truncated for 1)" in f["detail"]
    assert pairs_of(f) == [(1, 1), (1, 2), (1, 3)]
