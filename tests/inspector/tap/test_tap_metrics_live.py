"""``kafka-inspector tap --metrics``: ``/metrics`` scraped over HTTP from a real tap on ``lo``.

Real captures are replayed onto ``lo`` with ``tcpreplay`` while the tap listens (the replayed packets are seen
once on ``lo``, as captured), and what ``/metrics`` says is compared with what ``read`` of the same captures says;
then a real Tansu broker gets ApiVersions requests from many client ids and from hostile ones, and the labels
must stay bounded and parse back. Needs root (or CAP_NET_RAW), tcpdump, tcpreplay and Tansu; skipped otherwise.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from prometheus_client.parser import text_string_to_metric_families

from contract.apis import REMOVED_VERSIONS
from contract.kafka import error_name
from inspector.tap.metrics import MAX_LABEL_VALUES, OTHER
from tests.inspector.tap.test_tap import _can_capture, _kill, _wait_text

REPO = Path(__file__).resolve().parents[3]
PCAPS = REPO / "pcaps"
HOST = "127.0.0.1"
#: Two real captures: three client libraries in one group; kafka-python 0.10 at versions Kafka 4.0 removed (and a
#: response that does not decode).
REPLAYED = ("tansu-consumer-group-3-members.pcap", "tansu-kafka-python-0.10-removed-versions.pcap")


def _skip_reason() -> str | None:
    return _can_capture() or (None if shutil.which("tcpreplay") and shutil.which("tcprewrite")
                              else "tcpreplay not installed")


live = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _start_tap(out: Path, log: Path, metrics_port: int, *extra: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "inspector.tap.command", "-i", "lo", "-o", str(out),
                                 "--metrics", f"{HOST}:{metrics_port}", *extra],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def _scrape(port: int) -> dict[str, list]:
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def _values(got: dict[str, list], family: str, *labels: str) -> Counter[tuple[str, ...]]:
    out: Counter[tuple[str, ...]] = Counter()
    for s in got.get(family, []):
        if s.name == f"{family}_total" or s.name == family:
            out[tuple(s.labels[label] for label in labels)] += s.value
    return out


def _scrape_until(port: int, done: Callable[[dict[str, list]], bool], timeout: float = 30.0) -> dict[str, list]:
    deadline = time.monotonic() + timeout
    while True:
        got = _scrape(port)
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


@pytest.fixture()
def tap_factory(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], int]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(*extra: str) -> tuple[subprocess.Popen[bytes], int]:
        port = _free_port()
        proc = _start_tap(tmp_path / "out", tmp_path / "tap.log", port, *extra)
        procs.append(proc)
        _wait_text(tmp_path / "tap.log", "listening on", proc)
        return proc, port

    yield start
    for proc in procs:
        _kill(proc)


@live
def test_metrics_of_replayed_captures_equal_what_read_says(tmp_path: Path,
                                                           tap_factory: Callable[..., tuple]) -> None:
    from inspector.cli.main import main as cli_main

    captures = [str(PCAPS / name) for name in REPLAYED]
    assert cli_main(["read", *captures, "-o", str(tmp_path / "ref"), "--quiet"]) == 0
    events = pq.read_table(tmp_path / "ref" / "events").to_pylist()
    ref = json.loads((tmp_path / "ref" / "summary.json").read_text())
    ports = sorted({r["broker_port"] for r in events})
    tap, port = tap_factory(*(a for p in ports for a in ("--port", str(p))))
    assert "metrics on http://127.0.0.1:" in (tmp_path / "tap.log").read_text()
    for n, capture in enumerate(captures):
        # a destination MAC that is not lo's: the kernel ignores the replayed packets (no socket of this machine
        # answers them); the capture on lo sees them all the same
        replayed = tmp_path / f"replay-{n}.pcap"
        subprocess.run(["tcprewrite", "--enet-dmac=02:00:00:00:00:01", "-i", capture, "-o", str(replayed)],
                       check=True, capture_output=True)
        subprocess.run(["tcpreplay", "-i", "lo", "--topspeed", str(replayed)], check=True, capture_output=True)

    def api(r: dict) -> str:
        return r["api_name"] or ("unknown" if r["api_key"] is None else f"key {r['api_key']}")

    requests = Counter((api(r), str(r["api_version"]), r["client_id"] or "") for r in events
                       if r["direction"] == "request")
    got = _scrape_until(port, lambda g: _values(g, "kafka_inspector_requests", "api", "version", "client_id")
                        == requests and _values(g, "kafka_inspector_packets")[()] == ref["packets"])
    assert _values(got, "kafka_inspector_requests", "api", "version", "client_id") == requests
    assert _values(got, "kafka_inspector_packets")[()] == ref["packets"]
    responses = Counter((api(r), error_name(r["error_code"] or 0)) for r in events if r["direction"] == "response")
    assert _values(got, "kafka_inspector_responses", "api", "error") == responses
    timed = Counter((api(r),) for r in events if r["direction"] == "response" and r["latency_ms"] is not None)
    counts = Counter({tuple(s.labels[k] for k in ("api",)): s.value
                      for s in got["kafka_inspector_request_latency_seconds"]
                      if s.name == "kafka_inspector_request_latency_seconds_count"})
    assert counts == timed
    failures = _values(got, "kafka_inspector_decode_failures", "api")
    assert sum(failures.values()) == ref["decode_failures"] == 1
    removed = Counter((r["client_id"] or "", api(r), str(r["api_version"])) for r in events
                      if r["direction"] == "request" and r["api_key"] in REMOVED_VERSIONS
                      and REMOVED_VERSIONS[r["api_key"]][0] <= r["api_version"] <= REMOVED_VERSIONS[r["api_key"]][1])
    assert removed
    assert _values(got, "kafka_inspector_clients_removed_versions", "client_id", "api", "version") == removed
    assert _values(got, "kafka_inspector_kernel_drops")[()] == 0
    # Every connection of both captures ended: the bytes are the accounting `read` wrote.
    got = _scrape_until(port, lambda g: _values(g, "kafka_inspector_connections_open")[()] == 0)
    assert _values(got, "kafka_inspector_connections_open")[()] == 0
    by_kind = _values(got, "kafka_inspector_bytes", "kind")
    accounting = ref["accounting"]["*"]
    for kind in ("decoded", "gap", "undecodable", "encrypted", "tls_overhead"):
        assert by_kind[(kind,)] == accounting[f"bytes_{kind}"], kind
    tap.send_signal(signal.SIGINT)
    assert tap.wait(30) == 0, (tmp_path / "tap.log").read_text(errors="replace")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["messages"] == ref["messages"]


def _api_versions(corr: int, client_id: bytes) -> bytes:
    body = struct.pack(">hhih", 18, 0, corr, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def _ask(port: int, client_ids: list[bytes]) -> int:
    """One ApiVersions v0 request per client id on one connection to the broker, each response read; how many
    were answered (the broker may close the connection instead: Tansu does for a client id that is not UTF-8)."""
    answered = 0
    with socket.create_connection((HOST, port), timeout=10) as s:
        for corr, cid in enumerate(client_ids):
            s.sendall(_api_versions(corr, cid))
            head = _recv_exact(s, 4)
            if head is None:
                return answered
            if _recv_exact(s, struct.unpack(">i", head)[0]) is None:
                return answered
            answered += 1
    return answered


def _recv_exact(s: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


#: Client ids as a hostile client sends them (bytes on the wire) and the label value /metrics must show.
HOSTILE = {
    b"new\nline": "new\\x0aline",
    b'quo"te} x="1': 'quo"te} x="1',
    b"back\\slash": "back\\slash",
    b"\x1b[31mred": "\\x1b[31mred",
    b"nul\x00byte": "nul\\x00byte",
    "\u202eevil".encode(): "\\u202eevil",
    b"bad utf8 \xff\xfe": "bad utf8 \\xff\\xfe",
    b"x" * 300: "x" * 128,
}


@live
def test_client_id_labels_are_capped_and_escaped(tmp_path: Path, tap_factory: Callable[..., tuple]) -> None:
    from pcaps.capture_kit.infra import free_port, tansu_broker

    broker_port = free_port()
    with tansu_broker(broker_port, tmp_path / "tansu.log"):
        tap, port = tap_factory("--port", str(broker_port))
        hostile = list(HOSTILE)
        answered = sum(_ask(broker_port, [cid]) for cid in hostile)  # a connection each: the broker may close it
        many = [f"client-{i}".encode() for i in range(MAX_LABEL_VALUES + 50)]
        answered += _ask(broker_port, many)
        sent = len(hostile) + len(many)
        assert answered >= len(many)
        got = _scrape_until(port, lambda g: sum(_values(g, "kafka_inspector_requests", "api").values()) >= sent)
    per_client = _values(got, "kafka_inspector_requests", "client_id")
    assert sum(per_client.values()) == sent
    assert len(per_client) == MAX_LABEL_VALUES + 1  # the first 100 distinct ids, and "other"
    for shown in HOSTILE.values():  # sent first: kept, escaped
        assert per_client[(shown,)] == 1, shown
    assert per_client[(OTHER,)] == sent - MAX_LABEL_VALUES
    assert _values(got, "kafka_inspector_label_values_folded", "label")[("client_id",)] > 0
    assert _values(got, "kafka_inspector_responses", "api", "error")[("ApiVersions", "NONE")] == answered
    tap.send_signal(signal.SIGTERM)
    assert tap.wait(30) == 0


@live
def test_a_busy_metrics_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "inspector.tap.command", "-i", "lo", "-o", str(tmp_path / "out"),
                               "--quiet", "--metrics", f"{HOST}:{port}"], cwd=REPO, capture_output=True, text=True,
                              timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"kafka-inspector: error: cannot serve metrics on {HOST}:{port}: Address "
                                        "already in use (EADDRINUSE): choose another --metrics address"]
    bad = subprocess.run([sys.executable, "-m", "inspector.tap.command", "-i", "lo", "-o", str(tmp_path / "out"),
                          "--metrics", "9464"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not HOST:PORT: '9464'" in bad.stderr and "Traceback" not in bad.stderr
