#!/usr/bin/env python3
"""Time the Spark anomaly report on about a million synthetic events.

The events are real ones, repeated: ``kafka-inspector read pcaps/*.pcap`` (or ``--events DIR`` of your
own), copied until the target count is reached, each copy with its own connection ids (conn_id + copy x
2**32) and shifted in time by the span of the original, so the timeline, the connections and the groups'
generations grow as in a long capture. Nothing is committed: the data goes to a temporary directory
(``--keep DIR`` keeps it).

    .venv/bin/python bench/bench_report.py                       # 1,000,000 events, local[2]
    .venv/bin/python bench/bench_report.py --rows 200000 --master 'local[*]'

First the real events themselves (the demo's size), then the million, each as ``kafka-inspector report`` runs
it: its own Spark session (log to a file), timed from Spark's start to its stop, with where the time went.
Targets on 2 cores: < 12 s for the small one, < 45 s for the million.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def base_events(events: str | None, workdir: Path) -> pa.Table:
    if events:
        src = Path(events)
        return pq.read_table(src / "events" if (src / "events").is_dir() else src)
    out = workdir / "base"
    captures = sorted(str(p) for p in (REPO / "pcaps").glob("*.pcap"))
    exe = Path(sys.executable).parent / "kafka-inspector"
    subprocess.run([str(exe), "read", *captures, "--output", str(out), "--quiet"], check=True)
    return pq.read_table(out / "events")


def synthesize(base: pa.Table, rows: int, out: Path) -> int:
    """Write ``rows`` events (copies of ``base``) to ``out/events/part-0.parquet``; returns the count."""
    ts = base.column("ts").cast(pa.int64())
    span = pc.max(ts).as_py() - pc.min(ts).as_py() + 1_000_000  # one second between copies
    copies = -(-rows // base.num_rows)
    (out / "events").mkdir(parents=True, exist_ok=True)
    written = 0
    with pq.ParquetWriter(out / "events" / "part-0.parquet", base.schema) as w:
        for i in range(copies):
            t = base.slice(0, min(base.num_rows, rows - written))
            shifted = pc.add(t.column("ts").cast(pa.int64()), i * span).cast(base.schema.field("ts").type)
            conns = pc.add(t.column("conn_id"), i * 2**32)
            t = t.set_column(t.schema.get_field_index("ts"), base.schema.field("ts"), shifted)
            t = t.set_column(t.schema.get_field_index("conn_id"), base.schema.field("conn_id"), conns)
            w.write_table(t, row_group_size=128 * 1024)
            written += t.num_rows
    return written


def timed_report(label: str, events: Path, output: Path, master: str, target_s: float) -> None:
    """One ``report`` in a process of its own (a JVM serves one process for good: its options with it)."""
    subprocess.run([sys.executable, __file__, "--time-one", label, str(events), str(output), master,
                    str(target_s)], check=True)


def time_one(label: str, events: Path, output: Path, master: str, target_s: float) -> None:
    """One ``report`` as the CLI runs it (its session, Spark's log to a file), timed from Spark's start."""
    from pipelines import report_job

    output.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(output / "spark.log", "ab") as log:
        spark = report_job.build_session(master, log=log, quick_jit=report_job.small_input(str(events)))
        t1 = time.perf_counter()
        try:
            result = report_job.run(spark, str(events), str(output))
        finally:
            t2 = time.perf_counter()
            spark.stop()
    t3 = time.perf_counter()
    total = t3 - t0
    kinds: dict[str, int] = {}
    for f in result.findings:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    tm = result.timings
    steps = {k: v for k, v in tm.items() if k not in ("load", "write")}
    steps_wall = t2 - t1 - tm["load"] - tm["write"]
    print(f"report on {label} with {master}: {total:.1f} s wall (target < {target_s:.0f} s: "
          f"{'met' if total < target_s else 'NOT MET'}) = Spark start {t1 - t0:.1f} + load {tm['load']:.1f} + "
          f"detectors, audit, plots, inventory {steps_wall:.1f} + writing {tm['write']:.1f} + stop {t3 - t2:.1f}",
          flush=True)
    print(f"  steps ({report_job.CONCURRENT_STEPS} at a time, s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(steps.items(), key=lambda kv: -kv[1])))
    print(f"  {len(result.findings):,} findings {dict(sorted(kinds.items()))}; {result.audit_rows:,} admin writes; "
          f"{result.clients:,} clients", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="synthetic events (default 1,000,000)")
    ap.add_argument("--events", help="use this events directory as the base instead of pcaps/")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument("--keep", help="write the synthetic events and the reports here and keep them")
    ap.add_argument("--time-one", nargs=5, metavar=("LABEL", "EVENTS", "OUTPUT", "MASTER", "TARGET_S"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.time_one:
        label, events, output, master, target = args.time_one
        time_one(label, Path(events), Path(output), master, float(target))
        return 0

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        base = base_events(args.events, workdir)
        small = workdir / "small"
        (small / "events").mkdir(parents=True, exist_ok=True)
        pq.write_table(base, small / "events" / "part-0.parquet")
        timed_report(f"{base.num_rows:,} events", small, workdir / "report-small", args.master, 12)
        t0 = time.perf_counter()
        n = synthesize(base, args.rows, workdir / "synthetic")
        size = sum(f.stat().st_size for f in (workdir / "synthetic" / "events").glob("*.parquet"))
        print(f"{n:,} events from {base.num_rows:,} real ones ({size / 1e6:.0f} MB Parquet) in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        timed_report(f"{n:,} events", workdir / "synthetic", workdir / "report", args.master, 45)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
