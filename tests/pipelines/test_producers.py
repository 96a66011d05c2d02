"""Producer integrity: gaps, epoch regressions, overlaps and resends in idempotent producers' batch sequences,
and the brokers' sequence errors; transactions left open, producing to partitions never added, or ended with
nothing; ordinary sequences (wrapping ones included) and transactions are quiet."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from contract.kafka import ADD_OFFSETS_TO_TXN, ADD_PARTITIONS_TO_TXN, END_TXN, PRODUCE
from pipelines.producers import producer_sequence_gap, transaction_anomaly
from tests.pipelines.rows import ev, events, exchange


def _batch(base: int, count: int, epoch: int = 0, pid: int = 7, offset: int = 0) -> dict[str, Any]:
    return {"byteOffset": offset, "producerId": pid, "producerEpoch": epoch, "baseSequence": base,
            "lastOffsetDelta": count - 1, "isTransactional": False, "magic": 2}


def _produce(corr: int, *batches: dict[str, Any], t: float | None = None, partition: int = 0,
             errors: list[int] | None = None, conn: int = 1) -> list[dict[str, Any]]:
    body = {"Acks": -1, "TopicData": [{"Name": "orders", "PartitionData": [
        {"Index": partition, "Records": {"status": "ok", "batches": list(batches)}}]}]}
    resp_cols = {"nested_error_codes": errors} if errors else None
    return exchange(PRODUCE, 9, body, {"Responses": []}, t=t if t is not None else float(corr), corr=corr,
                    conn=conn, resp_cols=resp_cols)


def _found(spark: SparkSession, *groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in producer_sequence_gap(events(spark, *groups)).collect()),
                  key=lambda r: (r["severity"], r["detail"]))


def test_ordinary_sequences_are_quiet(spark: SparkSession) -> None:
    assert _found(spark, _produce(1, _batch(0, 5)), _produce(2, _batch(5, 5), _batch(10, 3, offset=90)),
                  _produce(3, _batch(13, 1)),
                  # another partition and another producer keep their own sequences
                  _produce(4, _batch(0, 2), partition=1), _produce(5, _batch(100, 2, pid=8)),
                  _produce(6, _batch(102, 2, pid=8)),
                  # wrapping past 2**31 - 1, and a new epoch starting over at 0
                  _produce(7, _batch(2**31 - 2, 2, pid=9)), _produce(8, _batch(0, 4, pid=9)),
                  _produce(9, _batch(0, 1, epoch=1))) == []


def test_gap_regression_overlap_and_resend(spark: SparkSession) -> None:
    found = _found(spark, _produce(1, _batch(0, 5)), _produce(2, _batch(8, 2)),  # 3 records skipped
                   _produce(3, _batch(10, 5)), _produce(4, _batch(10, 5)),  # a resend
                   _produce(5, _batch(12, 1)),  # inside the previous batch
                   _produce(6, _batch(0, 1, epoch=2)), _produce(7, _batch(40, 1, epoch=1)))  # a zombie
    assert [(f["severity"], f["evidence"]) for f in found] == [
        ("error", ev((1, 5))), ("error", ev((1, 2))), ("error", ev((1, 7))), ("info", ev((1, 4)))]
    overlap, gap, regression, resend = (f["detail"] for f in found)
    assert "producer epoch 1 after epoch 2 had been used" in regression and "zombie" in regression
    assert "starting at sequence 8 where 5 was next (3 record(s) skipped" in gap and "orders-0" in gap
    assert "starting at sequence 12, inside the previous batch (next was 15)" in overlap
    assert "the same batch sent again" in resend
    assert all(f["kind"] == "producer_sequence_gap" and f["client"] == "192.0.2.10:50000" for f in found)


def test_brokers_sequence_errors(spark: SparkSession) -> None:
    found = _found(spark, _produce(1, _batch(0, 5), errors=[45]), _produce(2, _batch(5, 5), errors=[46, 6]),
                   _produce(3, _batch(10, 5), errors=[6]))
    assert len(found) == 1
    (f,) = found
    assert f["severity"] == "error" and f["evidence"] == ev((1, 1), (1, 2))
    assert "answered 2 Produce request(s)" in f["detail"]
    assert "OUT_OF_ORDER_SEQUENCE_NUMBER (45) x1, DUPLICATE_SEQUENCE_NUMBER (46) x1" in f["detail"]


def _txn(api_key: int, corr: int, pid: int = 7, epoch: int = 0, **body: Any) -> list[dict[str, Any]]:
    request = {"TransactionalId": "tx-1", "ProducerId": pid, "ProducerEpoch": epoch, **body}
    return exchange(api_key, 3, request, {"ErrorCode": 0}, t=float(corr), corr=corr)


def _add(corr: int, *partitions: int, pid: int = 7) -> list[dict[str, Any]]:
    request = {"V3AndBelowTransactionalId": "tx-1", "V3AndBelowProducerId": pid, "V3AndBelowProducerEpoch": 0,
               "V3AndBelowTopics": [{"Name": "orders", "Partitions": list(partitions)}]}
    return exchange(ADD_PARTITIONS_TO_TXN, 3, request, {"ResultsByTopicV3AndBelow": []}, t=float(corr), corr=corr)


def _txn_batch(base: int, count: int) -> dict[str, Any]:
    return {**_batch(base, count), "isTransactional": True}


def _anomalies(spark: SparkSession, *groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in transaction_anomaly(events(spark, *groups)).collect()),
                  key=lambda r: r["detail"])


def test_committed_and_aborted_transactions_are_quiet(spark: SparkSession) -> None:
    assert _anomalies(spark, _add(1, 0), _produce(2, _txn_batch(0, 5)), _txn(ADD_OFFSETS_TO_TXN, 3, GroupId="g"),
                      _txn(END_TXN, 4, Committed=True), _add(5, 0), _produce(6, _txn_batch(5, 5)),
                      _txn(END_TXN, 7, Committed=False)) == []


def test_open_at_capture_end_unadded_partition_and_empty_end(spark: SparkSession) -> None:
    found = _anomalies(spark, _txn(END_TXN, 1, Committed=True),  # nothing added before it
                       _add(2, 0), _produce(3, _txn_batch(0, 5), partition=1), _txn(END_TXN, 4, Committed=True),
                       _add(5, 2))  # and no EndTxn after
    assert [(f["severity"], f["evidence"]) for f in found] == [
        ("warning", ev((1, 1))), ("warning", ev((1, 5))), ("error", ev((1, 2), (1, 3), (1, 4)))]
    empty, still_open, unadded = (f["detail"] for f in found)
    assert empty.startswith("Transaction of transactional id tx-1 (producer id 7, epoch 0; ")
    assert "ended with EndTxn (commit) without adding any partition" in empty
    assert "still open at the end of the capture: it added [orders-2]" in still_open
    assert "produced transactional records to orders-1, never added with AddPartitionsToTxn (it added " \
           "[orders-0])" in unadded
    assert {f["kind"] for f in found} == {"transaction_anomaly"}


def test_produce_v12_adds_its_own_partitions(spark: SparkSession) -> None:
    rows = exchange(PRODUCE, 12, {"TopicData": [{"Name": "orders", "PartitionData": [
        {"Index": 3, "Records": {"batches": [_txn_batch(0, 1)]}}]}]}, {"Responses": []}, t=1.0, corr=1)
    assert _anomalies(spark, rows, _txn(END_TXN, 2, Committed=True)) == []
