"""Consumer groups over time: a KIP-848 group whose epochs move as members come and go (the mock cluster), a
consumer that falls behind its producer (consumer lag, Tansu) and a classic group that keeps rebalancing (Tansu).

Each part runs a producer and/or group members in threads, every one bounded in time (a stop event or its own
lifetime) and in count; the notes record when each member got or lost which partitions, its commits and the lag
seen by a monitor, so that the README can say what the capture shows."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from pcaps.capture_kit.clients import payload
from pcaps.capture_kit.groups import GroupStats
from pcaps.capture_kit.infra import Run, run_threads


def _note_group(run: Run, group: str, produced: str, stats: GroupStats) -> None:
    """The run's note of what a group's producer wrote and its members consumed and committed."""
    run.note(f"group {group!r}: produced {produced}, consumed per member {dict(stats.consumed)}, "
             f"commits {dict(stats.commits)}")
    if stats.failed_commits:
        run.note(f"group {group!r}: failed commits {dict(stats.failed_commits)}")


def _producer(bs: str, topic: str, client_id: str, stop: threading.Event, per_second: int, max_records: int,
              size: int = 100, every: float = 0.5) -> int:
    """confluent-kafka producer writing ``per_second`` records a second (a burst every ``every`` seconds, so few
    Produce requests) until ``stop`` or ``max_records``; returns how many were delivered."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs, "client.id": client_id, "linger.ms": 20, "compression.type": "none",
                  "message.timeout.ms": 10000})
    delivered = 0
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1
        else:
            errors.append(str(err))

    sent = 0
    burst = max(1, round(per_second * every))
    while not stop.is_set() and sent < max_records:
        for _ in range(burst):
            p.produce(topic, key=f"key-{sent % 12}".encode(), value=payload(sent, size), on_delivery=on_delivery)
            sent += 1
        p.poll(0)
        stop.wait(every)
    p.flush(10)
    if errors:
        raise RuntimeError(f"{client_id}: {len(errors)} delivery errors, e.g. {errors[0]}")
    return delivered


def _parts(partitions: Any) -> str:
    return ",".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(partitions, key=lambda t: (t.topic, t.partition)))


class _Clock:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self) -> str:
        return f"t={time.monotonic() - self.t0:4.1f}s"


# --------------------------------------------------------------------------------------------
# 1. KIP-848 consumer group (group.protocol=consumer, ConsumerGroupHeartbeat) on the mock cluster
# --------------------------------------------------------------------------------------------


KIP848_TOPIC = "kip848-orders"
KIP848_GROUP = "kip848-group"
#: (member, joins at, leaves at) in seconds from the start of the part; the producer runs all along.
KIP848_MEMBERS = (("kip848-member-1", 1.0, 27.0), ("kip848-member-2", 4.0, 13.0),
                  ("kip848-member-3", 7.0, 27.0), ("kip848-member-4", 17.0, 27.0))
KIP848_SECONDS = 28.0


def _member_kip848(run: Run, bs: str, label: str, joins: float, leaves: float, clock: _Clock,
                   stats: GroupStats) -> None:
    from confluent_kafka import Consumer, KafkaException

    time.sleep(joins)
    errors: list[str] = []
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "client.id": label,
            "group.id": KIP848_GROUP,
            "group.protocol": "consumer",  # KIP-848: ConsumerGroupHeartbeat, the broker computes the assignment
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 1500,  # fewer empty Fetch round trips (the mock waits the full time): a smaller file
            "error_cb": lambda err: errors.append(str(err)),
        }
    )

    def on_assign(_c: Any, partitions: Any) -> None:
        run.note(f"     {clock()} {label} assigned +[{_parts(partitions)}]")

    def on_revoke(_c: Any, partitions: Any) -> None:
        run.note(f"     {clock()} {label} revoked -[{_parts(partitions)}]")

    try:
        c.subscribe([KIP848_TOPIC], on_assign=on_assign, on_revoke=on_revoke)
        deadline = time.monotonic() + (leaves - joins)
        last_commit, consumed_since = time.monotonic(), 0
        while time.monotonic() < deadline:
            m = c.poll(0.3)
            if m is not None and m.error() is None:
                stats.add(label, consumed=1)
                consumed_since += 1
            if time.monotonic() - last_commit > 2.0:
                if consumed_since:
                    try:
                        c.commit(asynchronous=False)  # OffsetCommit v9 carrying the member epoch
                        stats.add(label, commits=1)
                    except KafkaException as exc:  # e.g. STALE_MEMBER_EPOCH while the epoch moves
                        stats.add(label, failed_commits=1, error=exc.args[0].name())
                last_commit, consumed_since = time.monotonic(), 0
        run.note(f"     {clock()} {label} leaves (close); assignment then [{_parts(c.assignment())}]")
    finally:
        c.close()  # -> ConsumerGroupHeartbeat with MemberEpoch -1 (leave)
    if errors:
        run.note(f"     {label} errors: {sorted(set(errors))[:4]}")


def clients_kip848_group(run: Run, bs: str) -> None:
    stop = threading.Event()
    stats = GroupStats()
    clock = _Clock()
    produced: list[int] = []
    timer = threading.Timer(KIP848_SECONDS, stop.set)
    timer.start()
    targets: list[tuple[str, Callable[[], None]]] = [
        ("confluent-kafka producer (10 records/s)",
         lambda: produced.append(_producer(bs, KIP848_TOPIC, "kip848-producer", stop, 10, 400, size=80, every=1.0))),
    ]
    for label, joins, leaves in KIP848_MEMBERS:
        targets.append((f"{label} (group.protocol=consumer, t={joins:.0f}..{leaves:.0f}s)",
                        functools.partial(_member_kip848, run, bs, label, joins, leaves, clock, stats)))
    try:
        run_threads(run, targets, timeout=KIP848_SECONDS + 40, stagger=0.0)
    finally:
        stop.set()
        timer.cancel()
    _note_group(run, KIP848_GROUP, f"{sum(produced)}", stats)


# --------------------------------------------------------------------------------------------
# 2. a consumer falling behind (classic group, kafka-python) with a lag monitor, on Tansu
# --------------------------------------------------------------------------------------------


LAG_TOPIC = "lag-orders"
LAG_GROUP = "lagging-group"
LAG_PARTITIONS = 3
LAG_SECONDS = 18.0


def _slow_consumer(run: Run, bs: str, stop: threading.Event, clock: _Clock, stats: GroupStats) -> None:
    """confluent-kafka member (classic protocol): at most 5 records a poll, 0.4 s of "work" after each, a
    synchronous commit after each poll that returned records: about 10 records a second, against a producer writing
    30. librdkafka keeps fetching ahead into its local queue, so its Fetch offsets follow the log end closely while
    the committed offsets fall further and further behind."""
    from confluent_kafka import Consumer, KafkaException

    label = "slow-consumer"
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "client.id": label,
            "group.id": LAG_GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
        }
    )
    try:
        c.subscribe([LAG_TOPIC])
        while not stop.is_set():
            msgs = [m for m in c.consume(num_messages=5, timeout=0.3) if m.error() is None]
            if not msgs:
                continue
            stats.add(label, consumed=len(msgs))
            time.sleep(0.4)  # the slow part
            try:
                c.commit(asynchronous=False)  # OffsetCommit of the positions after this poll
                stats.add(label, commits=1)
            except KafkaException as exc:
                stats.add(label, failed_commits=1, error=exc.args[0].name())
        positions = {tp.partition: tp.offset for tp in c.position(c.assignment())}
        run.note(f"     {clock()} {label} stops; positions {dict(sorted(positions.items()))}")
    finally:
        c.close()  # -> LeaveGroup


def _lag_monitor(run: Run, bs: str, stop: threading.Event, clock: _Clock) -> None:
    """What a lag exporter does every few seconds (kafka-python admin client): the group's committed offsets
    (OffsetFetch) and the log end offsets (ListOffsets, latest); lag = end - committed per partition."""
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import OffsetSpec

    admin = KafkaAdminClient(bootstrap_servers=bs, client_id="lag-monitor", request_timeout_ms=10000)
    tps = [TopicPartition(LAG_TOPIC, p) for p in range(LAG_PARTITIONS)]
    try:
        while not stop.wait(3.0):
            committed = admin.list_group_offsets({LAG_GROUP: tps}).get(LAG_GROUP, {})
            latest = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
            end = {tp: o.offset for tp, o in latest.items()}
            done = [committed[tp].offset if tp in committed and committed[tp].offset >= 0 else 0 for tp in tps]
            lag = [end[tp] - d for tp, d in zip(tps, done, strict=True)]
            run.note(f"     {clock()} lag monitor: log end {[end[tp] for tp in tps]}, committed {done}, "
                     f"lag {lag} (total {sum(lag)})")
    finally:
        admin.close()


def clients_consumer_lag(run: Run, bs: str) -> None:
    stop = threading.Event()
    stats = GroupStats()
    clock = _Clock()
    produced: list[int] = []
    timer = threading.Timer(LAG_SECONDS, stop.set)
    timer.start()
    try:
        run_threads(
            run,
            [
                ("confluent-kafka producer (30 records/s)",
                 lambda: produced.append(_producer(bs, LAG_TOPIC, "lag-producer", stop, 30, 800))),
                ("confluent-kafka slow consumer (5 records/poll, commit after each poll)",
                 lambda: _slow_consumer(run, bs, stop, clock, stats)),
                ("kafka-python admin lag monitor (OffsetFetch + ListOffsets every 3 s)",
                 lambda: _lag_monitor(run, bs, stop, clock)),
            ],
            timeout=LAG_SECONDS + 40,
            stagger=0.5,
        )
    finally:
        stop.set()
        timer.cancel()
    _note_group(run, LAG_GROUP, f"{sum(produced)}", stats)


# --------------------------------------------------------------------------------------------
# 3. a classic group that keeps rebalancing: short-lived kafka-python members, one joining as another leaves
# --------------------------------------------------------------------------------------------


STORM_TOPIC = "storm-orders"
STORM_GROUP = "storm-group"
#: member i joins at STORM_EVERY * i seconds and closes (LeaveGroup) STORM_LIFE seconds later.
STORM_MEMBERS = 7
STORM_EVERY = 5.0
STORM_LIFE = 9.0


def _storm_member(run: Run, bs: str, index: int, clock: _Clock, stats: GroupStats) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.errors import KafkaError

    label = f"storm-member-{index}"

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            if revoked:
                run.note(f"     {clock()} {label} revoked [{_parts(revoked)}]")

        def on_partitions_assigned(self, assigned: Any) -> None:
            run.note(f"     {clock()} {label} assigned [{_parts(assigned)}]")

    time.sleep(STORM_EVERY * index)
    c = KafkaConsumer(
        bootstrap_servers=bs,
        client_id=label,
        group_id=STORM_GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=6000,  # kafka-python's JoinGroup RebalanceTimeoutMs
    )
    c.subscribe([STORM_TOPIC], listener=Listener())
    try:
        deadline = time.monotonic() + STORM_LIFE
        last_commit = time.monotonic()
        while time.monotonic() < deadline:
            stats.add(label, consumed=sum(len(v) for v in c.poll(timeout_ms=300, max_records=10).values()))
            if time.monotonic() - last_commit > 2.0 and c.assignment():
                try:
                    c.commit()
                    stats.add(label, commits=1)
                except KafkaError as exc:  # RebalanceInProgress / CommitFailed: the storm
                    stats.add(label, failed_commits=1, error=type(exc).__name__)
                last_commit = time.monotonic()
        run.note(f"     {clock()} {label} leaves (close)")
    finally:
        c.close()  # -> LeaveGroup


def clients_rebalance_storm(run: Run, bs: str) -> None:
    stats = GroupStats()
    clock = _Clock()
    seconds = STORM_EVERY * (STORM_MEMBERS - 1) + STORM_LIFE
    stop = threading.Event()
    produced: list[int] = []
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    targets: list[tuple[str, Callable[[], None]]] = [
        ("confluent-kafka producer (4 records/s)",
         lambda: produced.append(_producer(bs, STORM_TOPIC, "storm-producer", stop, 4, 200, size=80, every=1.0))),
    ]
    targets += [(f"storm-member-{i} (kafka-python, t={STORM_EVERY * i:.0f}..{STORM_EVERY * i + STORM_LIFE:.0f}s)",
                 functools.partial(_storm_member, run, bs, i, clock, stats)) for i in range(STORM_MEMBERS)]
    try:
        run_threads(run, targets, timeout=seconds + 40, stagger=0.0)
    finally:
        stop.set()
        timer.cancel()
    _note_group(run, STORM_GROUP, f"{sum(produced)} (+60 preloaded)", stats)
