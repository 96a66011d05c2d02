"""The report job: every detector over an events dataset -> findings, admin audit, HTML page.

``run(spark, input, output)`` is the job; the ``__main__`` block (for ``spark-submit``) alone builds and
stops the session. ``kafka-inspector report`` (``pipelines/report.py``) calls the same ``run``.

Writes ``OUTPUT/findings.parquet``, ``OUTPUT/admin_audit.parquet``, ``OUTPUT/clients.parquet``,
``OUTPUT/rebalances.parquet``, ``OUTPUT/lag.parquet``, ``OUTPUT/topics.parquet`` and ``OUTPUT/groups.parquet`` (Spark
Parquet datasets, one file each) and ``OUTPUT/report.html``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from contract.kafka import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_CLUSTER,
    DESCRIBE_GROUPS,
    DESCRIBE_TOPIC_PARTITIONS,
    END_TXN,
    ENVELOPE,
    FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    PRODUCE,
    SYNC_GROUP,
    TXN_OFFSET_COMMIT,
)
from pipelines import (
    class_archive,
    group_inventory,
    heartbeat_groups,
    html,
    identity,
    lag,
    plots,
    rebalances,
    topic_clients,
)
from pipelines import (
    client_usage as clients,
)
from pipelines.detectors import DETECTORS, Detector, Inputs
from pipelines.events_dataset import events_path, from_body, load_events, shared_frames
from pipelines.findings import FINDINGS_SCHEMA, combine, partials, render
from pipelines.jvm_names import pin_jvm_names
from pipelines.kafka_rules import ADMIN_WRITES, SEVERITY_RANK
from pipelines.spark_settings import UTC_MICROS, scoped

#: Below this much Parquet (about 200,000 events) Spark spends its time compiling, not computing: the report
#: runs its expressions interpreted (no whole-stage or expression code generation) and, in local mode, the
#: driver's JIT stops at its quick tier; above it compiled code wins (docs/performance.md).
SMALL_INPUT_BYTES = 8_000_000
#: Detectors (and the audit, plots and inventory) run side by side: each is a chain of small Spark jobs whose
#: planning and scheduling leave the cores idle between tasks.
CONCURRENT_STEPS = 4
#: What small inputs set for the run (and put back after): interpreted; one shuffle partition without adaptive
#: execution (on the demo's events AQE re-planned ~290 stage jobs where 88 jobs do); no broadcast joins (the
#: events are one partition, ``keep_small``: a sort-merge join of two one-partition sides needs no exchange, a
#: broadcast a job of its own); no constraint propagation (the optimizer infers each operator's constraints for
#: ``PruneFilters`` on each of ~400 optimizer runs, 1 s of the demo's 17 s of analyser and optimizer rules, to
#: prune filters our queries do not have). docs/performance.md.
_INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                "spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1",
                "spark.sql.autoBroadcastJoinThreshold": "-1", "spark.sql.constraintPropagation.enabled": "false"}
#: The local driver's JVM options for small inputs: the quick tier, with the code cache of a tiered JVM (the
#: quick tier alone gets a smaller one, which three dozen steps' method handles filled: "Out of space in
#: CodeCache for adapters" stopped the SparkContext), and the throughput collector: its threads cost half G1's
#: on the demo's events, and its pauses (~120 of them, 2.7 s in all on the demo's events with the serial
#: collector, every other thread stopped) use both cores (docs/performance.md).
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseParallelGC"
#: A local driver (it is the executor too) on a larger input: a heap for a million cached events and their
#: shuffles, and the throughput collector (a batch job: G1's concurrent threads are CPU the tasks lack). On a
#: small input both cost a second or two of start and are not set.
LOCAL_DRIVER = {"spark.driver.memory": "4g"}
#: ... and a JIT that inlines less and unrolls loops less: a report is ~1,400 generated classes, each compiled
#: once by Janino and then by the JIT's optimising tier, whose threads took a third of the JVM's CPU at 1 M
#: events; smaller compilation units cost them less, the tasks no more (docs/performance.md).
LOCAL_JAVA_OPTIONS = ("-XX:+UseParallelGC -XX:FreqInlineSize=80 -XX:InlineSmallCode=500 -XX:MaxInlineLevel=6 "
                      "-XX:LoopUnrollLimit=16")

#: Generated classes a JVM keeps compiled (Spark's default: 100). The report's queries at 1 M events generate
#: ~1,400 distinct ones; with the default, 1,800 Janino compilations (and the JIT's work on each new class): 130 s
#: of the JVM's CPU, 117 s with room for all (a static setting: the session's).
CODEGEN_CACHE_ENTRIES = 4000

#: PySpark's call-site capture: on, each of the report's ~30,000 column and DataFrame calls also asks the JVM for
#: the active session and a setting, walks the Python stack and sets and clears the call site in the JVM (four
#: more round trips through py4j). It names the Python line in an analysis error's message; the report's
#: queries are the project's own, tested, not a user's (docs/performance.md).
DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"

#: ``progress(done, total, name)``: called as each step of the report finishes.
Progress = Callable[[int, int, str], None]


@dataclass
class ReportResult:
    findings: list[dict[str, Any]] = field(default_factory=list)
    audit_rows: int = 0
    plots: plots.PlotData = field(default_factory=plots.PlotData)
    findings_path: str = ""
    audit_path: str = ""
    clients_path: str = ""
    rebalances_path: str = ""
    lag_path: str = ""
    topics_path: str = ""
    groups_path: str = ""
    html_path: str = ""
    clients: int = 0
    #: where the time went, in seconds: "load", each step (they overlap: CONCURRENT_STEPS at a time), "write"
    timings: dict[str, float] = field(default_factory=dict)


def finding_order(f: dict[str, Any]) -> tuple[Any, ...]:
    """Most severe first, then kind, first time, broker, client (nulls first), detail: a total order."""
    def nulls_first(v: Any) -> tuple[bool, Any]:
        return (v is not None, v if v is not None else "")
    return (-SEVERITY_RANK.get(f["severity"], 0), f["kind"], nulls_first(f["ts_first"]), nulls_first(f["broker"]),
            nulls_first(f["client"]), nulls_first(f["group_id"]), f["detail"])


#: APIs whose ``body`` some detector parses; the report keeps only these bodies in its cached events.
BODY_APIS = sorted({METADATA, FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, API_VERSIONS, ENVELOPE,
                    ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, OFFSET_COMMIT, OFFSET_FETCH, TXN_OFFSET_COMMIT,
                    LIST_OFFSETS, CONSUMER_GROUP_DESCRIBE, DESCRIBE_TOPIC_PARTITIONS, *heartbeat_groups.PROTOCOLS,
                    DESCRIBE_CLUSTER, *ADMIN_WRITES})
#: Events columns no detector, plot or inventory reads: the report does not keep them.
UNREAD_COLUMNS = ("frame_offset", "frame_size", "topics", "sasl_mechanism", "tls", "request_missing", "candidates",
                  "confidence", "notes")


def slim(events: DataFrame) -> DataFrame:
    """The events with ``body`` only where a detector reads it (Fetch responses are the bulk: of theirs only each
    partition's high watermark is kept; Produce requests' bodies hold their batches' headers, not the records),
    and whether a body held record sets in message format v0/v1 (the client inventory's, read before the body
    goes) and the topics it counts for in the topic map (``topic_clients.with_traffic``), without the
    ``UNREAD_COLUMNS``."""
    kept = F.col("api_key").isin(BODY_APIS) | ((F.col("api_key") == PRODUCE) & (F.col("direction") == "request"))
    fetched = (F.col("api_key") == FETCH) & (F.col("direction") == "response")
    watermarks = F.to_json(from_body(F.col("body"), lag.FETCH_RESPONSE_DDL))
    return topic_clients.with_traffic(events.withColumn("old_record_format", clients.old_record_format())).withColumn(
        "body", F.when(kept, F.col("body")).when(fetched, watermarks)).drop(*UNREAD_COLUMNS)


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def input_bytes(path: str | Sequence[str]) -> int | None:
    """The size of local events datasets' Parquet files; None when one is remote."""
    paths = [path] if isinstance(path, str) else list(path)
    if not all(_is_local(p) for p in paths):
        return None
    total = 0
    for p in paths:
        root = events_path(_local(p))
        if os.path.isfile(root):
            total += os.path.getsize(root)
        else:
            total += sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(root) for n in names
                         if n.endswith(".parquet"))
    return total


def small_input(path: str | Sequence[str]) -> bool:
    size = input_bytes(path)
    return size is not None and size < SMALL_INPUT_BYTES


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


def run(spark: SparkSession, input: str | Sequence[str], output: str, hosts_path: str | None = None,
        html_path: str | None = None, progress: Progress | None = None) -> ReportResult:
    """Run every detector on the events at ``input``; write findings, audit and the page under ``output``."""
    if _is_local(output):
        os.makedirs(_local(output), exist_ok=True)
    small = small_input(input)
    with scoped(spark, {**UTC_MICROS, **(_INTERPRETED if small else {})}):
        return _run(spark, input, output, hosts_path, html_path, progress, small)


def _run(spark: SparkSession, input: str | Sequence[str], output: str, hosts_path: str | None, html_path: str | None,
         progress: Progress | None, small: bool) -> ReportResult:
    result = ReportResult(
        findings_path=output.rstrip("/") + "/findings.parquet",
        audit_path=output.rstrip("/") + "/admin_audit.parquet",
        clients_path=output.rstrip("/") + "/clients.parquet",
        rebalances_path=output.rstrip("/") + "/rebalances.parquet",
        lag_path=output.rstrip("/") + "/lag.parquet",
        topics_path=output.rstrip("/") + "/topics.parquet",
        groups_path=output.rstrip("/") + "/groups.parquet",
        html_path=html_path or output.rstrip("/") + "/report.html",
    )
    started = time.perf_counter()
    call_site(spark, "load")
    events = slim(load_events(spark, input))
    events = keep_small(events) if small else columnar(events)
    try:
        return _report(spark, events, input, output, hosts_path, result, started, progress)
    finally:
        events.unpersist()


#: The steps of a pass besides the detectors, made once its shared inputs exist: (name, step) pairs.
ExtraSteps = Callable[[Inputs], list[tuple[str, Callable[[], None]]]]


#: What a detector pass makes of each detector's finding rows (``detector_pass``'s ``collect``).
_Made = TypeVar("_Made")


def detector_pass(spark: SparkSession, events: DataFrame, hosts: DataFrame | None,
                  collect: Callable[[DataFrame], _Made], extra: ExtraSteps | None = None,
                  progress: Progress | None = None, timings: dict[str, float] | None = None) -> dict[str, _Made]:
    """Every detector of ``DETECTORS`` over ``events`` (kept: materialised or columnar), with ``extra`` steps
    beside them, ``CONCURRENT_STEPS`` at a time: what ``collect`` makes of each detector's finding rows, by the
    name of each detector that ran (the report materialises their partials, which ``all_episodes`` combines after;
    ``--follow`` collects them, to settle the occurrences a micro-batch touched).

    The one detector pass of both reports: the broker identity observations are made and materialised first,
    what the steps share is made once (``detectors.Inputs``, ``events.shared_frames``)."""
    observations = materialise(identity.identity_observations(events, hosts))
    inputs = Inputs(events, observations, materialise)  # the audit and the lag: made by the first step asking
    present = {r[0] for r in events.select("api_key").distinct().collect()}
    found: dict[str, _Made] = {}

    def detector(d: Detector) -> Callable[[], None]:
        return lambda: found.__setitem__(d.name, collect(d.find(inputs)))

    runs = [d for d in DETECTORS if d.reads is None or d.reads & present]
    steps = [*((d.name, detector(d)) for d in runs), *(extra(inputs) if extra is not None else ())]
    with shared_frames(materialise):
        _run_steps(spark, steps, progress, timings if timings is not None else {})
    return found


def _report(spark: SparkSession, events: DataFrame, input: str | Sequence[str], output: str, hosts_path: str | None,
            result: ReportResult, started: float, progress: Progress | None) -> ReportResult:
    hosts = identity.hosts_frame(spark, identity.read_hosts(hosts_path)) if hosts_path else None
    audit_rows: list[dict[str, Any]] = []
    inventory: list[clients.Client] = []
    topic_rows: list[dict[str, Any]] = []
    group_rows: list[dict[str, Any]] = []
    lag_series: plots.Series = {}
    rebalance_series: plots.Series = {}

    def extra(inputs: Inputs) -> list[tuple[str, Callable[[], None]]]:
        result.timings["load"] = time.perf_counter() - started

        def write_audit() -> None:
            inputs.audit.repartition(1).sortWithinPartitions("ts", "conn_id", "correlation_id").write.mode(
                "overwrite").parquet(result.audit_path)
            audit = spark.read.parquet(result.audit_path)
            audit_rows.extend(r.asDict(recursive=True) for r in audit.orderBy(
                "ts", "conn_id", "correlation_id").limit(html.MAX_AUDIT_ROWS + 1).collect())
            result.audit_rows = audit.count()

        def write_rebalances() -> None:
            everything = rebalances.rebalances(events).repartition(1)
            everything.sortWithinPartitions("protocol", "group_id", "generation").write.mode("overwrite").parquet(
                result.rebalances_path)
            rebalance_series.update(plots.rebalance_series(spark.read.parquet(result.rebalances_path)))

        def write_lag() -> None:
            lag.consumer_lag(inputs.lag).repartition(1).sortWithinPartitions(
                "group_id", "topic", "partition", "ts", "source").write.mode("overwrite").parquet(result.lag_path)
            lag_series.update(plots.lag_series(inputs.lag.points))

        def collect_plots() -> None:
            result.plots = plots.collect(events)

        def collect_inventory() -> None:
            inventory.extend(clients.inventory(events))

        def write_topic_map() -> None:
            rows = topic_clients.topic_map(events)
            topic_clients.topics_frame(spark, rows).repartition(1).write.mode("overwrite").parquet(result.topics_path)
            topic_rows.extend(r.row() for r in rows)

        def write_groups() -> None:
            group_inventory.groups_frame(events, inputs.groups).repartition(1).write.mode("overwrite").parquet(
                result.groups_path)
            group_rows.extend(g.row() for g in inputs.groups)

        return [("admin audit", write_audit), ("rebalances", write_rebalances), ("consumer lag", write_lag),
                ("plots", collect_plots), ("client inventory", collect_inventory), ("topic map", write_topic_map),
                ("group inventory", write_groups)]

    kept = detector_pass(spark, events, hosts, lambda df: materialise(partials(df)), extra, progress, result.timings)
    call_site(spark, "episodes")
    started = time.perf_counter()
    found = all_episodes(list(kept.values()))
    result.timings["episodes"] = time.perf_counter() - started
    call_site(spark, "write")

    started = time.perf_counter()
    result.plots.lag = lag_series
    result.plots.rebalances = rebalance_series
    rows = sorted(found, key=lambda r: finding_order(r.asDict()))
    spark.createDataFrame(rows, FINDINGS_SCHEMA).coalesce(1).write.mode("overwrite").parquet(result.findings_path)
    result.findings = [r.asDict(recursive=True) for r in rows]
    result.clients = len(inventory)
    clients.clients_frame(spark, inventory).repartition(1).write.mode("overwrite").parquet(result.clients_path)
    source = input if isinstance(input, str) else ", ".join(input)
    page = html.render(result.findings, audit_rows, result.plots, source=source, clients=[c.row() for c in inventory],
                       topics=topic_rows, groups=group_rows)
    write_text(spark, result.html_path, page)
    result.timings["write"] = time.perf_counter() - started
    call_site(spark, None)
    return result


def all_episodes(kept: list[DataFrame]) -> list[Row]:
    """The episodes of every detector, made at once (``findings.episodes``: render, combine) from the partials
    each detector's step materialised (``kept``): partials combine in any grouping, and the episode key holds the
    kind, so one combine of all of them gives each detector's episodes. One query instead of one per detector:
    combining and rendering (two aggregations and a dozen higher-order functions) cost a small report ~0.1 s of
    analysis and tasks per detector (docs/performance.md)."""
    if not kept:
        return []
    return render(combine(functools.reduce(DataFrame.unionByName, kept).coalesce(1))).collect()


def materialise(df: DataFrame) -> DataFrame:
    """``df`` computed now and kept by the executors, as a DataFrame whose plan is that data alone.

    What the steps share (the events, the broker identity observations, the admin audit, the lag's frames) is
    materialised once. Cached instead, each would keep its whole plan: every step's query would carry it, and
    Spark analyses, optimises and matches against the cache the whole of it on each of the report's few hundred
    queries (a second a query on the demo's events, most of a small report's time). A local checkpoint cuts the
    plan; the data stays with the executors (until the DataFrame is collected: Spark's context cleaner)."""
    return df.localCheckpoint(eager=True)


def keep_small(events: DataFrame) -> DataFrame:
    """A small input's events (run under ``_INTERPRETED``) materialised in one partition: one partition satisfies
    every distribution a join, an aggregate or a window asks for, so the steps' queries need no shuffle (209 tasks
    instead of 433 on the demo's events; docs/performance.md)."""
    return materialise(events.coalesce(1))


def columnar(events: DataFrame) -> DataFrame:
    """The events kept now by the executors in Spark's in-memory columnar cache, each partition's rows sorted by
    API and direction.

    Every step reads the events again and again, each query a few columns of one or two APIs. From the cache a
    query reads only its columns, and skips the batches (10,000 rows each) whose API range excludes its own: at
    1 M events the identity observations took 5.7 s from a local checkpoint (each query scans every whole row),
    1 s from this cache; the report as a whole 90 s, then 71 s. Its plan (a read, ``slim``'s projection and a
    local sort) stays small, so the queries on top of it are not slow to plan (``materialise``). Small inputs
    are materialised instead: reading the cache compiles a column accessor per query (a Janino compilation even
    when the rest is interpreted), which a report on the demo's events pays a few hundred times (25 s instead of
    20 s)."""
    kept = events.sortWithinPartitions("api_key", "direction").cache()
    kept.count()
    return kept


def call_site(spark: SparkSession, name: str | None) -> None:
    """Name the jobs this thread starts from now on (``name`` None: Spark's own names again). Spark names each
    job by its call site, and finds it by walking the Java stack at every job and RDD (3% of a small report's
    CPU) unless a name is given: the report gives its step's."""
    sc = spark.sparkContext
    sc.setLocalProperty("callSite.short", None if name is None else f"report: {name}")  # type: ignore[arg-type]
    sc.setLocalProperty("callSite.long", None if name is None else f"kafka-inspector report, step {name}")  # type: ignore[arg-type]


def _run_steps(spark: SparkSession, steps: list[tuple[str, Callable[[], None]]], progress: Progress | None,
               timings: dict[str, float]) -> None:
    """Run the steps ``CONCURRENT_STEPS`` at a time (Spark schedules the jobs of several threads at once)."""
    def timed(name: str, step: Callable[[], None]) -> str:
        started = time.perf_counter()
        call_site(spark, name)
        step()
        timings[name] = time.perf_counter() - started
        return name

    with ThreadPoolExecutor(CONCURRENT_STEPS, thread_name_prefix="report") as pool:
        pending = [pool.submit(timed, name, step) for name, step in steps]
        for done, future in enumerate(as_completed(pending), 1):
            name = future.result()
            if progress is not None:
                progress(done, len(steps), name)


def build_session(master: str | None = None, app_name: str = "kafka-inspector-report",
                  log: IO[bytes] | None = None, quick_jit: bool = False) -> SparkSession:
    """The session ``kafka-inspector report`` and ``spark-submit`` use (``master`` None: spark-submit's).

    ``log``: a file the JVM's own output goes to (log4j's lines, the JDK's warnings), so that none reaches the
    terminal; with a local master, the driver binds 127.0.0.1 unless SPARK_LOCAL_IP says otherwise (no
    "hostname resolves to a loopback address" warning). ``quick_jit`` (a local master, a small input: see
    ``SMALL_INPUT_BYTES``): the driver's JIT compiles at its quick tier only; otherwise a local driver gets
    ``LOCAL_DRIVER`` and ``LOCAL_JAVA_OPTIONS``. A local driver of its own (``log`` given) maps its classes
    from the class-data archive (``class_archive``)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf().setAppName(app_name).set("spark.sql.session.timeZone", "UTC").set(
        "spark.ui.showConsoleProgress", "false").set("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
    conf.set(DATAFRAME_DEBUGGING, "false")
    # a JVM launched here, its lines to the log (one launched before in this process stays PySpark's gateway, its
    # options and log with it)
    fresh = master is not None and log is not None and SparkContext._gateway is None
    if master:
        conf.setMaster(master)
        if master.startswith("local"):
            conf.set("spark.sql.shuffle.partitions", "8").set("spark.ui.enabled", "false")
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            options = QUICK_JIT if quick_jit else LOCAL_JAVA_OPTIONS
            if not quick_jit:
                for k, v in LOCAL_DRIVER.items():
                    conf.set(k, v)
            if fresh:
                options = f"{options} {class_archive.java_options(class_archive.installation())}".strip()
            conf.set("spark.driver.extraJavaOptions", options)
    if master is None or SparkContext._active_spark_context is not None:  # under spark-submit, or running
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
    else:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log}) if fresh else None
        spark = SparkSession(SparkContext(conf=conf, gateway=gateway))
    spark.sparkContext.setLogLevel("ERROR")
    pin_jvm_names(spark)
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Kafka Inspector anomaly report (Spark job)")
    ap.add_argument("input", nargs="+", help="events directories written by `kafka-inspector read` or `tap` (DIR or "
                                             "DIR/events)")
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
