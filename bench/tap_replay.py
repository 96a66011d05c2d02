"""``bench/bench_tap.py --replay PCAP``: the live tap fed real traffic by tcpreplay onto ``lo``.

Replay mode (``--replay PCAP``): no broker and no client on the machine. A real capture (make
``bench/data/big-frames.pcap`` with ``python pcaps/make_captures.py --big 100 --big-profile frames --output
bench/data/big-frames.pcap``: 135,600 packets, 123,184 Kafka messages) is copied ``--copies`` times, each copy with
its own addresses (``tcprewrite``: 127.0.0.1 → 127.0.N.1 at both ends, so every copy is new connections, and a
destination MAC that is not lo's, so the kernel ignores the packets instead of answering them with resets), and
``tcpreplay --pps RATE`` sends it onto ``lo`` for ``--seconds`` while ``kafka-inspector tap --metrics`` listens.
A warm-up (the first 2,000 packets of the original) makes sure tcpdump listens and is not counted. Each step
prints the offered rate, the packets decoded, tcpdump's kernel drops, the largest lag seen in ``/metrics``
(scrape time minus ``kafka_inspector_last_packet_timestamp_seconds``; libpcap hands a block over within 1 s),
the lag left when the load ended, the CPU seconds of the tap and of its tcpdump, and packets per tap CPU second.
``--nice -20 --pin 0/1`` gives the tap (and its tcpdump) core 0 and tcpreplay core 1 at top priority: on a
machine shared with other work, what a capture host gives its tap. (The kernel's autogroup scheduling shares the
CPU equally between sessions whatever their nice values; the tap, its tcpdump and tcpreplay each have a session,
so the bench sets their groups' nice value too.)

Replay results, 2026-11-28, this 2-core machine shared with other sessions (load 8-19), tap ``--quiet``
``--metrics``, tcpdump's default 128 MB ring, ``--nice -20 --pin 0/1``, 8 s steps::

         rate   offered      sent   decoded     dec/s    drops maxlag endlag tapcpu dumpcpu pkt/cpu-s  load   ok
       60,000    60,000   480,001   480,001    58,515        0   0.80   0.00   3.74   0.47   128,343  13.3   ok
      100,000   100,000   800,001   800,001    96,938        0   0.77   0.00   4.66   0.70   171,674  11.7   ok
      140,000   140,000 1,120,001 1,120,001   132,742        0   0.99   0.00   5.03   0.98   222,664  10.3   ok
      170,000   170,000 1,360,001 1,360,001   167,192        0   0.84   0.00   4.86   1.22   279,836   9.1   ok

With the live view instead of ``--quiet``: 100,000 and 140,000 packets/s, 0 drops, lag at most 1.13 s. With
``--buffer 1GB``: 200,000 and 250,000 packets/s, 0 drops (lag at most 1.8 and 2.3 s, none left at the end). In an
earlier run at load 16-19, 170,000 dropped 33,496 packets with the 128 MB ring (on ``lo`` every packet fills the
ring twice) and 140,000 did not. Without ``--nice`` (the tap sharing the cores equally with every other session,
load ~15) the tap got a third of a core and kept up with 40,000 packets/s only (60,000: 265,353 drops). The tap
decodes 130,000-280,000 packets per CPU second (more at higher rates: bigger pipe reads and batches); its tcpdump
costs another 0.6-0.9 µs a packet. The tap as it was before it decoded Produce/Fetch bodies as text and raised the
collector's threshold (the same day, same settings): 100,000 packets/s in 5.49 CPU seconds (4.66 after), 140,000
dropped 86,261 packets and 170,000 dropped 496,908.

Usage::

    python bench/bench_tap.py --replay bench/data/big-frames.pcap --quiet --nice -20 --pin 0/1 \\
        --rates 60000,100000,140000,170000 --seconds 8

Must run as root (tcpreplay and tcpdump on ``lo``); needs tcpreplay, tcprewrite and mergecap.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pcaps.capture_kit.infra import free_port, kill_group  # noqa: E402

PYTHON = sys.executable
HOST = "127.0.0.1"




def capture_broker_ports(pcap: Path) -> list[int]:
    """The broker ports of a capture's Kafka connections (from `read`'s rows of its first packets)."""
    from inspector.capture.file import open_capture
    from inspector.read.reader import ReadOptions
    from inspector.tap.decode import TapDecoder

    decoder = TapDecoder(ReadOptions(), "bench")
    with open_capture(str(pcap)) as reader:
        batch = []
        for n, pkt in enumerate(reader):
            batch.append(pkt)
            if n >= 20_000:
                break
        decoder.packets(batch)
    table = decoder.table.take()
    return sorted({p for p in table.column("broker_port").to_pylist() if p is not None})


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tcpdump_pid(tap_pid: int) -> int | None:
    for task in Path(f"/proc/{tap_pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                if "tcpdump" in Path(f"/proc/{child}/comm").read_text():
                    return int(child)
    return None


def _metrics(port: int) -> dict[str, float]:
    import urllib.request

    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(("kafka_inspector_packets_total ", "kafka_inspector_kernel_drops_total ",
                            "kafka_inspector_last_packet_timestamp_seconds ")):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


@dataclass
class ReplayStep:
    rate: float
    offered: float = 0.0  # packets/s tcpreplay sent
    sent: int = 0
    decoded: int = 0
    pps: float = 0.0  # packets decoded / replay seconds
    kernel_dropped: int = 0
    max_lag: float = 0.0  # the largest (scrape time - newest packet decoded) while replaying
    end_lag: float = 0.0  # after the replay ended, until every packet was decoded
    tap_cpu: float = 0.0
    tcpdump_cpu: float = 0.0
    load: float = 0.0
    ok: bool = True


def _autogroup_nice(pid: int, nice: int) -> None:
    """With the kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``), a process's nice value
    weighs only inside its session's group: the groups share the CPU equally. The tap, its tcpdump and tcpreplay
    each run in a session of their own, so their groups get the nice value too."""
    if nice:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def _prefix(nice: int, cpu: str | None) -> list[str]:
    """``nice -n N`` and ``taskset -c CPUS`` before a command, when asked for."""
    return [*(["nice", "-n", str(nice)] if nice else []), *(["taskset", "-c", cpu] if cpu else [])]


def step_replay(pcap: Path, warmup: Path, total: int, ports: list[int], rate: float, seconds: float, work: Path,
                quiet: bool, extra: list[str], nice: int = 0, pin: tuple[str, str] | None = None) -> ReplayStep:
    """Replay ``pcap`` (``total`` packets, looped as needed) at ``rate`` packets/s for ``seconds`` while a tap
    listens; what it decoded, dropped and how far behind it was."""
    out, log = work / f"replay-{int(rate)}", work / f"replay-{int(rate)}.log"
    shutil.rmtree(out, ignore_errors=True)
    metrics_port = free_port()
    cmd = [*_prefix(nice, pin[0] if pin else None), PYTHON, "-m", "inspector.tap.command", "-i", "lo", "-o", str(out),
           "--metrics", f"{HOST}:{metrics_port}",
           *(a for p in ports for a in ("--port", str(p))), *(["--quiet"] if quiet else []), *extra]
    step = ReplayStep(rate, load=os.getloadavg()[0])
    with log.open("wb") as err:
        tap = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while _tcpdump_pid(tap.pid) is None:
            if tap.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tap did not start: {log.read_text(errors='replace')}")
            time.sleep(0.05)
        tcpdump = _tcpdump_pid(tap.pid)
        assert tcpdump is not None
        _autogroup_nice(tap.pid, nice)
        _autogroup_nice(tcpdump, nice)
        # Warm up, and make sure tcpdump listens (the quiet tap does not say): the warm-up capture's first packets
        # (its own addresses, 127.0.0.1) until the tap has decoded some; they are not counted in the step.
        warmed = 0.0
        while not warmed:
            if tap.poll() is not None or time.monotonic() > deadline + 30:
                raise RuntimeError(f"tap did not decode the warm-up: {log.read_text(errors='replace')}")
            subprocess.run(["tcpreplay", "-i", "lo", "--topspeed", "--limit", "2000", str(warmup)],
                           capture_output=True, check=True)
            time.sleep(1.5)
            warmed = _metrics(metrics_port).get("kafka_inspector_packets_total", 0.0)
        time.sleep(1.0)
        baseline = _metrics(metrics_port).get("kafka_inspector_packets_total", 0.0)
        tap_cpu0, dump_cpu0 = _cpu_seconds(tap.pid), _cpu_seconds(tcpdump)
        loops = max(1, int(rate * seconds // total) + 1)
        replay = subprocess.Popen([*_prefix(nice, pin[1] if pin else None), "tcpreplay", "-i", "lo", "--pps",
                                   str(int(rate)), "--loop", str(loops),
                                   "--duration", str(int(seconds)), str(pcap)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        _autogroup_nice(replay.pid, nice)
        start = time.time()
        while replay.poll() is None:
            m = _metrics(metrics_port)
            ts = m.get("kafka_inspector_last_packet_timestamp_seconds")
            if ts and m.get("kafka_inspector_packets_total", 0.0) > baseline:  # the step's packets, not the warm-up's
                step.max_lag = max(step.max_lag, time.time() - ts)
            time.sleep(0.5)
        ended = time.time()
        report = replay.stdout.read().decode(errors="replace") if replay.stdout else ""
        for line in report.splitlines():
            if "Actual:" in line:
                step.sent = int(line.split("Actual:")[1].split()[0])
                step.offered = step.sent / float(line.split(" sent in ")[1].split()[0])
        # after the replay: until the packets decoded stop growing (the tap decoded what it received)
        last, still = -1.0, time.time()
        while time.time() - ended < 120:
            m = _metrics(metrics_port)
            n = m.get("kafka_inspector_packets_total", 0.0)
            if n != last:
                last, still = n, time.time()
            elif time.time() - still >= 2.5:
                break
            time.sleep(0.25)
        step.end_lag = max(0.0, still - ended - 1.2)  # libpcap hands a block over within 1 s
        step.tap_cpu = _cpu_seconds(tap.pid) - tap_cpu0
        step.tcpdump_cpu = _cpu_seconds(tcpdump) - dump_cpu0
        os.kill(tap.pid, signal.SIGINT)
        tap.wait(180)
    finally:
        kill_group(tap)
    t = json.loads((out / "summary.json").read_text())["tap"]
    step.decoded = t["packets_read"] - int(baseline)
    step.kernel_dropped = t["kernel_dropped"] or 0
    step.pps = step.decoded / max(1e-9, ended - start)
    step.ok = step.kernel_dropped == 0 and step.end_lag < 1.0 and step.decoded >= step.sent
    shutil.rmtree(out, ignore_errors=True)
    return step


def looped_capture(pcap: Path, copies: int, work: Path) -> Path:
    """``copies`` copies of a capture one after the other, each with its own addresses (127.0.0.1 → 127.0.N.1, both
    ends, so every copy is new connections) and a destination MAC that is not lo's (the kernel then ignores the
    replayed packets instead of answering them with resets; the capture on lo sees them all the same).
    ``tcpreplay --unique-ip`` is no substitute: it moves the two directions of a connection apart."""
    parts = []
    for n in range(1, copies + 1):
        part = work / f"copy-{n}.pcap"
        subprocess.run(["tcprewrite", f"--pnat=127.0.0.1/32:127.0.{n}.1/32", "--enet-dmac=02:00:00:00:00:01",
                        "-i", str(pcap), "-o", str(part)], check=True)
        parts.append(str(part))
    out = work / "looped.pcap"
    subprocess.run(["mergecap", "-F", "pcap", "-a", "-w", str(out), *parts], check=True)
    for name in parts:
        Path(name).unlink()
    return out


def _count_packets(pcap: Path) -> int:
    from inspector.capture.file import open_capture

    with open_capture(str(pcap)) as reader:
        return sum(1 for _ in reader)


def print_replay(s: ReplayStep) -> None:
    per_cpu = s.decoded / s.tap_cpu if s.tap_cpu else 0.0
    print(f"{s.rate:>9,.0f} {s.offered:>9,.0f} {s.sent:>9,} {s.decoded:>9,} {s.pps:>9,.0f} {s.kernel_dropped:>8,} "
          f"{s.max_lag:>6.2f} {s.end_lag:>6.2f} {s.tap_cpu:>6.2f} {s.tcpdump_cpu:>6.2f} {per_cpu:>9,.0f} "
          f"{s.load:>5.1f} {'ok' if s.ok else 'NO':>4}", flush=True)


def main_replay(args: argparse.Namespace) -> int:
    pcap = Path(args.replay)
    if shutil.which("tcpreplay") is None:
        print("tcpreplay not found: apt-get install tcpreplay", file=sys.stderr)
        return 2
    ports = capture_broker_ports(pcap)
    rates = [float(r) for r in args.rates.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench_tap_replay_"))
    pcap = looped_capture(pcap, max(1, args.copies), work)  # always its own addresses: the warm-up uses the original's
    total = _count_packets(pcap)
    print(f"replaying {args.replay} ({args.copies} copies) onto lo (broker ports {ports}), {args.seconds:g} s a step, "
          f"tap {'--quiet' if args.quiet else 'with the live view'} --metrics {' '.join(args.tap_args)}"
          + (f", nice {args.nice}" if args.nice else "") + (f", pinned {args.pin}" if args.pin else ""))
    print(f"{'rate':>9} {'offered':>9} {'sent':>9} {'decoded':>9} {'dec/s':>9} {'drops':>8} {'maxlag':>6} "
          f"{'endlag':>6} {'tapcpu':>6} {'dumpcpu':>6} {'pkt/cpu-s':>9} {'load':>5} {'ok':>4}")
    try:
        for rate in rates:
            s = step_replay(pcap, Path(args.replay), total, ports, rate, args.seconds, work, args.quiet,
                            args.tap_args, args.nice,
                            tuple(args.pin.split("/")) if args.pin else None)  # type: ignore[arg-type]
            print_replay(s)
            if not s.ok and not args.keep_going:
                break
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0
