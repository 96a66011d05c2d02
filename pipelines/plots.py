"""The numbers behind the report's plots: small Spark aggregates, collected to plain Python."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.events_dataset import with_endpoints
from pipelines.groups import joins
from pipelines.hotspots import _error_codes

Series = dict[str, list[tuple[float, float]]]

TOP_APIS = 8
TOP_LATENCY_ROWS = 25
TOP_GROUPS = 8
_BUCKETS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)


@dataclass
class PlotData:
    events: int = 0
    requests: int = 0
    responses: int = 0
    connections: int = 0
    captures: list[str] = field(default_factory=list)
    ts_min: float | None = None
    ts_max: float | None = None
    bucket_s: int = 1
    traffic: Series = field(default_factory=dict)  # requests per bucket, per API
    errors: Series = field(default_factory=dict)  # responses with errors per bucket, per API
    latency: list[tuple[str, str, int, float, float]] = field(default_factory=list)  # api, broker, n, p50, p99
    generations: Series = field(default_factory=dict)  # group -> (ts, generation)
    generation_labels: dict[str, list[str]] = field(default_factory=dict)
    members: Series = field(default_factory=dict)  # group -> (ts, members in that generation)
    lag: Series = field(default_factory=dict)  # "group / topic" -> (ts, total lag): lag.group_lag
    rebalances: Series = field(default_factory=dict)  # "group (protocol)" -> (start, duration in ms)


def bucket_seconds(span_s: float, buckets: int = 100) -> int:
    """A round bucket width giving at most about ``buckets`` points over ``span_s``."""
    for b in _BUCKETS:
        if span_s / b <= buckets:
            return b
    return _BUCKETS[-1]


def _top(series: dict[str, dict[float, float]], order: list[str], buckets: list[float]) -> Series:
    """The ``TOP_APIS`` busiest series, the rest summed as "other"; empty buckets count 0."""
    keep = order[:TOP_APIS]
    out: dict[str, dict[float, float]] = {k: {} for k in keep}
    other: dict[float, float] = {}
    for name, pts in series.items():
        target = out[name] if name in out else other
        for x, y in pts.items():
            target[x] = target.get(x, 0.0) + y
    if other:
        out["other"] = other
    return {k: [(b, v.get(b, 0.0)) for b in buckets] for k, v in out.items() if v}


def rebalance_series(rebalances: DataFrame) -> Series:
    """The rebalances (``rebalances.REBALANCE_COLUMNS``) of the ``TOP_GROUPS`` groups that rebalanced most, as
    "group (protocol)" series of (start, duration in ms); a rebalance that never completed counts 0."""
    top = rebalances.groupBy("protocol", "group_id").count().orderBy(
        F.col("count").desc(), "group_id", "protocol").limit(TOP_GROUPS)
    out: Series = {}
    for r in rebalances.join(top, ["protocol", "group_id"]).select(
            "protocol", "group_id", F.unix_micros("start").alias("t"), "duration_ms").orderBy(
            "group_id", "protocol", "t").collect():
        name = f"{r['group_id']} ({r['protocol']})"
        out.setdefault(name, []).append((r["t"] / 1e6, float(r["duration_ms"] or 0)))
    return out


def lag_series(points: DataFrame) -> Series:
    """``lag.group_lag``'s points of the ``TOP_GROUPS`` most lagging groups and topics, as "group / topic" series."""
    top = points.groupBy("group_id", "topic").agg(F.max("lag").alias("peak")).orderBy(
        F.col("peak").desc(), "group_id", "topic").limit(TOP_GROUPS)
    out: Series = {}
    for r in points.join(top, ["group_id", "topic"]).where(F.col("partitions") > 0).select(
            "group_id", "topic", "point", F.unix_micros("ts").alias("t"), "lag").orderBy(
            "group_id", "topic", "point").collect():
        out.setdefault(f"{r['group_id']} / {r['topic']}", []).append((r["t"] / 1e6, float(r["lag"])))
    return out


#: Activity is found on a grid of about this many cells over the whole span; runs of active cells closer than
#: ``IDLE_CELLS`` cells are one period (captures days apart are periods of their own: the time plots count
#: buckets, and draw the axis, only within periods, the idle time between them cut: ``svg.line_chart``).
ACTIVITY_CELLS, IDLE_CELLS = 2000, 3


def active_periods(events: DataFrame, t0: float, t1: float) -> list[tuple[float, float]]:
    """The periods (start, end in epoch seconds) in which ``events`` has traffic."""
    cell = bucket_seconds(t1 - t0, ACTIVITY_CELLS)
    rows = events.groupBy(F.floor(F.unix_micros("ts") / (cell * 1_000_000)).alias("c")).agg(
        F.min(F.unix_micros("ts")).alias("a"), F.max(F.unix_micros("ts")).alias("b")).orderBy("c").collect()
    periods: list[list[float]] = []
    last = None
    for r in rows:
        if last is not None and r["c"] - last <= IDLE_CELLS:
            periods[-1][1] = r["b"] / 1e6
        else:
            periods.append([r["a"] / 1e6, r["b"] / 1e6])
        last = r["c"]
    return [(a, b) for a, b in periods] or [(t0, t1)]


def collect(events: DataFrame) -> PlotData:
    d = PlotData()
    overview = events.agg(
        F.count(F.lit(1)).alias("n"), F.sum((F.col("direction") == "request").cast("int")).alias("q"),
        F.sum((F.col("direction") == "response").cast("int")).alias("r"),
        F.countDistinct("capture", "conn_id").alias("conns"),
        F.min(F.unix_micros("ts")).alias("t0"), F.max(F.unix_micros("ts")).alias("t1"),
        F.array_sort(F.collect_set("capture")).alias("captures"),
    ).first()
    if overview is None or not overview["n"]:
        return d
    d.events, d.requests, d.responses = int(overview["n"]), int(overview["q"] or 0), int(overview["r"] or 0)
    d.connections = int(overview["conns"])
    d.captures = [c for c in overview["captures"] if c]
    d.ts_min, d.ts_max = overview["t0"] / 1e6, overview["t1"] / 1e6
    periods = active_periods(events, d.ts_min, d.ts_max)
    d.bucket_s = bucket_seconds(sum(b - a for a, b in periods))
    bucket = (F.floor(F.unix_micros("ts") / (d.bucket_s * 1_000_000)) * d.bucket_s).alias("bucket")
    api = F.coalesce(F.col("api_name"), F.lit("unknown")).alias("api")

    traffic: dict[str, dict[float, float]] = {}
    totals: dict[str, int] = {}
    for row in events.where(F.col("direction") == "request").groupBy(bucket, api).count().collect():
        traffic.setdefault(row["api"], {})[float(row["bucket"])] = float(row["count"])
        totals[row["api"]] = totals.get(row["api"], 0) + int(row["count"])
    order = sorted(totals, key=lambda k: (-totals[k], k))
    buckets = sorted({a // d.bucket_s * d.bucket_s + i * d.bucket_s for a, b in periods
                      for i in range(int((b - a // d.bucket_s * d.bucket_s) // d.bucket_s) + 1)})
    d.traffic = _top(traffic, order, buckets)

    errors: dict[str, dict[float, float]] = {}
    etotals: dict[str, int] = {}
    err_rows = events.where(F.col("direction") == "response").withColumn("codes", _error_codes()).where(
        F.size("codes") > 0).groupBy(bucket, api).count().collect()
    for row in err_rows:
        errors.setdefault(row["api"], {})[float(row["bucket"])] = float(row["count"])
        etotals[row["api"]] = etotals.get(row["api"], 0) + int(row["count"])
    d.errors = _top(errors, sorted(etotals, key=lambda k: (-etotals[k], k)), buckets)

    lat = with_endpoints(events.where((F.col("direction") == "response") & F.col("latency_ms").isNotNull()))
    lat_rows = lat.groupBy(api, "broker").agg(
        F.count(F.lit(1)).alias("n"), F.percentile_approx("latency_ms", 0.5, 1000).alias("p50"),
        F.percentile_approx("latency_ms", 0.99, 1000).alias("p99"),
    ).orderBy(F.col("p99").desc(), "api", "broker").limit(TOP_LATENCY_ROWS).collect()
    d.latency = [(r["api"], r["broker"] or "?", int(r["n"]), float(r["p50"]), float(r["p99"])) for r in lat_rows]

    jg = joins(events).where(
        (F.col("r_error_code") == 0) & F.col("group_id").isNotNull() & F.col("r_generation_id").isNotNull())
    gens = jg.groupBy("group_id", F.col("r_generation_id").alias("gen")).agg(
        F.min(F.unix_micros("r_ts")).alias("t"),
        F.countDistinct(F.coalesce("r_member_id", "member_id")).alias("members"),
        F.min("r_protocol_name").alias("proto"))
    top_groups = [r["group_id"] for r in gens.groupBy("group_id").count().orderBy(
        F.col("count").desc(), "group_id").limit(TOP_GROUPS).collect()]
    for r in gens.where(F.col("group_id").isin(top_groups)).orderBy("group_id", "t").collect():
        t = r["t"] / 1e6
        d.generations.setdefault(r["group_id"], []).append((t, float(r["gen"])))
        d.members.setdefault(r["group_id"], []).append((t, float(r["members"])))
        label = f"gen {r['gen']}: {r['members']} member(s)" + (f", {r['proto']}" if r["proto"] else "")
        d.generation_labels.setdefault(r["group_id"], []).append(label)
    return d
