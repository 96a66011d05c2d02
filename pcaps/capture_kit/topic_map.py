"""Who talks to what (issue 32): several producers and consumer groups on several topics of the librdkafka mock
cluster, for the topic map and the group inventory.

* producers: ``tm-orders-producer`` (confluent-kafka) writes ``tm-orders``; ``tm-payments-producer`` (kafka-python)
  writes ``tm-payments``; ``tm-audit-producer`` (confluent-kafka) writes both ``tm-audit`` and ``tm-orders``;
* ``tm-billing``, a classic group (confluent-kafka, range) of ``tm-billing-1`` and ``tm-worker``, on ``tm-orders``
  and ``tm-payments``;
* ``tm-analytics``, a KIP-848 consumer group (confluent-kafka, ``group.protocol=consumer``) of ``tm-analytics-1``
  and ``tm-worker``, on ``tm-orders`` and ``tm-audit``;
* ``tm-audit-readers``, a classic group of one kafka-python member, ``tm-auditor``, on ``tm-audit``.

kafka-python is pinned to ``api_version=(2, 3)`` (``parts.KP_MOCK``: it cannot parse the mock's answer to its
ApiVersions v4), so it names no software.

``tm-worker`` is one client id on one address in two groups: its Fetch requests name no group, so the topic map
tells them apart by the topics each group's requests name (``tm-payments``: billing's commits; ``tm-audit``: the
analytics heartbeats' subscription) and leaves ``tm-orders``, named by both, without a group. Every member commits
synchronously every 2 s; the producers stop 3 s before the consumers, which read what was written. The librdkafka
mock cluster has no SASL (and Tansu refuses every SASL user, see ``sasl.py``): the principals here are empty.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from pcaps.capture_kit.group_dynamics import _producer
from pcaps.capture_kit.groups import GroupStats
from pcaps.capture_kit.infra import Run, run_threads
from pcaps.capture_kit.parts import KP_MOCK

TOPICS = {"tm-orders": 3, "tm-payments": 2, "tm-audit": 2}
SECONDS = 14.0
#: (client id, group, protocol, topics)
CONFLUENT_MEMBERS = (
    ("tm-billing-1", "tm-billing", "classic", ("tm-orders", "tm-payments")),
    ("tm-worker", "tm-billing", "classic", ("tm-orders", "tm-payments")),
    ("tm-analytics-1", "tm-analytics", "consumer", ("tm-orders", "tm-audit")),
    ("tm-worker", "tm-analytics", "consumer", ("tm-orders", "tm-audit")),
)


def _confluent_member(run: Run, bs: str, client_id: str, group: str, protocol: str, topics: tuple[str, ...],
                      stop: threading.Event, stats: GroupStats) -> None:
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {"bootstrap.servers": bs, "client.id": client_id, "group.id": group,
                            "group.protocol": protocol, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "fetch.wait.max.ms": 1000}
    if protocol == "classic":
        conf.update({"partition.assignment.strategy": "range", "session.timeout.ms": 10000,
                     "heartbeat.interval.ms": 1000})
    c = Consumer(conf)
    label = f"{client_id}@{group}"
    try:
        c.subscribe(list(topics))
        last_commit, since = time.monotonic(), 0
        while not stop.is_set():
            m = c.poll(0.3)
            if m is not None and m.error() is None:
                stats.add(label, consumed=1)
                since += 1
            if time.monotonic() - last_commit > 2.0 and since:
                try:
                    c.commit(asynchronous=False)
                    stats.add(label, commits=1)
                except KafkaException as exc:
                    stats.add(label, failed_commits=1, error=exc.args[0].name())
                last_commit, since = time.monotonic(), 0
    finally:
        c.close()


def _kafka_python_member(bs: str, stop: threading.Event, stats: GroupStats) -> None:
    from kafka import KafkaConsumer

    c = KafkaConsumer("tm-audit", bootstrap_servers=bs, client_id="tm-auditor", group_id="tm-audit-readers",
                      enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                      heartbeat_interval_ms=1000, **KP_MOCK)
    try:
        last_commit = time.monotonic()
        while not stop.is_set():
            for records in c.poll(timeout_ms=300).values():
                stats.add("tm-auditor@tm-audit-readers", consumed=len(records))
            if time.monotonic() - last_commit > 2.0:
                c.commit()
                stats.add("tm-auditor@tm-audit-readers", commits=1)
                last_commit = time.monotonic()
    finally:
        c.close()


def _kafka_python_producer(bs: str, stop: threading.Event) -> int:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bs, client_id="tm-payments-producer", linger_ms=20, **KP_MOCK)
    sent = 0
    while not stop.is_set() and sent < 60:
        for _ in range(3):
            p.send("tm-payments", key=f"k{sent % 5}".encode(), value=b"payment-%d" % sent)
            sent += 1
        stop.wait(1.0)
    p.flush(10)
    p.close()
    return sent


def clients_topic_map(run: Run, bs: str) -> None:
    stop, quiet = threading.Event(), threading.Event()  # the producers stop 3 s before the consumers
    stats = GroupStats()
    produced: dict[str, int] = {}
    timer, quieter = threading.Timer(SECONDS, stop.set), threading.Timer(SECONDS - 3, quiet.set)
    timer.start()
    quieter.start()

    def record(name: str, make: Callable[[], int]) -> Callable[[], None]:
        return lambda: produced.__setitem__(name, make())

    def confluent(topic: str, client_id: str, per_second: int, most: int) -> Callable[[], int]:
        return lambda: _producer(bs, topic, client_id, quiet, per_second, most, 80, 1.0)

    targets: list[tuple[str, Callable[[], None]]] = [
        ("tm-orders-producer (confluent-kafka)", record("tm-orders-producer", confluent("tm-orders",
                                                                                        "tm-orders-producer", 6, 120))),
        ("tm-payments-producer (kafka-python)", record("tm-payments-producer",
                                                       lambda: _kafka_python_producer(bs, quiet))),
        ("tm-audit-producer -> tm-audit (confluent-kafka)",
         record("tm-audit-producer/audit", confluent("tm-audit", "tm-audit-producer", 2, 40))),
        ("tm-audit-producer -> tm-orders (confluent-kafka)",
         record("tm-audit-producer/orders", confluent("tm-orders", "tm-audit-producer", 2, 40))),
    ]
    for client_id, group, protocol, topics in CONFLUENT_MEMBERS:
        targets.append((f"{client_id} in {group} ({protocol}, {', '.join(topics)})", functools.partial(
            _confluent_member, run, bs, client_id, group, protocol, topics, stop, stats)))
    targets.append(("tm-auditor in tm-audit-readers (kafka-python)",
                    functools.partial(_kafka_python_member, bs, stop, stats)))
    try:
        run_threads(run, targets, timeout=SECONDS + 40, stagger=0.3)
    finally:
        stop.set()
        quiet.set()
        timer.cancel()
        quieter.cancel()
    run.note(f"produced {produced}; consumed {dict(stats.consumed)}; commits {dict(stats.commits)}")
    if stats.failed_commits:
        run.note(f"failed commits {dict(stats.failed_commits)}")
