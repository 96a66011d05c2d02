"""Running totals for the closing summary: per API and per connection, and the byte accounting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspector.connection import KafkaConnection, KafkaMessage, StreamIssue


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass
class ApiStats:
    requests: int = 0
    responses: int = 0
    errors: int = 0
    decode_failures: int = 0
    decode_warnings: int = 0  # decoded, with trailing bytes
    latencies: list[float] = field(default_factory=list)


@dataclass
class Summary:
    apis: dict[str, ApiStats] = field(default_factory=dict)
    frames: int = 0
    messages: int = 0
    decode_failures: int = 0  # frames whose body could not be decoded
    decode_warnings: int = 0  # decoded, but with trailing bytes
    stream_issues: dict[str, int] = field(default_factory=dict)  # kind -> bytes
    connections: list[dict[str, Any]] = field(default_factory=list)
    non_kafka_connections: int = 0
    non_kafka_bytes: int = 0
    packets: int = 0
    packets_skipped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    max_conn_id: int = 0

    def message(self, ev: KafkaMessage) -> None:
        msg = ev.message
        self.frames += 1
        self.messages += 1 + (1 if msg.inner is not None else 0)
        name = msg.api_name or ("unknown" if msg.api_key is None else f"key {msg.api_key}")
        stats = self.apis.get(name)
        if stats is None:
            stats = self.apis[name] = ApiStats()
        if ev.direction == "request":
            stats.requests += 1
        else:
            stats.responses += 1
            code = (msg.body or {}).get("ErrorCode")
            if isinstance(code, int) and code != 0:
                stats.errors += 1
            if ev.latency_ms is not None:
                stats.latencies.append(ev.latency_ms)
        if not msg.ok:
            if msg.body is not None:
                stats.decode_warnings += 1
                self.decode_warnings += 1
            else:
                stats.decode_failures += 1
                self.decode_failures += 1

    def issue(self, ev: StreamIssue) -> None:
        self.stream_issues[ev.kind] = self.stream_issues.get(ev.kind, 0) + ev.length

    def connection_closed(self, conn: KafkaConnection, capture: str | None) -> None:
        st = conn.stats
        self.connections.append(
            {
                "capture": capture,
                "conn_id": conn.conn_id,
                "client": str(conn.client),
                "broker": str(conn.broker),
                "bytes_seen": sum(st.bytes_seen),
                "bytes_decoded": sum(st.bytes_framed),
                "bytes_gap": sum(st.bytes_gap),
                "bytes_undecodable": sum(st.bytes_skipped),
                "frames": sum(st.frames),
                "decode_failures": st.decode_failures,
                "requests_missing": st.requests_missing,
                "responses_missing": st.responses_missing,
            }
        )

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
