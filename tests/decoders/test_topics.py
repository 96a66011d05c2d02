"""The topics a message names (decoders/topics.py), found by the one model of topic fields (codegen/topic_model.py).

Messages are written by an independent encoder (kio) with chosen topic names and ids; each is decoded by every
path ``read`` may take (the compiled JSON writer of Produce and Fetch, the compiled readers' dict, the plain
readers' dict) and must give the references written here by hand. The rendered steps must reach every field the
specs mark, at every version.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.consumer_group_describe.v0 import response as cgd0
from kio.schema.consumer_group_heartbeat.v1 import request as cgh1_req
from kio.schema.consumer_group_heartbeat.v1 import response as cgh1_res
from kio.schema.create_topics.v7 import response as ct7
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.fetch.v13 import request as fetch13
from kio.schema.fetch.v16 import response as fetch16_res
from kio.schema.metadata.v9 import response as md9
from kio.schema.metadata.v12 import request as md12_req
from kio.schema.metadata.v12 import response as md12_res
from kio.schema.offset_commit.v8 import request as oc8
from kio.schema.offset_commit.v10 import request as oc10
from kio.schema.produce.v3 import request as produce3
from kio.schema.produce.v13 import request as produce13
from kio.schema.produce.v13 import response as produce13_res

from decoders import _runtime as rt
from decoders import api
from decoders.codegen.render_cy import TEXT_APIS
from decoders.element_budget import ElementBudget
from decoders.generated import topic_fields
from decoders.spec.convert import SCHEMA_DIR
from decoders.spec.versions import VersionRange
from decoders.topics import ZERO_ID, body_refs, topic_refs
from tests.decoders.plain_readers import plain_module
from tests.decoders.vectors import DetSource
from tests.decoders.vectors_kio import kio_frame, kio_instance, untagged

U1, U2, U3 = (uuid.UUID(int=(n << 96) | 0xC0FFEE) for n in (1, 2, 3))


def kid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString() of ``u``: URL-safe base64 of its 16 bytes, without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


class _Ascii(DetSource):
    """Deterministic values with ASCII strings: values the text writers write."""

    def text(self) -> str:
        return f"s{self._next()}"


def make(cls: type, **fields: Any) -> Any:
    """A kio entity: deterministic values, ``fields`` as given."""
    return dataclasses.replace(untagged(kio_instance(cls, _Ascii())), **fields)


def refs(instance: Any) -> Any:
    """The references every decode path finds in kio's frame of ``instance`` (asserted equal)."""
    cls = type(instance)
    kind = "request" if cls.__name__.endswith("Request") else "response"
    key, version = int(cls.__api_key__), int(cls.__version__)
    frame = kio_frame(instance)
    if kind == "request":
        msg = api.decode_request_bytes(frame, True, rt.MAX_ELEMENTS, False)
    else:
        msg = api.decode_response_bytes(frame, key, version, None, True, rt.MAX_ELEMENTS, False)
    assert msg.status == api.OK and msg.text is None, msg.status
    found = topic_refs(msg)
    entry = api._readers(key, version, kind)  # for the header version; the plain readers are rendered here
    assert entry is not None
    plain = plain_module(api.registry.API_MODULES[key])
    header_name = api.registry.DATA_MODULES["RequestHeader" if kind == "request" else "ResponseHeader"]
    budget = ElementBudget(rt.MAX_ELEMENTS)
    header, p = plain_module(header_name).VERSIONS[entry.header_version](frame, 0, budget)
    body, end = (plain.REQUEST if kind == "request" else plain.RESPONSE)[version](frame, p, budget)
    assert end == len(frame)
    assert body_refs(kind, key, version, body) == found
    if key in TEXT_APIS:
        if kind == "request":
            written = api.decode_request_bytes(frame, True, rt.MAX_ELEMENTS, True)
        else:
            written = api.decode_response_bytes(frame, key, version, None, True, rt.MAX_ELEMENTS, True)
        assert written.text is not None  # the JSON writer wrote it
        assert written.topics == found
    return found


def test_produce_by_name_and_by_id() -> None:
    part3 = make(produce3.PartitionProduceData, records=None)
    topics = tuple(make(produce3.TopicProduceData, name=n, partition_data=(part3,)) for n in ("orders", "pay"))
    assert refs(make(produce3.ProduceRequest, topic_data=topics)) == ["orders", "pay"]
    assert refs(make(produce3.ProduceRequest, topic_data=topics[:1])) == "orders"  # a lone name: no list
    assert refs(make(produce3.ProduceRequest, topic_data=())) is None
    # v13 (KIP-516): topics by id; the zero id names none; a repeat stays (the column makes them distinct)
    part13 = make(produce13.PartitionProduceData, records=None)
    by_id = tuple(make(produce13.TopicProduceData, topic_id=u, partition_data=(part13,))
                  for u in (U1, uuid.UUID(int=0), U2, U1))
    assert refs(make(produce13.ProduceRequest, topic_data=by_id)) == [(kid(U1),), (kid(U2),), (kid(U1),)]
    answer = tuple(make(produce13_res.TopicProduceResponse, topic_id=u) for u in (U2,))
    assert refs(make(produce13_res.ProduceResponse, responses=answer)) == [(kid(U2),)]


def test_fetch_by_name_and_by_id() -> None:
    request = make(fetch12.FetchRequest, topics=(make(fetch12.FetchTopic, topic="orders"),),
                   forgotten_topics_data=(make(fetch12.ForgottenTopic, topic="old"),
                                          make(fetch12.ForgottenTopic, topic="orders")))
    assert refs(request) == ["orders", "old", "orders"]
    request13 = make(fetch13.FetchRequest, topics=(make(fetch13.FetchTopic, topic_id=U1),),
                     forgotten_topics_data=(make(fetch13.ForgottenTopic, topic_id=U3),))
    assert refs(request13) == [(kid(U1),), (kid(U3),)]
    partition = make(fetch16_res.PartitionData, records=None)
    response = make(fetch16_res.FetchResponse, responses=(
        make(fetch16_res.FetchableTopicResponse, topic_id=U2, partitions=(partition,)),))
    assert refs(response) == [(kid(U2),)]


def test_metadata_names_ids_and_pairs() -> None:
    """A v10+ response names each topic both ways (a pair, learned from); a request does not pair them."""
    request = make(md12_req.MetadataRequest, topics=(make(md12_req.MetadataRequestTopic, topic_id=None, name="a"),
                                                   make(md12_req.MetadataRequestTopic, topic_id=U1, name=None)))
    assert refs(request) == ["a", (kid(U1),)]
    assert refs(make(md12_req.MetadataRequest, topics=None)) is None  # every topic: none named
    response = make(md12_res.MetadataResponse, topics=(
        make(md12_res.MetadataResponseTopic, name="orders", topic_id=U1),
        make(md12_res.MetadataResponseTopic, name=None, topic_id=U2),  # asked by id, unknown
        make(md12_res.MetadataResponseTopic, name="new", topic_id=None)))
    assert refs(response) == [("orders", kid(U1)), (None, kid(U2)), ("new", None)]
    old = make(md9.MetadataResponse, topics=(make(md9.MetadataResponseTopic, name="orders"),))
    assert refs(old) == "orders"


def test_offset_commit_by_name_and_by_id() -> None:
    topics8 = tuple(make(oc8.OffsetCommitRequestTopic, name=n) for n in ("orders", "pay"))
    assert refs(make(oc8.OffsetCommitRequest, topics=topics8)) == ["orders", "pay"]
    topics10 = tuple(make(oc10.OffsetCommitRequestTopic, topic_id=u) for u in (U1, U2))
    assert refs(make(oc10.OffsetCommitRequest, topics=topics10)) == [(kid(U1),), (kid(U2),)]


def test_consumer_group_heartbeat_names_and_ids() -> None:
    request = make(cgh1_req.ConsumerGroupHeartbeatRequest, subscribed_topic_names=("orders", "pay"),
                   topic_partitions=(make(cgh1_req.TopicPartitions, topic_id=U1),))
    assert refs(request) == ["orders", "pay", (kid(U1),)]
    heartbeat = make(cgh1_req.ConsumerGroupHeartbeatRequest, subscribed_topic_names=None, topic_partitions=None)
    assert refs(heartbeat) is None  # an unchanged member's heartbeat names nothing
    assignment = make(cgh1_res.Assignment, topic_partitions=(make(cgh1_res.TopicPartitions, topic_id=U2),
                                                             make(cgh1_res.TopicPartitions, topic_id=U1)))
    assert refs(make(cgh1_res.ConsumerGroupHeartbeatResponse, assignment=assignment)) == [(kid(U2),), (kid(U1),)]


def test_consumer_group_describe_and_create_topics_pairs() -> None:
    pair = make(cgd0.TopicPartitions, topic_id=U1, topic_name="orders")
    member = make(cgd0.Member, subscribed_topic_names=("orders",), assignment=make(cgd0.Assignment,
                  topic_partitions=(pair,)), target_assignment=make(cgd0.Assignment, topic_partitions=()))
    group = make(cgd0.DescribedGroup, members=(member,))
    assert refs(make(cgd0.ConsumerGroupDescribeResponse, groups=(group,))) == ["orders", ("orders", kid(U1))]
    created = make(ct7.CreatableTopicResult, name="orders", topic_id=U3)
    assert refs(make(ct7.CreateTopicsResponse, topics=(created,))) == [("orders", kid(U3))]


def test_the_zero_id_is_written_as_kafka_writes_it() -> None:
    assert kid(uuid.UUID(int=0)) == ZERO_ID


# ---------------------------------------------------------------------------------------------------------
# The rendered steps against the specs, read here on their own


def _in(text: str | None, version: int) -> bool:
    rng = VersionRange.parse(text)
    return rng is not None and version in rng


def _marked(fields: list[dict[str, Any]], version: int, path: str) -> set[str]:
    """Paths of the fields the specs mark as a topic's name, or that are a uuid TopicId, at ``version``."""
    out: set[str] = set()
    for f in fields:
        if not _in(f["versions"], version):
            continue
        here = f"{path}{f['name']}"
        if f.get("entityType") == "topicName" or (f["type"] == "uuid" and f["name"] == "TopicId"):
            out.add(here)
        if "fields" in f:
            out |= _marked(f["fields"], version, here + ".")
    return out


def _reached(steps: Any, path: str = "") -> set[str]:
    out: set[str] = set()
    for key, op, child in steps or ():
        if op == topic_fields.PAIR:
            out |= {path + key, path + child}
        elif op in (topic_fields.STRUCT, topic_fields.STRUCTS):
            out |= _reached(child, f"{path}{key}.")
        else:
            out.add(path + key)
    return out


def _pairs(steps: Any) -> int:
    return sum(1 if op == topic_fields.PAIR else _pairs(child) if op in (topic_fields.STRUCT, topic_fields.STRUCTS)
               else 0 for _, op, child in steps or ())


@pytest.mark.parametrize("kind", ["request", "response"])
def test_the_steps_reach_every_marked_field_at_every_version(kind: str) -> None:
    table = topic_fields.REQUEST if kind == "request" else topic_fields.RESPONSE
    checked = named = 0
    for path in sorted(Path(SCHEMA_DIR).glob("api-*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for variant in doc[kind]:
            rng = VersionRange.parse(variant["versions"])
            assert rng is not None
            for version in range(rng.lo, rng.hi + 1):
                steps = table.get(doc["apiKey"], {}).get(version)
                marked = _marked(variant["fields"], version, "")
                assert _reached(steps) == marked, (doc["name"], kind, version)
                if kind == "request":
                    assert _pairs(steps) == 0  # what a client asks about is not learned from
                checked += 1
                named += bool(marked)
    assert checked > 350 and named > 190  # measured: 367 and 204 of each kind


def test_responses_pair_what_the_inspector_learns_from() -> None:
    """The responses naming topics both ways, as the specs have them (the issue's list among them)."""
    paired = sorted((key, v) for key, versions in topic_fields.RESPONSE.items() for v, steps in versions.items()
                    if _pairs(steps))
    keys = {key for key, _ in paired}
    assert {3, 19, 69, 75} <= keys  # Metadata, CreateTopics, ConsumerGroupDescribe, DescribeTopicPartitions
    assert (3, 9) not in paired and (3, 10) in paired and (19, 6) not in paired and (19, 7) in paired
    assert {0, 1}.isdisjoint(keys)  # Produce and Fetch: a name or an id, never both
