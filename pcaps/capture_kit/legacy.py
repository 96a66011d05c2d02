"""The client part of the capture of a client using versions Kafka 4.0 removed (KIP-896): kafka-python pinned to
Kafka 0.10's protocol (``api_version``), so it sends Produce v2, Fetch v2/v3, ListOffsets v0/v1, OffsetFetch and
OffsetCommit at old versions and CreateTopics v0, all of which a Kafka 4 broker refuses."""

from __future__ import annotations

import time

from pcaps.capture_kit.clients import payload
from pcaps.capture_kit.infra import Run

TOPIC = "legacy-orders"
OLD = (0, 10, 0)
OLD_ADMIN = (0, 10, 1)  # CreateTopics needs 0.10.1


def clients_kafka_python_0_10(run: Run, bs: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    with run.step(f"kafka-python api_version={OLD_ADMIN}: CreateTopics {TOPIC}"):
        admin = KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-0.10-admin", api_version=OLD_ADMIN,
                                 request_timeout_ms=10000)
        try:
            admin.create_topics([NewTopic(TOPIC, 2, 1)])
        finally:
            admin.close()
    for codec in ("none", "gzip"):  # message format v1 (MessageSet), no headers
        with run.step(f"kafka-python api_version={OLD}: produce 10 ({codec})"):
            producer = KafkaProducer(bootstrap_servers=bs, client_id=f"kafka-python-0.10-producer-{codec}",
                                     compression_type=None if codec == "none" else codec, api_version=OLD,
                                     linger_ms=50, max_block_ms=15000)
            try:
                futures = [producer.send(TOPIC, key=f"key-{i % 3}".encode(), value=payload(i)) for i in range(10)]
                producer.flush(timeout=20)
                for future in futures:
                    future.get(timeout=5)
            finally:
                producer.close(timeout=5)
    with run.step(f"kafka-python api_version={OLD}: consume in group legacy-group, commit"):
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=bs, client_id="kafka-python-0.10-consumer",
                                 group_id="legacy-group", auto_offset_reset="earliest", enable_auto_commit=False,
                                 api_version=OLD)
        got = 0
        deadline = time.monotonic() + 30
        try:
            while got < 20 and time.monotonic() < deadline:
                got += sum(len(v) for v in consumer.poll(timeout_ms=500).values())
            consumer.commit()
        finally:
            consumer.close()
        if got < 20:
            raise RuntimeError(f"consumed {got}/20")
