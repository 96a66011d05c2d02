"""Spark jobs over the events dataset: anomaly detectors, the report, and parallel decoding.

See pipelines/README.md. Only the Parquet events contract is shared with ``inspector``; the one
exception is ``pipelines.decode_job``, whose tasks run the decoder.
"""
