"""``report --follow``: the report's detectors, continuously, over events folders that grow (Spark Structured
Streaming).

``run(spark, inputs, output, ...)`` is the job. A streaming query over the folders' Parquet part files (a tap's
rotated ``events/part-*.parquet``, each complete once it appears) hands each micro-batch's new files to
:class:`Follower`, which runs a pass of the batch report's detectors (``report_job.detector_pass``: the same
detectors, one source) over the new events together with what it kept of earlier traffic (``retention``), and
writes each new episode and each change of one (``follow_output``). Its state between passes is in
``OUTPUT/_checkpoint/state`` (``follow_state``), beside Spark's own checkpoint (``OUTPUT/_checkpoint/spark``,
which files were read): a run stopped and started again goes on where it stopped, re-emitting nothing and
missing nothing.

**Settling.** Much of what the detectors judge depends on what comes next (a request's answer, a transaction's
end, a group's next generation), and a micro-batch ends anywhere. A pass therefore counts an occurrence only once
the traffic has moved ``settle`` seconds past its last message; the rest waits for the next pass, with its
events kept. When no new file has come for ``settle`` seconds the traffic seen is taken as final: an idle pass
settles everything pending. It reads no new event: it settles the occurrences the pass before left waiting (kept
in that pass's state) without running the detectors again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, LongType, StringType, StructField, StructType, TimestampType

from pipelines import follow_input, follow_output, follow_state, html, identity, plots, retention, row_time
from pipelines.events_dataset import EVENTS_SCHEMA
from pipelines.findings import CASE_TYPE, EPISODE_KEY, EVIDENCE_TYPE, FINDINGS_SCHEMA, combine, episode_id, render
from pipelines.report_job import (
    _INTERPRETED,
    SMALL_INPUT_BYTES,
    call_site,
    detector_pass,
    finding_order,
    keep_small,
    materialise,
    slim,
)
from pipelines.spark_settings import scoped

#: Defaults of the command line (README.md, pipelines/README.md).
TRIGGER_S = 10.0
SETTLE_S = 10.0
HORIZON_S = 600.0
#: Below this many events in a pass (the new files' and those kept from before), Spark runs it interpreted and in
#: one partition (``report_job.SMALL_INPUT_BYTES``'s reason, ``report_job.keep_small``).
SMALL_PASS_EVENTS = SMALL_INPUT_BYTES // 40

#: Occurrences remembered at most (``follow_state``'s ``seen``: those a later pass may compute again).
MAX_SEEN = 200_000

#: The episodes' state (``findings.combine``'s columns).
PARTIALS_SCHEMA = StructType([
    *(FINDINGS_SCHEMA[k] for k in EPISODE_KEY),
    StructField("occurrences", LongType(), False),
    StructField("ts_first", TimestampType()),
    StructField("ts_last", TimestampType()),
    StructField("cases", ArrayType(CASE_TYPE)),
    StructField("evidence", EVIDENCE_TYPE),
])

#: Spark's binaryFile source (its columns are fixed; a stream must still name them). Only ``path`` is read:
#: the files' content is never loaded by the stream, the pass reads the events themselves.
BINARY_FILE_SCHEMA = StructType([StructField("path", StringType(), False),
                                 StructField("modificationTime", TimestampType(), False),
                                 StructField("length", LongType(), False),
                                 StructField("content", BinaryType(), True)])

Say = Callable[[str], None]
Found = Callable[[Sequence[dict[str, Any]]], None]


def _us(ts: datetime | None) -> int | None:
    return None if ts is None else row_time.micros(ts)


@dataclass
class Settings:
    output: str
    inputs: list[str]
    settle_s: float = SETTLE_S
    horizon_s: float = HORIZON_S
    hosts_path: str | None = None
    #: one line for the person watching (skipped files, notes)
    say: Say = field(default=lambda line: None)
    #: the episodes a pass wrote (new ones and changes)
    found: Found = field(default=lambda rows: None)


class Follower:
    """The passes of one ``--follow`` run: each micro-batch's new files (:meth:`batch`), and the idle passes that
    settle what waits when no file comes (:meth:`idle`). Passes never overlap (a lock)."""

    def __init__(self, spark: SparkSession, settings: Settings) -> None:
        self.spark = spark
        self.s = settings
        self.out = Path(settings.output)
        self.root = follow_state.state_dir(settings.output)
        self.version = follow_state.load(self.root)
        self.lock = threading.Lock()
        self.last_pass = time.monotonic()
        self.hosts = (identity.hosts_frame(spark, identity.read_hosts(settings.hosts_path))
                      if settings.hosts_path else None)
        self.passes = 0

    # -- the two kinds of pass -----------------------------------------------------------------------------------

    def batch(self, files: DataFrame, batch_id: int) -> None:
        """foreachBatch: the micro-batch ``batch_id``'s new files."""
        with self.lock:
            if self.version.meta.batch >= batch_id:  # Spark runs a batch again: what its first run left goes
                follow_state.drop_after(self.root, batch_id)
                self.version = follow_state.load(self.root, before_batch=batch_id)
            uris = sorted(r["path"] for r in files.select("path").collect())
            self._pass(batch_id, 0, uris, final=False)

    @property
    def pending(self) -> bool:
        m = self.version.meta
        return m.end_us is not None and (m.settled_us is None or m.settled_us < m.end_us)

    def idle(self) -> bool:
        """An idle pass, if something waits and no pass ran for ``settle`` seconds; True if one ran."""
        if time.monotonic() - self.last_pass < self.s.settle_s or not self.pending:
            return False
        if not self.lock.acquire(blocking=False):
            return False
        try:
            if not self.pending:
                return False
            m = self.version.meta
            self._pass(m.batch, m.idle + 1, [], final=True)
            return True
        finally:
            self.lock.release()

    # -- one pass ------------------------------------------------------------------------------------------------

    def _readable(self, uris: list[str]) -> tuple[list[str], list[str]]:
        good, skipped = [], []
        for uri in uris:
            checked = follow_input.check(uri)
            if checked.problem is not None:
                self.s.say(f"skipped {checked.problem}")
                skipped.append(uri)
                continue
            if checked.note is not None:
                self.s.say(checked.note)
            good.append(uri)
        return good, skipped

    def _pass(self, batch: int, idle: int, uris: list[str], final: bool) -> None:
        spark, prev = self.spark, self.version
        started = time.monotonic()
        name = f"pass-{batch:08d}-{idle:04d}"
        follow_output.truncate(self.out, prev.meta.jsonl_bytes)
        follow_output.drop_passes_from(self.out, batch, idle)
        good, skipped = self._readable(uris)
        meta = replace(prev.meta, batch=batch, idle=idle, skipped_files=[*prev.meta.skipped_files, *skipped][-100:])
        tmp = follow_state.staging(self.root, batch, idle)

        parts: list[DataFrame] = []
        if prev.meta.has_retained:
            parts.append(spark.read.parquet(prev.retained))
        new_count, new = 0, None
        if good:
            new = slim(spark.read.schema(EVENTS_SCHEMA).parquet(*good))
            stats = new.agg(F.count(F.lit(1)).alias("n"), F.max("ts").alias("end")).first()
            assert stats is not None
            new_count, new_end = int(stats["n"]), _us(stats["end"])
            if new_end is not None:
                meta.end_us = new_end if meta.end_us is None else max(meta.end_us, new_end)
            parts.append(new)
        meta.events += new_count
        if not parts or meta.end_us is None:  # nothing read yet: nothing to judge
            self._commit(tmp, meta, prev.seen, [])
            return

        hi = meta.end_us if final else meta.end_us - int(self.s.settle_s * 1_000_000)
        cut = hi - int(self.s.horizon_s * 1_000_000)
        events = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        retained = 0
        if prev.meta.has_retained:
            retained = prev.meta.retained_events if prev.meta.retained_events is not None else parts[0].count()
        small = retained + new_count < SMALL_PASS_EVENTS
        # An idle pass reads no new event: the occurrences the pass before left waiting are all it has to settle
        # (the detectors would find them again in the same events), and the events stay as that pass kept them.
        waiting = prev.waiting() if final and not good else None
        with scoped(spark, _INTERPRETED if small else {}):
            seen = dict(prev.seen)
            left: list[Row] = []
            if waiting is not None:
                occurrences = waiting
            else:
                events = keep_small(events) if small else materialise(events)
                occurrences, left = self._occurrences(events, hi)
            named = self._named(new, occurrences, prev.meta)
            partial_rows, touched = self._partials(occurrences, seen, prev.meta, named)
            stored = spark.read.parquet(prev.episodes) if prev.meta.has_episodes else None
            known = {episode_id(r.asDict()) for r in stored.select(*EPISODE_KEY).collect()} if stored else set()
            episodes = self._episodes(stored, partial_rows, str(tmp / "episodes"))
            rendered = [r.asDict(recursive=True) for r in render(episodes).collect()] if episodes is not None else []
            kept_events: int | None
            if waiting is not None:
                follow_state.keep_retained(prev, tmp)
                oldest, kept_events = prev.meta.retained_oldest_us, prev.meta.retained_events
                cut = prev.meta.kept_from_us if prev.meta.kept_from_us is not None else cut
            else:
                call_site(spark, "follow: retain")
                retention.retain(events, cut).write.parquet(str(tmp / "retained"))
                kept = spark.read.parquet(str(tmp / "retained")).agg(F.min("ts"), F.count(F.lit(1))).first()
                assert kept is not None
                oldest, kept_events = _us(kept[0]), int(kept[1])
        if left:
            follow_state.keep_waiting(tmp, left)
        meta.has_waiting = bool(left)
        meta.retained_events = kept_events
        meta.retained_oldest_us = oldest
        meta.has_retained = True
        meta.has_episodes = episodes is not None
        meta.kept_from_us = cut
        meta.settled_us = hi if prev.meta.settled_us is None else max(hi, prev.meta.settled_us)
        ordered: list[dict[str, Any]] = sorted(rendered, key=finding_order)
        rows = [{**f, "id": eid, "pass": name, "update": eid in known}
                for f in ordered if (eid := episode_id(f)) in touched]
        if rows:
            meta.jsonl_bytes = follow_output.append(self.out, rows)
            follow_output.write_parquet(self.out, name, rows)
        if rows or not (self.out / "report.html").exists():
            page = html.render(ordered, [], plots.PlotData(events=meta.events),
                               source=", ".join(self.s.inputs))
            follow_output.write_page(self.out / "report.html", page)
        self._commit(tmp, meta, _bounded(seen, oldest), rows)
        self.s.say(f"{name}: {new_count:,} new events, {len(rows)} finding(s) written "
                   f"({time.monotonic() - started:.1f} s)")

    def _commit(self, tmp: Path, meta: follow_state.Meta, seen: dict[tuple[str, int], int],
                rows: list[dict[str, Any]]) -> None:
        path = follow_state.commit(self.root, tmp, meta, seen)
        self.version = follow_state.Version(path, meta, seen)
        self.last_pass = time.monotonic()
        self.passes += 1
        if rows:
            self.s.found(rows)

    def _named(self, new: DataFrame | None, occurrences: list[Row], prev: follow_state.Meta
               ) -> set[tuple[str, int, int]]:
        """The (capture, conn_id, correlation_id) of the new files' messages that the evidence of an occurrence
        from part of its history names (few: such occurrences are rare; none asked for when there are none)."""
        if new is None or prev.kept_from_us is None:
            return set()
        wanted = {_sample(e) for r in occurrences
                  if (_us(r["ts_first"]) or 0) < prev.kept_from_us for e in r["evidence"] or ()}
        literals = [F.struct(F.lit(p).cast("string").alias("p"), F.lit(c).cast("long").alias("c"),
                             F.lit(k).cast("int").alias("k"))
                    for p, c, k in sorted(wanted, key=str) if p is not None and c is not None and k is not None]
        if not literals:
            return set()
        sample = F.struct(F.col("capture").cast("string").alias("p"), F.col("conn_id").cast("long").alias("c"),
                          F.col("correlation_id").cast("int").alias("k"))
        call_site(self.spark, "follow: late files")
        found = new.where(sample.isin(literals)).select(sample.alias("s")).distinct().collect()
        return {(r["s"]["p"], r["s"]["c"], r["s"]["k"]) for r in found}

    def _occurrences(self, events: DataFrame, hi: int) -> tuple[list[Row], list[Row]]:
        """Every detector's finding rows: those settled (their last message at or before ``hi``, µs), and those
        left waiting (the rest: an idle pass settles them)."""
        found = [r for rows in detector_pass(self.spark, events, self.hosts, lambda df: df.collect()).values()
                 for r in rows]
        last = [(r, _us(r["ts_last"])) for r in found]  # a row without a last time is neither (as SQL's <= says)
        return [r for r, t in last if t is not None and t <= hi], [r for r, t in last if t is not None and t > hi]

    @staticmethod
    def _partials(occurrences: list[Row], seen: dict[tuple[str, int], int], prev: follow_state.Meta,
                  named: set[tuple[str, int, int]]) -> tuple[list[tuple[Any, ...]], set[str]]:
        """The occurrences not counted before (1 occurrence each) and those grown since (0: their span and
        evidence only), as partial rows; ``seen`` updated; the ids of the episodes they touch.

        An occurrence is known by its episode and its first time. One that starts before the traffic the previous
        pass kept whole (``prev.kept_from_us``) is computed from part of its history (the rest is beyond the
        horizon, only the facts kept): if it ends before what the previous pass settled, earlier passes judged it
        with its whole history and this view of it is not counted, unless its evidence names a message of this
        pass's new files (``named``: a file that came late); if it goes on, it is the counted occurrence of its
        episode whose span it overlaps, grown."""
        spans: dict[str, list[tuple[int, int]]] = {}
        for (eid, first), last in seen.items():
            spans.setdefault(eid, []).append((first, last))
        partial_rows, touched = [], set()
        for r in occurrences:
            d = r.asDict(recursive=False)
            eid = episode_id(d)
            first_us, last_us = _us(d["ts_first"]) or 0, _us(d["ts_last"]) or 0
            ts_first = d["ts_first"]
            if (eid, first_us) not in seen and prev.kept_from_us is not None and first_us < prev.kept_from_us:
                overlapping = [f for f, la in spans.get(eid, ()) if f <= last_us and first_us <= la]
                judged = prev.settled_us is not None and last_us <= prev.settled_us
                late = any(_sample(e) in named for e in d["evidence"] or ())
                if judged and (overlapping or not late):
                    continue
                if overlapping:
                    first_us = max(overlapping)
                    ts_first = max(ts_first, row_time.from_micros(first_us))  # as the row's own times
            before = seen.get((eid, first_us))
            if before is not None and before >= last_us:
                continue
            seen[(eid, first_us)] = last_us
            spans.setdefault(eid, []).append((first_us, last_us))
            touched.add(eid)
            counted = 0 if before is not None else 1
            partial_rows.append((*(d[k] for k in EPISODE_KEY), counted, ts_first, d["ts_last"],
                                 [(ts_first, d["detail"], counted)], d["evidence"]))
        return partial_rows, touched

    def _episodes(self, stored: DataFrame | None, partial_rows: list[tuple[Any, ...]], path: str) -> DataFrame | None:
        """The episodes after this pass, written to ``path``; None when there are none."""
        frames = [stored] if stored is not None else []
        if partial_rows:
            frames.append(self.spark.createDataFrame(partial_rows, PARTIALS_SCHEMA))
        if not frames:
            return None
        merged = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        call_site(self.spark, "follow: episodes")
        (combine(merged) if partial_rows else merged).coalesce(1).write.parquet(path)
        return self.spark.read.parquet(path)


def _sample(e: Row) -> tuple[str, int, int]:
    """An evidence sample as (capture, conn_id, correlation_id)."""
    return (e["capture"], e["conn_id"], e["correlation_id"])


def _bounded(seen: dict[tuple[str, int], int], oldest: int | None) -> dict[tuple[str, int], int]:
    """The occurrences a later pass may compute again: those whose last message is at or after the oldest event
    kept (``oldest``, µs); at most ``MAX_SEEN``, the latest."""
    kept = {k: v for k, v in seen.items() if oldest is not None and v >= oldest}
    if len(kept) > MAX_SEEN:
        kept = dict(sorted(kept.items(), key=lambda kv: kv[1])[-MAX_SEEN:])
    return kept


def stream_paths(inputs: Sequence[str]) -> list[str]:
    """The patterns the stream lists: each input's ``events`` folder (a folder named ``events``, or one without
    an ``events`` folder in it, is the events folder itself), as a glob. Spark requires a plain path to exist when
    the stream starts; a glob it resolves at each trigger, so a tap's folder that does not exist yet, or a
    ``/data/*/`` that a new tap's folder matches later, is followed too."""
    out = []
    for p in inputs:
        p = p.rstrip("/") or "/"
        globbed = any(ch in p for ch in "*?[")
        if os.path.basename(p) != "events" and (globbed or not os.path.isdir(p) or os.path.isdir(f"{p}/events")):
            p = f"{p}/events"
        out.append(p if globbed or "://" in p else _as_glob(p))
    return out


def _as_glob(path: str) -> str:
    """``path`` as a glob matching only itself: its last character in brackets (``events`` -> ``event[s]``)."""
    if not path or path.endswith("/"):
        return path
    last = path[-1]
    return path[:-1] + ("[" + last + "]" if last not in "]\\" else "\\" + last)


def run(spark: SparkSession, settings: Settings, trigger_s: float = TRIGGER_S, stop: threading.Event | None = None,
        poll_s: int = 1) -> Follower:
    """Follow ``settings.inputs`` until ``stop`` is set (or the query fails: its exception is raised)."""
    from functools import reduce

    paths = stream_paths(settings.inputs)
    sources = [spark.readStream.format("binaryFile").schema(BINARY_FILE_SCHEMA).option("pathGlobFilter", "*.parquet")
               .load(p).select("path") for p in paths]
    files = reduce(lambda a, b: a.unionByName(b), sources)
    follower = Follower(spark, settings)
    query = (files.writeStream.foreachBatch(follower.batch)
             .trigger(processingTime=f"{max(trigger_s, 0.1)} seconds")
             .option("checkpointLocation", str(Path(settings.output) / "_checkpoint" / "spark"))
             .queryName("kafka-inspector-follow").start())
    try:
        while query.isActive and not (stop is not None and stop.is_set()):
            query.awaitTermination(poll_s)
            if query.isActive:
                follower.idle()
    finally:
        if query.isActive:
            query.stop()
    failure = query.exception()
    if failure is not None:
        raise failure
    return follower
