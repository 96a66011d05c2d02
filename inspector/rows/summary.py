"""Running totals for the closing summary: per API and per connection, and the byte accounting."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from contract.apis import API_NAMES as _API_NAMES
from contract.events import Direction
from decoders import OK
from decoders.api import embedded_limit_hit
from inspector.kafka.connection import KafkaConnection, KafkaMessage, StreamIssue, hit_elements_limit
from inspector.tcp.stream_events import GAP_BUFFER, IGNORED_REASONS

if TYPE_CHECKING:
    from inspector.kafka.tls_stream import TlsStream

#: The parts every stream byte of a Kafka connection is counted in, once (connections.parquet, summary.json).
BYTE_PARTS = ("decoded", "gap", "undecodable", "encrypted", "tls_overhead")
#: The byte counts of connections.parquet and summary.json, in their order.
BYTE_COUNTS = ("seen", "decoded", "gap", "undecodable", "retransmitted", "encrypted", "tls_overhead")

#: Limits (named by their command-line option) and what a hit means; ``Summary.limits`` counts hits.
LIMITS: dict[str, str] = {
    "--max-frame": "length prefixes above the limit (or negative): not framed, the stream was resynchronised",
    "--max-buffered": "holes declared lost because too much data waited behind them",
    "--max-connections": "connections evicted (the least recently active) to stay under the limit",
    "--max-held": "connections whose incomplete frames and data behind holes were released (reported as "
                  "undecodable bytes and gaps) because all connections together held more than the limit",
    "--max-pending": "requests given up while waiting for their response",
    "--max-decompressed": "messages whose record data hit the decompression limit (records not all decoded)",
    "--max-elements": "messages with more elements (array entries, tagged fields, record batches) than the "
                      "per-message limit (not decoded; the status names them), or with embedded structures that "
                      "were not decoded for it (a note says so)",
    "max_records": "messages whose records hit the per-message record limit",
}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _merge_fields(into: Any, other: Any, combine: dict[str, Callable[[Any, Any], Any]] | None = None) -> None:
    """Add ``other``'s totals to ``into`` (instances of the same dataclass), field by field: numbers are
    added (or combined by the function ``combine`` gives for the field), lists extended, dicts merged by key
    (values the same way). A field of another type is an error, so none can be forgotten."""
    for f in fields(into):
        mine, theirs = getattr(into, f.name), getattr(other, f.name)
        how = combine.get(f.name) if combine else None
        if how is not None:
            setattr(into, f.name, how(mine, theirs))
        else:
            setattr(into, f.name, _merged(mine, theirs, f"{type(into).__name__}.{f.name}"))


def _merged(mine: Any, theirs: Any, name: str) -> Any:
    if isinstance(mine, int | float) and not isinstance(mine, bool):
        return mine + theirs
    if isinstance(mine, list):
        mine.extend(theirs)
        return mine
    if isinstance(mine, dict):
        for key, value in theirs.items():
            # A key only ``theirs`` has gets a fresh value (type(value)() is 0, [], {} or an empty dataclass).
            mine[key] = _merged(mine[key] if key in mine else type(value)(), value, f"{name}[{key!r}]")
        return mine
    if hasattr(mine, "merge"):
        mine.merge(theirs)
        return mine
    raise TypeError(f"{name}: cannot merge a {type(mine).__name__}")


def byte_counts(conn: KafkaConnection, tls: TlsStream | None = None) -> dict[str, int]:
    """A connection's byte accounting as its ``connections.parquet`` row has it: ``bytes_KEY`` for each of
    ``BYTE_COUNTS`` in total, then ``client_bytes_KEY`` and ``broker_bytes_KEY`` (the bytes each side sent). Of a
    closed connection, final; of an open one (the tap's metrics), what it has so far (an incomplete TLS record
    counts as undecodable until it completes)."""
    st = conn.stats
    c = conn.client_side or 0
    out = {f"bytes_{key}": 0 for key in BYTE_COUNTS}
    for prefix, side in (("client", c), ("broker", 1 - c)):
        seen, undecodable, encrypted, overhead = st.bytes_seen[side], st.bytes_skipped[side], 0, 0
        if tls is not None:  # the stream's bytes are records; the framers saw their plaintext
            seen, encrypted, overhead, malformed = tls.bytes(side)
            undecodable += malformed
        for key, value in (("seen", seen + st.bytes_gap[side]), ("decoded", st.bytes_framed[side]),
                           ("gap", st.bytes_gap[side]), ("undecodable", undecodable),
                           ("retransmitted", st.bytes_retransmitted[side]), ("encrypted", encrypted),
                           ("tls_overhead", overhead)):
            out[f"{prefix}_bytes_{key}"] = value
            out[f"bytes_{key}"] += value
    return out


@dataclass
class ApiStats:
    requests: int = 0
    responses: int = 0
    errors: int = 0
    decode_failures: int = 0
    decode_warnings: int = 0  # decoded, with trailing bytes
    latencies: list[float] = field(default_factory=list)

    def merge(self, other: ApiStats) -> None:
        _merge_fields(self, other)


@dataclass
class Summary:
    apis: dict[str, ApiStats] = field(default_factory=dict)
    frames: int = 0
    messages: int = 0
    decode_failures: int = 0  # frames whose body could not be decoded
    decode_warnings: int = 0  # decoded, but with trailing bytes
    stream_issues: dict[str, int] = field(default_factory=dict)  # kind -> bytes
    connections: list[dict[str, Any]] = field(default_factory=list)
    empty_connections: int = 0  # Kafka connections (by --port) that never carried a byte: not in `connections`
    non_kafka_connections: int = 0
    non_kafka_bytes: int = 0
    packets: int = 0
    packets_skipped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    max_conn_id: int = 0  # merged as the larger of the two
    limits: dict[str, int] = field(default_factory=dict)  # LIMITS key -> hits
    # TCP segments the reassembler ignored (stream_events' IGNORED_* reasons), per capture and reason, and their
    # payload bytes: what reached no stream byte of any connection (Kafka or not).
    ignored_segments: dict[str, dict[str, int]] = field(default_factory=dict)
    ignored_bytes: dict[str, dict[str, int]] = field(default_factory=dict)

    def merge(self, other: Summary) -> None:
        """Add the totals of ``other`` (e.g. another process's capture) to these."""
        _merge_fields(self, other, {"max_conn_id": max})

    def segments_ignored(self, capture: str, ignored: dict[str, list[int]]) -> None:
        """Count what a capture's reassembler ignored (``Reassembler.ignored``: reason -> [segments, bytes])."""
        segments = self.ignored_segments.setdefault(capture, {})
        sizes = self.ignored_bytes.setdefault(capture, {})
        for reason, (count, size) in ignored.items():
            segments[reason] = segments.get(reason, 0) + count
            sizes[reason] = sizes.get(reason, 0) + size

    def limit_hit(self, name: str, count: int = 1) -> None:
        if count:
            self.limits[name] = self.limits.get(name, 0) + count

    def message(self, ev: KafkaMessage) -> None:
        msg = ev.message
        inner = msg.inner
        self.frames += 1
        self.messages += 1 + (1 if inner is not None else 0)
        api_key = msg.api_key
        name = (_API_NAMES.get(api_key) if api_key is not None else msg.name) or (  # msg.api_name, without the call
            "unknown" if api_key is None else f"key {api_key}")
        stats = self.apis.get(name)
        if stats is None:
            stats = self.apis[name] = ApiStats()
        if ev.direction is Direction.REQUEST:
            stats.requests += 1
        else:
            stats.responses += 1
            body = msg.body
            code = body.get("ErrorCode") if body is not None else None
            if isinstance(code, int) and code != 0:
                stats.errors += 1
            if ev.latency_ms is not None:
                stats.latencies.append(ev.latency_ms)
        if msg.status != OK:  # not msg.ok
            if msg.body is not None:
                stats.decode_warnings += 1
                self.decode_warnings += 1
            else:
                stats.decode_failures += 1
                self.decode_failures += 1
            if hit_elements_limit(msg):
                self.limit_hit("--max-elements")
        if msg.notes and embedded_limit_hit(msg):  # group metadata, assignments... stopped by the budget
            self.limit_hit("--max-elements")
        if inner is not None and (hit_elements_limit(inner) or (inner.notes and embedded_limit_hit(inner))):
            self.limit_hit("--max-elements")  # the Envelope's message (one row)

    def issue(self, ev: StreamIssue) -> None:
        self.stream_issues[ev.kind] = self.stream_issues.get(ev.kind, 0) + ev.length
        if ev.kind == "oversized":
            self.limit_hit("--max-frame")
        elif ev.kind == "gap" and ev.reason == GAP_BUFFER:
            self.limit_hit("--max-buffered")

    def connection_closed(self, conn: KafkaConnection, capture: str | None, tls: TlsStream | None = None) -> None:
        """Record a closed connection's accounting. Per direction, every byte of the TCP stream (up to the
        highest offset reached) is counted once: ``bytes_seen == bytes_decoded + bytes_gap + bytes_undecodable +
        bytes_encrypted + bytes_tls_overhead`` (the last two zero for plaintext; a TLS connection's decoded and
        undecodable bytes are its plaintext's, with the records the TLS layer could not split undecodable too);
        retransmitted duplicates are not in ``bytes_seen`` but in ``bytes_retransmitted``."""
        st = conn.stats
        row: dict[str, Any] = {
            "capture": capture,
            "conn_id": conn.conn_id,
            "client": str(conn.client),
            "broker": str(conn.broker),
            "frames": sum(st.frames),
            "decode_failures": st.decode_failures,
            "requests_missing": st.requests_missing,
            "responses_missing": st.responses_missing,
            "tls": False,
        }
        sasl = conn.sasl
        if sasl is not None:  # who it authenticated as last, how, and how its last exchange ended
            row["principal"] = sasl.principal
            row["sasl_mechanism"] = sasl.mechanism
            row["sasl_outcome"] = sasl.outcome
            row["sasl_claimed"] = sasl.claimed
            row["sasl_issuer"] = sasl.issuer
            row["sasl_session_lifetime_ms"] = sasl.session_lifetime_ms
        if tls is not None:
            row.update(tls.columns())
            if sasl is None:  # no SASL: the client certificate's principal, as Kafka's SSL principal builder
                row["principal"] = tls.principal
        row.update(byte_counts(conn, tls))
        self.connections.append(row)
        self.limit_hit("--max-pending", st.pending_dropped)

    def accounting(self) -> dict[str, dict[str, int]]:
        """Byte accounting of the Kafka connections per capture, and in total (``"*"``); then the TCP segments the
        reassembler ignored there and their payload bytes (``segments_ignored``, ``bytes_ignored``)."""
        keys = tuple(f"bytes_{key}" for key in BYTE_COUNTS)
        out: dict[str, dict[str, int]] = {}
        blank = ("connections", *keys, "segments_ignored", "bytes_ignored")
        for row in self.connections:
            for name in (str(row["capture"]), "*"):
                acc = out.setdefault(name, dict.fromkeys(blank, 0))
                acc["connections"] += 1
                for key in keys:
                    acc[key] += row.get(key) or 0
        for capture, by_reason in self.ignored_segments.items():
            sizes = self.ignored_bytes.get(capture, {})
            for name in (capture, "*"):
                acc = out.setdefault(name, dict.fromkeys(blank, 0))
                acc["segments_ignored"] += sum(by_reason.values())
                acc["bytes_ignored"] += sum(sizes.values())
        return out

    def ignored(self) -> dict[str, dict[str, int]]:
        """The segments ignored in every capture together, by reason: ``{reason: {"segments", "bytes"}}``."""
        out: dict[str, dict[str, int]] = {}
        for capture, by_reason in self.ignored_segments.items():
            sizes = self.ignored_bytes.get(capture, {})
            for reason, count in by_reason.items():
                acc = out.setdefault(reason, {"segments": 0, "bytes": 0})
                acc["segments"] += count
                acc["bytes"] += sizes.get(reason, 0)
        return {reason: out[reason] for reason in IGNORED_REASONS if reason in out} | out

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for name in sorted(self.apis):
            s = self.apis[name]
            out.append(
                {
                    "api": name,
                    "requests": s.requests,
                    "responses": s.responses,
                    "errors": s.errors,
                    "p50_ms": percentile(s.latencies, 0.5),
                    "p99_ms": percentile(s.latencies, 0.99),
                    "decode_failures": s.decode_failures,
                    "decode_warnings": s.decode_warnings,
                }
            )
        return out
