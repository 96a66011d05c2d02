"""Topic ids (KIP-516) and the names they stand for, learned from the responses that carry both.

Kafka 4's group heartbeats, Fetch v13+ and the newer Metadata name topics by id. The names come from the
responses that carry both: Metadata v10+ (``Topics[].TopicId``, ``Name``), DescribeTopicPartitions,
CreateTopics v7+ and ConsumerGroupDescribe (its members' assignments name each topic both ways).

A topic id is a random 128-bit UUID, unique across clusters, and Kafka never renames a topic: an id names one
topic for good (a topic deleted and created again gets a new id). So the map is per id over the whole dataset,
with no cluster key; where two names were ever seen for one id (a damaged capture), the first seen wins.
Ids are written as Kafka writes them (``Uuid.toString()``: URL-safe base64 without padding).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from contract import body_schemas
from contract.kafka import CONSUMER_GROUP_DESCRIBE, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS, METADATA
from pipelines.events_dataset import parse_body, responses, shared

#: The all-zero id: "no id" (older versions, or a topic the broker has no id for).
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

_NAMED_TOPICS = body_schemas.NAMED_TOPICS_RESPONSE
_DESCRIBED_GROUPS = body_schemas.CONSUMER_GROUP_DESCRIBE_RESPONSE


def _known(topic_id: Column, name: Column) -> Column:
    return topic_id.isNotNull() & (topic_id != ZERO_UUID) & name.isNotNull() & (name != "")


@shared
def topic_names(events: DataFrame) -> DataFrame:
    """``topic_id``, ``topic``: every id the dataset names, with its name (one row per id)."""
    named = parse_body(responses(events, [METADATA, DESCRIBE_TOPIC_PARTITIONS, CREATE_TOPICS])
                       .where(F.col("body").isNotNull()), _NAMED_TOPICS, "rb")
    pairs = named.select("ts", F.explode("rb.Topics").alias("t")).where(
        _known(F.col("t.TopicId"), F.col("t.Name"))).select(
        "ts", F.col("t.TopicId").alias("topic_id"), F.col("t.Name").alias("topic"))
    described = parse_body(responses(events, [CONSUMER_GROUP_DESCRIBE]).where(F.col("body").isNotNull()),
                           _DESCRIBED_GROUPS, "rb")
    members = described.select("ts", F.explode("rb.Groups").alias("g")).select(
        "ts", F.explode("g.Members").alias("m"))
    tps = members.select("ts", F.explode(F.concat(
        F.coalesce(F.col("m.Assignment.TopicPartitions"), F.array()),
        F.coalesce(F.col("m.TargetAssignment.TopicPartitions"), F.array()))).alias("tp")).where(
        _known(F.col("tp.TopicId"), F.col("tp.TopicName"))).select(
        "ts", F.col("tp.TopicId").alias("topic_id"), F.col("tp.TopicName").alias("topic"))
    return pairs.unionByName(tps).groupBy("topic_id").agg(
        F.min_by("topic", F.struct("ts", "topic")).alias("topic"))


def with_topic_names(df: DataFrame, names: DataFrame, id_column: str = "topic_id", out: str = "topic") -> DataFrame:
    """``df`` with ``out``: the name of ``id_column``'s topic, or the id itself where no response named it."""
    lookup = names.select(F.col("topic_id").alias("_tn_id"), F.col("topic").alias("_tn_name"))
    joined = df.join(F.broadcast(lookup), df[id_column] == lookup["_tn_id"], "left")
    return joined.withColumn(out, F.coalesce(F.col("_tn_name"), F.col(id_column))).drop("_tn_id", "_tn_name")
