"""The events contract: one row per Kafka message, as an Arrow schema, built in column batches.

Every row is one request or response; an Envelope adds one more row for the request or response
it carries. ``body`` holds the whole decoded message as JSON (field names as in the Kafka spec);
a few fields are promoted to columns for analysis. README.md documents each column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from decoders import DecodedMessage
from inspector.connection import KafkaMessage

SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("capture", pa.string()),
        pa.field("conn_id", pa.int64(), nullable=False),
        pa.field("client_ip", pa.string()),
        pa.field("client_port", pa.int32()),
        pa.field("broker_ip", pa.string()),
        pa.field("broker_port", pa.int32()),
        pa.field("direction", pa.string(), nullable=False),
        pa.field("api_key", pa.int16()),
        pa.field("api_name", pa.string()),
        pa.field("api_version", pa.int16()),
        pa.field("correlation_id", pa.int32()),
        pa.field("client_id", pa.string()),
        pa.field("frame_offset", pa.int64()),
        pa.field("frame_size", pa.int32()),
        pa.field("error_code", pa.int16()),
        pa.field("nested_error_codes", pa.list_(pa.int16())),
        pa.field("latency_ms", pa.float64()),
        pa.field("decode_status", pa.string(), nullable=False),
        pa.field("body", pa.string()),
        pa.field("body_version", pa.int16()),
        pa.field("group_id", pa.string()),
        pa.field("member_id", pa.string()),
        pa.field("generation_id", pa.int32()),
        pa.field("protocol_type", pa.string()),
        pa.field("protocol_name", pa.string()),
        pa.field("cluster_id", pa.string()),
        pa.field("node_id", pa.int32()),
        pa.field("envelope_correlation_id", pa.int32()),
        pa.field("principal", pa.string()),
        pa.field("request_missing", pa.bool_()),
        pa.field("candidates", pa.string()),
        pa.field("confidence", pa.float64()),
        pa.field("notes", pa.string()),
    ]
)
COLUMNS = tuple(SCHEMA.names)


@dataclass(frozen=True, slots=True)
class RecordsOptions:
    """How much of Produce/Fetch record data goes into ``body``."""

    level: str = "headers"  # "size" | "headers" | "records"
    decompress: bool = False
    max_decompressed: int = 64 * 1024 * 1024


def body_json(body: dict[str, Any] | None, records: RecordsOptions = RecordsOptions()) -> str | None:
    if body is None:
        return None

    def default(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).hex()
        summary = getattr(value, "summary", None)
        if summary is not None:
            return summary(records.level, decompress=records.decompress,
                           max_decompressed=records.max_decompressed)
        raise TypeError(f"cannot serialise {type(value).__name__}")

    return json.dumps(body, default=default, ensure_ascii=False, separators=(",", ":"))


def _nested_errors(value: Any, out: set[int], depth: int = 0) -> None:
    if depth > 32:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "ErrorCode" and isinstance(item, int) and item and depth:
                out.add(item)
            elif isinstance(item, (dict, list)) and not key.endswith("Decoded"):
                _nested_errors(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _nested_errors(item, out, depth + 1)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _protocol_name(msg: DecodedMessage, body: dict[str, Any]) -> str | None:
    if msg.api_key == 11 and msg.kind == "request":
        names = [p.get("Name") for p in body.get("Protocols") or () if isinstance(p, dict)]
        return ",".join(n for n in names if isinstance(n, str)) or None
    if msg.api_key == 15 and msg.kind == "response":
        groups: list[Any] = body.get("Groups") or []
        if len(groups) == 1 and isinstance(groups[0], dict):
            return _str(groups[0].get("ProtocolData")) or None
    return _str(body.get("ProtocolName"))


def _member_id(body: dict[str, Any]) -> str | None:
    """``MemberId``, or the one member of a batched request (LeaveGroup v3+)."""
    if "MemberId" in body:
        return _str(body["MemberId"])
    members = body.get("Members")
    if isinstance(members, list) and len(members) == 1 and isinstance(members[0], dict):
        return _str(members[0].get("MemberId"))
    return None


def _principal(body: dict[str, Any]) -> str | None:
    decoded = body.get("RequestPrincipalDecoded")
    if isinstance(decoded, dict) and isinstance(decoded.get("value"), dict):
        value = decoded["value"]
        return f"{value.get('Type')}:{value.get('Name')}"
    return None


class EventTable:
    """Accumulates rows column by column; ``take()`` returns them as an Arrow record batch."""

    def __init__(self, capture: str | None = None, records: RecordsOptions = RecordsOptions()) -> None:
        self.capture = capture
        self.records = records
        self._cols: dict[str, list[Any]] = {name: [] for name in COLUMNS}

    def __len__(self) -> int:
        return len(self._cols["ts"])

    def add(self, event: KafkaMessage) -> None:
        self._row(event, event.message, envelope=None)
        inner = event.message.inner
        if inner is not None:
            self._row(event, inner, envelope=event.message)

    def _row(self, ev: KafkaMessage, msg: DecodedMessage, envelope: DecodedMessage | None) -> None:
        c = self._cols
        body = msg.body
        b = body if body is not None else {}
        c["ts"].append(int(round(ev.ts * 1_000_000)))
        c["capture"].append(self.capture)
        c["conn_id"].append(ev.conn_id)
        c["client_ip"].append(ev.client.ip)
        c["client_port"].append(ev.client.port)
        c["broker_ip"].append(ev.broker.ip)
        c["broker_port"].append(ev.broker.port)
        c["direction"].append(ev.direction)
        c["api_key"].append(msg.api_key)
        c["api_name"].append(msg.api_name)
        c["api_version"].append(msg.api_version)
        c["correlation_id"].append(msg.correlation_id)
        c["client_id"].append(msg.client_id if envelope is not None else ev.client_id)
        c["frame_offset"].append(ev.frame_offset)
        c["frame_size"].append(msg.size)
        c["error_code"].append(_int(b.get("ErrorCode")) if msg.kind == "response" else None)
        nested: set[int] = set()
        if msg.kind == "response" and body is not None:
            _nested_errors(body, nested)
        c["nested_error_codes"].append(sorted(nested) if nested else None)
        c["latency_ms"].append(ev.latency_ms)
        c["decode_status"].append(msg.status)
        c["body"].append(body_json(body, self.records))
        c["body_version"].append(msg.body_version if msg.body_version is not None else msg.api_version)
        c["group_id"].append(_str(b.get("GroupId")))
        c["member_id"].append(_member_id(b))
        gen = b.get("GenerationId", b.get("GenerationIdOrMemberEpoch"))
        c["generation_id"].append(_int(gen))
        c["protocol_type"].append(_str(b.get("ProtocolType")))
        c["protocol_name"].append(_protocol_name(msg, b))
        c["cluster_id"].append(_str(b.get("ClusterId")))
        c["node_id"].append(_int(b.get("NodeId")))
        c["envelope_correlation_id"].append(envelope.correlation_id if envelope is not None else None)
        c["principal"].append(_principal(envelope.body or {}) if envelope is not None else None)
        c["request_missing"].append(ev.request_missing)
        c["candidates"].append(",".join(f"{k}v{v}" for k, v in ev.candidates) if ev.candidates else None)
        c["confidence"].append(ev.confidence)
        c["notes"].append("; ".join(msg.notes) if msg.notes else None)

    def take(self) -> pa.RecordBatch:
        """Return the accumulated rows as one record batch and start afresh."""
        cols, self._cols = self._cols, {name: [] for name in COLUMNS}
        arrays = [pa.array(cols[f.name], type=f.type) for f in SCHEMA]
        return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)
