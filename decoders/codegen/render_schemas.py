"""``contract/body_schemas.py``: the Spark schemas (DDL) of the message bodies the detectors read, from the model.

A detector parses the ``body`` column (a message's JSON) with ``from_json`` and a partial schema: the fields it
reads. Which fields each schema holds is :data:`BODY_SCHEMAS` below (names only, in the order the detectors' columns
come out); their types and nesting come from the message specs (``decoders/schema``, every version of the body
merged), the record set summary from its model (``decoders.record_header``) and the structures the decoder adds
beside raw bytes (``<Field>Decoded``, ``decoders.embedded``) from :data:`DECODED`. A field missing from the model is
an error here, not a column of nulls in a report.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from contract.apis import API_NAMES
from contract.topic_map import SOURCES
from decoders.codegen.shared import HEADER
from decoders.record_header import ATTRIBUTES, FIELDS

#: Kafka's types as Spark's (uuid: base64 text, bytes: hex text, as the body writer writes them).
SPARK_TYPES = {"bool": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "uint16": "INT", "int32": "INT",
               "uint32": "BIGINT", "int64": "BIGINT", "float64": "DOUBLE", "string": "STRING", "uuid": "STRING",
               "bytes": "STRING"}
#: The record set summary (``decoders.records``): its size and, per batch, where it starts, the header's fields
#: (numbers the writer writes as JSON integers: 64-bit ones BIGINT, the others INT) and what the attributes say.
_RECORD_BATCH = {"byteOffset": "BIGINT",
                 **{name: "BIGINT" if code in "qI" else "INT" for name, code in FIELDS},
                 **{name: "STRING" if names else "BOOLEAN" for name, _, names in ATTRIBUTES}}
_RECORDS: dict[str, Any] = {"size": "BIGINT", "batches": [_RECORD_BATCH]}

#: A version-prefixed structure decoded beside its bytes (``decoders.embedded.decode_versioned``): its value is the
#: named data structure of ``decoders/schema``.
def _versioned(schema: str) -> dict[str, Any]:
    return {"schema": "STRING", "version": "SMALLINT", "status": "STRING", "inferred": "BOOLEAN",
            "value": ("data", schema)}


#: The ``<Field>Decoded`` structures the decoder adds, by field name (``decoders.embedded``).
DECODED: dict[str, Any] = {
    "MetadataDecoded": _versioned("ConsumerProtocolSubscription"),
    "MemberMetadataDecoded": _versioned("ConsumerProtocolSubscription"),
    "AssignmentDecoded": _versioned("ConsumerProtocolAssignment"),
    "MemberAssignmentDecoded": _versioned("ConsumerProtocolAssignment"),
    "RequestPrincipalDecoded": _versioned("DefaultPrincipalData"),
    # An Envelope's inner request (decoders.embedded.message_dict).
    "RequestDataDecoded": {"apiKey": "SMALLINT", "apiName": "STRING", "apiVersion": "SMALLINT",
                           "correlationId": "INT", "clientId": "STRING", "status": "STRING"},
    "ClientHostAddressDecoded": "STRING",
}

_SUBSCRIPTION = "{status, inferred, value{Topics}}"
_ASSIGNMENT = "{status, inferred, value{AssignedPartitions{Topic, Partitions}}}"
_OFFSETS = "Partitions{PartitionIndex, CommittedOffset, ErrorCode}"
#: The heartbeats of the groups the coordinator assigns (pipelines.heartbeat_groups.PROTOCOLS), parsed as one.
_GROUP_HEARTBEATS = ("ConsumerGroupHeartbeat", "StreamsGroupHeartbeat", "ShareGroupHeartbeat")
#: The admin writes (pipelines.kafka_rules.ADMIN_WRITES), parsed as one.
_ADMIN_WRITES = ("CreateTopics", "DeleteTopics", "CreateAcls", "DeleteAcls", "AlterConfigs", "CreatePartitions",
                 "CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken", "IncrementalAlterConfigs",
                 "AlterClientQuotas", "AlterUserScramCredentials")
_ADMIN_FIELDS = (
    "Topics{Name, NumPartitions, ReplicationFactor, Count}, TopicNames, "
    "Creations{ResourceType, ResourceName, ResourcePatternType, Principal, Host, Operation, PermissionType}, "
    "Filters{ResourceTypeFilter, ResourceNameFilter, PrincipalFilter, Operation, PermissionType}, "
    "Resources{ResourceType, ResourceName, Configs{Name, Value, ConfigOperation}}, "
    "Entries{Entity{EntityType, EntityName}, Ops{Key, Value, Remove}}, OwnerPrincipalType, OwnerPrincipalName, "
    "Renewers{PrincipalType, PrincipalName}, MaxLifetimeMs, Hmac, RenewPeriodMs, ExpiryTimePeriodMs, ValidateOnly, "
    "Deletions{Name, Mechanism}, Upsertions{Name, Mechanism, Iterations}"
)

def _topic_map() -> tuple[tuple[str, ...], str, str]:
    """The parts of the bodies of every message the topic map reads (``contract.topic_map.SOURCES``: the arrays
    that name topics, their name and id fields, the counted one's record sets), as one schema: one parse a row."""
    arrays: dict[str, list[str]] = {}
    for source in SOURCES.values():
        for walk in source.walk:
            names = arrays.setdefault(walk.array, [])
            wanted = [walk.name] if walk.name else []
            wanted.append(walk.topic_id)
            if walk is source.counted and source.partitions:
                wanted.append(f"{source.partitions}{{Records{{size, batches{{recordCount, magic, compression}}}}}}")
            names.extend(n for n in wanted if n not in names)
    fields = [f"{array}{{{', '.join(names)}}}" for array, names in arrays.items()]
    apis = tuple(dict.fromkeys(API_NAMES[key] for key, _ in SOURCES))
    return apis, "request+response", ", ".join([*fields, "ReplicaId, ReplicaState{ReplicaId}"])


#: name -> (API names, kind, the fields read). Fields: ``Name`` (its whole type) or ``Name{field, ...}``.
BODY_SCHEMAS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "METADATA_RESPONSE": (("Metadata",), "response", "ClusterId, Brokers{NodeId, Host, Port}"),
    "METADATA_TOPICS_RESPONSE": (("Metadata",), "response",
                                 "ClusterId, Topics{ErrorCode, Name, Partitions{PartitionIndex}}"),
    "DESCRIBE_CLUSTER_RESPONSE": (("DescribeCluster",), "response", "ErrorCode, ErrorMessage, EndpointType"),
    "DESCRIBE_CLUSTER_BROKERS_RESPONSE": (("DescribeCluster",), "response",
                                          "ErrorCode, EndpointType, ClusterId, Brokers{BrokerId, Host, Port}"),
    "DESCRIBE_CLUSTER_REQUEST": (("DescribeCluster",), "request", "EndpointType"),
    "FIND_COORDINATOR_RESPONSE": (("FindCoordinator",), "response",
                                  "ErrorCode, NodeId, Host, Port, Coordinators{Key, NodeId, Host, Port, ErrorCode}"),
    "API_VERSIONS_RESPONSE": (("ApiVersions",), "response", "ErrorCode, ApiKeys{ApiKey, MinVersion, MaxVersion}"),
    "OFFSET_COMMIT_REQUEST": (("OffsetCommit", "TxnOffsetCommit"), "request",
                              "GroupId, Topics{Name, TopicId, Partitions{PartitionIndex, CommittedOffset}}"),
    "OFFSET_COMMIT_RESPONSE": (("OffsetCommit", "TxnOffsetCommit"), "response",
                               "Topics{Name, TopicId, Partitions{PartitionIndex, ErrorCode}}"),
    "OFFSET_FETCH_RESPONSE": (("OffsetFetch",), "response",
                              f"Topics{{Name, {_OFFSETS}}}, Groups{{GroupId, Topics{{Name, TopicId, {_OFFSETS}}}}}"),
    "FETCH_RESPONSE": (("Fetch",), "response", "Responses{Topic, TopicId, Partitions{PartitionIndex, ErrorCode, "
                                               "HighWatermark}}"),
    "LIST_OFFSETS_RESPONSE": (("ListOffsets",), "response",
                              "Topics{Name, Partitions{PartitionIndex, ErrorCode, Timestamp, Offset}}"),
    "PRODUCE_REQUEST": (("Produce",), "request",
                        "TopicData{Name, TopicId, PartitionData{Index, Records{batches{byteOffset, producerId, "
                        "producerEpoch, baseSequence, lastOffsetDelta, isTransactional}}}}"),
    "JOIN_GROUP_RESPONSE": (("JoinGroup",), "response",
                            "ErrorCode, GenerationId, ProtocolType, ProtocolName, Leader, "
                            f"MemberId, Members{{MemberId, MetadataDecoded{_SUBSCRIPTION}}}"),
    "SYNC_GROUP_REQUEST": (("SyncGroup",), "request",
                           f"ProtocolType, ProtocolName, Assignments{{MemberId, AssignmentDecoded{_ASSIGNMENT}}}"),
    "DESCRIBE_GROUPS_RESPONSE": (("DescribeGroups",), "response",
                                 "Groups{ErrorCode, GroupId, GroupState, ProtocolType, ProtocolData, Members{MemberId, "
                                 f"MemberMetadataDecoded{_SUBSCRIPTION}, MemberAssignmentDecoded{_ASSIGNMENT}}}}}"),
    "ADMIN_WRITE_REQUEST": (_ADMIN_WRITES, "request", _ADMIN_FIELDS),
    "TOPIC_MAP_BODIES": _topic_map(),
    "JOIN_GROUP_SUBSCRIPTIONS_REQUEST": (("JoinGroup",), "request", "Protocols{MetadataDecoded{value{Topics}}}"),
    "NAMED_TOPICS_RESPONSE": (("Metadata", "DescribeTopicPartitions", "CreateTopics"), "response",
                              "Topics{ErrorCode, Name, TopicId}"),
    "CONSUMER_GROUP_DESCRIBE_RESPONSE": (("ConsumerGroupDescribe",), "response",
                                         "Groups{Members{Assignment{TopicPartitions{TopicId, TopicName}}, "
                                         "TargetAssignment{TopicPartitions{TopicId, TopicName}}}}"),
    "ADD_PARTITIONS_TO_TXN_REQUEST": (("AddPartitionsToTxn",), "request",
                                      "V3AndBelowTransactionalId, V3AndBelowProducerId, V3AndBelowProducerEpoch, "
                                      "V3AndBelowTopics{Name, Partitions}, Transactions{TransactionalId, ProducerId, "
                                      "ProducerEpoch, Topics{Name, Partitions}}"),
    "TXN_REQUEST": (("AddOffsetsToTxn", "EndTxn"), "request", "TransactionalId, ProducerId, ProducerEpoch, Committed"),
    "GROUP_HEARTBEAT_REQUEST": (_GROUP_HEARTBEATS, "request",
                                "GroupId, MemberId, MemberEpoch, InstanceId, SubscribedTopicNames"),
    "GROUP_HEARTBEAT_RESPONSE": (_GROUP_HEARTBEATS, "response",
                                 "ErrorCode, MemberId, MemberEpoch, Assignment{TopicPartitions{TopicId, Partitions}}, "
                                 "ActiveTasks{SubtopologyId, Partitions}"),
    "JOIN_GROUP_REQUEST": (("JoinGroup",), "request",
                           f"ProtocolType, Protocols{{Name, MetadataDecoded{_SUBSCRIPTION}}}, Reason"),
    "SYNC_GROUP_RESPONSE": (("SyncGroup",), "response", f"ErrorCode, ProtocolType, ProtocolName, "
                                                        f"AssignmentDecoded{_ASSIGNMENT}"),
    "LEAVE_GROUP_REQUEST": (("LeaveGroup",), "request", "GroupId, Members{Reason}"),
    "ENVELOPE_REQUEST": (("Envelope",), "request",
                         "RequestDataDecoded, RequestPrincipalDecoded{status, value{Type, Name}}, "
                         "ClientHostAddressDecoded"),
}


#: name -> the fields of a record set summary read where one is cast rather than parsed (its Spark type).
RECORD_SET_TYPES = {"RECORD_SET_SUMMARY": "size, batches{recordCount, magic, compression}"}


class SchemaError(Exception):
    """A schema names a field the model does not have."""


def _parse(text: str) -> list[tuple[str, str | None]]:
    """``a, b{c, d{e}}`` -> [("a", None), ("b", "c, d{e}")]."""
    out: list[tuple[str, str | None]] = []
    depth, start, name = 0, 0, ""
    for i, c in enumerate(text + ","):
        if c == "{":
            if depth == 0:
                name, start = text[start:i].strip(), i + 1
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                out.append((name, text[start:i]))
                start = -1
        elif c == "," and depth == 0:
            if start >= 0 and text[start:i].strip():
                out.append((text[start:i].strip(), None))
            start = i + 1
    return out


def _shape(kafka_type: str) -> str:
    """What a type is as JSON: a primitive's name, ``[]`` + that of an array's element, a struct's ``{}``."""
    array = kafka_type.startswith("[]")
    element = kafka_type[2:] if array else kafka_type
    return ("[]" if array else "") + (element if element in SPARK_TYPES or element == "records" else "{}")


def _merge(into: dict[str, Any], fields: list[dict[str, Any]]) -> dict[str, Any]:
    """Every version's fields by name (a struct's members merged the same way; the structs of several APIs too,
    whatever the specs call them, when they are the same shape of JSON)."""
    for f in fields:
        seen = into.setdefault(f["name"], {"type": f["type"], "fields": {}})
        if _shape(seen["type"]) != _shape(f["type"]):
            raise SchemaError(f"{f['name']}: {seen['type']} and {f['type']} are different JSON")
        _merge(seen["fields"], f.get("fields", []))
    return into


class _Model:
    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.apis = {d["name"]: d for d in docs if "apiKey" in d}
        self.data = {d["name"]: d for d in docs if d.get("type") == "data"}

    def body(self, api: str, kind: str) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for variant in self.apis[api][kind]:
            _merge(fields, variant["fields"])
        return fields

    def bodies(self, apis: tuple[str, ...], kind: str) -> dict[str, Any]:
        """The bodies of several APIs as one (what one parse of their rows reads); ``kind``: ``request``,
        ``response`` or both (``request+response``)."""
        fields: dict[str, Any] = {}
        for api in apis:
            for one in kind.split("+"):
                for variant in self.apis[api][one]:
                    _merge(fields, variant["fields"])
        return fields

    def data_struct(self, name: str) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        doc = self.data[name]
        for variant in doc.get("variants", [doc]):
            _merge(fields, variant["fields"])
        return fields

    def spark(self, shape: Any, select: str | None, where: str) -> str:
        """The Spark type of a value of ``shape`` (a spec field, a decoded structure, a Spark type), the members
        of a struct limited to ``select``."""
        if isinstance(shape, str):
            if select is not None:
                raise SchemaError(f"{where}: {shape} has no fields")
            return shape
        if isinstance(shape, list):  # a JSON array of the element's shape
            return f"ARRAY<{self.spark(shape[0], select, where)}>"
        if isinstance(shape, tuple):  # ("data", name)
            return self.struct(self.data_struct(shape[1]), select, where)
        if "type" in shape and isinstance(shape["type"], str) and "fields" in shape:  # a spec field
            kafka_type: str = shape["type"]
            array = kafka_type.startswith("[]")
            element = kafka_type[2:] if array else kafka_type
            if element == "records":
                inner = self.spark(_RECORDS, select, where)
            elif element in SPARK_TYPES:
                inner = self.spark(SPARK_TYPES[element], select, where)
            else:
                inner = self.struct(shape["fields"], select, where)
            return f"ARRAY<{inner}>" if array else inner
        return self.struct(shape, select, where)

    def struct(self, members: dict[str, Any], select: str | None, where: str) -> str:
        return f"STRUCT<{', '.join(f'{n}: {t}' for n, t in self.members(members, select, where))}>"

    def members(self, members: dict[str, Any], select: str | None, where: str) -> list[tuple[str, str]]:
        chosen = _parse(select) if select is not None else [(name, None) for name in members]
        out = []
        for name, inner in chosen:
            shape = members.get(name, DECODED.get(name))
            if shape is None:
                raise SchemaError(f"{where}: no field {name}")
            out.append((name, self.spark(shape, inner, f"{where}.{name}")))
        return out


def body_schemas(docs: list[dict[str, Any]]) -> dict[str, str]:
    """Each :data:`BODY_SCHEMAS` entry as a Spark DDL string (the fields of every API it names, merged)."""
    model = _Model(docs)
    out = {}
    for const, (apis, kind, select) in BODY_SCHEMAS.items():
        fields = model.bodies(apis, kind)
        out[const] = ", ".join(f"{n} {t}" for n, t in model.members(fields, select, f"{apis[0]} {kind}"))
    return out


def _lines(ddl: str, width: int = 100) -> list[str]:
    """``ddl`` cut after a ``, `` or a ``<`` into pieces of at most ``width`` characters (where it can be)."""
    parts: list[str] = []
    for piece in re.split(r"(?<=, )|(?<=<)", ddl):
        if parts and len(parts[-1]) + len(piece) <= width:
            parts[-1] += piece
        else:
            parts.append(piece)
    assert "".join(parts) == ddl
    return parts


def record_set_types(docs: list[dict[str, Any]]) -> dict[str, str]:
    """Each :data:`RECORD_SET_TYPES` entry as a Spark type."""
    model = _Model(docs)
    return {name: model.spark(_RECORDS, select, name) for name, select in RECORD_SET_TYPES.items()}


def render_body_schemas(docs: list[dict[str, Any]]) -> str:
    lines = [HEADER.rstrip("\n"),
             '"""The Spark schemas (DDL) of the message bodies the detectors read: the fields each reads, typed from',
             'the message specs (decoders/codegen/render_schemas.py says which)."""', ""]
    for const, ddl in body_schemas(docs).items():
        apis, kind, _ = BODY_SCHEMAS[const]
        kinds = " and ".join(f"{k}s" for k in kind.split("+"))
        lines.extend(textwrap.wrap(f"{', '.join(apis)} {kinds}.", 116, initial_indent="#: ", subsequent_indent="#: "))
        text = repr(ddl)
        if len(const) + len(text) + 3 <= 120:
            lines.append(f"{const} = {text}")
        else:
            parts = _lines(ddl)
            lines.append(f"{const} = (")
            lines.extend(f"    {part!r}" for part in parts)
            lines.append(")")
    for const, spark_type in record_set_types(docs).items():
        lines.append("#: A record set's summary (decoders.records), the fields read, as a Spark type.")
        lines.append(f"{const} = {spark_type!r}")
    return "\n".join(lines) + "\n"
