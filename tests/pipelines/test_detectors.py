"""The detectors table: what each detector says it reads is what it needs. A pass skips a detector when none of the
APIs it reads is in the events; on the demo's events without those APIs, each such detector finds nothing."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import identity
from pipelines.detectors import DETECTORS, Detector, Inputs
from pipelines.events_dataset import EVENTS_SCHEMA, shared_frames
from pipelines.report_job import materialise, slim


def test_a_detector_finds_nothing_without_the_apis_it_reads(spark: SparkSession, capture_files: list[Path]) -> None:
    events = slim(spark.read.schema(EVENTS_SCHEMA).parquet(*(str(p) for p in capture_files))).cache()
    reading: dict[frozenset[int], list[Detector]] = {}  # the detectors that read the same APIs share their events
    for d in DETECTORS:
        if d.reads is not None:
            reading.setdefault(d.reads, []).append(d)
    checked = 0
    for reads, detectors in reading.items():
        # as a pass keeps its inputs (report_job.detector_pass): materialised, each shared frame made once
        without = materialise(events.where(~F.col("api_key").isin(sorted(reads))))
        inputs = Inputs(without, materialise(identity.identity_observations(without)), materialise)
        with shared_frames(materialise):
            for d in detectors:
                assert d.find(inputs).count() == 0, d.name
                checked += 1
    assert checked >= 20
    events.unpersist()
