"""Hand-built Kafka frames over a socket (Metadata v4, ApiVersions v5 with ClusterId/NodeId), and their parts."""

from __future__ import annotations

import socket
from collections.abc import Callable

from pcaps.capture_kit.infra import Run

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
