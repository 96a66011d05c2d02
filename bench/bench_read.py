"""pcap -> Parquet throughput of `kafka-inspector read`, next to tshark on the same capture.

    .venv/bin/python bench/bench_read.py [CAPTURE ...] [--jobs N]

Without arguments it uses the benchmark captures made by ``pcaps/make_captures.py --big 100 --big-profile frames``
(big-frames.pcap), ``--big 100`` (big-produce-fetch.pcap) and ``--big 130 --big-profile kafkajs --output
bench/data/big-kafkajs-mixed.pcap`` (kafkajs producing 130 MiB with a Metadata round trip before each 4 KiB send,
then a consumer group reading it back: ~300 MB) under
bench/data/ (git-ignored), those that exist.
Each tool runs in its own process; wall time, frames/s, MB/s and peak RSS are printed. With ``--repeat N``
(default 3) each tool runs N times, the two tools in turn, and the run with the least CPU time of each is
shown: on a shared machine the others are slowed by neighbours, not by the tool.
tshark runs as ``tshark -n -r FILE -d tcp.port==P,kafka -T fields -e kafka.api_key ...``
(the brokers' ports are learned from our own output, since the captures use random ports).
With several captures and ``--jobs N``, a last row shows ``read --jobs N`` over all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
DEFAULT = [REPO / "bench" / "data" / name for name in ("big-frames.pcap", "big-produce-fetch.pcap",
                                                          "big-kafkajs-mixed.pcap")]
CLI = [sys.executable, "-m", "inspector.cli.main"]


_last_cpu = [0.0]


def _run(cmd: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, int, str]:
    """Run ``cmd``; returns (seconds, peak RSS in KiB of that child, stdout); CPU seconds in _last_cpu.
    The child's own resource usage (``os.wait4``), not the maximum over every child so far."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if stdout is None else stdout, stderr=errors, cwd=REPO)
        out = proc.stdout.read().decode() if proc.stdout is not None else ""
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {errors.read().decode(errors='replace').strip()[-500:]}")
    _last_cpu[0] = usage.ru_utime + usage.ru_stime
    return seconds, usage.ru_maxrss, out


def bench_ours(capture: Path, out: Path, extra: list[str] | None = None) -> dict[str, float]:
    seconds, rss, _ = _run(CLI + ["read", str(capture), "--output", str(out), "--quiet", "--overwrite",
                                  *(extra or [])])
    summary = json.loads((out / "summary.json").read_text())
    return {"seconds": seconds, "cpu": _last_cpu[0], "frames": summary["frames"], "rss_mb": rss / 1024}


def bench_tshark(capture: Path, ports: set[int], tls_keylog: Path | None = None) -> dict[str, float]:
    """tshark's Kafka frames on the brokers' ``ports``; with ``tls_keylog``, Kafka inside TLS decrypted with it."""
    cmd = ["tshark", "-n", "-r", str(capture)]
    if tls_keylog is not None:
        cmd += ["-o", f"tls.keylog_file:{tls_keylog}"]
    for port in sorted(ports):
        cmd += ["-d", f"tcp.port=={port},kafka"] if tls_keylog is None else \
            ["-d", f"tcp.port=={port},tls", "-d", f"tls.port=={port},kafka"]
    cmd += ["-Y", "kafka", "-T", "fields", "-e", "kafka.api_key", "-e", "kafka.api_version",
            "-e", "kafka.correlation_id", "-e", "kafka.client_id"]
    seconds, rss, out = _run(cmd, stdout=None)
    frames = sum(len(line.split("\t")[2].split(",")) for line in out.splitlines() if line.strip())
    return {"seconds": seconds, "cpu": _last_cpu[0], "frames": frames, "rss_mb": rss / 1024}


def _cpu_of(result: dict[str, float]) -> float:
    return result["cpu"]


def _build_note() -> str:
    """Which build ran: every compiled module current (the suite fails otherwise), or the stale ones."""
    sys.path.insert(0, str(REPO))
    from decoders import _sources

    folders = ("decoders", "decoders/accel", "decoders/native", "inspector/capture", "inspector/tcp", "inspector/tls",
               "inspector/kafka", "inspector/rows", "inspector/read", "inspector/native")
    stale = [f"{folder}/{name}" for folder in folders for name in _sources.stale(REPO / folder)]
    return "compiled: " + (f"STALE {', '.join(stale)} (`make setup` rebuilds)" if stale else "all current")


Row = tuple[str, str, float, dict[str, float]]  # (capture, tool, MB, a bench_* result)


def print_table(rows: list[Row], repeat: int) -> None:
    """The load, the build, and a line per (capture, tool): wall and CPU seconds, frames, rates, peak RSS."""
    print(f"load average before: {os.getloadavg()[0]:.2f} (wall times suffer on a busy machine; CPU times less); "
          f"best of {repeat} run{'s' if repeat != 1 else ''} of each tool, in turn")
    print(_build_note())
    print(f"{'capture':24} {'tool':32} {'MB':>6} {'wall s':>7} {'cpu s':>6} {'frames':>9} {'frames/s':>9} "
          f"{'frames/cpu-s':>12} {'MB/s':>6} {'peak RSS MB':>11}")
    for name, tool, size_mb, r in rows:
        print(f"{name[:24]:24} {tool:32} {size_mb:6.1f} {r['seconds']:7.2f} {r['cpu']:6.2f} "
              f"{int(r['frames']):9,d} {r['frames'] / r['seconds']:9,.0f} {r['frames'] / max(r['cpu'], 1e-9):12,.0f} "
              f"{size_mb / r['seconds']:6.1f} {r['rss_mb']:11.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("captures", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each tool, in turn; the best is shown")
    args = parser.parse_args(argv)
    captures = args.captures or [p for p in DEFAULT if p.exists()]
    if not captures:
        print("no capture: run `.venv/bin/python pcaps/make_captures.py --big 100 --big-profile frames "
              "--output bench/data/big-frames.pcap` first", file=sys.stderr)
        return 1
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for capture in captures:
            size_mb = capture.stat().st_size / 1e6
            out = Path(tmp) / capture.stem
            ours = bench_ours(capture, out)
            ports = {int(p) for p in pq.read_table(out / "events", columns=["broker_port"]).column(0).to_pylist()
                     if p is not None}
            theirs = bench_tshark(capture, ports) if shutil.which("tshark") else None
            for _ in range(args.repeat - 1):
                ours = min(ours, bench_ours(capture, out), key=_cpu_of)
                if theirs is not None:
                    theirs = min(theirs, bench_tshark(capture, ports), key=_cpu_of)
            rows.append((capture.name, "kafka-inspector read", size_mb, ours))
            if theirs is not None:
                rows.append((capture.name, "tshark -T fields", size_mb, theirs))
        if len(captures) > 1:
            out = Path(tmp) / "all"
            all_mb = sum(c.stat().st_size for c in captures) / 1e6
            start = time.perf_counter()
            _run(CLI + ["read", *map(str, captures), "--output", str(out), "--quiet", "--jobs", str(args.jobs)])
            seconds = time.perf_counter() - start
            frames = json.loads((out / "summary.json").read_text())["frames"]
            rows.append(("all", f"kafka-inspector read --jobs {args.jobs}", all_mb,
                         {"seconds": seconds, "cpu": _last_cpu[0], "frames": frames, "rss_mb": float("nan")}))
    print_table(rows, args.repeat)
    by_capture: dict[str, dict[str, dict[str, float]]] = {}
    for name, tool, _, r in rows:
        by_capture.setdefault(name, {})[tool] = r
    for name, tools in by_capture.items():
        ours_row, theirs_row = tools.get("kafka-inspector read"), tools.get("tshark -T fields")
        if ours_row is not None and theirs_row is not None:
            ours, theirs = ours_row, theirs_row
            ratio = (ours["frames"] / ours["seconds"]) / (theirs["frames"] / theirs["seconds"])
            cpu_ratio = (ours["frames"] / ours["cpu"]) / (theirs["frames"] / theirs["cpu"])
            print(f"{name}: kafka-inspector decodes {ratio:.2f}x tshark's frames/s wall, "
                  f"{cpu_ratio:.2f}x per CPU second "
                  f"(we decode every frame fully; tshark decoded {int(theirs['frames']):,} of our "
                  f"{int(ours['frames']):,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
