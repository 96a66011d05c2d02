"""Hand-built event rows for the detector tests (the events contract's columns, defaults filled in)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract.apis import API_NAMES
from pipelines.events_dataset import EVENTS_SCHEMA
from pipelines.findings import as_findings, episodes

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CLIENT = "192.0.2.10"
B1, B2, B3 = "198.51.100.1", "198.51.100.2", "198.51.100.3"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def naive(seconds: float) -> datetime:
    """``at(seconds)`` as a collected timestamp column holds it (naive, in the session's UTC)."""
    return at(seconds).replace(tzinfo=None)


def by_subject(findings: DataFrame) -> dict[str, dict[str, Any]]:
    """A detector's findings as episodes (``findings.episodes``), by subject (every episode has one)."""
    out = {r["subject"]: r.asDict(recursive=True) for r in episodes(findings).collect()}
    assert all(s is not None for s in out)
    return out


def pairs_of(finding: dict[str, Any]) -> list[tuple[int, int]]:
    """A finding's evidence as (conn_id, correlation_id) pairs."""
    return [(e["conn_id"], e["correlation_id"]) for e in finding["evidence"]]


def row(**cols: Any) -> dict[str, Any]:
    """One event with every contract column (unset ones null)."""
    out: dict[str, Any] = {f.name: None for f in EVENTS_SCHEMA}
    out.update(capture="test.pcap", conn_id=1, client_ip=CLIENT, client_port=50000, broker_ip=B1, broker_port=9092,
               direction="request", decode_status="ok", request_missing=False, ts=T0)
    body = cols.pop("body", None)
    out.update(cols)
    if out["api_key"] is not None and out["api_name"] is None:
        out["api_name"] = API_NAMES.get(out["api_key"], f"key{out['api_key']}")
    if body is not None:
        out["body"] = body if isinstance(body, str) else json.dumps(body)
    return out


def exchange(
    api_key: int,
    version: int,
    request: dict[str, Any] | None,
    response: dict[str, Any] | None,
    *,
    t: float = 0.0,
    conn: int = 1,
    corr: int = 1,
    broker: str = B1,
    port: int = 9092,
    client_port: int = 50000,
    latency_ms: float = 1.0,
    req_cols: dict[str, Any] | None = None,
    resp_cols: dict[str, Any] | None = None,
    answered: bool = True,
) -> list[dict[str, Any]]:
    """A request and (unless ``answered`` is false) its response; the response's ErrorCode is promoted."""
    common = dict(conn_id=conn, correlation_id=corr, broker_ip=broker, broker_port=port, client_port=client_port,
                  api_key=api_key, api_version=version, client_id="test-client")
    out = [row(direction="request", ts=at(t), body=request, **common, **(req_cols or {}))]
    if answered:
        rc: dict[str, Any] = dict(direction="response", ts=at(t + latency_ms / 1000), latency_ms=latency_ms,
                                  body=response, **common)
        if response is not None and isinstance(response.get("ErrorCode"), int):
            rc["error_code"] = response["ErrorCode"]
        rc.update(resp_cols or {})
        out.append(row(**rc))
    return out


def events(spark: SparkSession, *groups: list[dict[str, Any]]) -> DataFrame:
    rows = [r for g in groups for r in g]
    return spark.createDataFrame(rows, EVENTS_SCHEMA)


def ev(*pairs: tuple[int, int], capture: str = "test.pcap") -> list[dict[str, Any]]:
    """Evidence list literal: (conn_id, correlation_id) pairs of ``capture`` (``row``'s default)."""
    return [{"capture": capture, "conn_id": c, "correlation_id": k} for c, k in pairs]


def frame(spark: SparkSession, rows: list[tuple[Any, ...]], ddl: str) -> DataFrame:
    return spark.createDataFrame(rows, ddl)


__all__ = ["at", "naive", "by_subject", "pairs_of", "row", "exchange", "events", "ev", "frame", "project", "expected",
           "canonical", "details"]

FINDING_DDL = (
    "kind string, severity string, client string, broker string, group_id string, "
    "evidence array<struct<capture:string,conn_id:bigint,correlation_id:int>>"
)


def project(findings: DataFrame) -> DataFrame:
    """The columns a detector test compares exactly (``detail`` is checked by its words)."""
    return findings.select("kind", "severity", "client", "broker", "group_id", "evidence")


def expected(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    """Findings as ``project`` shows them; evidence as (conn_id, correlation_id) pairs of ``row``'s capture."""
    def samples(value: Any) -> Any:
        if isinstance(value, list):
            return [("test.pcap", *e) if isinstance(e, tuple) and len(e) == 2 else e for e in value]
        return value
    return spark.createDataFrame([tuple(samples(v) for v in r) for r in rows], FINDING_DDL)


def canonical(rows: list[dict[str, Any]], without: tuple[str, ...] = ()) -> list[str]:
    """Rows as sorted, comparable text, leaving out the ``without`` columns (what differs on purpose)."""
    return sorted(repr(sorted((k, v) for k, v in r.items() if k not in without)) for r in rows)


def details(findings: DataFrame) -> list[str]:
    return sorted(r["detail"] for r in findings.collect())


def finding_rows(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    """A detector's finding rows, each (kind, severity, time, client, broker, group, subject, detail, the conn_id
    of its one evidence sample)."""
    df = spark.createDataFrame(rows, "kind string, severity string, ts timestamp, client string, broker string, "
                                     "group_id string, subject string, detail string, conn bigint")
    return as_findings(df, F.col("kind"), F.col("severity"), F.col("detail"), ts_first="ts", ts_last="ts",
                       group_id="group_id", subject="subject",
                       evidence=F.array(F.struct(F.lit("a.pcap").alias("capture"), F.col("conn").alias("conn_id"),
                                                 F.lit(7).alias("correlation_id"))))
