"""The client parts of the produce/fetch, admin, transaction and mock-cluster captures."""

from __future__ import annotations

from typing import Any

from pcaps.capture_kit.clients import (
    aio_fetch,
    aio_produce,
    cfk_fetch,
    cfk_produce,
    headers,
    kcat,
    kp_fetch,
    kp_produce,
    payload,
)
from pcaps.capture_kit.groups import run_group
from pcaps.capture_kit.infra import CODECS, Run


def clients_produce_fetch(run: Run, bs: str) -> None:
    per_codec = 10
    want = per_codec * len(CODECS)
    with run.step(f"confluent-kafka produce {CODECS} x{per_codec} with keys+headers"):
        cfk_produce(bs, "produce-confluent", CODECS, per_codec)
    with run.step("confluent-kafka fetch (assign, from beginning)"):
        cfk_fetch(bs, "produce-confluent", 3, want)
    with run.step(f"kafka-python produce {CODECS} x{per_codec} with keys+headers"):
        kp_produce(bs, "produce-kafka-python", CODECS, per_codec)
    with run.step("kafka-python fetch (assign, from beginning)"):
        kp_fetch(bs, "produce-kafka-python", 3, want)
    with run.step(f"aiokafka produce {CODECS} x{per_codec} with keys+headers"):
        aio_produce(bs, "produce-aiokafka", CODECS, per_codec)
    with run.step("aiokafka fetch (assign, from beginning)"):
        aio_fetch(bs, "produce-aiokafka", 3, want)


def clients_kcat_tansu(run: Run, bs: str) -> None:
    with run.step("kcat -L (metadata listing)"):
        kcat(["-b", bs, "-L", "-m", "3"], timeout=10)


ADMIN_TOPIC = "admin-confluent"


def _cfk_admin(bs: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bs, "client.id": "confluent-admin", "socket.timeout.ms": 10000})


def _cfk_acls() -> tuple[Any, Any]:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    acl = AclBinding(
        ResourceType.TOPIC,
        ADMIN_TOPIC,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    match_any: Any = None  # None = wildcard in a filter (the stubs only say str)
    acl_filter = AclBindingFilter(
        ResourceType.ANY,
        match_any,
        ResourcePatternType.ANY,
        match_any,
        match_any,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    return acl, acl_filter


def clients_admin_confluent(run: Run, bs: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

    a = _cfk_admin(bs)
    t = ADMIN_TOPIC
    with run.step("confluent CreateTopics"):
        new = [NewTopic(t, 3, 1, config={"retention.ms": "3600000"})]
        for f in a.create_topics(new, request_timeout=10).values():
            f.result(timeout=15)
    with run.step("confluent Metadata (list_topics)"):
        md = a.list_topics(timeout=10)
        run.note(f"     topics: {sorted(md.topics)} brokers: {sorted(md.brokers)}")
    broker_id = "0"
    with run.step("confluent DescribeCluster"):
        dc = a.describe_cluster(request_timeout=10).result(timeout=15)
        broker_id = str(dc.nodes[0].id) if dc.nodes else broker_id
        run.note(f"     cluster_id={dc.cluster_id} controller={dc.controller} nodes={len(dc.nodes)}")
    with run.step("confluent DescribeConfigs (topic + broker)"):
        res = [ConfigResource(ResourceType.TOPIC, t), ConfigResource(ResourceType.BROKER, broker_id)]
        for f in a.describe_configs(res, request_timeout=10).values():
            f.result(timeout=15)
    with run.step("confluent IncrementalAlterConfigs (topic retention.ms SET)"):
        entry = ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
        res = [ConfigResource(ResourceType.TOPIC, t, incremental_configs=[entry])]
        for f in a.incremental_alter_configs(res, request_timeout=10).values():
            f.result(timeout=15)


def clients_admin_confluent_create_acls(run: Run, bs: str) -> None:
    a = _cfk_admin(bs)
    acl, _ = _cfk_acls()
    with run.step("confluent CreateAcls"):
        for f in a.create_acls([acl], request_timeout=8).values():
            f.result(timeout=12)


def clients_admin_confluent_acls_and_delete(run: Run, bs: str) -> None:
    a = _cfk_admin(bs)
    _, acl_filter = _cfk_acls()
    with run.step("confluent DescribeAcls"):
        run.note(f"     acls: {a.describe_acls(acl_filter, request_timeout=8).result(timeout=12)}")
    with run.step("confluent DeleteAcls"):
        for f in a.delete_acls([acl_filter], request_timeout=8).values():
            f.result(timeout=12)
    with run.step("confluent DeleteTopics"):
        for f in a.delete_topics([ADMIN_TOPIC], request_timeout=10).values():
            f.result(timeout=15)


def clients_admin_kafka_python(run: Run, bs: str) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    k = KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-admin", request_timeout_ms=10000)
    kt = "admin-kafka-python"
    try:
        with run.step("kafka-python CreateTopics"):
            k.create_topics({kt: {"num_partitions": 2, "replication_factor": 1}})
        with run.step("kafka-python Metadata (list_topics)"):
            run.note(f"     topics: {sorted(k.list_topics())}")
        with run.step("kafka-python DescribeCluster"):
            k.describe_cluster()
        with run.step("kafka-python DescribeConfigs"):
            k.describe_configs([ConfigResource(ConfigResourceType.TOPIC, kt)])
        with run.step("kafka-python IncrementalAlterConfigs"):
            k.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, kt, {"retention.ms": "5400000"})],
                raise_on_unknown=False,
                incremental=True,
            )
        kacl = ACL(
            principal="User:bob",
            host="*",
            operation=ACLOperation.WRITE,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(ResourceType.TOPIC, kt),
        )
        kfilter = ACLFilter(
            principal=None,
            host="*",
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        with run.step("kafka-python CreateAcls"):
            run.note(f"     {k.create_acls([kacl])}")
        with run.step("kafka-python DescribeAcls"):
            run.note(f"     {k.describe_acls(kfilter)}")
        with run.step("kafka-python DeleteAcls"):
            run.note(f"     {k.delete_acls([kfilter])}")
        with run.step("kafka-python DeleteTopics"):
            k.delete_topics([kt])
    finally:
        k.close()


def transactions_confluent(run: Run, bs: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = "txn-topic"
    p = Producer(
        {
            "bootstrap.servers": bs,
            "client.id": "confluent-txn-producer",
            "transactional.id": "inspector-txn-confluent",
            "transaction.timeout.ms": 30000,
            "compression.type": "lz4",
        }
    )
    c = Consumer({"bootstrap.servers": bs, "client.id": "confluent-txn-consumer", "group.id": "txn-group"})
    try:
        with run.step("confluent InitProducerId (init_transactions)"):
            p.init_transactions(15)
        for n, commit in ((1, True), (2, False), (3, True)):
            with run.step(f"confluent transaction #{n} ({'commit' if commit else 'abort'}) with offsets"):
                p.begin_transaction()
                for i in range(5):
                    p.produce(topic, key=f"txn-{n}".encode(), value=payload(i, 80), headers=headers("cfk", "lz4", i))
                p.flush(10)
                offsets = [TopicPartition(topic, 0, 10 * n)]
                p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), 15)
                if commit:
                    p.commit_transaction(15)
                else:
                    p.abort_transaction(15)
    finally:
        c.close()
        p.flush(5)


def transactions_kafka_python(run: Run, bs: str, **kp_kw: Any) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic = "txn-topic"
    with run.step("kafka-python transactional producer (commit, with offsets)"):
        kp = KafkaProducer(
            bootstrap_servers=bs,
            client_id="kafka-python-txn-producer",
            transactional_id="inspector-txn-kafka-python",
            compression_type="gzip",
            max_block_ms=15000,
            **kp_kw,
        )
        try:
            kp.init_transactions()
            kp.begin_transaction()
            for i in range(5):
                kp.send(topic, key=b"kp-txn", value=payload(i, 80), headers=headers("kafka-python", "gzip", i))
            kp.send_offsets_to_transaction({TopicPartition(topic, 1): OffsetAndMetadata(42, "", -1)}, "txn-group-kp")
            kp.commit_transaction()
        finally:
            kp.close(timeout=5)


# kafka-python 3.x sends ApiVersions v3/v4, which the mock cluster (max v2) rejects with a response
# kafka-python cannot parse; pinning api_version=(2, 3) makes it negotiate ApiVersions v2 instead.
KP_MOCK: dict[str, Any] = {"api_version": (2, 3)}


def clients_mock_txn_kafka_python(run: Run, bs: str) -> None:
    transactions_kafka_python(run, bs, **KP_MOCK)


def clients_mock_cluster(run: Run, bs: str) -> None:
    per_codec = 8
    want = per_codec * len(CODECS)
    with run.step("kcat -L (metadata)"):
        run.note("     " + kcat(["-b", bs, "-L", "-m", "5"]).splitlines()[0])
    with run.step("kcat produce (snappy, keys via -K)"):
        kcat(["-b", bs, "-P", "-t", "mock-kcat", "-z", "snappy", "-K", ":"], b"k1:v1\nk2:v2\nk3:v3\n")
    with run.step("kcat consume (-e from beginning)"):
        kcat(["-b", bs, "-C", "-t", "mock-kcat", "-o", "beginning", "-e", "-q"])
    with run.step(f"confluent-kafka produce {CODECS} x{per_codec}"):
        cfk_produce(bs, "mock-confluent", CODECS, per_codec)
    with run.step("confluent-kafka fetch"):
        cfk_fetch(bs, "mock-confluent", 3, want)
    with run.step(f"kafka-python produce {CODECS} x{per_codec} (api_version=(2,3))"):
        kp_produce(bs, "mock-kafka-python", CODECS, per_codec, **KP_MOCK)
    with run.step("kafka-python fetch"):
        kp_fetch(bs, "mock-kafka-python", 3, want, **KP_MOCK)
    with run.step(f"aiokafka produce {CODECS} x{per_codec}"):
        aio_produce(bs, "mock-aiokafka", CODECS, per_codec)
    with run.step("aiokafka fetch"):
        aio_fetch(bs, "mock-aiokafka", 3, want)
    run_group(run, bs, "mock-orders", "mock-group", seconds=20, kp_kw=KP_MOCK)


def clients_mock_kp_unpinned(run: Run, bs: str) -> None:
    from kafka import KafkaAdminClient

    with run.step("kafka-python bootstrap with its default ApiVersions v4 (no api_version pin)"):
        KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-unpinned", bootstrap_timeout_ms=5000).close()
