"""How much live traffic ``kafka-inspector tap`` decodes on ``lo`` with zero kernel drops.

Setup: a real Tansu broker on 127.0.0.1, and a load sender (a child process) that keeps ``--conns``
connections open with TCP_NODELAY and sends ApiVersions v0 requests at a fixed rate, reading the
responses. Each step runs for ``--seconds``; the rate goes up step by step until a step drops
packets (or the sender cannot reach its rate). For each step the table shows the packets/s the
capture saw, the kernel drops, and how long after the end of the load the tap had decoded
everything ("lag": a tap that keeps up has none).

Capture back ends compared, all feeding the same decode path (``inspector.tap.decode.TapDecoder``):

* ``tcpdump``: ``kafka-inspector tap`` itself (tcpdump writing pcap into a pipe; libpcap's TPACKET_V3
  ring hands packets over block by block, within 1 s);
* ``tcpdump-imm``: the same with ``--immediate-mode`` (each packet handed over at once);
* ``scapy``: a PF_PACKET socket opened by scapy's ``L2ListenSocket`` with the same kernel BPF filter
  (128 MiB receive buffer), read with one ``recvfrom`` per packet in the decoding process; drops from
  ``PACKET_STATISTICS``.

Then ``read`` on the same traffic saved to a file: the highest step is run once more with a plain
``tcpdump -w`` and the file is decoded by ``kafka-inspector read`` (decode speed with no capture cost).

Replay mode (``--replay PCAP``, ``bench/tap_replay.py``): real traffic replayed onto ``lo`` by tcpreplay, no broker
and no client on the machine; its results are in that module.

Usage::

    python bench/bench_tap.py                       # all back ends, default steps
    python bench/bench_tap.py --modes tcpdump --rates 5000,10000,20000 --seconds 5
    python bench/bench_tap.py --replay bench/data/big-frames.pcap --quiet --nice -20 --pin 0/1 \
        --rates 60000,100000,140000,170000 --seconds 8

Must run as root (captures on ``lo``). Everything runs on this machine's 2 cores: the broker, the
sender, tcpdump and the tap share them, so the numbers are a floor for a dedicated capture host.

Results: 2 cores shared by the broker, the sender, tcpdump and the tap (and by other work on the machine,
so rates move by ±20 % between runs); 5 s steps, 4 connections, ~2 packets per request; Python 3.11.7,
tcpdump 4.99.3 / libpcap 1.10.3. One run (load average ~4)::

    mode             req/s  requests   packets  packets/s    drops  lag s kept up
    tcpdump          2,000     9,999    20,315      4,063        0   0.05   ok
    tcpdump          4,000    19,996    40,632      8,126        0   0.01   ok
    tcpdump          6,000    29,993    62,787     12,555        0   0.02   ok
    tcpdump          8,000    39,997    87,656     17,528        0   0.04   ok
    tcpdump          9,000    44,971    87,844     17,565        0   0.30   ok
    tcpdump         10,000    49,996   106,460     21,291        0   0.94   ok
    tcpdump         11,000    54,802    97,904     19,031        0   1.57   NO  behind: decoded the backlog ...
    tcpdump-imm      2,000     9,999    20,503      4,100        0   0.00   ok
    tcpdump-imm      4,000    19,998    39,784      7,957        0   0.00   ok
    tcpdump-imm      6,000    29,997    56,375     11,275        0   0.00   ok
    tcpdump-imm      8,000    39,995    17,697      3,539  113,523   0.00   NO
    scapy            2,000     9,998    21,310      4,262        0   0.00   ok
    scapy            4,000    19,995    42,047      8,409        0   0.00   ok
    scapy            6,000    29,996    63,581     12,716        0   0.00   ok
    scapy            8,000    39,996    83,930     16,785        0   1.66   NO  behind: decoded the backlog ...
    read (file)     10,000    49,994   106,182     13,581        0   0.00   ok  decoded 21.4 MB in 7.82s

Over three runs of each: the tap (tcpdump pipe) sustained 18,000-21,000 packets/s with zero kernel drops and
no backlog, and above that it falls behind (the ring absorbs it for a while: still zero drops at
25,000 packets/s for 5 s, decoded 1.6 s late); ``read`` decodes the same traffic from a file at
13,500-25,500 packets/s (decoding is the bottleneck of both); the scapy sniffer managed 12,700-17,500
at best and dropped packets already at 4,000 packets/s when the machine was busy (its socket is read
by the decoding thread itself); ``--immediate-mode`` drops from 9,000-11,000 packets/s on (libpcap's
TPACKET_V2 ring has one 64 KiB slot per packet on ``lo``: 128 MiB hold ~2,000 packets). Kernel drop
counts on ``lo`` count each packet twice (libpcap discards the outgoing copy after the kernel counted it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pcaps.capture_kit.infra import free_port, kill_group, tansu_broker  # noqa: E402

PYTHON = sys.executable
HOST = "127.0.0.1"


# -- load sender (child process) ----------------------------------------------------------------------


def api_versions_v0(corr: int, client_id: bytes = b"bench-tap") -> bytes:
    body = struct.pack(">hhih", 18, 0, corr, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def sender(port: int, rate: float, seconds: float, conns: int) -> dict[str, Any]:
    """Send ApiVersions v0 at ``rate`` requests/s for ``seconds``; return what was sent and received."""
    socks = []
    for _ in range(conns):
        s = socket.create_connection((HOST, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    received = [0]
    stop = threading.Event()

    def reader() -> None:
        sel = selectors.DefaultSelector()
        pending = {s.fileno(): b"" for s in socks}
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        while not stop.is_set():
            for key, _ in sel.select(0.1):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                data = sock.recv(1 << 20)
                if not data:
                    sel.unregister(sock)
                    continue
                buf = pending[sock.fileno()] + data
                pos = 0
                while len(buf) - pos >= 4:
                    (n,) = struct.unpack_from(">i", buf, pos)
                    if len(buf) - pos - 4 < n:
                        break
                    pos += 4 + n
                    received[0] += 1
                pending[sock.fileno()] = buf[pos:]

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    sent = 0
    start = time.perf_counter()
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
        due = int(rate * elapsed)
        while sent < due:
            socks[sent % conns].sendall(api_versions_v0(sent & 0x7FFFFFFF))
            sent += 1
        time.sleep(0.0005)
    send_seconds = time.perf_counter() - start
    deadline = time.monotonic() + 5
    while received[0] < sent and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    t.join(1)
    for s in socks:
        s.close()
    return {"sent": sent, "received": received[0], "seconds": send_seconds, "done": time.time()}


# -- scapy back end (child process) -------------------------------------------------------------------

PACKET_STATISTICS = 6
SOL_PACKET = 263
PACKET_OUTGOING = 4


def scapy_tap(port: int, out: str) -> dict[str, Any]:
    """Capture with a scapy PF_PACKET socket + kernel BPF and decode as the tap does, until SIGINT.

    After SIGINT it reads on until the socket has been quiet for 0.3 s (its backlog decoded).
    """
    import logging

    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.arch.linux import L2ListenSocket
    from scapy.config import conf

    from inspector.capture.parser import RawPacket
    from inspector.read.decode_options import read_options
    from inspector.rows.writers import ParquetDatasetWriter
    from inspector.tap.command import add_parser
    from inspector.tap.decode import TapDecoder

    conf.bufsize = 128 << 20
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["tap", "-i", "lo", "--port", str(port), "-o", out, "--quiet"])
    tap = TapDecoder(read_options(args), "tap:lo")
    writer = ParquetDatasetWriter(Path(out), rows_per_file=0)

    def flush() -> None:
        batch = tap.take()
        if batch is not None:
            writer.write(batch)
    stop: list[float] = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(time.monotonic()))
    sock = L2ListenSocket(iface="lo", filter=f"tcp port {port}")
    ins = sock.ins
    with contextlib.suppress(OSError):
        ins.setsockopt(socket.SOL_SOCKET, 33, 128 << 20)  # SO_RCVBUFFORCE
    ins.settimeout(0.05)
    packets = 0
    print("ready", flush=True)
    batch: list[RawPacket] = []
    last_flush = last_data = time.monotonic()
    while True:
        try:
            data, sa = ins.recvfrom(262144)
        except (TimeoutError, InterruptedError):
            data = b""
        now = time.monotonic()
        if data:
            last_data = now
            if sa[2] != PACKET_OUTGOING:  # lo shows every packet twice: keep the incoming copy
                batch.append(RawPacket(time.time(), 1, data, len(data), len(data)))
                packets += 1
        if len(batch) >= 256 or (batch and now - last_flush > 0.05):
            tap.packets(batch)
            batch = []
        if now - last_flush >= 1.0:
            flush()
            last_flush = now
        if stop and now - last_data >= 0.3 and now - stop[0] >= 0.3:
            break
    tap.packets(batch)
    raw = ins.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    _, drops = struct.unpack("II", raw)
    sock.close()
    flush()
    writer.close()
    return {"packets": packets, "kernel_dropped": drops, "messages": tap.summary.messages,
            "catch_up": max(0.0, last_data - stop[0])}


# -- steps --------------------------------------------------------------------------------------------


@dataclass
class Step:
    mode: str
    rate: float
    requests: int = 0
    responses: int = 0
    packets: int = 0
    pps: float = 0.0
    kernel_dropped: int = 0
    messages: int = 0
    lag: float = 0.0
    ok: bool = True
    note: str = ""


def _child(argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([PYTHON, str(Path(__file__).resolve()), *argv], start_new_session=True, **kw)


def run_sender(port: int, rate: float, seconds: float, conns: int) -> dict[str, Any]:
    proc = _child(["--sender", str(port), str(rate), str(seconds), str(conns)], stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=seconds + 30)
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def _wait_for(path: Path, text: bytes, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"did not start: {path.read_text(errors='replace')}")
        time.sleep(0.05)


def step_tcpdump(port: int, rate: float, seconds: float, conns: int, work: Path, immediate: bool = False) -> Step:
    out = work / f"tap-{int(rate)}"
    log = work / f"tap-{int(rate)}.log"
    extra = ["--immediate-mode"] if immediate else []
    with log.open("wb") as err:
        tap = subprocess.Popen([PYTHON, "-m", "inspector.tap.command", "tap", "-i", "lo", "--port", str(port),
                                "-o", str(out), *extra], cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        _wait_for(log, b"listening on", tap)
        sent = run_sender(port, rate, seconds, conns)
        os.kill(tap.pid, signal.SIGINT)
        tap.wait(120)
    finally:
        kill_group(tap)
    summary = json.loads((out / "summary.json").read_text())
    t = summary["tap"]
    step = Step("tcpdump-imm" if immediate else "tcpdump", rate, sent["sent"], sent["received"], t["packets_read"],
                t["packets_read"] / sent["seconds"], t["kernel_dropped"] or 0, summary["messages"])
    # After SIGINT the tap reads on until the pipe is quiet for 0.3 s (and, without --immediate-mode, 1.2 s
    # have passed for libpcap's ring to hand over its last block): beyond that it was decoding a backlog.
    step.lag = max(0.0, (t["stop_catch_up_seconds"] or 0.0) - (0.3 if immediate else 1.2))
    shutil.rmtree(out, ignore_errors=True)
    return step


def step_scapy(port: int, rate: float, seconds: float, conns: int, work: Path) -> Step:
    out = work / f"scapy-{int(rate)}"
    proc = _child(["--scapy", str(port), str(out)], stdout=subprocess.PIPE, cwd=REPO)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("scapy back end did not start")
        sent = run_sender(port, rate, seconds, conns)
        os.kill(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        kill_group(proc)
    res = json.loads(rest.decode().strip().splitlines()[-1])
    step = Step("scapy", rate, sent["sent"], sent["received"], res["packets"], res["packets"] / sent["seconds"],
                res["kernel_dropped"], res["messages"])
    step.lag = res["catch_up"]
    shutil.rmtree(out, ignore_errors=True)
    return step


def step_read(port: int, rate: float, seconds: float, conns: int, work: Path) -> Step:
    pcap = work / "read.pcap"
    cmd = ["tcpdump", "-i", "lo", "-n", "-U", "-s", "0", "-B", "131072", "-w", str(pcap), f"tcp port {port}"]
    log = work / "read-tcpdump.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while b"listening on" not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        sent = run_sender(port, rate, seconds, conns)
        time.sleep(1.2)
    finally:
        kill_group(proc, signal.SIGINT)
    dropped = 0
    for line in log.read_text(errors="replace").splitlines():
        if "dropped by kernel" in line:
            dropped = int(line.split()[0])
    # `kafka-inspector read` as cmd_read runs it (quiet), timed inside the child without interpreter start-up
    code = ("import sys, time, json\n"
            "from pathlib import Path\n"
            "from inspector.read.reader import ReadOptions, read_captures\n"
            "from inspector.rows.writers import ParquetDatasetWriter\n"
            "w = ParquetDatasetWriter(Path(sys.argv[2]))\n"
            "t0 = time.perf_counter()\n"
            "s = read_captures([sys.argv[1]], w, ReadOptions(ports=frozenset([int(sys.argv[3])])))\n"
            "w.close()\n"
            "print(json.dumps({'seconds': time.perf_counter() - t0, 'packets': s.packets, 'messages': s.messages}))\n")
    res = subprocess.run([PYTHON, "-c", code, str(pcap), str(work / "read-out"), str(port)], cwd=REPO, check=True,
                         capture_output=True)
    r = json.loads(res.stdout.decode().strip().splitlines()[-1])
    step = Step("read (file)", rate, sent["sent"], sent["received"], r["packets"], r["packets"] / r["seconds"],
                dropped, r["messages"])
    step.note = f"decoded {pcap.stat().st_size / 1e6:.1f} MB in {r['seconds']:.2f}s"
    return step


def print_row(s: Step) -> None:
    print(f"{s.mode:<12} {s.rate:>9,.0f} {s.requests:>9,} {s.packets:>9,} {s.pps:>10,.0f} {s.kernel_dropped:>8,} "
          f"{s.lag:>6.2f} {'ok' if s.ok else 'NO':>4}  {s.note}", flush=True)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--sender":
        a = sys.argv[2:6]
        print(json.dumps(sender(int(a[0]), float(a[1]), float(a[2]), int(a[3]))))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--scapy":
        print(json.dumps(scapy_tap(int(sys.argv[2]), sys.argv[3])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replay", metavar="PCAP", help="replay this capture onto lo with tcpreplay at each --rates "
                    "(packets/s) instead of running a broker and a load sender; the tap runs with --metrics")
    ap.add_argument("--quiet", action="store_true", help="--replay: run the tap with --quiet (no live view)")
    ap.add_argument("--keep-going", action="store_true", help="--replay: go on after a step that did not keep up")
    ap.add_argument("--nice", type=int, default=0, help="--replay: run the tap (its tcpdump) and tcpreplay with this "
                    "nice value, e.g. -10: on a machine shared with other work, the cores a capture host gives them")
    ap.add_argument("--pin", metavar="TAP_CPUS/REPLAY_CPUS", help="--replay: taskset the tap (and its tcpdump) and "
                    "tcpreplay, e.g. 0/1: the sender never runs on the tap's core")
    ap.add_argument("--copies", type=int, default=4, help="--replay: copies of the capture, each with its own "
                    "addresses, replayed one after the other (and looped) so that a step is not a repeat")
    ap.add_argument("--tap-args", nargs="*", default=[], help="--replay: more options for the tap")
    ap.add_argument("--rates", default=None,
                    help="requests/s per step (comma separated); with --replay: packets/s")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--modes", default="tcpdump,tcpdump-imm,scapy",
                    help="tcpdump (the tap), tcpdump-imm (the tap with --immediate-mode), scapy")
    args = ap.parse_args()
    if args.replay:
        from bench.tap_replay import main_replay

        args.rates = args.rates or "20000,40000,60000,80000,100000,120000"
        return main_replay(args)
    rates = [float(r) for r in (args.rates or "2000,4000,6000,8000,9000,10000,11000,12000,14000").split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench_tap_"))
    port = free_port()
    steps: list[Step] = []
    print(f"{'mode':<12} {'req/s':>9} {'requests':>9} {'packets':>9} {'packets/s':>10} {'drops':>8} "
          f"{'lag s':>6} {'kept up':>4}")
    try:
        with tansu_broker(port, work / "tansu.log"):
            for mode in args.modes.split(","):
                for rate in rates:
                    if mode == "scapy":
                        s = step_scapy(port, rate, args.seconds, args.conns, work)
                    else:
                        s = step_tcpdump(port, rate, args.seconds, args.conns, work, immediate=mode == "tcpdump-imm")
                    short = s.requests < 0.95 * rate * args.seconds
                    s.ok = s.kernel_dropped == 0 and s.lag < 1.0 and not short
                    if short:
                        s.note = "sender could not reach the rate"
                    elif s.lag >= 1.0:
                        s.note = "behind: decoded the backlog after the load ended"
                    steps.append(s)
                    print_row(s)
                    if not s.ok:
                        break
            best = max((s for s in steps if s.ok and s.mode == "tcpdump"), key=lambda s: s.rate, default=None)
            if best is not None:
                s = step_read(port, best.rate, args.seconds, args.conns, work)
                steps.append(s)
                print_row(s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    for mode in dict.fromkeys(s.mode for s in steps):
        ok = [s for s in steps if s.mode == mode and s.ok]
        if ok and mode != "read (file)":
            top = max(ok, key=lambda s: s.pps)
            print(f"{mode}: highest rate with zero kernel drops and no lag: {top.pps:,.0f} packets/s "
                  f"({top.rate:,.0f} requests/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
