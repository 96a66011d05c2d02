"""``kafka-inspector tap`` across interface outages, on a real interface.

Each test makes a veth pair ``kitapNNNN``/``kitapNNNNp`` (``ip link``; this kernel has no ``dummy``
driver), runs ``python -m inspector.tap.command -i kitapNNNN`` as a child process, and sends real Kafka frames
(``tests/frames.py``) in a hand-built TCP connection onto the interface with scapy ``sendp``. The outage
is real too: ``ip link set ... down`` (tcpdump's socket stays bound and captures again once up) or
``ip link del`` then ``ip link add`` (tcpdump exits with "The interface disappeared" and the tap starts
it again). They need root, ``ip`` and tcpdump, and are skipped otherwise.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from contract.errors import ExitCode
from inspector.tap.controller import RETRY_FIRST, RETRY_MAX, interface_outage
from inspector.tap.tcpdump import CaptureStats, interface_state
from tests.frames import frame, metadata_request_v0, metadata_response_v0

REPO = Path(__file__).resolve().parents[3]
CLIENT = ("10.77.0.1", 40001)
BROKER = ("10.77.0.2", 9092)


# -- no interface needed ---------------------------------------------------------------------------------


def test_tcpdump_outage_messages_are_recognised() -> None:
    # libpcap's words (pcap-linux.c) while capturing and when opening again.
    for line in ("tcpdump: pcap_loop: The interface disappeared", "tcpdump: pcap_loop: The interface went down",
                 "tcpdump: kitap1: That device is not up", "tcpdump: kitap1: No such device exists",
                 "tcpdump: recvfrom: Network is down", "tcpdump: SIOCGIFINDEX: No such device"):
        assert interface_outage(["tcpdump: listening on kitap1", line, "3 packets captured"]) is not None, line
    assert interface_outage(["tcpdump: pcap_loop: The interface disappeared"]) == "The interface disappeared"
    for line in ("tcpdump: kitap1: You don't have permission to perform this capture on that device",
                 "tcpdump: can't parse filter expression: syntax error", "tcpdump: pcap_loop: error"):
        assert interface_outage([line]) is None, line
    assert interface_state("any") is None and interface_state("kitap-none") == "gone"
    assert interface_state("lo") == "up"
    assert (RETRY_FIRST, RETRY_MAX) == (0.5, 5.0)


def test_capture_counters_add_up_over_tcpdump_runs() -> None:
    first = CaptureStats()
    assert first.parse("12 packets captured") and first.parse("0 packets dropped by kernel")
    second = CaptureStats(captured=5, received=5, kernel_dropped=2)
    total = first.plus(second)
    assert (total.captured, total.received, total.kernel_dropped, total.interface_dropped) == (17, 5, 2, None)
    assert (first.captured, first.kernel_dropped) == (12, 0)  # plus() leaves both alone


def test_live_view_shows_the_outage() -> None:
    from rich.console import Console

    from inspector.tap.live_view import LiveStats, LiveView, TapCounters

    view = LiveView(Console(record=True, width=200), interface="kitap1", bpf="tcp", output=Path("out"))
    view.state = "INTERFACE DOWN for 12s: waiting, next try in 4.0s"
    console = Console(record=True, width=200)
    console.print(view.render(TapCounters(outages=2, outage_seconds=14.4), LiveStats()))
    text = console.export_text()
    assert "INTERFACE DOWN for 12s: waiting, next try in 4.0s" in text and "interface outages 2 (14s down)" in text


# -- a real interface --------------------------------------------------------------------------------------


def _cannot() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("tcpdump") is None or shutil.which("ip") is None:
        return "needs tcpdump and ip (iproute2)"
    return None


_names = itertools.count()


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


def _make_veth(name: str) -> None:
    made = _ip("link", "add", name, "type", "veth", "peer", "name", f"{name}p")
    if made.returncode != 0:
        pytest.skip(f"cannot create a veth interface: {made.stderr.strip()}")
    for dev in (name, f"{name}p"):
        assert _ip("link", "set", dev, "up").returncode == 0


@pytest.fixture
def iface() -> Iterator[str]:
    reason = _cannot()
    if reason:
        pytest.skip(reason)
    name = f"kitap{(os.getpid() * 7 + next(_names)) % 10000:04d}"
    _ip("link", "del", name)  # a leftover of a killed run
    _make_veth(name)
    try:
        yield name
    finally:
        _ip("link", "del", name)  # takes the peer with it


class Conversation:
    """One TCP connection, client → broker on port 9092, built packet by packet with exact seq/ack."""

    def __init__(self, iface: str) -> None:
        from scapy.layers.inet import IP, TCP
        from scapy.layers.l2 import Ether

        self.iface = iface
        self._layers = (Ether, IP, TCP)
        self.seq = {"c": 1000, "b": 5000}

    def _packet(self, who: str, flags: str, payload: bytes = b"") -> Any:
        ether, ip, tcp = self._layers
        (src, sport), (dst, dport) = (CLIENT, BROKER) if who == "c" else (BROKER, CLIENT)
        other = "b" if who == "c" else "c"
        pkt = (ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / ip(src=src, dst=dst)
               / tcp(sport=sport, dport=dport, flags=flags, seq=self.seq[who], ack=self.seq[other]) / payload)
        self.seq[who] += len(payload) + (1 if "S" in flags or "F" in flags else 0)
        return pkt

    def send(self, *steps: tuple[str, str, bytes]) -> None:
        from scapy.config import conf
        from scapy.sendrecv import sendp

        conf.ifaces.reload()  # a re-created interface has a new index
        sendp([self._packet(*step) for step in steps], iface=self.iface, verbose=False)

    def lose(self, who: str, payload: bytes) -> None:
        """Bytes the peers exchanged while the interface was gone: they advance the sequence, unseen."""
        self.seq[who] += len(payload)

    def handshake(self) -> None:
        self.send(("c", "S", b""), ("b", "SA", b""), ("c", "A", b""))

    def exchange(self, corr: int) -> None:
        self.send(("c", "PA", request(corr)), ("b", "PA", response(corr)))

    def close(self) -> None:
        self.send(("c", "FA", b""), ("b", "FA", b""), ("c", "A", b""))


def request(corr: int) -> bytes:
    return frame(metadata_request_v0(corr, [f"topic-{corr}"]))


def response(corr: int) -> bytes:
    return frame(metadata_response_v0(corr, [(1, "broker-1", 9092)], [f"topic-{corr}"]))


def _start_tap(iface: str, out: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "inspector.tap.command", "-i", iface, "--port", "9092",
                                 "-o", str(out), "--rotate", "1s", "--immediate-mode", *extra],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop a tap started by a test (and its tcpdump, which runs in a session of its own)."""
    if proc.poll() is not None:
        return
    children = _children(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    proc.wait(10)


def _wait(what: str, check: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path,
          timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert proc.poll() is None, f"tap exited ({proc.returncode}) waiting for {what}: {log.read_text()}"
        assert time.monotonic() < deadline, f"no {what} after {timeout}s: {log.read_text(errors='replace')}"
        time.sleep(0.05)


def _in_log(log: Path, text: str) -> Callable[[], bool]:
    return lambda: text in log.read_text(errors="replace")


def _completed_rows(out: Path) -> int:
    files = sorted((out / "events").glob("part-*.parquet"))
    return sum(pq.read_metadata(p).num_rows for p in files)


def _events(out: Path) -> list[tuple[str, int]]:
    table = pq.read_table(out / "events", columns=["direction", "correlation_id", "decode_status"])
    rows = table.to_pylist()
    assert {r["decode_status"] for r in rows} == {"ok"}, rows
    return sorted((r["direction"], r["correlation_id"]) for r in rows)


def _notices(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines()
            if line.startswith("kafka-inspector tap: interface ")]


def test_interface_deleted_and_recreated(iface: str, tmp_path: Path) -> None:
    """tcpdump exits ("The interface disappeared"); the tap waits, restarts it, and resumes; the bytes the
    connection exchanged meanwhile are a gap, and the messages on both sides of it are decoded."""
    out, log = tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(iface, out, log)
    try:
        _wait("listening", _in_log(log, "listening on"), tap, log)
        conv = Conversation(iface)
        conv.handshake()
        conv.exchange(1)
        conv.exchange(2)
        # Before the outage, the events are in a completed file.
        _wait("the events before the outage", lambda: _completed_rows(out) == 4, tap, log)
        assert _ip("link", "del", iface).returncode == 0
        _wait("the outage notice", _in_log(log, f"interface {iface} is down"), tap, log)
        lost_request, lost_response = request(3), response(3)
        conv.lose("c", lost_request)
        conv.lose("b", lost_response)
        time.sleep(1.2)  # tcpdump restarts fail ("No such device exists") a few times meanwhile
        assert tap.poll() is None
        _make_veth(iface)
        _wait("the tap to resume", _in_log(log, f"interface {iface} is back"), tap, log)
        conv.exchange(4)
        conv.exchange(5)
        conv.close()
        time.sleep(0.3)
        tap.send_signal(signal.SIGINT)
        assert tap.wait(20) == 0, log.read_text(errors="replace")
    finally:
        _kill(tap)
    # The events before and after the outage, none lost from either side, nothing made up from the gap.
    assert _events(out) == sorted([(d, c) for c in (1, 2, 4, 5) for d in ("request", "response")])
    summary = json.loads((out / "summary.json").read_text())
    tap_doc = summary["tap"]
    assert tap_doc["interface_outages"] == 1 and tap_doc["stopped_by"] == "SIGINT"
    [outage] = tap_doc["outages"]
    assert outage["reason"] == "The interface disappeared" and outage["tcpdump_exited"] is True
    assert outage["ended_by"] == "back" and outage["open_connections"] == 1 and outage["failed_starts"] >= 1
    assert 1.0 < outage["seconds"] == tap_doc["interface_down_seconds"] < 15
    # The missed bytes are a gap, exactly: found from the ACKs after the outage, not joined over.
    lost = len(lost_request) + len(lost_response)
    assert summary["stream_issue_bytes"] == {"gap": lost}
    [conn] = pq.read_table(out / "connections.parquet").to_pylist()
    assert (conn["client_bytes_gap"], conn["broker_bytes_gap"]) == (len(lost_request), len(lost_response))
    assert conn["bytes_seen"] == conn["bytes_decoded"] + conn["bytes_gap"] + conn["bytes_undecodable"]
    assert any("the interface was down 1 time" in w for w in summary["warnings"])
    # Two tcpdump runs, their counters added up; every packet sent while the interface existed captured.
    assert tap_doc["packets_read"] == tap_doc["tcpdump_captured"] == 3 + 4 + 4 + 3
    # One line when it went, one when it came back.
    down, back = _notices(log)
    assert "The interface disappeared" in down and "waiting for it to come back" in down
    assert back.startswith(f"kafka-inspector tap: interface {iface} is back after ") and "gaps" in back


def test_interface_down_and_up(iface: str, tmp_path: Path) -> None:
    """``ip link set down``: tcpdump stays, the tap reports the outage and resumes when it is up; no byte of
    the connection was lost (nothing can cross a down interface), so no gap either."""
    out, log = tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(iface, out, log)
    try:
        _wait("listening", _in_log(log, "listening on"), tap, log)
        conv = Conversation(iface)
        conv.handshake()
        conv.exchange(1)
        _wait("the events before the outage", lambda: _completed_rows(out) == 2, tap, log)
        assert _ip("link", "set", iface, "down").returncode == 0
        _wait("the outage notice", _in_log(log, f"interface {iface} is down"), tap, log)
        time.sleep(0.5)
        assert _ip("link", "set", iface, "up").returncode == 0
        _wait("the tap to resume", _in_log(log, f"interface {iface} is back"), tap, log)
        conv.exchange(2)
        conv.close()
        time.sleep(0.3)
        tap.send_signal(signal.SIGTERM)
        assert tap.wait(20) == 0, log.read_text(errors="replace")
    finally:
        _kill(tap)
    assert _events(out) == sorted([(d, c) for c in (1, 2) for d in ("request", "response")])
    summary = json.loads((out / "summary.json").read_text())
    [outage] = summary["tap"]["outages"]
    assert outage["reason"] == "interface down" and outage["tcpdump_exited"] is False
    assert outage["ended_by"] == "back" and summary["tap"]["interface_outages"] == 1
    assert 0.4 < summary["tap"]["interface_down_seconds"] < 15
    assert summary["stream_issue_bytes"] == {}
    down, back = _notices(log)
    assert "capture kept open" in down and "tcpdump restarted" not in back


@pytest.mark.parametrize("case", ["down-max", "gone-max", "gone-term"])
def test_max_outage_and_stop_while_waiting(iface: str, tmp_path: Path, case: str) -> None:
    """--max-outage ends a wait with exit 3 and one line, whether tcpdump exited (interface deleted) or still
    runs (interface down: it is drained, not killed); SIGTERM during a wait ends it at once with 0. Each
    writes everything: events, connections.parquet, summary.json with the outage."""
    outage = ("set", iface, "down") if case == "down-max" else ("del", iface)
    out, log = tmp_path / "out", tmp_path / "tap.log"
    tap = _start_tap(iface, out, log, "--quiet", *(("--max-outage", "1s") if case.endswith("max") else ()))
    try:
        # Quiet mode prints nothing at start: traffic reaching a completed file says it listens.
        conv = Conversation(iface)
        deadline = time.monotonic() + 15
        while _completed_rows(out) == 0 if (out / "events").exists() else True:
            assert time.monotonic() < deadline and tap.poll() is None, log.read_text()
            conv.exchange(1)
            time.sleep(0.5)
        assert _ip("link", *outage).returncode == 0
        started = time.monotonic()
        if case == "gone-term":
            _wait("the outage notice", _in_log(log, f"interface {iface} is down"), tap, log)
            tap.send_signal(signal.SIGTERM)
        rc = tap.wait(20)
        took = time.monotonic() - started
    finally:
        _kill(tap)
    text = log.read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tap"]["interface_outages"] == 1 and summary["messages"] >= 2
    assert not any("killed" in w for w in summary["warnings"]), summary["warnings"]
    if case == "gone-term":
        assert rc == 0 and took < 5 and "error" not in text, text
        assert summary["tap"]["stopped_by"] == "SIGTERM" and summary["tap"]["outages"][0]["ended_by"] == "stopped"
        return
    reason = "interface down" if case == "down-max" else "The interface disappeared"
    assert rc == ExitCode.INPUT and 1.0 <= took < 8, (took, text)
    errors = [line for line in text.splitlines() if line.startswith("kafka-inspector: error:")]
    assert errors == [f"kafka-inspector: error: interface {iface} down for more than 1s (--max-outage; {reason}): "
                      "stopped, what was captured is saved"], text
    assert summary["tap"]["stopped_by"] == "max-outage"
    assert summary["tap"]["outages"][0]["ended_by"] == "max-outage"


def test_full_disk_stops_the_tap_and_keeps_the_completed_files(iface: str, tmp_path: Path) -> None:
    """A real 1 MiB tmpfs as the output, filled up by another writer while the tap runs: the tap exits with
    4 and one line naming the directory and ENOSPC; every file it completed before is intact."""
    from tests.inspector.rows.test_writers import fill, tmpfs

    with tmpfs() as fs:
        out, log = fs / "out", tmp_path / "tap.log"
        tap = _start_tap(iface, out, log, "--quiet")
        try:
            conv = Conversation(iface)
            conv.handshake()
            corr = 0
            deadline = time.monotonic() + 15
            while not list((out / "events").glob("part-*.parquet")) if (out / "events").exists() else True:
                assert time.monotonic() < deadline and tap.poll() is None, log.read_text()
                corr += 1
                conv.exchange(corr)
                time.sleep(0.3)
            completed = {p.name: p.read_bytes() for p in (out / "events").glob("part-*.parquet")}
            fill(fs)
            deadline = time.monotonic() + 20
            while tap.poll() is None:  # more traffic: the next flush or rotation meets the full disk
                assert time.monotonic() < deadline, log.read_text()
                for _ in range(5):
                    corr += 1
                    conv.exchange(corr)
                time.sleep(0.2)
            rc = tap.wait(10)
        finally:
            _kill(tap)
        text = log.read_text()
        errors = [line for line in text.splitlines() if "error" in line]
        assert rc == 4, text
        [error] = errors
        assert error.startswith(f"kafka-inspector: error: cannot write to {out / 'events'}: No space left on device "
                                "(ENOSPC); the file in progress was removed"), text
        files = sorted((out / "events").iterdir())
        assert [p.name for p in files] == sorted(p.name for p in files if p.name.startswith("part-"))
        assert {name: (out / "events" / name).read_bytes() for name in completed} == completed
        rows = sum(pq.read_table(p).num_rows for p in files)  # every file left is complete
        assert rows >= 2
        assert f"the {len(files)} file{'s' if len(files) != 1 else ''} completed before it" in error
        # Nothing more was written: no totals, no temporary files.
        assert sorted(p.name for p in out.iterdir()) == ["events"]
        # Quiet mode: the completed files were announced, then the one error line, nothing else.
        assert all(line.startswith("kafka-inspector tap: wrote ") for line in text.splitlines()[:-1]), text
