"""The client parts of the TLS captures: real clients talking Kafka to Tansu through stunnel4, each writing an NSS
key log beside the capture where the library allows it (see ``tls.py``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from typing import Any

from pcaps.capture_kit.big import KAFKAJS, kafkajs_ready
from pcaps.capture_kit.clients import headers, kp_fetch, kp_produce, payload
from pcaps.capture_kit.groups import GroupStats, member_kafka_python
from pcaps.capture_kit.infra import Run, run_threads
from pcaps.capture_kit.tls import TlsListener, client_context, confluent_tls_config, keylog_path, pki

#: What stunnel offers in each capture (the clients pin the same version and, for TLS 1.2, suite).
TLS13_KAFKA_PYTHON = TlsListener("TLSv1.3", "TLS_AES_256_GCM_SHA384")
TLS12_AIOKAFKA = TlsListener("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")
TLS13_SASL = TlsListener("TLSv1.3", "TLS_AES_128_GCM_SHA256")
TLS12_MTLS = TlsListener("TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384", client_cert=True)
TLS13_CONFLUENT = TlsListener("TLSv1.3", "TLS_CHACHA20_POLY1305_SHA256")
TLS12_KAFKAJS = TlsListener("TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305")

#: user -> password for the SASL_SSL capture (throwaway, made for it; Tansu knows no user, see sasl.py).
TLS_PASSWORDS = {"ivan": "ivan-tls-scram-256-pw!", "judy": "judy-tls-aio-256-pw#"}


def _kp_ssl(run: Run, listener: TlsListener, **extra: Any) -> dict[str, Any]:
    """kafka-python's TLS settings: an ``ssl_context`` whose ``keylog_filename`` is the capture's key log."""
    return {"security_protocol": "SSL", "ssl_context": client_context(listener, keylog_path(run.name)), **extra}


# --------------------------------------------------------------------------------------------
# tansu-tls13-kafka-python
# --------------------------------------------------------------------------------------------


def tls13_kafka_python(run: Run, bs: str) -> None:
    ssl_kw = _kp_ssl(run, TLS13_KAFKA_PYTHON)
    topic, group = "tls-orders", "tls-group"
    with run.step(f"kafka-python KafkaAdminClient CreateTopics {topic} (3 partitions) over TLS 1.3"):
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-tls-admin", request_timeout_ms=10000,
                                 **ssl_kw)
        try:
            admin.create_topics([NewTopic(topic, 3, 1)], timeout_ms=10000)
        finally:
            admin.close()
    with run.step("kafka-python produce (none, gzip) x10 with keys+headers over TLS 1.3"):
        kp_produce(bs, topic, ("none", "gzip"), 10, **ssl_kw)
    stop, stats = threading.Event(), GroupStats()
    timer = threading.Timer(16.0, stop.set)
    timer.start()
    try:
        run_threads(run, [(f"kafka-python group member {i}",
                           lambda: member_kafka_python(bs, topic, group, stop, stats, **ssl_kw)) for i in (1, 2)],
                    timeout=50, stagger=3.0)
    finally:
        stop.set()
        timer.cancel()
    run.note(f"group {group!r}: consumed {sum(stats.consumed.values())} of 20, commits {sum(stats.commits.values())}"
             f"{f', failed commits {dict(stats.failed_commits)}' if stats.failed_commits else ''}")


# --------------------------------------------------------------------------------------------
# tansu-tls12-aiokafka
# --------------------------------------------------------------------------------------------


async def _aio_tls12(bs: str, topic: str, group: str, n: int, ctx: Any) -> tuple[int, int]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bs, client_id="aiokafka-tls12-producer", security_protocol="SSL",
                                ssl_context=ctx, compression_type="lz4", linger_ms=50, request_timeout_ms=10000)
    await producer.start()
    try:
        futs = [await producer.send(topic, key=f"key-{i % 7}".encode(), value=payload(i),
                                    headers=headers("aiokafka", "lz4", i)) for i in range(n)]
        await asyncio.wait_for(asyncio.gather(*futs), 20)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bs, client_id="aiokafka-tls12-member", group_id=group,
                                security_protocol="SSL", ssl_context=ctx, enable_auto_commit=False,
                                auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=1000)
    await consumer.start()
    got = commits = 0
    try:
        deadline = time.monotonic() + 20
        while got < n and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=10)
            if batch:
                got += sum(len(v) for v in batch.values())
                await consumer.commit()
                commits += 1
    finally:
        await consumer.stop()  # -> LeaveGroup
    return got, commits


def tls12_aiokafka(run: Run, bs: str) -> None:
    ctx = client_context(TLS12_AIOKAFKA, keylog_path(run.name))
    with run.step("aiokafka produce lz4 x12 with keys+headers, then a one-member group reads them back, TLS 1.2"):
        got, commits = asyncio.run(asyncio.wait_for(_aio_tls12(bs, "tls12-orders", "tls12-group", 12, ctx), 60))
        run.note(f"     aiokafka consumed {got} of 12, {commits} commits")
        if got < 12:
            raise RuntimeError(f"aiokafka consumed {got}/12")


# --------------------------------------------------------------------------------------------
# tansu-tls13-sasl-scram
# --------------------------------------------------------------------------------------------


def tls13_sasl_kafka_python(run: Run, bs: str) -> None:
    from kafka import KafkaAdminClient

    with run.step("kafka-python SASL_SSL SCRAM-SHA-256 (ivan) over TLS 1.3"):
        admin = KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-ivan",
                                 **_kp_ssl(run, TLS13_SASL, security_protocol="SASL_SSL"),
                                 sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="ivan",
                                 sasl_plain_password=TLS_PASSWORDS["ivan"], request_timeout_ms=3000,
                                 bootstrap_timeout_ms=4000, reconnect_backoff_max_ms=1000)
        try:
            admin.create_topics([])
        finally:
            admin.close()


def tls13_sasl_aiokafka(run: Run, bs: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    async def attempt() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bs, client_id="aiokafka-judy", security_protocol="SASL_SSL",
                                    ssl_context=client_context(TLS13_SASL, keylog_path(run.name)),
                                    sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="judy",
                                    sasl_plain_password=TLS_PASSWORDS["judy"], request_timeout_ms=3000)
        try:
            await asyncio.wait_for(admin.start(), 10)
        finally:
            await admin.close()

    with run.step("aiokafka SASL_SSL SCRAM-SHA-256 (judy) over TLS 1.3"):
        asyncio.run(attempt())


# --------------------------------------------------------------------------------------------
# tansu-tls12-mtls
# --------------------------------------------------------------------------------------------


def tls12_mtls(run: Run, bs: str) -> None:
    ssl_kw = _kp_ssl(run, TLS12_MTLS)
    with run.step("kafka-python produce (none, snappy) x5 with the client certificate CN=alice,OU=payments,O=acme"):
        kp_produce(bs, "payments", ("none", "snappy"), 5, **ssl_kw)
    with run.step("kafka-python fetch (assign, from beginning) with the client certificate"):
        kp_fetch(bs, "payments", 2, 10, 15.0, **ssl_kw)
    with run.step("kafka-python without a client certificate: stunnel (verify = 2) refuses the handshake"):
        from kafka import KafkaAdminClient

        ctx = client_context(TLS12_MTLS, keylog_path(run.name), client_cert=False)
        admin = KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-no-cert", security_protocol="SSL",
                                 ssl_context=ctx, request_timeout_ms=3000, bootstrap_timeout_ms=3000,
                                 reconnect_backoff_ms=1000, reconnect_backoff_max_ms=1000)
        admin.close()
        raise RuntimeError("unexpectedly connected without a client certificate")


# --------------------------------------------------------------------------------------------
# tansu-tls13-confluent-kafka (no key log: librdkafka cannot write one)
# --------------------------------------------------------------------------------------------


def tls13_confluent(run: Run, bs: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    conf = {"bootstrap.servers": bs, "security.protocol": "ssl", **confluent_tls_config(TLS13_CONFLUENT)}
    topic, n = "tls-confluent", 20
    with run.step(f"confluent-kafka produce zstd x{n} with keys+headers over TLS 1.3"):
        p = Producer({**conf, "client.id": "confluent-tls-producer", "compression.type": "zstd", "linger.ms": 50,
                      "message.timeout.ms": 15000})
        errors: list[str] = []
        for i in range(n):
            p.produce(topic, key=f"key-{i % 7}".encode(), value=payload(i),
                      headers=headers("confluent-kafka", "zstd", i),
                      on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
        left = p.flush(20)
        if left or errors:
            raise RuntimeError(f"{left} undelivered, errors={errors[:3]}")
    with run.step("confluent-kafka fetch (assign, from beginning) over TLS 1.3"):
        c = Consumer({**conf, "client.id": "confluent-tls-fetcher", "group.id": "unused-assign-only",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 500})
        got = 0
        try:
            c.assign([TopicPartition(topic, part, OFFSET_BEGINNING) for part in range(2)])
            deadline = time.monotonic() + 20
            while got < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                got += m is not None and m.error() is None
        finally:
            c.close()
        if got < n:
            raise RuntimeError(f"fetched {got}/{n}")


# --------------------------------------------------------------------------------------------
# tansu-tls12-kafkajs
# --------------------------------------------------------------------------------------------


def tls12_kafkajs(run: Run, bs: str) -> None:
    with run.step("kafkajs produce x10, then a one-member group reads them back, TLS 1.2 (keylog event)"):
        kafkajs_ready()
        done = subprocess.run(["node", str(KAFKAJS / "tls.js"), bs, "tls-kafkajs", "10", str(pki().ca),
                               str(keylog_path(run.name)), TLS12_KAFKAJS.version, TLS12_KAFKAJS.suite],
                              cwd=KAFKAJS, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"})
        if done.returncode:
            raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
        run.note(f"     kafkajs: {done.stdout.strip()}")
