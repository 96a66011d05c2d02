"""What the tap decodes: tcpdump's pcap bytes in, Kafka event rows out, counted as ``read`` counts them.

Sans-I/O, like the pipeline it feeds: the bytes of the pcap stream go to the parser ``read`` uses
(:class:`~inspector.capture.parser.CaptureParser`, fed as they arrive: packets come out as soon as their
last byte is in), then through :func:`~inspector.capture.packets.parse_packet` →
:class:`~inspector.kafka.pipeline.Inspector` → :class:`~inspector.rows.event_table.EventTable`, with the totals in a
:class:`~inspector.rows.summary.Summary`. Each tcpdump run writes a pcap stream of its own (its own header):
:meth:`TapDecoder.end_stream` ends one, and
the next bytes start the next; the connections and everything counted carry on across them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from contract.events import Direction
from decoders.status import StatusKind
from inspector.capture.packets import Segment, Skipped, parse_packet
from inspector.capture.parser import CaptureError, CaptureParser, RawPacket
from inspector.kafka.connection import ConnectionEvent, KafkaMessage
from inspector.kafka.connection_state import Mode
from inspector.kafka.pipeline import Inspector
from inspector.read.reader import ReadOptions, account_finished, count_events, drain_closed, packet_messages
from inspector.rows.event_table import EventTable
from inspector.rows.summary import BYTE_COUNTS, Summary, byte_counts
from inspector.tls.keylog import KeyLog

#: Latencies kept per API for the p50/p99 of summary.json (a uniform reservoir sample beyond this).
LATENCY_RESERVOIR = 100_000


@dataclass
class MessageTally:
    """What the tap counts of each message right after Summary counted it (one call a message): the kind of a
    decode failure (``failures``, by API name, API key and status kind, for the metrics), and the latency reservoir
    that keeps Summary's per-API latency lists to a uniform sample of at most ``cap`` values."""

    cap: int = LATENCY_RESERVOIR
    seen: dict[str, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    failures: dict[tuple[str | None, int | None, StatusKind], int] = field(default_factory=dict)
    failures_counted: int = 0  # Summary.decode_failures when the last one was taken in

    def after_message(self, summary: Summary, ev: KafkaMessage) -> None:
        if summary.decode_failures != self.failures_counted:  # Summary counted this message as a failure
            self.failures_counted = summary.decode_failures
            msg = ev.message
            key = (msg.api_name, msg.api_key, msg.status_kind)
            self.failures[key] = self.failures.get(key, 0) + 1
        if ev.direction is not Direction.RESPONSE or ev.latency_ms is None:
            return
        msg = ev.message
        name = msg.api_name or ("unknown" if msg.api_key is None else f"key {msg.api_key}")
        n = self.seen.get(name, 0) + 1
        self.seen[name] = n
        stats = summary.apis.get(name)
        if stats is None or len(stats.latencies) <= self.cap:
            return
        # Algorithm R: the newest value (just appended) replaces a random slot with probability cap/n.
        newest = stats.latencies.pop()
        j = self.rng.randrange(n)
        if j < self.cap:
            stats.latencies[j] = newest


#: A connection with no packet for this long is closed by the tap (reason "idle", its row written): Kafka's
#: brokers close a connection idle for ``connections.max.idle.ms`` (10 minutes by default) and the tap sees the
#: FIN, so one silent for longer ended unseen (its FIN or RST not captured, its host gone). Without this such
#: connections stayed open for as long as the tap ran: in memory, in ``kafka_inspector_connections_open``.
IDLE_CLOSE_S = 900.0
#: How often, in capture time, the tap looks for idle connections (a walk of the open ones).
IDLE_CHECK_S = 1.0
#: A hole this long between two packets (an interface outage, or a network gone quiet) starts the idle clock
#: again: a connection is closed as idle only after IDLE_CLOSE_S of capture time with packets coming, so those
#: kept across an outage (their bytes meanwhile become gaps) resume as they were.
QUIET_S = 60.0


class TapDecoder:
    """Pcap stream bytes (or packets) in; event rows in :attr:`table`, totals in :attr:`summary`. ``keylog``: the
    TLS secrets, which the caller may go on feeding (the tap's key log grows as clients connect)."""

    def __init__(self, options: ReadOptions, capture_name: str, stream_name: str = "tcpdump",
                 keylog: KeyLog | None = None) -> None:
        self.capture_name = capture_name
        self.stream_name = stream_name  # names the pcap stream in errors
        self.summary = Summary()
        self.table = EventTable(capture=capture_name, records=options.records, limits=options.limits)
        # body_text as `read` decodes: Produce and Fetch bodies written as JSON text straight from the frame
        self.inspector = Inspector(ports=set(options.ports), limits=options.limits, body_text=self.table.takes_text,
                                   keylog=keylog)
        self.tally = MessageTally()
        self._closed_bytes = {f"{side}_bytes_{key}": 0 for side in ("client", "broker") for key in BYTE_COUNTS}
        self._closed_rows = 0  # rows of summary.connections in _closed_bytes
        self.stream_ts = 0.0  # capture time of the newest packet
        self._idle_checked = 0.0  # capture time of the last look for idle connections
        self._idle_from = 0.0  # capture time since which packets came with no QUIET_S hole
        self.wire_bytes = 0  # the packets' lengths on the wire
        self._parser: CaptureParser | None = None
        self._out: list[KafkaMessage] = []

    def feed(self, data: bytes) -> int:
        """Bytes of the current pcap stream; the number of packets whole in them. Raises CaptureError for a
        stream that is no pcap or is damaged (what came before stays decoded)."""
        parser = self._parser
        if parser is None:
            parser = self._parser = CaptureParser(one=self._one)
        try:
            segments = parser.feed(data)
        except CaptureError as exc:
            raise CaptureError(f"{self.stream_name}: {exc}") from None
        self.segments(segments)
        if parser.done:
            raise CaptureError(f"{self.stream_name}: {parser.warnings[-1]}: stream damaged")
        return len(segments)

    def end_stream(self) -> list[str]:
        """The current pcap stream ended (its tcpdump exited); what was wrong with its end, if anything."""
        parser, self._parser = self._parser, None
        if parser is None:
            return []
        parser.end()
        return [f"the pcap stream ended inside a record ({w})" for w in parser.warnings]

    def _one(self, pkt: RawPacket) -> Segment | Skipped:
        self.wire_bytes += pkt.wirelen
        return parse_packet(pkt)

    def packets(self, packets: Iterable[RawPacket]) -> None:
        """Packets captured some other way (``bench/bench_tap.py``'s scapy socket)."""
        self.segments([self._one(pkt) for pkt in packets])

    def segments(self, segments: Iterable[Segment | Skipped]) -> None:
        summary, inspector, table, out = self.summary, self.inspector, self.table, self._out
        counted = self.tally.after_message
        for seg in segments:
            ts = packet_messages(inspector, summary, seg, out, counted)  # as `read` does
            if ts is not None:
                if ts - self.stream_ts > QUIET_S:
                    self._idle_from = ts
                self.stream_ts = ts
            for ev in out:
                table.add(ev)
            out.clear()
        if self.stream_ts - self._idle_checked >= IDLE_CHECK_S and self.stream_ts - self._idle_from >= IDLE_CLOSE_S:
            self.close_idle()

    def close_idle(self, idle_seconds: float = IDLE_CLOSE_S) -> None:
        """Close the connections with no packet in the last ``idle_seconds`` of capture time: their last rows go to
        the table, their end to ``inspector.closed``."""
        self._idle_checked = self.stream_ts
        self._add_rows(self.inspector.close_idle(self.stream_ts, idle_seconds))

    def _add_rows(self, events: list[ConnectionEvent]) -> None:
        """The inspector's ``events`` (outside the packets' loop) counted in the summary, their messages' rows added
        to the table."""
        out = self._out
        count_events(self.summary, events, out, self.tally.after_message)
        for ev in out:
            self.table.add(ev)
        out.clear()

    def take_failures(self) -> dict[tuple[str | None, int | None, StatusKind], int]:
        """The decode failures counted since the last call, by (API name, API key, status kind)."""
        failures, self.tally.failures = self.tally.failures, {}
        return failures

    def byte_totals(self) -> dict[str, int]:
        """The byte accounting of every Kafka connection so far, closed (their ``connections.parquet`` rows) and
        open (what they have so far), by ``client_bytes_KEY`` and ``broker_bytes_KEY``."""
        totals = self._closed_bytes
        rows = self.summary.connections
        for row in rows[self._closed_rows:]:
            for name in totals:
                totals[name] += row[name]
        self._closed_rows = len(rows)
        out = dict(totals)
        for tracked in self.inspector.conns.values():
            if tracked.mode is Mode.KAFKA and tracked.has_conn:  # undecided ones may yet turn out not to be Kafka
                for name, value in byte_counts(tracked.conn, tracked.tls_stream).items():
                    if name in out:
                        out[name] += value
        return out

    def take(self) -> pa.RecordBatch | None:
        """The rows not taken yet, as one batch (None when there are none)."""
        return self.table.take() if len(self.table) else None

    def open_connections(self) -> tuple[int, int]:
        """The connections open now: those recognised as Kafka, and the other TCP connections (known not to be
        Kafka, or too new to tell) the capture filter let through."""
        kafka = sum(1 for tracked in self.inspector.conns.values() if tracked.mode is Mode.KAFKA)
        return kafka, len(self.inspector.conns) - kafka

    def drain_closed(self) -> None:
        drain_closed(self.inspector, self.summary, self.capture_name)

    def finish(self, ts: float) -> None:
        """End every open connection at ``ts``: their last rows go to the table, the rest to the summary."""
        self._add_rows(self.inspector.finish(ts))
        account_finished(self.inspector, self.summary, self.capture_name)  # as `read` does
        for limit, hits in self.table.limit_hits.items():
            self.summary.limit_hit(limit, hits)
