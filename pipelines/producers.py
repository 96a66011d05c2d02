"""Idempotent and transactional producers' integrity (issue 20, item 5).

Per producer id, epoch and partition, the record batches of Produce requests (their headers are decoded in the
request body: ``Records.batches[]`` with ``producerId``, ``producerEpoch``, ``baseSequence``,
``lastOffsetDelta``) follow one another in sequence: each batch starts where the previous one ended (sequence
numbers wrap after 2**31 - 1). ``producer_sequence_gap`` findings:

* a **gap**: a batch starts beyond where the previous one ended, so batches were never sent (or the capture
  missed the requests that carried them) — the broker answers OUT_OF_ORDER_SEQUENCE_NUMBER (45);
* an **epoch regression**: a batch with an older epoch than one already sent for that producer id and
  partition (a zombie producer that was fenced);
* an **overlap**: a batch starting inside the previous one, other than a resend of the same batch;
* a **resend** of the same batch (a retry after a lost or failed answer; the broker deduplicates it): info;
* Produce responses carrying OUT_OF_ORDER_SEQUENCE_NUMBER (45), DUPLICATE_SEQUENCE_NUMBER (46) or
  INVALID_PRODUCER_EPOCH (47): the broker's own word, per client and broker.

``transaction_anomaly`` findings, per producer id, epoch and transaction (the requests between two EndTxn):

* a transaction still **open at capture end** (partitions, offsets or records added, no EndTxn after them);
* transactional records produced to a partition the transaction never added (AddPartitionsToTxn), for Produce
  before v12 (KIP-890's clients add partitions with the Produce itself);
* an EndTxn for a transaction that added nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DUPLICATE_SEQUENCE_NUMBER,
    END_TXN,
    INVALID_PRODUCER_EPOCH,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCE,
)
from pipelines.events_dataset import (
    collect_evidence,
    evidence,
    exchanges,
    parse_body,
    requests,
    union_sorted,
    with_endpoints,
)
from pipelines.findings import as_findings, error_label, listed, tallied

PRODUCE_REQUEST_DDL = body_schemas.PRODUCE_REQUEST
ADD_PARTITIONS_REQUEST_DDL = body_schemas.ADD_PARTITIONS_TO_TXN_REQUEST
TXN_REQUEST_DDL = body_schemas.TXN_REQUEST
#: Produce from this version on adds a transaction's partitions itself (KIP-890 part 2).
PRODUCE_ADDS_PARTITIONS = 12
#: The batches of one episode a ``producer_sequence_gap`` detail tells one by one (the rest are counted).
MAX_BATCHES_TOLD = 10
SEQUENCE_ERRORS = (OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH)
_WRAP = 2**31


def produce_batches(events: DataFrame) -> DataFrame:
    """One row per record batch of an idempotent producer (producer id >= 0) in a Produce request: ts, capture,
    conn_id, correlation_id, client, broker, client_id, api_version, topic, partition, batch (its order in the
    request), pid, epoch, base, count, transactional."""
    q = parse_body(requests(events, [PRODUCE]), PRODUCE_REQUEST_DDL, "qb")
    t = with_endpoints(q).select("ts", "capture", "conn_id", "correlation_id", "client", "broker", "client_id",
                                 "api_version", F.explode("qb.TopicData").alias("t"))
    p = t.select("*", F.coalesce(F.col("t.Name"), F.col("t.TopicId")).alias("topic"),
                 F.explode("t.PartitionData").alias("p"))
    b = p.select("*", F.col("p.Index").alias("partition"), F.explode("p.Records.batches").alias("b"))
    return b.where(F.col("b.producerId") >= 0).select(
        "ts", "capture", "conn_id", "correlation_id", "client", "broker", "client_id", "api_version", "topic",
        "partition", F.col("b.byteOffset").alias("batch"), F.col("b.producerId").alias("pid"),
        F.col("b.producerEpoch").alias("epoch"), F.col("b.baseSequence").cast("long").alias("base"),
        (F.col("b.lastOffsetDelta").cast("long") + 1).alias("count"), F.col("b.isTransactional").alias("transactional"))


def _next_sequence(base: Column, count: Column) -> Column:
    end = base + count
    return F.when(end >= _WRAP, end - _WRAP).otherwise(end)


def sequence_problems(events: DataFrame) -> DataFrame:
    """Each batch that does not follow its predecessor of the same producer id and partition: the batch's
    columns (``produce_batches``) plus ``problem`` (gap, epoch regression, overlap, resend), ``expected`` (the
    sequence it should have started at), ``prev_epoch``, ``prev_conn``, ``prev_corr``."""
    b = produce_batches(events).where(F.col("base") >= 0)
    w = Window.partitionBy("capture", "pid", "topic", "partition").orderBy("ts", "conn_id", "correlation_id",
                                                                           "batch")
    b = (b.withColumn("prev_epoch", F.lag("epoch").over(w)).withColumn("prev_base", F.lag("base").over(w))
         .withColumn("prev_count", F.lag("count").over(w))
         .withColumn("max_epoch", F.max("epoch").over(w.rowsBetween(Window.unboundedPreceding, -1)))
         .withColumn("prev_conn", F.lag("conn_id").over(w)).withColumn("prev_corr", F.lag("correlation_id").over(w)))
    expected = _next_sequence(F.col("prev_base"), F.col("prev_count"))
    same_epoch = F.col("epoch") == F.col("prev_epoch")
    problem = (
        F.when(F.col("epoch") < F.col("max_epoch"), F.lit("epoch regression"))
        .when(~same_epoch, F.lit(None))
        .when(F.col("base") == expected, F.lit(None))
        .when((F.col("base") == F.col("prev_base")) & (F.col("count") == F.col("prev_count")), F.lit("resend"))
        .when(((F.col("base") - expected + _WRAP) % _WRAP) < _WRAP // 2, F.lit("gap"))
        .otherwise(F.lit("overlap"))
    )
    return b.where(F.col("prev_epoch").isNotNull()).withColumn("expected", expected).withColumn(
        "problem", problem).where(F.col("problem").isNotNull())


def producer_sequence_gap(events: DataFrame) -> DataFrame:
    """Gaps, epoch regressions, overlaps and resends in producers' batch sequences, and the brokers' sequence
    and epoch errors."""
    s = sequence_problems(events)
    missing = F.when(F.col("problem") == "gap", (F.col("base") - F.col("expected") + _WRAP) % _WRAP)
    agg = s.groupBy("client", "broker", "client_id", "pid", "topic", "partition", "problem").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"), F.count(F.lit(1)).alias("n"),
        F.sum(missing).alias("missing"),
        F.array_sort(F.collect_list(F.struct("ts", "epoch", "prev_epoch", "base", "expected"))).alias("cases"),
        collect_evidence(evidence()).alias("evidence"))

    def each(item: Callable[[Column], Column], sep: str) -> Column:
        """Every batch of the episode (the first ``MAX_BATCHES_TOLD``), told by ``item``."""
        return listed("cases", MAX_BATCHES_TOLD, sep, item)

    batches = F.when(F.col("n") == 1, F.lit("a batch")).otherwise(F.concat(F.col("n").cast("string"),
                                                                           F.lit(" batches")))
    what = (
        F.when(F.col("problem") == "gap", F.concat(
            batches, F.lit(" starting at sequence "), each(lambda c: F.concat(
                c["base"].cast("string"), F.lit(" where "), c["expected"].cast("string"), F.lit(" was next")),
                ", at "), F.lit(" ("), F.col("missing").cast("string"),
            F.lit(" record(s) skipped in all): records were never sent, or the capture missed the requests that "
                  "carried them; the broker answers OUT_OF_ORDER_SEQUENCE_NUMBER (45)")))
        .when(F.col("problem") == "epoch regression", F.concat(
            batches, F.lit(" with producer epoch "), each(lambda c: F.concat(
                c["epoch"].cast("string"), F.lit(" after epoch "), c["prev_epoch"].cast("string")), ", epoch "),
            F.lit(" had been used: a fenced (zombie) producer is still writing; the broker answers "
                  "INVALID_PRODUCER_EPOCH (47) or PRODUCER_FENCED (90)")))
        .when(F.col("problem") == "overlap", F.concat(
            batches, F.lit(" starting at sequence "), each(lambda c: F.concat(
                c["base"].cast("string"), F.lit(", inside the previous batch (next was "),
                c["expected"].cast("string"), F.lit(")")), ", at "),
            F.lit(": the producer reordered or rewrote batches")))
        .otherwise(F.lit("the same batch sent again (a retry after a lost or failed answer; the broker "
                         "deduplicates it)"))
    )
    detail = F.concat(
        F.lit("Producer id "), F.col("pid").cast("string"), F.lit(" ("), F.col("client"), F.lit(", client id "),
        F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") sent "), what, F.lit(" to "), F.col("topic"),
        F.lit("-"), F.col("partition").cast("string"), F.lit(" on "), F.col("broker"),
        F.when((F.col("n") > 1) & (F.col("problem") == "resend"), F.concat(
            F.lit(" ("), F.col("n").cast("string"), F.lit(" times)"))).otherwise(F.lit("")), F.lit("."))
    severity = F.when(F.col("problem") == "resend", F.lit("info")).otherwise(F.lit("error"))
    from_batches = as_findings(agg, "producer_sequence_gap", severity, detail, subject=F.concat(
        F.lit("producer id "), F.col("pid").cast("string"), F.lit(" "), F.col("topic"), F.lit("-"),
        F.col("partition").cast("string"), F.lit(": "), F.col("problem")))

    r = with_endpoints(exchanges(events, [PRODUCE], None, None)).withColumn(
        "codes", F.array_intersect(F.coalesce(F.col("r_nested_error_codes"), F.array().cast("array<smallint>")),
                                   F.array(*[F.lit(c).cast("smallint") for c in SEQUENCE_ERRORS])))
    refused = r.where(F.size("codes") > 0).groupBy("client", "broker", "client_id").agg(
        F.min("ts").alias("ts_first"), F.max(F.coalesce("r_ts", "ts")).alias("ts_last"),
        F.count(F.lit(1)).alias("n"), F.flatten(F.collect_list("codes")).alias("all_codes"),
        collect_evidence(evidence()).alias("evidence"))
    # each error with how many of the requests it answered
    counted = tallied("all_codes", lambda c, n: F.concat(error_label(c), F.lit(" x"), n))
    said = F.concat(
        F.col("broker"), F.lit(" answered "), F.col("n").cast("string"), F.lit(" Produce request(s) of "),
        F.col("client"), F.lit(" (client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(") with "),
        counted,
        F.lit(": the broker saw batches out of sequence, again, or from a fenced epoch. An idempotent producer "
              "resets its sequence (or fails) on these; records may be lost or duplicated downstream."))
    from_brokers = as_findings(refused, "producer_sequence_gap", "error", said, subject=F.concat(
        F.lit("client id "), F.coalesce(F.col("client_id"), F.lit("null")), F.lit(": the broker's sequence errors")))
    return from_batches.unionByName(from_brokers)


def _partitions(topics: Column) -> Column:
    """``topic-partition`` strings of a Topics array (Name, Partitions)."""
    return F.flatten(F.transform(F.coalesce(topics, F.array()), lambda t: F.transform(
        t["Partitions"], lambda p: F.concat(t["Name"], F.lit("-"), p.cast("string")))))


def transaction_steps(events: DataFrame) -> DataFrame:
    """Each step of transactional producers: ts, capture, conn_id, correlation_id, client, broker, client_id,
    txn_id, pid, epoch, step (add, offsets, produce, end), tps (topic-partitions), committed, checked (a
    produce whose partition must have been added)."""
    cols = ["ts", "capture", "conn_id", "correlation_id", "client", "broker", "client_id"]
    none = F.array().cast("array<string>")
    add = parse_body(with_endpoints(requests(events, [ADD_PARTITIONS_TO_TXN])), ADD_PARTITIONS_REQUEST_DDL, "qb")
    old = add.where(F.col("qb.V3AndBelowProducerId").isNotNull()).select(
        *cols, F.col("qb.V3AndBelowTransactionalId").alias("txn_id"), F.col("qb.V3AndBelowProducerId").alias("pid"),
        F.col("qb.V3AndBelowProducerEpoch").alias("epoch"), _partitions(F.col("qb.V3AndBelowTopics")).alias("tps"))
    batched = add.select(*cols, F.explode("qb.Transactions").alias("x")).select(
        *cols, F.col("x.TransactionalId").alias("txn_id"), F.col("x.ProducerId").alias("pid"),
        F.col("x.ProducerEpoch").alias("epoch"), _partitions(F.col("x.Topics")).alias("tps"))
    adds = old.unionByName(batched).select("*", F.lit("add").alias("step"), F.lit(None).cast("boolean").alias(
        "committed"), F.lit(False).alias("checked"))
    txn = parse_body(with_endpoints(requests(events, [ADD_OFFSETS_TO_TXN, END_TXN])), TXN_REQUEST_DDL, "qb").select(
        *cols, F.col("qb.TransactionalId").alias("txn_id"), F.col("qb.ProducerId").alias("pid"),
        F.col("qb.ProducerEpoch").alias("epoch"), none.alias("tps"),
        F.when(F.col("api_key") == END_TXN, F.lit("end")).otherwise(F.lit("offsets")).alias("step"),
        F.when(F.col("api_key") == END_TXN, F.col("qb.Committed")).alias("committed"), F.lit(False).alias("checked"))
    produced = produce_batches(events).where(F.col("transactional")).select(
        *cols, F.lit(None).cast("string").alias("txn_id"), "pid", "epoch",
        F.array(F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"))).alias("tps"),
        F.lit("produce").alias("step"), F.lit(None).cast("boolean").alias("committed"),
        (F.col("api_version") < PRODUCE_ADDS_PARTITIONS).alias("checked"))
    return adds.unionByName(txn).unionByName(produced).where(F.col("pid") >= 0)


def transaction_anomaly(events: DataFrame) -> DataFrame:
    """Transactions open at capture end, records produced to partitions never added, EndTxn with nothing."""
    s = transaction_steps(events)
    w = Window.partitionBy("capture", "pid", "epoch").orderBy("ts", "conn_id", "correlation_id")
    ended = (F.col("step") == "end").cast("int")
    s = s.withColumn("txn", F.coalesce(F.sum(ended).over(w.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)))
    t = s.groupBy("capture", "pid", "epoch", "txn").agg(
        F.min("ts").alias("ts_first"), F.max("ts").alias("ts_last"),
        F.min("txn_id").alias("txn_id"), F.max_by("client", "ts").alias("client"),
        F.max_by("broker", "ts").alias("broker"), F.max_by("client_id", "ts").alias("client_id"),
        F.max(ended).alias("has_end"), F.max_by("committed", F.col("step") == "end").alias("committed"),
        union_sorted(F.when(F.col("step") == "add", F.col("tps"))).alias("added"),
        F.max((F.col("step") == "offsets").cast("int")).alias("offsets"),
        union_sorted(F.when(F.col("step") == "produce", F.col("tps"))).alias("produced"),
        union_sorted(F.when(F.col("checked"), F.col("tps"))).alias("must_add"),
        collect_evidence(evidence()).alias("evidence"))
    who = F.concat(F.lit("Transaction of transactional id "), F.coalesce(F.col("txn_id"), F.lit("?")),
                   F.lit(" (producer id "), F.col("pid").cast("string"), F.lit(", epoch "),
                   F.col("epoch").cast("string"), F.lit("; "), F.col("client"), F.lit(", client id "),
                   F.coalesce(F.col("client_id"), F.lit("null")), F.lit(")"))
    added = F.concat(F.lit("["), F.array_join(F.array_union(F.col("added"), F.col("produced")), ", "), F.lit("]"))
    open_ = t.where(F.col("has_end") == 0)
    open_detail = F.concat(
        who, F.lit(" is still open at the end of the capture: it added "), added,
        F.when(F.col("offsets") == 1, F.lit(" and consumer offsets")).otherwise(F.lit("")),
        F.lit(" and sent no EndTxn. The coordinator aborts it after the transaction timeout; until then "
              "read_committed consumers of those partitions wait behind it (the last stable offset stops)."))
    missing = F.array_except(F.col("must_add"), F.col("added"))
    unadded = t.where(F.size(missing) > 0)
    unadded_detail = F.concat(
        who, F.lit(" produced transactional records to "), F.array_join(missing, ", "),
        F.lit(", never added with AddPartitionsToTxn (it added "), F.concat(F.lit("["), F.array_join(
            F.col("added"), ", "), F.lit("]")),
        F.lit("): the broker rejects them (INVALID_TXN_STATE), or they escape the transaction's commit or abort."))
    empty = t.where((F.col("has_end") == 1) & (F.size("added") == 0) & (F.size("produced") == 0)
                    & (F.col("offsets") == 0))
    empty_detail = F.concat(
        who, F.lit(" ended with EndTxn ("), F.when(F.col("committed"), F.lit("commit")).otherwise(F.lit("abort")),
        F.lit(") without adding any partition or offsets: the client ends transactions it never began (the "
              "coordinator answers INVALID_TXN_STATE, or it is a no-op)."))
    def subject(what: str) -> Column:
        return F.concat(F.lit(f"{what}: transactional id "), F.coalesce(F.col("txn_id"), F.lit("?")))

    return as_findings(open_, "transaction_anomaly", "warning", open_detail, subject=subject("open")).unionByName(
        as_findings(unadded, "transaction_anomaly", "error", unadded_detail,
                    subject=subject("partitions not added"))).unionByName(
        as_findings(empty, "transaction_anomaly", "warning", empty_detail, subject=subject("empty EndTxn")))
