"""The tap's Prometheus metrics, sans-I/O: event batches and counters in, metric families out.

:class:`TapMetrics` is fed by the tap's driver with what it already has, never per packet: each event batch it
writes (:meth:`TapMetrics.add_batch`, about once a second: requests, responses, latencies, the requests at
versions Kafka 4.0 removed, the record sets in message format v0/v1), the decode failures the decoder counted
(:meth:`TapMetrics.add_failures`, by API and status kind), the byte accounting of the connections
(:meth:`TapMetrics.set_bytes`, as ``connections.parquet`` counts it) and the capture's counters
(:meth:`TapMetrics.set_capture`). :meth:`TapMetrics.snapshot` returns the families as plain immutable values,
which the HTTP edge (``inspector.tap.metrics_http``) renders with ``prometheus_client``. No clock, no socket, no
thread here.

Label values come from the traffic (a client id is whatever a client sends), so every label is bounded:
:class:`LabelCap` keeps the first ``MAX_LABEL_VALUES`` distinct values of a label (the API and error names Kafka
defines, and the status kinds, always have their own), folds every later one into ``other`` (counted in
``kafka_inspector_label_values_folded_total{label}``), writes control, invisible and direction-changing
characters as visible escapes (``contract.text.visible``, as the terminal does) and cuts a value at
``MAX_LABEL_LENGTH`` characters. ``prometheus_client`` escapes ``\\``, ``"`` and line feeds when it writes them.

Counters never go back: a value derived from the connections' accounting (an open TLS connection's incomplete
record counts as undecodable until it completes) is exported as the highest value it had.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa
import pyarrow.compute as pc

from contract.apis import API_NAMES
from contract.clients import OLD_RECORD_FORMAT, UNGONE, move_to, old_record_format
from contract.kafka import ERROR_NAMES, error_name
from contract.text import visible
from decoders.status import StatusKind

#: Distinct values kept per label (beyond them: ``other``).
MAX_LABEL_VALUES = 100
#: Characters kept of a label value.
MAX_LABEL_LENGTH = 128
#: What the values beyond the cap become.
OTHER = "other"
#: Upper bounds of the latency histogram's buckets, seconds (``+Inf`` follows).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: The two sides of a connection, as the byte accounting names them (``client_bytes_*``, ``broker_bytes_*``).
SIDES = ("client", "broker")
#: The parts a side's bytes are counted in (``summary.BYTE_PARTS``'s order).
BYTE_KINDS = ("decoded", "gap", "undecodable", "encrypted", "tls_overhead")

PRODUCE, FETCH = 0, 1


class Kind(Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True, slots=True)
class Spec:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()


#: Every family the tap exports, as data: the README and the Grafana dashboard use these names.
SPECS: dict[str, Spec] = {s.name: s for s in (
    Spec("kafka_inspector_requests_total", Kind.COUNTER,
         "Kafka requests decoded (one per event row; an Envelope's inner request too)",
         ("api", "version", "client_id")),
    Spec("kafka_inspector_responses_total", Kind.COUNTER,
         "Kafka responses decoded, by their top-level ErrorCode (NONE: 0 or no top-level code)", ("api", "error")),
    Spec("kafka_inspector_request_latency_seconds", Kind.HISTOGRAM,
         "time from a request to its response, as the capture's timestamps show it", ("api",)),
    Spec("kafka_inspector_bytes_total", Kind.COUNTER,
         "stream bytes of the Kafka connections by the side that sent them and how they were accounted "
         "(as connections.parquet counts them; open connections included)", ("direction", "kind")),
    Spec("kafka_inspector_decode_failures_total", Kind.COUNTER,
         "frames whose body could not be decoded, by API and status kind", ("api", "status_kind")),
    Spec("kafka_inspector_kernel_drops_total", Kind.COUNTER,
         "packets the kernel dropped before tcpdump read them (libpcap's counter; on lo each packet counts twice)"),
    Spec("kafka_inspector_packets_total", Kind.COUNTER, "packets decoded"),
    Spec("kafka_inspector_connections_open", Kind.GAUGE,
         "Kafka connections open now (as the live view counts them; other TCP connections apart)"),
    Spec("kafka_inspector_interface_outages_total", Kind.COUNTER, "times the capture interface went down or away"),
    Spec("kafka_inspector_last_packet_timestamp_seconds", Kind.GAUGE,
         "capture time of the newest packet decoded (Unix seconds): time() minus it is how far behind the tap is"),
    Spec("kafka_inspector_clients_removed_versions", Kind.GAUGE,
         "requests seen at an (API, version) Kafka 4.0 removed (KIP-896), per client: it must upgrade",
         ("client_id", "api", "version")),
    Spec("kafka_inspector_clients_old_message_format", Kind.GAUGE,
         "Produce requests and Fetch responses carrying record sets in message format v0/v1 (MessageSet), "
         "which Kafka 4.0 no longer writes, per client", ("client_id", "api")),
    Spec("kafka_inspector_label_values_folded_total", Kind.COUNTER,
         f"label values beyond the label's cap ({MAX_LABEL_VALUES} distinct values) folded into '{OTHER}' (once per "
         "series and event batch)",
         ("label",)),
)}


@dataclass(frozen=True, slots=True)
class Histogram:
    buckets: tuple[int, ...]  # cumulative counts, one per LATENCY_BUCKETS bound, then +Inf (the count)
    sum: float


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family as exported: its spec and its samples by label values (in the spec's label order)."""

    spec: Spec
    values: Mapping[tuple[str, ...], float] = field(default_factory=dict)
    histograms: Mapping[tuple[str, ...], Histogram] = field(default_factory=dict)


def label_text(value: str) -> str:
    """A label value as exported: controls and invisible characters escaped, at most MAX_LABEL_LENGTH characters,
    valid UTF-8 (a lone surrogate, which no text from Arrow holds, is escaped too)."""
    text = visible(value)[:MAX_LABEL_LENGTH]
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class LabelCap:
    """The values one label may take: ``always`` ones, plus the first ``cap`` others; later ones are ``other``."""

    __slots__ = ("always", "cap", "folded", "kept")

    def __init__(self, cap: int = MAX_LABEL_VALUES, always: Iterable[str] = ()) -> None:
        self.cap = cap
        self.kept: dict[str, str] = {v: label_text(v) for v in always}
        self.always = len(self.kept)
        self.folded = 0  # values (occurrences in a batch's groups) folded into OTHER

    def __call__(self, value: str) -> str:
        shown = self.kept.get(value)
        if shown is not None:
            return shown
        if len(self.kept) - self.always >= self.cap:
            self.folded += 1
            return OTHER
        shown = self.kept[value] = label_text(value)
        return shown


def api_label(name: str | None, key: int | None) -> str:
    """An API as the summary and the live view name it: its name, ``key N`` for a key Kafka never had, or
    ``unknown``."""
    return name or ("unknown" if key is None else f"key {key}")


_COLUMNS = ("direction", "api_key", "api_name", "api_version", "client_id", "error_code", "latency_ms", "body")


class TapMetrics:
    """The tap's metrics: counts accumulated from what the driver hands over, families out."""

    def __init__(self, max_values: int = MAX_LABEL_VALUES) -> None:
        self.caps: dict[str, LabelCap] = {
            "api": LabelCap(max_values, API_NAMES.values()),
            "version": LabelCap(max_values),
            "client_id": LabelCap(max_values),
            "error": LabelCap(max_values, ERROR_NAMES.values()),
            "status_kind": LabelCap(max_values, (k.name.lower() for k in StatusKind)),
        }
        self.counts: dict[str, dict[tuple[str, ...], float]] = {name: {} for name in SPECS}
        self._latency: dict[tuple[str, ...], list[float]] = {}  # api -> per-bucket counts (not cumulative), then sum
        self._bounds = [pa.scalar(b) for b in LATENCY_BUCKETS]
        # any of contract.clients' markers, as one regular expression (one pass over the bodies' UTF-8 text)
        self._old_marker = re.compile("|".join(re.escape(text) for text in OLD_RECORD_FORMAT).encode())

    def _add(self, name: str, labels: tuple[str, ...], n: float) -> None:
        values = self.counts[name]
        values[labels] = values.get(labels, 0) + n

    def _set_monotone(self, name: str, labels: tuple[str, ...], value: float) -> None:
        values = self.counts[name]
        if value > values.get(labels, -1):  # a zero is exported too: "none yet" rather than "no data"
            values[labels] = value

    # -- what the driver hands over ---------------------------------------------------------------------

    def add_batch(self, batch: pa.RecordBatch) -> None:
        """An event batch (``inspector.rows.event_table.SCHEMA``) as the tap writes it: a few Arrow kernels and one
        grouping over its rows, then a Python loop over the groups (a few dozen), never over the rows."""
        if batch.num_rows == 0:
            return
        table = pa.Table.from_batches([batch.select(list(_COLUMNS))])
        self._messages(table)
        self._latencies(table)
        self._old_format(table)

    def _messages(self, table: pa.Table) -> None:
        api, version, client, error = self.caps["api"], self.caps["version"], self.caps["client_id"], self.caps["error"]
        groups = table.group_by(["direction", "api_key", "api_name", "api_version", "client_id", "error_code"],
                                use_threads=False).aggregate([([], "count_all")])
        for direction, key, name, ver, cid, code, n in zip(*(c.to_pylist() for c in groups.columns), strict=True):
            if direction == "request":
                labels = (api(api_label(name, key)), version("" if ver is None else str(ver)), client(cid or ""))
                self._add("kafka_inspector_requests_total", labels, n)
                if move_to(key, ver) != UNGONE:  # Kafka 4.0 removed this (API, version): contract.clients decides
                    self._add("kafka_inspector_clients_removed_versions", (labels[2], labels[0], labels[1]), n)
            else:
                self._add("kafka_inspector_responses_total", (api(api_label(name, key)), error(error_name(code or 0))),
                          n)

    def _latencies(self, table: pa.Table) -> None:
        timed = table.filter(pc.is_valid(table.column("latency_ms")))  # responses with their request
        if timed.num_rows == 0:
            return
        seconds = pc.divide(timed.column("latency_ms"), 1000.0)
        bucket = pc.cast(pc.greater(seconds, self._bounds[0]), pa.int8())
        for bound in self._bounds[1:]:  # the bucket's index: how many bounds the value exceeds
            bucket = pc.add(bucket, pc.cast(pc.greater(seconds, bound), pa.int8()))
        timed = pa.table({"api_key": timed.column("api_key"), "api_name": timed.column("api_name"),
                          "bucket": bucket, "seconds": seconds})
        groups = timed.group_by(["api_key", "api_name", "bucket"], use_threads=False).aggregate(
            [([], "count_all"), ("seconds", "sum")])
        api = self.caps["api"]
        for key, name, index, n, total in zip(*(c.to_pylist() for c in groups.columns), strict=True):
            labels = (api(api_label(name, key)),)
            counts = self._latency.get(labels)
            if counts is None:
                counts = self._latency[labels] = [0.0] * (len(LATENCY_BUCKETS) + 2)
            counts[index] += n
            counts[-1] += total

    def _old_format(self, table: pa.Table) -> None:
        """Record sets in message format v0/v1: the rows whose body holds one of contract.clients' marker texts (one
        scan of the body column's text buffer, without copying it), each confirmed by
        :func:`contract.clients.old_record_format` (rare: only those rows come to Python)."""
        rows: set[int] = set()
        for body in table.column("body").chunks:
            _, offsets, data = body.buffers()
            if data is None:
                continue
            ends = pa.Array.from_buffers(pa.int32(), len(body) + 1, [None, offsets], offset=body.offset)
            first, last = ends[0].as_py(), ends[-1].as_py()
            for found in self._old_marker.finditer(memoryview(data)[first:last]):  # type: ignore[call-overload]
                # the row whose text holds the match: how many rows end at or before it
                rows.add(pc.sum(pc.less_equal(ends.slice(1), first + found.start())).as_py() or 0)
        if not rows:
            return
        api, client = self.caps["api"], self.caps["client_id"]
        found_rows = table.take(sorted(rows)).select(["api_key", "api_name", "direction", "client_id", "body"])
        for row in found_rows.to_pylist():
            if old_record_format(row["api_key"], row["direction"], row["body"]):
                self._add("kafka_inspector_clients_old_message_format",
                          (client(row["client_id"] or ""), api(api_label(row["api_name"], row["api_key"]))), 1)

    def add_failures(self, failures: Mapping[tuple[str | None, int | None, StatusKind], int]) -> None:
        """Decode failures counted since the last call, by (API name, API key, status kind)."""
        api, kind = self.caps["api"], self.caps["status_kind"]
        for (name, key, status), n in failures.items():
            self._add("kafka_inspector_decode_failures_total", (api(api_label(name, key)), kind(status.name.lower())),
                      n)

    def set_bytes(self, totals: Mapping[str, int]) -> None:
        """The byte accounting of every Kafka connection so far: ``client_bytes_KIND`` and ``broker_bytes_KIND``
        summed (``inspector.rows.summary.byte_counts``'s keys)."""
        for side in SIDES:
            for kind in BYTE_KINDS:
                self._set_monotone("kafka_inspector_bytes_total", (side, kind), totals.get(f"{side}_bytes_{kind}", 0))

    def set_capture(self, *, packets: int, kernel_dropped: int | None, open_connections: int, outages: int,
                    last_packet_ts: float | None) -> None:
        """The capture's counters now (tcpdump's kernel drops: None until it reported them)."""
        self._set_monotone("kafka_inspector_packets_total", (), packets)
        self._set_monotone("kafka_inspector_kernel_drops_total", (), kernel_dropped or 0)
        self._set_monotone("kafka_inspector_interface_outages_total", (), outages)
        self.counts["kafka_inspector_connections_open"][()] = open_connections
        if last_packet_ts:
            self.counts["kafka_inspector_last_packet_timestamp_seconds"][()] = last_packet_ts

    # -- out --------------------------------------------------------------------------------------------

    def snapshot(self) -> tuple[Family, ...]:
        """Every family with its values now, as immutable values (another thread may render them)."""
        folded = self.counts["kafka_inspector_label_values_folded_total"]
        for label, cap in self.caps.items():
            if cap.folded:
                folded[(label,)] = cap.folded
        out = []
        for name, spec in SPECS.items():
            if spec.kind is Kind.HISTOGRAM:
                hist = {}
                for labels, counts in self._latency.items():
                    cumulative, running = [], 0
                    for n in counts[:-1]:
                        running += int(n)
                        cumulative.append(running)
                    hist[labels] = Histogram(tuple(cumulative), counts[-1])
                out.append(Family(spec, histograms=hist))
            else:
                out.append(Family(spec, values=dict(self.counts[name])))
        return tuple(out)
