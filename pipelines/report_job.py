"""The report job: every detector over an events dataset -> findings, admin audit, HTML page.

``run(spark, input, output)`` is the job; the ``__main__`` block (for ``spark-submit``) alone builds and
stops the session. ``kafka-inspector report`` (``pipelines/report.py``) calls the same ``run``.

Writes ``OUTPUT/findings.parquet``, ``OUTPUT/admin_audit.parquet`` and ``OUTPUT/clients.parquet`` (Spark
Parquet datasets, one file each) and ``OUTPUT/report.html``.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from contract.kafka import (
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    DESCRIBE_GROUPS,
    ENVELOPE,
    FIND_COORDINATOR,
    JOIN_GROUP,
    METADATA,
    SYNC_GROUP,
)
from pipelines import admin, clients, groups, hotspots, html, identity, plots, versions
from pipelines.events import load_events, severity_rank, shared_exchanges
from pipelines.findings import FINDINGS_SCHEMA, union_findings
from pipelines.kafka import ADMIN_WRITES


@dataclass
class ReportResult:
    findings: list[dict[str, Any]] = field(default_factory=list)
    audit_rows: int = 0
    plots: plots.PlotData = field(default_factory=plots.PlotData)
    findings_path: str = ""
    audit_path: str = ""
    clients_path: str = ""
    html_path: str = ""
    clients: int = 0


def detect_all(spark: SparkSession, events: DataFrame, hosts: DataFrame | None = None,
               audit: DataFrame | None = None) -> DataFrame:
    """All findings of all detectors, one DataFrame (``FINDINGS_SCHEMA``)."""
    observations = identity.identity_observations(events, hosts)
    audit = audit if audit is not None else admin.admin_audit(events)
    parts: list[DataFrame] = [
        identity.misrouted_api_versions(events, observations),
        identity.api_versions_one_sided_identity(events),
        identity.rebootstrap_required(events),
        identity.endpoint_identity_changed(observations),
        *groups.detect(events, observations),
        *admin.detect(events, audit),
        *versions.detect(events),
        *hotspots.detect(events),
        clients.removed_in_kafka_4(events),
        clients.old_message_format(events),
    ]
    return union_findings(spark, parts)


def ordered(findings: DataFrame) -> DataFrame:
    """One partition, most severe first (a local sort: no range-partitioning pass over the inputs)."""
    return findings.repartition(1).sortWithinPartitions(
        severity_rank(F.col("severity")).desc(), "kind", "ts_first", "broker", "client")


#: APIs whose ``body`` some detector parses; the report keeps only these bodies in its cached events.
BODY_APIS = sorted({METADATA, FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, API_VERSIONS, ENVELOPE,
                    DESCRIBE_CLUSTER, *ADMIN_WRITES})


def slim(events: DataFrame) -> DataFrame:
    """The events with ``body`` only where a detector reads it (Produce/Fetch bodies are the bulk), and whether
    a body held record sets in message format v0/v1 (the client inventory's, read before the body goes)."""
    return events.withColumn("old_record_format", clients.old_record_format()).withColumn(
        "body", F.when(F.col("api_key").isin(BODY_APIS), F.col("body")))


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """A small text file at a local path, or through Hadoop's FileSystem for hdfs://, s3a://, ..."""
    if _is_local(path):
        with open(_local(path), "w", encoding="utf-8") as f:
            f.write(text)
        return
    jvm: Any = spark.sparkContext._jvm  # classic Spark only; Spark Connect has no JVM handle
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[union-attr]
    out = fs.create(hpath, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def run(spark: SparkSession, input: str, output: str, hosts_path: str | None = None,
        html_path: str | None = None) -> ReportResult:
    """Run every detector on the events at ``input``; write findings, audit and the page under ``output``."""
    if _is_local(output):
        os.makedirs(_local(output), exist_ok=True)
    events = slim(load_events(spark, input)).cache()
    hosts = identity.hosts_frame(spark, identity.read_hosts(hosts_path)) if hosts_path else None
    result = ReportResult(
        findings_path=output.rstrip("/") + "/findings.parquet",
        audit_path=output.rstrip("/") + "/admin_audit.parquet",
        clients_path=output.rstrip("/") + "/clients.parquet",
        html_path=html_path or output.rstrip("/") + "/report.html",
    )

    with shared_exchanges():
        _write(spark, events, hosts, result)
    findings = spark.read.schema(FINDINGS_SCHEMA).parquet(result.findings_path)
    audit = spark.read.parquet(result.audit_path)

    result.findings = [r.asDict(recursive=True) for r in ordered(findings).collect()]
    audit_rows = [r.asDict(recursive=True) for r in audit.orderBy("ts", "conn_id", "correlation_id").limit(
        html.MAX_AUDIT_ROWS + 1).collect()]
    result.audit_rows = audit.count()
    result.plots = plots.collect(events)
    inventory = clients.inventory(events)
    result.clients = len(inventory)
    clients.clients_frame(spark, inventory).repartition(1).write.mode("overwrite").parquet(result.clients_path)
    page = html.render(result.findings, audit_rows, result.plots, source=input,
                       clients=[c.row() for c in inventory])
    write_text(spark, result.html_path, page)
    events.unpersist()
    return result


def _write(spark: SparkSession, events: DataFrame, hosts: DataFrame | None, result: ReportResult) -> None:
    admin.admin_audit(events).repartition(1).sortWithinPartitions("ts", "conn_id", "correlation_id").write.mode(
        "overwrite").parquet(result.audit_path)
    audit = spark.read.parquet(result.audit_path)
    ordered(detect_all(spark, events, hosts, audit)).write.mode("overwrite").parquet(
        result.findings_path)


def build_session(master: str | None = None, app_name: str = "kafka-inspector-report",
                  log: IO[bytes] | None = None) -> SparkSession:
    """The session ``kafka-inspector report`` and ``spark-submit`` use (``master`` None: spark-submit's).

    ``log``: a file the JVM's own output goes to (log4j's lines, the JDK's warnings), so that none reaches the
    terminal; with a local master, the driver binds 127.0.0.1 unless SPARK_LOCAL_IP says otherwise (no
    "hostname resolves to a loopback address" warning)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf().setAppName(app_name).set("spark.sql.session.timeZone", "UTC").set(
        "spark.ui.showConsoleProgress", "false")
    if master:
        conf.setMaster(master)
        if master.startswith("local"):
            conf.set("spark.sql.shuffle.partitions", "8").set("spark.ui.enabled", "false")
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if master is None or SparkContext._active_spark_context is not None:  # under spark-submit, or running
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
    else:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log}) if log is not None else None
        spark = SparkSession(SparkContext(conf=conf, gateway=gateway))
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Kafka Inspector anomaly report (Spark job)")
    ap.add_argument("input", help="events directory written by `kafka-inspector read` (DIR or DIR/events)")
    ap.add_argument("--output", required=True, help="output directory (local path or hdfs://, s3a://, ...)")
    ap.add_argument("--hosts", help='hosts file: "name ip" lines for advertised host names')
    ap.add_argument("--html", help="where to write report.html (default OUTPUT/report.html)")
    args = ap.parse_args(argv)
    spark = build_session(None)
    try:
        result = run(spark, args.input, args.output, args.hosts, args.html)
    finally:
        spark.stop()
    print(f"{len(result.findings)} findings -> {result.findings_path}; {result.audit_rows} admin writes -> "
          f"{result.audit_path}; page -> {result.html_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
