"""The events contract: one row per Kafka message, its columns defined once, as data.

``kafka-inspector read`` writes these columns (``inspector/rows/event_table.py`` renders them as an Arrow schema), the
Spark jobs read them (``pipelines/events_dataset.py`` renders them as a Spark schema). A column's type is one of the
logical types below; each consumer maps them to its own type system, so neither writes the list again.
README.md ("The events contract") explains the columns in more detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# The logical types (each renderer has one entry per type; an unknown type fails at import).
TIMESTAMP = "timestamp[us, UTC]"
STRING = "string"
BOOL = "bool"
INT16 = "int16"
INT32 = "int32"
INT64 = "int64"
FLOAT64 = "float64"
LIST_INT16 = "list<int16>"  # elements nullable, as Arrow's and Spark's lists are by default
TYPES = frozenset((TIMESTAMP, STRING, BOOL, INT16, INT32, INT64, FLOAT64, LIST_INT16))


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, logical type (one of ``TYPES``), whether it may be null, and what it holds."""

    name: str
    type: str
    meaning: str
    nullable: bool = True


class Direction(StrEnum):
    """A message's direction, the ``direction`` column's values (a ``str``: the column holds the text itself)."""

    REQUEST = "request"  # client to broker
    RESPONSE = "response"  # broker to client


#: The events dataset's columns, in file order.
EVENT_COLUMNS: tuple[Column, ...] = (
    Column("ts", TIMESTAMP, "capture time of the segment that completed the frame", nullable=False),
    Column("capture", STRING, "capture file name"),
    Column("conn_id", INT64, "TCP connection id (unique within one read run)", nullable=False),
    Column("client_ip", STRING, "client address"),
    Column("client_port", INT32, "client port"),
    Column("broker_ip", STRING, "broker address (which side is the broker is inferred from content, or --port)"),
    Column("broker_port", INT32, "broker port"),
    Column("direction", STRING, " or ".join(Direction), nullable=False),
    Column("api_key", INT16, "from the request header (responses: from their request)"),
    Column("api_name", STRING, "the API key's name"),
    Column("api_version", INT16, "from the request header (responses: from their request)"),
    Column("correlation_id", INT32, "from the message header"),
    Column("client_id", STRING, "request header client id (responses: their request's)"),
    Column("frame_offset", INT64, "stream offset of the frame's length prefix"),
    Column("frame_size", INT32, "frame size without the 4-byte length prefix"),
    Column("error_code", INT16, "top-level ErrorCode of a response, null if it has none"),
    Column("nested_error_codes", LIST_INT16, "distinct non-zero error codes inside the response"),
    Column("latency_ms", FLOAT64, "response time after its request, null for requests"),
    Column("decode_status", STRING, "ok, or why decoding stopped, with field path and byte offset", nullable=False),
    Column("body", STRING, "the whole decoded message as JSON; field names exactly as in the Kafka spec"),
    Column("body_version", INT16, "version the body was decoded at (differs for ApiVersions v0 fallback)"),
    Column("group_id", STRING, "promoted GroupId"),
    Column("member_id", STRING, "promoted MemberId (or the one member of a batched LeaveGroup)"),
    Column("generation_id", INT32, "promoted GenerationId"),
    Column("protocol_type", STRING, "ProtocolType of group messages"),
    Column("protocol_name", STRING, "the selected protocol; JoinGroup request: offered names joined by ','"),
    Column("cluster_id", STRING, "promoted ClusterId"),
    Column("node_id", INT32, "promoted NodeId"),
    Column("topics", STRING, "the topics the message names, distinct, in first-seen order, joined by ','; an id "
                             "(Uuid.toString()) where the capture has not named it by then"),
    Column("envelope_correlation_id", INT32, "on rows unwrapped from an Envelope: the outer correlation id"),
    Column("principal", STRING, "who the connection authenticated as (SASL: User:NAME), from the successful "
                                "SaslAuthenticate on; over TLS without SASL, the client certificate's (User:CN=...); "
                                "on rows unwrapped from an Envelope: the forwarded request's"),
    Column("sasl_mechanism", STRING, "the connection's SASL mechanism (SaslHandshake, else what AuthBytes show)"),
    Column("tls", BOOL, "the message was carried by TLS and decrypted (--tls-keylog); false for plaintext"),
    Column("request_missing", BOOL, "a response whose request is not in the capture"),
    Column("candidates", STRING, "for those: the (api key, version) layouts that decode it exactly, best first"),
    Column("confidence", FLOAT64, "the confidence in the first candidate"),
    Column("notes", STRING, "decoder notes (e.g. fallbacks)"),
)

#: The column names, in file order.
EVENT_COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in EVENT_COLUMNS)

assert len(set(EVENT_COLUMN_NAMES)) == len(EVENT_COLUMNS) and all(c.type in TYPES for c in EVENT_COLUMNS)
