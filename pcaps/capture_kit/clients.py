"""Producing and fetching with each client library (confluent-kafka, kafka-python, aiokafka, kcat)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from typing import Any

from pcaps.capture_kit.infra import kill_group


def payload(i: int, size: int = 180) -> bytes:
    base = f'{{"order_id": {i}, "sku": "SKU-{i % 17:04d}", "qty": {i % 5 + 1}, "note": "'
    return (base + "x" * max(0, size - len(base) - 2) + '"}').encode()


def headers(client: str, codec: str, i: int) -> list[tuple[str, str | bytes | None]]:
    return [("client", client.encode()), ("codec", codec.encode()), ("trace-id", f"t-{i:06d}".encode())]


# --------------------------------------------------------------------------------------------
# client drivers (each bounded in count and time)
# --------------------------------------------------------------------------------------------


def cfk_create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "setup-admin"})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], request_timeout=10)
    for fut in futures.values():
        fut.result(timeout=15)


def cfk_produce(
    bootstrap: str, topic: str, codecs: tuple[str, ...], per_codec: int, extra: dict[str, Any] | None = None
) -> int:
    from confluent_kafka import Producer

    sent = 0
    for codec in codecs:
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "client.id": f"confluent-producer-{codec}",
            "compression.type": codec,
            "linger.ms": 50,
            "message.timeout.ms": 15000,
        }
        conf.update(extra or {})
        p = Producer(conf)
        errors: list[str] = []

        def on_delivery(err: Any, _msg: Any, errors: list[str] = errors) -> None:
            if err is not None:
                errors.append(str(err))

        for i in range(per_codec):
            p.produce(
                topic,
                key=f"key-{i % 7}".encode(),
                value=payload(i),
                headers=headers("confluent-kafka", codec, i),
                on_delivery=on_delivery,
            )
        left = p.flush(20)
        if left or errors:
            raise RuntimeError(f"confluent produce {codec}: {left} undelivered, errors={errors[:3]}")
        sent += per_codec
    return sent


def cfk_fetch(bootstrap: str, topic: str, partitions: int, want: int, timeout: float = 20.0) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "confluent-fetcher",
            "group.id": "unused-assign-only",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    got = 0
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while got < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
    finally:
        c.close()
    if got < want:
        raise RuntimeError(f"confluent fetched {got}/{want}")
    return got


def kp_produce(bootstrap: str, topic: str, codecs: tuple[str, ...], per_codec: int, **kw: Any) -> int:
    from kafka import KafkaProducer

    sent = 0
    for codec in codecs:
        p = KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=f"kafka-python-producer-{codec}",
            compression_type=None if codec == "none" else codec,
            linger_ms=50,
            max_block_ms=15000,
            **kw,
        )
        try:
            futs = [
                p.send(topic, key=f"key-{i % 7}".encode(), value=payload(i), headers=headers("kafka-python", codec, i))
                for i in range(per_codec)
            ]
            p.flush(timeout=20)
            for f in futs:
                f.get(timeout=5)
        finally:
            p.close(timeout=5)
        sent += per_codec
    return sent


def kp_fetch(bootstrap: str, topic: str, partitions: int, want: int, timeout: float = 20.0, **kw: Any) -> int:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="kafka-python-fetcher",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **kw,
    )
    got = 0
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        while got < want and time.monotonic() < deadline:
            got += sum(len(v) for v in c.poll(timeout_ms=500).values())
    finally:
        c.close()
    if got < want:
        raise RuntimeError(f"kafka-python fetched {got}/{want}")
    return got


async def _aio_produce(bootstrap: str, topic: str, codecs: tuple[str, ...], per_codec: int) -> int:
    from aiokafka import AIOKafkaProducer

    sent = 0
    for codec in codecs:
        p = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=f"aiokafka-producer-{codec}",
            compression_type=None if codec == "none" else codec,
            linger_ms=50,
            request_timeout_ms=10000,
        )
        await p.start()
        try:
            futs = [
                await p.send(
                    topic, key=f"key-{i % 7}".encode(), value=payload(i), headers=headers("aiokafka", codec, i)
                )
                for i in range(per_codec)
            ]
            await asyncio.wait_for(asyncio.gather(*futs), 20)
        finally:
            await p.stop()
        sent += per_codec
    return sent


async def _aio_fetch(bootstrap: str, topic: str, partitions: int, want: int, timeout: float) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="aiokafka-fetcher",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await c.start()
    got = 0
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        while got < want and time.monotonic() < deadline:
            got += sum(len(v) for v in (await c.getmany(timeout_ms=500)).values())
    finally:
        await c.stop()
    if got < want:
        raise RuntimeError(f"aiokafka fetched {got}/{want}")
    return got


def aio_produce(bootstrap: str, topic: str, codecs: tuple[str, ...], per_codec: int) -> int:
    return asyncio.run(asyncio.wait_for(_aio_produce(bootstrap, topic, codecs, per_codec), 60))


def aio_fetch(bootstrap: str, topic: str, partitions: int, want: int, timeout: float = 20.0) -> int:
    return asyncio.run(asyncio.wait_for(_aio_fetch(bootstrap, topic, partitions, want, timeout), timeout + 20))


def kcat(args: list[str], stdin: bytes | None = None, timeout: float = 15.0) -> str:
    proc = subprocess.Popen(
        ["kcat", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, signal.SIGKILL)
        raise
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"kcat exit {proc.returncode}: {lines[-1] if lines else ''}")
    return out.decode(errors="replace")
