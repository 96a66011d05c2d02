"""Capture files in, Kafka messages out: the offline edge that drives the sans-I/O pipeline."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from contract.limits import DEFAULT_LIMITS, DecodeLimits
from inspector.capture.file import open_capture
from inspector.capture.packets import Segment, Skipped, segments
from inspector.kafka.connection import ConnectionEvent, KafkaMessage
from inspector.kafka.pipeline import Inspector
from inspector.rows import conn_ids
from inspector.rows.event_table import EventTable, RecordsOptions
from inspector.rows.parquet_file import ParquetFile, write_table
from inspector.rows.summary import Summary
from inspector.rows.writers import EventWriter

if TYPE_CHECKING:
    from inspector.tls.keylog import KeyLog

#: Rows per Arrow batch handed to a writer.
BATCH_ROWS = 8192

Progress = Callable[[str, int, int], None]  # (capture, bytes read, frames so far)


@dataclass(frozen=True)  # compiled, an extension type (reader.pxd); from source, a plain frozen dataclass
class ReadOptions:
    ports: frozenset[int] = frozenset()
    records: RecordsOptions = RecordsOptions()
    limits: DecodeLimits = DEFAULT_LIMITS
    tls_keylog: str | None = None  # the TLS key log file (NSS format), read when a capture is


def keylog_of(options: ReadOptions, summary: Summary) -> KeyLog | None:
    """The key log ``options`` name, read now (None without one); what was wrong with it warned in ``summary``."""
    if options.tls_keylog is None:
        return None
    from inspector.tls.keylog_file import load_keylog

    keylog = load_keylog(options.tls_keylog)
    keylog_warnings(keylog, options.tls_keylog, summary)
    return keylog


def keylog_warnings(keylog: KeyLog, path: str, summary: Summary) -> None:
    """What was wrong with a key log, said once in ``summary``'s warnings (each capture reads it)."""
    name = Path(path).name
    found = []
    if keylog.lines_malformed:
        found.append(f"TLS key log {name}: {keylog.lines_malformed:,} malformed lines skipped")
    if not len(keylog):
        found.append(f"TLS key log {name}: no TLS secrets in it")
    summary.warnings.extend(w for w in found if w not in summary.warnings)


def iter_capture(
    path: str,
    summary: Summary,
    options: ReadOptions = ReadOptions(),
    conn_id_base: int = 0,
    progress: Progress | None = None,
    body_text: bool = False,
) -> Iterator[KafkaMessage]:
    """Yield every Kafka message of one capture file; totals go into ``summary``. With ``body_text``, Produce and
    Fetch messages carry their body as JSON text and only its top-level integer fields as ``body``
    (``decoders.api.DecodedMessage.text``): for a consumer that writes the text, as the events table does."""
    inspector = Inspector(ports=set(options.ports), conn_id_base=conn_id_base, limits=options.limits,
                          body_text=body_text, keylog=keylog_of(options, summary))
    name = Path(path).name if path != "-" else "<stdin>"
    last_ts = 0.0
    out: list[KafkaMessage] = []
    with open_capture(path) as reader:
        for count, seg in enumerate(segments(reader), 1):
            ts = packet_messages(inspector, summary, seg, out)
            if ts is not None:
                last_ts = ts
                if out:
                    yield from out
                    out.clear()
            if inspector.closed:  # account closed connections as they go: memory stays bounded
                drain_closed(inspector, summary, name)
            if progress is not None and count % 4096 == 0:
                progress(name, reader.bytes_read, summary.frames)
        count_events(summary, inspector.finish(last_ts), out)
        yield from out
        summary.warnings.extend(f"{name}: {w}" for w in reader.warnings)
        if progress is not None:
            progress(name, reader.bytes_read, summary.frames)
    account_finished(inspector, summary, name)


def packet_messages(inspector: Inspector, summary: Summary, seg: Segment | Skipped, out: list[KafkaMessage],
                    counted: Callable[[Summary, KafkaMessage], None] | None = None) -> float | None:
    """One packet through ``inspector``: its Kafka messages appended to ``out``, everything counted in
    ``summary`` (``counted`` as for :func:`count_events`); the TCP segment's timestamp (None for a packet
    skipped: why is counted)."""
    summary.packets += 1
    if not isinstance(seg, Segment):
        summary.packets_skipped[seg.reason] = summary.packets_skipped.get(seg.reason, 0) + 1
        return None
    segment = seg  # compiled, typed (reader.pxd): its timestamp read from C
    count_events(summary, inspector.segment(segment), out, counted)
    return segment.ts


def count_events(summary: Summary, events: list[ConnectionEvent], out: list[KafkaMessage],
                 counted: Callable[[Summary, KafkaMessage], None] | None = None) -> None:
    """Count ``events`` (the inspector's) in ``summary``; their Kafka messages appended to ``out``.
    ``counted(summary, message)``, when given, runs right after each message is counted (the tap's latency
    reservoir takes the value the count just appended)."""
    for ev in events:
        if isinstance(ev, KafkaMessage):
            summary.message(ev)
            if counted is not None:
                counted(summary, ev)
            out.append(ev)
        else:
            summary.issue(ev)


def account_finished(inspector: Inspector, summary: Summary, name: str) -> None:
    """What read and tap record once ``inspector`` is finished: the connections it closed, the segments its
    reassembler ignored, the limit hits it counted and the highest conn_id it gave."""
    drain_closed(inspector, summary, name)
    if inspector.reassembler.ignored:
        summary.segments_ignored(name, inspector.reassembler.ignored)
    summary.limit_hit("--max-connections", inspector.evicted)
    summary.limit_hit("--max-held", inspector.released)
    summary.max_conn_id = max(summary.max_conn_id, inspector.max_conn_id)


def drain_closed(inspector: Inspector, summary: Summary, name: str) -> None:
    """Account the connections ``inspector`` closed since the last call (read and tap alike)."""
    closed, inspector.closed = inspector.closed, []
    for c in closed:
        if c.kafka and not c.carried_data:
            summary.empty_connections += 1  # no row: a flood of half-open connections stays cheap
        elif c.kafka:
            summary.connection_closed(c.conn, name, c.tls)
        else:
            summary.non_kafka_connections += 1
            summary.non_kafka_bytes += c.ignored_bytes


def read_captures(
    paths: Iterable[str],
    writer: EventWriter,
    options: ReadOptions = ReadOptions(),
    progress: Progress | None = None,
    summary: Summary | None = None,
    first_block: int | None = None,
) -> Summary:
    """Decode every capture into ``writer``; returns the totals. The *i*-th capture's connections are numbered in
    block ``first_block + i`` (``inspector.rows.conn_ids``; by default the first block after
    ``summary.max_conn_id``)."""
    summary = summary if summary is not None else Summary()
    block = conn_ids.next_block(summary.max_conn_id) if first_block is None else first_block
    with _fewer_collections():
        for i, path in enumerate(paths):
            name = Path(path).name if path != "-" else "<stdin>"
            table = EventTable(capture=name, records=options.records, limits=options.limits)
            first = conn_ids.base(block + i)  # each capture a block of its own
            for ev in iter_capture(path, summary, options, first, progress, table.takes_text):
                table.add(ev)
                if len(table) >= BATCH_ROWS:
                    writer.write(table.take())
            if len(table):
                writer.write(table.take())
            for limit, hits in table.limit_hits.items():
                summary.limit_hit(limit, hits)
    return summary


#: Youngest-generation threshold of the cyclic garbage collector while reading. Decoding allocates
#: several container objects per message, nearly all freed by reference counting; with Python's
#: default (700) the collector ran some 400 times on a 120k-message capture (about 5% of the CPU
#: time, the rows waiting for their batch traversed again and again). Reference cycles are still
#: collected, a little later.
GC_THRESHOLD = 20_000


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Raise the collector's first threshold (never lower it; 0, collection off, stays) for the duration."""
    old = gc.get_threshold()
    if old[0]:
        gc.set_threshold(max(old[0], GC_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


CONNECTION_SCHEMA = pa.schema(
    [
        ("capture", pa.string()),
        ("conn_id", pa.int64()),
        ("client", pa.string()),
        ("broker", pa.string()),
        ("bytes_seen", pa.int64()),
        ("bytes_decoded", pa.int64()),
        ("bytes_gap", pa.int64()),
        ("bytes_undecodable", pa.int64()),
        ("bytes_retransmitted", pa.int64()),
        ("frames", pa.int64()),
        ("decode_failures", pa.int64()),
        ("requests_missing", pa.int64()),
        ("responses_missing", pa.int64()),
        ("bytes_encrypted", pa.int64()),  # TLS records not decrypted (no keys, decryption stopped or failed)
        ("bytes_tls_overhead", pa.int64()),  # TLS handshake, alerts, record headers, tags and padding
        *((f"{who}_bytes_{what}", pa.int64()) for who in ("client", "broker")
          for what in ("seen", "decoded", "gap", "undecodable", "retransmitted", "encrypted", "tls_overhead")),
        ("principal", pa.string()),  # SASL: who it last authenticated as (null: none, or not seen)
        ("sasl_mechanism", pa.string()),
        ("sasl_outcome", pa.string()),  # ok | in progress | failed: NAME (code) | failed: SCRAM ERROR
        ("sasl_claimed", pa.string()),  # who the last exchange claimed to be (User:NAME), even when it failed
        ("sasl_issuer", pa.string()),  # OAUTHBEARER: the token's iss claim (read, not verified)
        ("sasl_session_lifetime_ms", pa.int64()),  # SaslAuthenticate's SessionLifetimeMs (KIP-368), when > 0
        # TLS (inspector/kafka/tls_stream.py): what the connection's bytes showed of it, and how decryption went
        ("tls", pa.bool_()),
        ("tls_version", pa.string()),  # TLSv1.3, TLSv1.2, ... (the ServerHello's)
        ("tls_sni", pa.string()),
        ("tls_alpn", pa.string()),  # the protocol the server selected
        ("tls_cipher_suite", pa.string()),  # IANA name
        ("tls_resumed", pa.bool_()),
        ("tls_client_cert", pa.bool_()),  # the client sent a certificate (TLS 1.3: known when decrypted)
        ("tls_decryption", pa.string()),  # pending | decrypted | no keys | not decryptable: | failed: | stopped:
        ("tls_last_alert", pa.string()),  # e.g. "server fatal handshake_failure"
        *((f"tls_{side}_cert_{what}", pa.timestamp("us", tz="UTC") if what.startswith("not_") else pa.string())
          for side in ("server", "client") for what in ("subject", "issuer", "not_before", "not_after")),
    ]
)


def write_connections(summary: Summary, out_dir: Path, previous: Path | None = None) -> Path:
    """``DIR/connections.parquet``: the per-connection byte accounting (after the rows of ``previous``, the
    dataset's file before this run, when given: its columns this schema lacks are left out, its rows all kept). On
    failure nothing is left under the final name. Imports ``pyarrow.parquet`` only for ``previous``."""
    path = out_dir / "connections.parquet"
    table = pa.Table.from_pylist(summary.connections, schema=CONNECTION_SCHEMA)
    if previous is None:
        write_table(table, path)
        return path
    from inspector.rows.parquet_file import iter_batches

    writer = ParquetFile(path, CONNECTION_SCHEMA)
    try:
        try:
            for batch in iter_batches(previous):
                writer.write_table(_as_connections(batch))
            writer.write_table(table)
        finally:
            writer.close()
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _as_connections(batch: pa.RecordBatch) -> pa.Table:
    """Rows of an earlier ``connections.parquet`` in today's schema (a column it lacks: nulls)."""
    names = batch.schema.names
    columns = [batch.column(names.index(f.name)).cast(f.type) if f.name in names else pa.nulls(batch.num_rows, f.type)
               for f in CONNECTION_SCHEMA]
    return pa.Table.from_arrays(columns, schema=CONNECTION_SCHEMA)
