"""Consumer group members of each client library, and the groups the captures record."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pcaps.capture_kit.infra import Run, run_threads

# --------------------------------------------------------------------------------------------
# consumer group members (protocol type "consumer", assignor "range")
# --------------------------------------------------------------------------------------------


GROUP_TIMEOUTS = {"session_ms": 10000, "heartbeat_ms": 1000, "rebalance_ms": 10000}


@dataclass
class GroupStats:
    consumed: Counter[str] = field(default_factory=Counter)
    commits: Counter[str] = field(default_factory=Counter)
    failed_commits: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, label: str, consumed: int = 0, commits: int = 0, failed_commits: int = 0, error: str = "") -> None:
        with self.lock:
            self.consumed[label] += consumed
            self.commits[label] += commits
            if failed_commits:
                self.failed_commits[f"{label}:{error}"] += failed_commits


def member_kafka_python(
    bootstrap: str, topic: str, group: str, stop: threading.Event, stats: GroupStats, **kw: Any
) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.errors import KafkaError

    label = "kafka-python-member"
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id=label,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        partition_assignment_strategy=[RangePartitionAssignor],
        session_timeout_ms=GROUP_TIMEOUTS["session_ms"],
        heartbeat_interval_ms=GROUP_TIMEOUTS["heartbeat_ms"],
        max_poll_interval_ms=GROUP_TIMEOUTS["rebalance_ms"],
        **kw,
    )
    try:
        last_commit = time.monotonic()
        while not stop.is_set():
            n = sum(len(v) for v in c.poll(timeout_ms=500, max_records=20).values())
            stats.add(label, consumed=n)
            if time.monotonic() - last_commit > 2.0 and c.assignment():
                try:
                    c.commit()
                    stats.add(label, commits=1)
                except KafkaError as exc:  # e.g. RebalanceInProgress: poll again, then retry
                    stats.add(label, failed_commits=1, error=type(exc).__name__)
                last_commit = time.monotonic()
    finally:
        c.close()  # -> LeaveGroup


async def _member_aiokafka(bootstrap: str, topic: str, group: str, stop: threading.Event, stats: GroupStats) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.errors import KafkaError as AioKafkaError

    label = "aiokafka-member"
    c = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id=label,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        partition_assignment_strategy=(RangePartitionAssignor,),
        session_timeout_ms=GROUP_TIMEOUTS["session_ms"],
        heartbeat_interval_ms=GROUP_TIMEOUTS["heartbeat_ms"],
        max_poll_interval_ms=GROUP_TIMEOUTS["rebalance_ms"],
        rebalance_timeout_ms=GROUP_TIMEOUTS["rebalance_ms"],
    )
    await c.start()
    try:
        last_commit = time.monotonic()
        while not stop.is_set():
            batch = await c.getmany(timeout_ms=500, max_records=20)
            stats.add(label, consumed=sum(len(v) for v in batch.values()))
            if time.monotonic() - last_commit > 2.0 and c.assignment():
                try:
                    await c.commit()
                    stats.add(label, commits=1)
                except AioKafkaError as exc:  # e.g. CommitFailed during a rebalance
                    stats.add(label, failed_commits=1, error=type(exc).__name__)
                last_commit = time.monotonic()
    finally:
        await c.stop()  # -> LeaveGroup


def member_aiokafka(bootstrap: str, topic: str, group: str, stop: threading.Event, stats: GroupStats) -> None:
    asyncio.run(_member_aiokafka(bootstrap, topic, group, stop, stats))


def member_confluent(bootstrap: str, topic: str, group: str, stop: threading.Event, stats: GroupStats) -> None:
    from confluent_kafka import Consumer, KafkaException

    label = "confluent-member"
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": label,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": GROUP_TIMEOUTS["session_ms"],
            "heartbeat.interval.ms": GROUP_TIMEOUTS["heartbeat_ms"],
            "max.poll.interval.ms": GROUP_TIMEOUTS["rebalance_ms"],
        }
    )
    try:
        c.subscribe([topic])
        last_commit = time.monotonic()
        while not stop.is_set():
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                stats.add(label, consumed=1)
            if time.monotonic() - last_commit > 2.0 and c.assignment():
                try:
                    c.commit(asynchronous=False)
                    stats.add(label, commits=1)
                except KafkaException as exc:  # _NO_OFFSET when nothing new was consumed
                    stats.add(label, failed_commits=1, error=exc.args[0].name())
                last_commit = time.monotonic()
    finally:
        c.close()  # -> LeaveGroup


def run_group(run: Run, bootstrap: str, topic: str, group: str, seconds: float, kp_kw: dict[str, Any]) -> None:
    stop = threading.Event()
    stats = GroupStats()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    try:
        run_threads(
            run,
            [
                (
                    "kafka-python group member",
                    lambda: member_kafka_python(bootstrap, topic, group, stop, stats, **kp_kw),
                ),
                ("aiokafka group member", lambda: member_aiokafka(bootstrap, topic, group, stop, stats)),
                ("confluent-kafka group member", lambda: member_confluent(bootstrap, topic, group, stop, stats)),
            ],
            timeout=seconds + 40,
            stagger=4.0,
        )
    finally:
        stop.set()
        timer.cancel()
    run.note(f"group {group!r}: consumed per member {dict(stats.consumed)}, commits {dict(stats.commits)}")
    if stats.failed_commits:
        run.note(f"group {group!r}: failed commits {dict(stats.failed_commits)}")




def clients_group(run: Run, bs: str) -> None:
    run_group(run, bs, "orders", "inspector-group", seconds=25, kp_kw={})


# --------------------------------------------------------------------------------------------
# scenarios for the Spark anomaly reports (pipelines/): protocol disagreements recorded for real
# --------------------------------------------------------------------------------------------


def _member_kafka_python_roundrobin(bootstrap: str, topic: str, group: str, stop: threading.Event, run: Run) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id="kafka-python-roundrobin-member",
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        partition_assignment_strategy=[RoundRobinPartitionAssignor],
        session_timeout_ms=GROUP_TIMEOUTS["session_ms"],
        heartbeat_interval_ms=GROUP_TIMEOUTS["heartbeat_ms"],
        max_poll_interval_ms=GROUP_TIMEOUTS["rebalance_ms"],
    )
    consumed = 0
    try:
        while not stop.is_set():
            consumed += sum(len(v) for v in c.poll(timeout_ms=500, max_records=20).values())
        run.note(f"     kafka-python (roundrobin only) consumed {consumed}, assignment {sorted(c.assignment())}")
    finally:
        c.close()


def _member_confluent_range(bootstrap: str, topic: str, group: str, stop: threading.Event, run: Run) -> None:
    from confluent_kafka import Consumer

    errors: list[str] = []
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "confluent-range-member",
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": GROUP_TIMEOUTS["session_ms"],
            "heartbeat.interval.ms": GROUP_TIMEOUTS["heartbeat_ms"],
            "max.poll.interval.ms": GROUP_TIMEOUTS["rebalance_ms"],
            "error_cb": lambda err: errors.append(str(err)),
        }
    )
    consumed = 0
    try:
        c.subscribe([topic])
        while not stop.is_set():
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                consumed += 1
            elif m is not None:
                errors.append(str(m.error()))
        run.note(f"     confluent-kafka (range only) consumed {consumed}, assignment {c.assignment()}")
        if errors:
            run.note(f"     confluent-kafka errors: {sorted(set(errors))[:4]}")
    finally:
        c.close()


def clients_group_no_common_assignor(run: Run, bs: str) -> None:
    """kafka-python offers only roundrobin, confluent-kafka only range: no protocol all members support."""
    stop = threading.Event()
    timer = threading.Timer(18.0, stop.set)
    timer.start()
    try:
        run_threads(
            run,
            [
                ("kafka-python member (roundrobin only)",
                 lambda: _member_kafka_python_roundrobin(bs, "mixed-orders", "mixed-assignors", stop, run)),
                ("confluent-kafka member (range only)",
                 lambda: _member_confluent_range(bs, "mixed-orders", "mixed-assignors", stop, run)),
            ],
            timeout=60,
            stagger=5.0,
        )
    finally:
        stop.set()
        timer.cancel()
