"""What the hostile-capture tests share: captures crafted with scapy and ``read`` run in a child process whose
peak RSS and wall time are measured (``os.wait4``: the rusage of exactly that child)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
import pyarrow.parquet as pq
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import PcapWriter

from contract.errors import ExitCode
from decoders.records import crc32c
from tests.frames import api_versions_request_v0, api_versions_response_v0, frame, kstr, request_header

REPO = Path(__file__).parents[2]
PCAPS = REPO / "pcaps"
MAX_RSS_MB = 500
MAX_SECONDS = 10.0
GiB = 1 << 30

CLIENT = ("10.0.0.1", 40000)
BROKER = ("10.0.0.2", 9092)


# ----------------------------------------------------------------------------------------------------
# Capture crafting


def tcp(src: tuple[str, int], dst: tuple[str, int], flags: str, seq: int, ack: int, payload: bytes = b"") -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=src[0], dst=dst[0])
                 / TCP(sport=src[1], dport=dst[1], flags=flags, seq=seq, ack=ack) / payload)


def conversation(messages: list[tuple[str, bytes]], *, mss: int = 1448, handshake: bool = True,
                 client: tuple[str, int] = CLIENT) -> list[bytes]:
    """Frames of one TCP connection: ("c" | "b", bytes) in order, cut into ``mss`` segments."""
    seq = {"c": 1000, "b": 5000}
    out: list[bytes] = []

    def add(who: str, flags: str, payload: bytes = b"") -> None:
        src, dst = (client, BROKER) if who == "c" else (BROKER, client)
        out.append(tcp(src, dst, flags, seq[who], seq["b" if who == "c" else "c"], payload))
        seq[who] += len(payload) + (1 if "S" in flags or "F" in flags else 0)

    if handshake:
        add("c", "S")
        add("b", "SA")
        add("c", "A")
    for who, data in messages:
        for i in range(0, len(data), mss):
            add(who, "PA", data[i:i + mss])
    if handshake:
        add("c", "FA")
        add("b", "FA")
    return out


def write_pcap(path: Path, frames: list[bytes], start: float = 1_700_000_000.0, step: float = 1e-4) -> Path:
    with PcapWriter(str(path), linktype=1, sync=False) as writer:
        writer.write_header(None)
        for i, raw in enumerate(frames):
            ts = start + i * step
            writer.write_packet(raw, sec=int(ts), usec=int((ts % 1) * 1e6), caplen=len(raw), wirelen=len(raw))
    return path


HELLO = [("c", frame(api_versions_request_v0(1))), ("b", frame(api_versions_response_v0(1, [(18, 0, 3)])))]


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def gzip_bomb(size: int = GiB) -> bytes:
    """``size`` zero bytes as one gzip member (~1 MB): deflate blocks made with a streaming compressor,
    made independent with full flushes so one block can be repeated, then the real CRC and length."""
    mib = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size >> 20):
        crc = zlib.crc32(mib, crc)
    return head + block * ((size >> 20) - 1) + b"\x03\x00" + struct.pack("<II", crc, size & 0xFFFFFFFF)


def zstd_bomb(size: int = GiB) -> bytes:
    """``size`` zero bytes through a streaming zstd compressor (~32 KB)."""
    chunk = bytes(4 << 20)
    c = cramjam.zstd.Compressor(level=3)
    for _ in range(size // len(chunk)):
        c.compress(chunk)
    return bytes(c.finish())


def record_batch(codec: int, payload: bytes, count: int = 1) -> bytes:
    """A RecordBatch v2 whose (compressed) records are ``payload``, with a valid CRC."""
    tail = struct.pack(">hiqqqhii", codec, count - 1, 0, 0, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc32c(tail)) + tail


def produce_v3(corr: int, partitions: list[bytes]) -> bytes:
    body = kstr(None) + struct.pack(">hi", 1, 30000) + struct.pack(">i", 1) + kstr("bombs")
    body += struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">ii", i, len(r)) + r for i, r in enumerate(partitions))
    return frame(request_header(0, 3, corr, "bomber") + body)


# ----------------------------------------------------------------------------------------------------
# Running `read` in a child process


@dataclass
class Run:
    code: int
    rss_mb: float
    seconds: float
    out: Path
    stderr: str

    def summary(self) -> dict[str, Any]:
        return json.loads((self.out / "summary.json").read_text())

    def connections(self) -> list[dict[str, Any]]:
        return pq.read_table(self.out / "connections.parquet").to_pylist()

    def events(self) -> list[dict[str, Any]]:
        if not (self.out / "events").is_dir():
            return []
        return pq.read_table(self.out / "events").to_pylist()


TABLE: list[tuple[str, str, float, float]] = []


#: Runs the command given as arguments and prints its exit code, peak RSS (KiB) and wall time. A lean
#: intermediate process: a child's ru_maxrss starts at its parent's RSS at fork time (Linux records the
#: pre-exec size), so the big pytest process must not be the one that forks ``read``.
_MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
seconds = time.perf_counter() - started
print(json.dumps([code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, seconds]))
"""


def run_read(tmp_path: Path, capture: Path, *extra: str) -> Run:
    out = tmp_path / f"out-{capture.stem}-{len(list(tmp_path.glob('out-*')))}"
    cmd = [sys.executable, "-m", "inspector.cli.main", "read", str(capture), "--output", str(out), "--quiet", *extra]
    proc = subprocess.run([sys.executable, "-S", "-c", _MEASURE, *cmd], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    code, maxrss_kib, seconds = json.loads(proc.stdout)
    return Run(code, maxrss_kib / 1024, seconds, out, proc.stderr)


def check_bounds(case: str, run: Run, reported: str) -> None:
    TABLE.append((case, reported, run.rss_mb, run.seconds))
    print(f"\n{case:44} | {reported:70} | {run.rss_mb:6.0f} MB | {run.seconds:5.2f} s")
    assert run.code == ExitCode.OK, run.stderr
    assert "Traceback" not in run.stderr
    assert run.rss_mb < MAX_RSS_MB, f"{case}: peak RSS {run.rss_mb:.0f} MB"
    assert run.seconds < MAX_SECONDS, f"{case}: {run.seconds:.1f} s"
    for row in run.connections():  # the byte accounting always adds up
        for who in ("client", "broker"):
            assert row[f"{who}_bytes_seen"] == sum(row[f"{who}_bytes_{p}"] for p in ("decoded", "gap", "undecodable"))


def envelope(inner: bytes, corr: int) -> bytes:
    """Envelope v0 request (header v2) carrying ``inner`` as its RequestData."""
    header = struct.pack(">hhi", 58, 0, corr) + kstr("controller") + b"\x00"
    principal = struct.pack(">h", 0) + b"\x05User\x06alice\x00\x00"
    body = uvarint(len(inner) + 1) + inner + uvarint(len(principal) + 1) + principal + uvarint(5) + b"\x0a\0\0\x01"
    return header + body + b"\x00"
