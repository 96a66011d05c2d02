"""The events contract (``contract/events.py``) as an Arrow schema, and its rows built in column batches.

Every row is one request or response; an Envelope adds one more row for the request or response
it carries. ``body`` holds the whole decoded message as JSON (field names as in the Kafka spec);
a few fields are promoted to columns for analysis. README.md documents each column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import decoders.native._records as _native_records
import pyarrow as pa

import inspector.native._body as _native_body
import inspector.native._columns as _native_columns
from contract.apis import API_NAMES as _API_NAMES
from contract.events import BOOL, EVENT_COLUMNS, FLOAT64, INT16, INT32, INT64, LIST_INT16, STRING, TIMESTAMP
from contract.kafka import DESCRIBE_GROUPS, JOIN_GROUP
from contract.limits import DEFAULT_LIMITS, DecodeLimits
from decoders.api import DecodedMessage
from decoders.records import Budget, Records
from decoders.topics import topic_refs
from inspector.kafka.connection import KafkaMessage
from inspector.kafka.topic_names import TopicNames

#: The contract's logical types as Arrow types.
_ARROW_TYPES = {
    TIMESTAMP: pa.timestamp("us", tz="UTC"),
    STRING: pa.string(),
    BOOL: pa.bool_(),
    INT16: pa.int16(),
    INT32: pa.int32(),
    INT64: pa.int64(),
    FLOAT64: pa.float64(),
    LIST_INT16: pa.list_(pa.int16()),
}
#: The events contract (contract/events.py) as an Arrow schema: the files' schema.
SCHEMA = pa.schema([pa.field(c.name, _ARROW_TYPES[c.type], nullable=c.nullable) for c in EVENT_COLUMNS])
COLUMNS = tuple(SCHEMA.names)


@dataclass(frozen=True)  # compiled, an extension type (event_table.pxd); from source, a plain frozen dataclass
class RecordsOptions:
    """How much of Produce/Fetch record data goes into ``body``."""

    level: str = "headers"  # "size" | "headers" | "records"
    decompress: bool = False  # (bounded by DecodeLimits.max_decompressed)


#: The api name of a key (None for an unknown key), as a bound method: one call, no attribute lookup per row.
_api_name = _API_NAMES.get


#: The writer of headers-level record set summaries (a capsule the body column calls), rendered into
#: decoders/native/_records.pyx from the model of that summary, decoders/record_header.py.
_headers_writer = _native_records.HEADERS_WRITER


class _RecordsSummary:
    """The body writer's ``default``: a record set as its summary dict, at the level asked (the body column
    writes the common headers-level ones itself, with decoders/native/_records.pyx's writer).

    Record sets of one message share one decompression/record budget (``reset()`` before each
    message), and the problems their summaries report are kept for the row's notes.
    """

    __slots__ = ("budget", "limits", "problems", "records", "used")

    def __init__(self, records: RecordsOptions, limits: DecodeLimits) -> None:
        self.records = records
        self.limits = limits
        self.budget = Budget(limits.max_decompressed, limits.max_records)
        self.problems: list[str] = []
        self.used = False  # whether the budget or problems changed since the last reset

    def reset(self) -> None:
        if not self.used:
            return
        budget = self.budget
        limits = self.limits
        budget.decompressed = limits.max_decompressed
        budget.records = budget.headers = limits.max_records
        if self.problems:
            self.problems = []
        self.used = False

    def __call__(self, value: Any) -> Any:
        summary = getattr(value, "summary", None)
        if summary is not None:
            self.used = True
            records = self.records
            limits = self.limits
            result = summary(records.level, decompress=records.decompress, max_decompressed=limits.max_decompressed,
                             max_records=limits.max_records, budget=self.budget)
            status = result.get("status", "ok")
            if status != "ok" and status not in self.problems:
                self.problems.append(status)
            return result
        raise TypeError(f"cannot serialise {type(value).__name__}")


_DEFAULT_OPTIONS = RecordsOptions()


def body_json(body: dict[str, Any] | None, records: RecordsOptions = _DEFAULT_OPTIONS,
              limits: DecodeLimits = DEFAULT_LIMITS) -> str | None:
    """The decoded body as compact JSON, as the events' body column holds it: bytes as hex, record sets as
    their summary (the body column's writer, ``inspector/native/_body.pyx``)."""
    if body is None:
        return None
    column = _BodyColumn(Records, _headers_writer if records.level == "headers" else None)
    text: bytes = column.text(body, _RecordsSummary(records, limits))
    return text.decode()


def nested_codes(codes: list[int] | None, top_level: int | None) -> list[int] | None:
    """Distinct codes of ``codes`` (a body's non-zero ErrorCode values) below the top level: the top-level
    code's own occurrence is not one."""
    if codes is None:
        return None
    counts: dict[int, int] = {}
    for code in codes:
        counts[code] = counts.get(code, 0) + 1
    if top_level:
        counts[top_level] = counts.get(top_level, 0) - 1
    return sorted([code for code, n in counts.items() if n > 0]) or None


_NO_BODY: dict[str, Any] = {}  # read only: the body of a message that has none


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _protocol_name(msg: DecodedMessage, body: dict[str, Any]) -> str | None:
    if msg.api_key == JOIN_GROUP and msg.kind == "request":
        names = [p.get("Name") for p in body.get("Protocols") or () if isinstance(p, dict)]
        return ",".join(n for n in names if isinstance(n, str)) or None
    if msg.api_key == DESCRIBE_GROUPS and msg.kind == "response":
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


def _records_notes(problems: list[str], limit_hits: dict[str, int]) -> tuple[str, ...]:
    """A row's notes for the problems its record data had; the limits among them counted in ``limit_hits``."""
    for limit, needle in (("--max-decompressed", "decompression limit exceeded"),
                          ("max_records", "record limit reached")):
        if any(needle in p for p in problems):
            limit_hits[limit] = limit_hits.get(limit, 0) + 1
    return tuple(f"records: {p}" for p in problems)


def _candidates_text(candidates: tuple[tuple[int, int], ...]) -> str:
    """The candidate (api key, version) pairs of a guessed response, as ``"1v12,3v9"``."""
    return ",".join(f"{k}v{v}" for k, v in candidates)


def _principal(body: dict[str, Any]) -> str | None:
    decoded = body.get("RequestPrincipalDecoded")
    if isinstance(decoded, dict) and isinstance(decoded.get("value"), dict):
        value = decoded["value"]
        return f"{value.get('Type')}:{value.get('Name')}"
    return None


#: Top-level body fields behind the promoted columns (besides ErrorCode): a body with none of them (Produce,
#: Fetch, Metadata, ...) skips their look-ups.
_PROMOTED_KEYS = frozenset(("GroupId", "MemberId", "Members", "GenerationId", "GenerationIdOrMemberEpoch",
                            "ProtocolType", "ProtocolName", "Protocols", "Groups", "ClusterId", "NodeId"))
PROMOTED_KEYS = _PROMOTED_KEYS  # the same, for Python (compiled, the name above is a C global)
#: Where the columns come from (SCHEMA order): a row's own values ("row", index), its connection's
#: ("conn", index), the values few rows have ("extra", index; null, or False for request_missing), or
#: ("tls", 0) the rows carried by TLS (True; False for the others).
_ROW_COLUMNS = ("ts", "direction", "api_key", "api_name", "api_version", "correlation_id", "client_id",
                "frame_offset", "frame_size", "error_code", "latency_ms", "decode_status", "body", "body_version",
                "topics")
#: The connection's columns: its endpoints, and who it authenticated as when the message was seen (an Envelope's
#: inner rows name the forwarded request's principal instead).
_CONN_COLUMNS = ("capture", "conn_id", "client_ip", "client_port", "broker_ip", "broker_port", "principal",
                 "sasl_mechanism")
_EXTRA_COLUMNS = ("nested_error_codes", "group_id", "member_id", "generation_id", "protocol_type", "protocol_name",
                  "cluster_id", "node_id", "envelope_correlation_id", "request_missing", "candidates",
                  "confidence", "notes")
_SOURCES = tuple(
    ("row", _ROW_COLUMNS.index(name)) if name in _ROW_COLUMNS
    else ("conn", _CONN_COLUMNS.index(name)) if name in _CONN_COLUMNS
    else ("tls", 0) if name == "tls"
    else ("extra", _EXTRA_COLUMNS.index(name))
    for name in COLUMNS
)
assert sorted(_ROW_COLUMNS + _CONN_COLUMNS + _EXTRA_COLUMNS + ("tls",)) == sorted(COLUMNS)
#: Row columns converted as another type of the same layout (no per-value conversion), then viewed.
_STORAGE = {"ts": pa.int64(), "body": pa.binary()}
#: Rows hold a message's ts in seconds (a float); the column holds microseconds.
_TS = _ROW_COLUMNS.index("ts")
#: The row columns' kinds for the typed twin (inspector/native/_columns.pyx): body is JSON text (bytes).
_ROW_KINDS = b"".join(
    b"b" if name == "body" else b"t" if name == "ts" else b"s" if SCHEMA.field(name).type == pa.string()
    else {pa.int16(): b"h", pa.int32(): b"i", pa.float64(): b"d"}.get(SCHEMA.field(name).type, b"q")
    for name in _ROW_COLUMNS
)
assert _ROW_KINDS == b"tshshisqihdsbhs"
_CONN_KINDS = b"".join({pa.string(): b"s", pa.int32(): b"i"}.get(SCHEMA.field(name).type, b"q")
                       for name in _CONN_COLUMNS)
assert _CONN_KINDS == b"sqsisiss"
_columns = _native_columns.columns
#: The body column, written as JSON straight into Arrow buffers (inspector/native/_body.pyx).
_BodyColumn = _native_body.BodyColumn
_BODY = _ROW_COLUMNS.index("body")
#: The row columns' kinds when the body column is made by the twin (the rows hold None there).
_ROW_KINDS_NO_BODY = _ROW_KINDS[:_BODY] + b"-" + _ROW_KINDS[_BODY + 1:]


def _has_promoted(body: dict[str, Any]) -> bool:
    """Whether ``body`` has a key some extra column is read from (not ``_PROMOTED_KEYS.isdisjoint``: a loop
    that compiles to C)."""
    for key in body:
        if key in _PROMOTED_KEYS:
            return True
    return False


def _from_buffers(type_: pa.DataType, n: int, column: tuple[Any, ...]) -> pa.Array:
    """An Arrow array of one column made by the typed twin: (validity, offsets, data, null count)."""
    validity, offsets, data, nulls = column
    parts = [None if validity is None else pa.py_buffer(validity)]
    if offsets is not None:
        parts.append(pa.py_buffer(offsets))
    parts.append(pa.py_buffer(data))
    return pa.Array.from_buffers(type_, n, parts, null_count=nulls)


def _extra_columns(extras: list[tuple[int, tuple[Any, ...]]], n: int) -> list[list[Any] | None]:
    """The _EXTRA_COLUMNS of a batch of ``n`` rows from the rows that have any (row number, values): a list of
    ``n`` values per column, or None for a column every row leaves at its default (null, or False)."""
    extra_columns: list[list[Any] | None] = [None] * len(_EXTRA_COLUMNS)
    if extras:
        for i in range(len(_EXTRA_COLUMNS)):
            default = False if _EXTRA_COLUMNS[i] == "request_missing" else None
            if all(values[i] is default for _, values in extras):
                continue  # the column stays all default (null or False), made without a list of n values
            filled: list[Any] = [default] * n
            for row, values in extras:
                filled[row] = values[i]
            extra_columns[i] = filled
    return extra_columns


class EventTable:
    """Accumulates rows; ``take()`` returns them as an Arrow record batch.

    Built for the hot path: each row keeps its own values in one tuple (transposed into columns once per
    batch), the connection columns once per connection (expanded when the batch is taken), and the columns
    most rows leave null (group fields, envelope, guesses, notes) only for the rows that have them.
    """

    # the connection of the last row (``_conn``, ``_forget_last_conn``)
    _last_conn_id: Any
    _last_client: Any
    _last_broker: Any
    _last_principal: Any
    _last_mechanism: Any
    _last_conn_index: Any

    def __init__(self, capture: str | None = None, records: RecordsOptions = _DEFAULT_OPTIONS,
                 limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.capture = capture
        self.records = records
        self._default = _RecordsSummary(records, limits)
        self.limit_hits: dict[str, int] = {}  # record-data limits hit (Summary.LIMITS names), by message
        self._rows: list[tuple[Any, ...]] = []
        self._conn_rows: list[int] = []  # per row: index into _conns
        self._conns: list[tuple[Any, ...]] = []  # _CONN_COLUMNS values of the connections of this batch
        # (conn_id, id(client), id(broker), principal, mechanism) -> index
        self._conn_index: dict[tuple[Any, ...], int] = {}
        self._forget_last_conn()
        self._extras: list[tuple[int, tuple[Any, ...]]] = []  # (row number, _EXTRA_COLUMNS values)
        self._tls_rows: list[int] = []  # the rows carried by TLS (a plaintext row costs one test of ev.tls)
        # The body column: bodies go straight into its buffers (the rows hold None).
        self._bodies = _BodyColumn(Records, _headers_writer if records.level == "headers" else None,
                                   promoted_keys=_PROMOTED_KEYS)
        # Its method for a body's ready text, bound once (not looked up per message).
        self._append_text: Any = self._bodies.append_text
        # Topic id -> name as this capture has told it so far, per cluster (the topics column).
        self.topic_names = TopicNames()

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def takes_text(self) -> bool:
        """Whether bodies may come as JSON text written by the decoder (``DecodedMessage.text``, with a partial
        body): the body column's twin writes them as they are, when it summarises record sets at the headers
        level (the text's record sets are decoders/native/_records.pyx's headers-level summaries)."""
        return self.records.level == "headers"

    def add(self, event: KafkaMessage) -> None:
        conn = self._conn(event, event.principal)
        msg = event.message
        self._add(event, msg, None, conn)
        inner = msg.inner
        if inner is not None:  # the forwarded request's principal, not the forwarding broker's
            self._add(event, inner, msg, self._conn(event, _principal(msg.body or {})))

    def _conn(self, ev: KafkaMessage, principal: str | None) -> int:
        """The index of the row's connection columns (its endpoints, principal and SASL mechanism)."""
        conn_id, client, broker, mechanism = ev.conn_id, ev.client, ev.broker, ev.sasl_mechanism
        if (self._last_conn_id == conn_id and self._last_client is client and self._last_broker is broker
                and self._last_principal is principal and self._last_mechanism is mechanism):
            return self._last_conn_index
        key = (conn_id, id(client), id(broker), principal, mechanism)
        index = self._conn_index.get(key)
        if index is None:
            index = self._conn_index[key] = len(self._conns)
            self._conns.append((self.capture, conn_id, client.ip, client.port, broker.ip, broker.port, principal,
                                mechanism))
        self._last_conn_id, self._last_client, self._last_broker = conn_id, client, broker
        self._last_principal, self._last_mechanism, self._last_conn_index = principal, mechanism, index
        return index

    def _forget_last_conn(self) -> None:
        """The connection of the last row, whose columns' index ``_conn`` returns without a look-up while the rows
        come from it (most rows follow one of the same connection): none yet."""
        self._last_conn_id = -1
        self._last_client = None
        self._last_broker = None
        self._last_principal = None
        self._last_mechanism = None
        self._last_conn_index = -1

    def _add(self, ev: KafkaMessage, msg: DecodedMessage, envelope: DecodedMessage | None, conn: int) -> None:
        body = msg.body
        b = body if body is not None else _NO_BODY
        encoder = self._default
        encoder.reset()
        bodies = self._bodies
        if msg.text is not None:  # written from the frame by the decoder (takes_text); b: top-level integers
            text = None
            self._append_text(msg.text)
            codes = msg.codes
            promoted = _has_promoted(b)
        else:
            text = None  # the twin wrote it into the column
            codes = bodies.append(body, encoder)
            promoted = bodies.promoted  # found by the writer while it wrote the keys
        notes = msg.notes
        try:
            topic_names = self.topic_names
            if promoted:  # the connection's cluster, as the cluster_id column promotes it, before its topics
                cluster = b.get("ClusterId")
                if type(cluster) is str and cluster:
                    topic_names.saw_cluster(ev.conn_id, cluster)
            topics = topic_names.text(topic_refs(msg), ev.conn_id)  # the writer's, or the decoded body's
            if encoder.problems:  # limits hit and damage found in record data (the body has the details)
                notes = notes + _records_notes(encoder.problems, self.limit_hits)
            api_key = msg.api_key
            api_version = msg.api_version
            body_version = msg.body_version
            if msg.kind == "response":
                error_code = _int(b.get("ErrorCode"))
                nested = nested_codes(codes, error_code)
            else:
                error_code = nested = None
            # In _ROW_COLUMNS order.
            values = (
                ev.ts,  # seconds: the ts column holds round(ts * 1_000_000) microseconds (take() converts)
                ev.direction,
                api_key,
                _api_name(api_key) if api_key is not None else msg.name,  # msg.api_name, without its property call
                api_version,
                msg.correlation_id,
                msg.client_id if envelope is not None else ev.client_id,
                ev.frame_offset,
                msg.size,
                error_code,
                ev.latency_ms,
                msg.status,
                text,
                body_version if body_version is not None else api_version,
                topics,
            )
        except BaseException:
            if bodies is not None:
                bodies.drop_last()  # the body column stays row for row with the others
            raise
        row = len(self._rows)
        self._rows.append(values)
        self._conn_rows.append(conn)
        if ev.tls:
            self._tls_rows.append(row)
        candidates = ev.candidates
        if (nested is None and not promoted and envelope is None and not ev.request_missing
                and not candidates and ev.confidence is None and not notes):
            return  # every extra column is null (request_missing False): nothing more to keep
        gen = b.get("GenerationId", b.get("GenerationIdOrMemberEpoch"))
        # In _EXTRA_COLUMNS order.
        self._extras.append((row, (
            nested,
            _str(b.get("GroupId")),
            _member_id(b),
            _int(gen),
            _str(b.get("ProtocolType")),
            _protocol_name(msg, b),
            _str(b.get("ClusterId")),
            _int(b.get("NodeId")),
            envelope.correlation_id if envelope is not None else None,
            ev.request_missing,
            _candidates_text(candidates) if candidates else None,
            ev.confidence,
            "; ".join(notes) if notes else None,
        )))

    def take(self) -> pa.RecordBatch:
        """Return the accumulated rows as one record batch and start afresh."""
        rows, conns, conn_rows, extras = self._rows, self._conns, self._conn_rows, self._extras
        self._rows, self._conns, self._conn_rows, self._extras = [], [], [], []
        tls_rows, self._tls_rows = self._tls_rows, []
        self._conn_index = {}
        self._forget_last_conn()
        n = len(rows)
        bodies = self._bodies.take()  # buffers, or a list of values
        # The row columns' Arrow buffers in one typed pass (None for values it leaves to pyarrow).
        buffers = _columns(rows, _ROW_KINDS_NO_BODY) if rows else None
        conn_buffers = _columns([conns[k] for k in conn_rows], _CONN_KINDS) if buffers is not None else None
        row_columns: list[Any] = ([] if buffers is not None else list(zip(*rows, strict=True)) if rows
                                  else [() for _ in _ROW_COLUMNS])
        if row_columns:
            row_columns[_TS] = [round(ts * 1_000_000) for ts in row_columns[_TS]]  # an int: round without digits
        conn_columns = list(zip(*conns, strict=True)) if conns else [() for _ in _CONN_COLUMNS]
        extra_columns = _extra_columns(extras, n)
        arrays = []
        for (source, i), f in zip(_SOURCES, SCHEMA, strict=True):
            if source == "row" and i == _BODY:
                arrays.append(_from_buffers(f.type, n, bodies) if type(bodies) is tuple
                              else pa.array(bodies, type=pa.binary()).view(f.type))
            elif source == "row" and buffers is not None:
                arrays.append(_from_buffers(f.type, n, buffers[i]))
            elif source == "conn" and conn_buffers is not None:
                arrays.append(_from_buffers(f.type, n, conn_buffers[i]))
            elif source == "row":
                # ts (µs integers) and body (its UTF-8 JSON text) are built as their storage type, then viewed
                storage = _STORAGE.get(f.name)
                if storage is not None:
                    arrays.append(pa.array(row_columns[i], type=storage).view(f.type))
                else:
                    arrays.append(pa.array(row_columns[i], type=f.type))
            elif source == "tls":
                if tls_rows:
                    flags = [False] * n
                    for row in tls_rows:
                        flags[row] = True
                    arrays.append(pa.array(flags, type=f.type))
                else:
                    arrays.append(pa.repeat(pa.scalar(False), n))
            elif source == "conn":  # expanded here: Arrow's take would import pyarrow.compute (~40 ms)
                values = conn_columns[i]
                arrays.append(pa.array([values[k] for k in conn_rows], type=f.type))
            elif (extra := extra_columns[i]) is not None:
                arrays.append(pa.array(extra, type=f.type))
            elif f.name == "request_missing":
                arrays.append(pa.repeat(pa.scalar(False), n))
            else:
                arrays.append(pa.nulls(n, type=f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)
