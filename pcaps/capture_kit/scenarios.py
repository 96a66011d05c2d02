"""The small captures: what each records (:data:`SCENARIOS`), and how a scenario is run and summarised."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pcaps.capture_kit.clients import cfk_create_topics, cfk_produce
from pcaps.capture_kit.group_dynamics import clients_consumer_lag, clients_kip848_group, clients_rebalance_storm
from pcaps.capture_kit.groups import clients_group, clients_group_no_common_assignor
from pcaps.capture_kit.infra import (
    HERE,
    Run,
    free_port,
    kill_group,
    log,
    mock_cluster,
    tansu_binary,
    tansu_broker,
    tcpdump,
    tool_version,
    tshark_summary,
)
from pcaps.capture_kit.legacy import clients_kafka_python_0_10
from pcaps.capture_kit.parts import (
    clients_admin_confluent,
    clients_admin_confluent_acls_and_delete,
    clients_admin_confluent_create_acls,
    clients_admin_kafka_python,
    clients_kcat_tansu,
    clients_mock_cluster,
    clients_mock_kp_unpinned,
    clients_mock_txn_kafka_python,
    clients_produce_fetch,
    transactions_confluent,
    transactions_kafka_python,
)
from pcaps.capture_kit.raw import clients_list_topics, clients_raw_identity_misrouted, clients_raw_identity_single
from pcaps.capture_kit.sasl import sasl_aiokafka, sasl_confluent, sasl_kafka_python, sasl_kafkajs, sasl_tansu_cli
from pcaps.capture_kit.tls import (
    TLS_DIR_ENV,
    TlsListener,
    ensure_pki,
    plaintext_twin,
    stunnel,
    tls_create_topics,
    tshark_tls_handshakes,
    tshark_tls_kafka,
)
from pcaps.capture_kit.tls_clients import (
    TLS12_AIOKAFKA,
    TLS12_KAFKAJS,
    TLS12_MTLS,
    TLS13_CONFLUENT,
    TLS13_KAFKA_PYTHON,
    TLS13_SASL,
    tls12_aiokafka,
    tls12_kafkajs,
    tls12_mtls,
    tls13_confluent,
    tls13_kafka_python,
    tls13_sasl_aiokafka,
    tls13_sasl_kafka_python,
)
from pcaps.capture_kit.topic_map import TOPICS as TOPIC_MAP_TOPICS
from pcaps.capture_kit.topic_map import clients_topic_map


def preload_orders(topic: str) -> Callable[[str], None]:
    def setup(bs: str) -> None:
        cfk_produce(bs, topic, ("none",), 60)

    return setup


# scenarios: the broker and tcpdump live in this (parent) process; the client code of each
# scenario runs in child processes ("parts"), because a client library may abort the whole
# process on a broker quirk (librdkafka asserts on Tansu's truncated CreateAcls response).
ClientPart = Callable[[Run, str], None]


@dataclass(frozen=True)
class Scenario:
    broker: str  # "tansu", "tansu-auth" (SASL required) or "mock"
    what: str
    parts: tuple[ClientPart, ...]  # each runs in its own child process while tcpdump records
    topics: dict[str, int] = field(default_factory=dict)  # created before the capture starts
    setup: Callable[[str], None] | None = None  # runs before the capture starts (not recorded)
    part_timeout: float = 150.0
    mock_consumer_heartbeat_ms: int | None = None  # "mock": the KIP-848 heartbeat interval its coordinator hands out
    tls: TlsListener | None = None  # Tansu behind stunnel4 (TLS); the capture and its key log go to OUTDIR/tls/
    keylog: bool = True  # the clients can write an NSS key log (librdkafka cannot)


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
        (transactions_confluent, transactions_kafka_python),
        topics={"txn-topic": 2},
    ),
    "mock-cluster-transactions": Scenario(
        "mock",
        "transactional producers (confluent-kafka, kafka-python) against the librdkafka mock cluster",
        (transactions_confluent, clients_mock_txn_kafka_python),
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
    "tansu-kafka-python-0.10-removed-versions": Scenario(
        "tansu",
        "kafka-python pinned to api_version=(0, 10): CreateTopics v0, Produce v2, Fetch and group APIs at versions "
        "Kafka 4.0 removed (KIP-896)",
        (clients_kafka_python_0_10,),
    ),
    "tansu-sasl-scram": Scenario(
        "tansu-auth",
        "SASL to Tansu --authentication: SCRAM-SHA-256/512 from kafka-python, aiokafka, confluent-kafka, kafkajs; "
        "legacy SaslHandshake v0 tokens; PLAIN refused; OAUTHBEARER; tansu user create",
        (sasl_tansu_cli, sasl_kafka_python, sasl_aiokafka, sasl_confluent, sasl_kafkajs),
        part_timeout=90.0,
    ),
    "mock-cluster-kip848-consumer-group": Scenario(
        "mock",
        "KIP-848 group (group.protocol=consumer, ConsumerGroupHeartbeat): 4 confluent-kafka members join one after "
        "another, one leaves; group epochs and assignments move while a producer writes",
        (clients_kip848_group,),
        topics={"kip848-orders": 6},
        mock_consumer_heartbeat_ms=1000,
    ),
    "mock-cluster-topic-map": Scenario(
        "mock",
        "who talks to what: 3 producers (confluent-kafka, kafka-python) on 3 topics, a classic group "
        "(confluent-kafka), a KIP-848 group (confluent-kafka) and a kafka-python group; one client id in two groups",
        (clients_topic_map,),
        topics=dict(TOPIC_MAP_TOPICS),
        mock_consumer_heartbeat_ms=1000,
    ),
    "tansu-consumer-lag": Scenario(
        "tansu",
        "a confluent-kafka consumer (5 records/poll, commit after each) falls behind a 30 records/s producer; a lag "
        "monitor polls OffsetFetch + ListOffsets",
        (clients_consumer_lag,),
        topics={"lag-orders": 3},
    ),
    "tansu-classic-rebalance-storm": Scenario(
        "tansu",
        "classic group rebalancing over and over: 7 short-lived kafka-python members, one joining every 5 s, each "
        "leaving 9 s later; a producer writes 4 records/s",
        (clients_rebalance_storm,),
        topics={"storm-orders": 4},
        setup=preload_orders("storm-orders"),
    ),
    "tansu-tls13-kafka-python": Scenario(
        "tansu",
        "TLS 1.3 (stunnel4 in front of Tansu): kafka-python creates a topic, produces 20 records, a 2-member group "
        "consumes them; key log from SSLContext.keylog_filename",
        (tls13_kafka_python,),
        tls=TLS13_KAFKA_PYTHON,
    ),
    "tansu-tls12-aiokafka": Scenario(
        "tansu",
        "TLS 1.2, ECDHE-RSA-AES128-GCM-SHA256: aiokafka produces 12 records, a 1-member group consumes and commits; "
        "key log from SSLContext.keylog_filename",
        (tls12_aiokafka,),
        topics={"tls12-orders": 2},
        tls=TLS12_AIOKAFKA,
    ),
    "tansu-tls13-sasl-scram": Scenario(
        "tansu-auth",
        "SASL_SSL: SCRAM-SHA-256 over TLS 1.3 from kafka-python and aiokafka to Tansu --authentication (no user "
        "exists: unknown-user); key log from SSLContext.keylog_filename",
        (tls13_sasl_kafka_python, tls13_sasl_aiokafka),
        part_timeout=60.0,
        tls=TLS13_SASL,
    ),
    "tansu-tls12-mtls": Scenario(
        "tansu",
        "mutual TLS 1.2 (stunnel verify = 2): kafka-python with client certificate CN=alice,OU=payments,O=acme "
        "produces and fetches 10 records; a client without a certificate is refused",
        (tls12_mtls,),
        topics={"payments": 2},
        tls=TLS12_MTLS,
    ),
    "tansu-tls13-confluent-kafka": Scenario(
        "tansu",
        "TLS 1.3, TLS_CHACHA20_POLY1305_SHA256: confluent-kafka (librdkafka) produces and fetches 20 records; "
        "NO key log (librdkafka has no key log option)",
        (tls13_confluent,),
        topics={"tls-confluent": 2},
        tls=TLS13_CONFLUENT,
        keylog=False,
    ),
    "tansu-tls12-kafkajs": Scenario(
        "tansu",
        "TLS 1.2, ECDHE-RSA-CHACHA20-POLY1305: kafkajs produces 10 records, a 1-member group consumes them; key log "
        "from Node's 'keylog' event through a kafkajs socket factory",
        (tls12_kafkajs,),
        topics={"tls-kafkajs": 2},
        tls=TLS12_KAFKAJS,
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
    cmd = [sys.executable, str(HERE / "make_captures.py"), "--client", name, str(index), bootstrap]
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
    """Record scenario ``name`` into ``outdir/NAME.pcap``: its broker up, its client parts run one by one."""
    if SCENARIOS[name].broker == "tansu-restart":
        return run_restart_scenario(name, outdir)
    if SCENARIOS[name].tls is not None:
        return run_tls_scenario(name, outdir)
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
        if sc.broker in ("tansu", "tansu-auth"):
            port = free_port()
            with tansu_broker(port, outdir / f"{name}.tansu.log", sc.broker == "tansu-auth") as bs:
                if sc.topics:
                    cfk_create_topics(bs, sc.topics)
                record(bs, [port])
        else:
            with mock_cluster(3, sc.mock_consumer_heartbeat_ms) as mc:
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
                with tansu_broker(port, logfile, cluster_id=cluster_id) as bs:
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


def run_tls_scenario(name: str, outdir: Path) -> Run:
    """Record scenario ``name`` over TLS into ``outdir/tls/NAME.pcap`` (its key log ``NAME.keylog`` beside it):
    Tansu on a plaintext port advertising stunnel4's TLS port; one tcpdump records the TLS port only, a second one
    the plaintext hop from stunnel to Tansu into the twin ``NAME.plaintext.pcap`` (the same Kafka bytes, as
    stunnel forwards them)."""
    sc = SCENARIOS[name]
    assert sc.tls is not None
    run = Run(name)
    tdir = outdir / "tls"
    out, keylog, twin = tdir / f"{name}.pcap", tdir / f"{name}.keylog", plaintext_twin(tdir / f"{name}.pcap")
    log(f"=== {name}: {sc.what}")
    os.environ[TLS_DIR_ENV] = str(tdir)  # the client parts (child processes) find the PKI and key log there
    pki = ensure_pki(tdir / "pki")
    keylog.unlink(missing_ok=True)
    port = free_port()
    tls_port = free_port()
    while tls_port == port:
        tls_port = free_port()
    try:
        with tansu_broker(port, tdir / f"{name}.tansu.log", sc.broker == "tansu-auth", advertised_port=tls_port), \
                stunnel(tls_port, port, sc.tls, pki, tdir / f"{name}.stunnel") as bs:
            run.ports = [tls_port]
            if sc.topics:
                tls_create_topics(bs, sc.topics, sc.tls)  # through TLS (Tansu advertises only that), not recorded
            with tcpdump(out, [tls_port]), tcpdump(twin, [port]):
                for i in range(len(sc.parts)):
                    run_part(run, name, i, bs, sc.part_timeout)
    except Exception as exc:  # noqa: BLE001 - report and continue with the next scenario
        run.note(f"ABORTED: {type(exc).__name__}: {exc}")
    finally:
        (tdir / f"{name}.tansu.log").unlink(missing_ok=True)
    if out.exists():
        run.notes.append(f"size: {out.stat().st_size} bytes; TLS on port {tls_port}; tshark, no key:")
        run.notes.extend("    " + line for line in tshark_tls_handshakes(out, tls_port))
        if sc.keylog and keylog.exists():
            lines = keylog.read_text().splitlines()
            labels = sorted({line.split()[0] for line in lines if line and not line.startswith("#")})
            run.notes.append(f"key log: {len(lines)} lines ({', '.join(labels)}); tshark decrypting with it:")
            run.notes.extend("    " + line for line in tshark_tls_kafka(out, keylog, tls_port))
        elif sc.keylog:
            run.note("FAIL no key log was written")
    if twin.exists():
        run.notes.append(f"plaintext twin {twin.name}: {twin.stat().st_size} bytes; stunnel to Tansu on port {port}; "
                         "tshark summary:")
        run.notes.extend("    " + line for line in tshark_summary(twin, [port]))
    return run
