"""Throughput of the packet pipeline: read capture -> parse packets -> reassemble TCP streams.

No Kafka decoding. Usage::

    python bench/bench_packets.py                 # generates a ~264 MB Ethernet capture in a temp dir
    python bench/bench_packets.py some.pcap[.gz]  # any capture the reader accepts
    python bench/bench_packets.py --mb 50 --mss 1448 --reorder 0.01

Each stage is timed on its own pass over the file (read only; read + parse; read + parse + reassemble),
best of ``--repeat`` runs, and printed as packets/s and MB/s of capture file. ``dpkt.pcap.Reader`` is
timed too, as the reference for bare reading of classic pcap files.
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inspector.capture.file import open_capture  # noqa: E402
from inspector.capture.packets import Segment, parse_packet, segments  # noqa: E402
from inspector.tcp.reassembly import Reassembler  # noqa: E402
from inspector.tcp.stream_events import StreamData  # noqa: E402

_ETH = bytes.fromhex("001122334455" "66778899aabb" "0800")


def generate(path: str, total_mb: float, mss: int = 1448, conns: int = 16, reorder: float = 0.0,
             seed: int = 1) -> int:
    """Write a classic pcap of Kafka-like request/response traffic; return the number of packets.

    Each connection does a handshake, then exchanges requests (60 B..16 KB) and responses
    (20 B..64 KB) cut into ``mss``-byte segments, each answered by a pure ACK, and ends with FINs.
    ``reorder`` is the probability that a data segment is swapped with the next one.
    """
    rnd = random.Random(seed)
    limit = int(total_mb * 1_000_000)
    pool = rnd.randbytes(70_000)
    hdr = struct.Struct("<IIII").pack
    iph = struct.Struct("!BBHHHBBH4s4s").pack
    tcph = struct.Struct("!HHIIBBHHH").pack
    ts = 1_700_000_000.0
    written = 24
    packets = 0
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

        def emit(c: list[int], side: int, flags: int, payload: bytes, seq: int | None = None) -> None:
            nonlocal ts, written, packets
            cport, cseq, sseq = c[0], c[1], c[2]
            if side == 0:
                src, dst, sport, dport, s, a = b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02", cport, 9092, cseq, sseq
            else:
                src, dst, sport, dport, s, a = b"\x0a\x00\x00\x02", b"\x0a\x00\x00\x01", 9092, cport, sseq, cseq
            if seq is not None:
                s = seq
            tcp = tcph(sport, dport, s & 0xFFFFFFFF, a & 0xFFFFFFFF, 0x50, flags, 65535, 0, 0)
            ip = iph(0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
            frame = b"".join((_ETH, ip, tcp, payload))
            ts += 0.000005
            sec = int(ts)
            out.write(hdr(sec, int((ts - sec) * 1e6), len(frame), len(frame)))
            out.write(frame)
            written += 16 + len(frame)
            packets += 1

        def handshake(c: list[int]) -> None:
            emit(c, 0, 0x02, b"", c[1] - 1)
            emit(c, 1, 0x12, b"", c[2] - 1)
            emit(c, 0, 0x10, b"")

        live: list[list[int]] = []
        next_port = 40000
        while written < limit:
            if len(live) < conns:
                c = [next_port, rnd.getrandbits(32), rnd.getrandbits(32)]
                next_port += 1
                live.append(c)
                handshake(c)
            c = rnd.choice(live)
            for side, size in ((0, rnd.choice((60, 120, 300, 2000, 16000))),
                               (1, rnd.choice((20, 100, 500, 1500, 9000, 30000, 64000)))):
                segs: list[tuple[int, bytes]] = []
                pos = 0
                while pos < size:
                    n = min(mss, size - pos)
                    segs.append((c[1 + side] + pos, pool[pos:pos + n]))
                    pos += n
                if reorder:
                    for i in range(len(segs) - 1):
                        if rnd.random() < reorder:
                            segs[i], segs[i + 1] = segs[i + 1], segs[i]
                for seq, data in segs:
                    emit(c, side, 0x18, data, seq)
                c[1 + side] = (c[1 + side] + size) & 0xFFFFFFFF
                emit(c, 1 - side, 0x10, b"")
            if rnd.random() < 0.01:  # close it; a new one replaces it
                emit(c, 0, 0x11, b"")
                emit(c, 1, 0x11, b"", c[2])
                c[1] += 1
                c[2] += 1
                emit(c, 0, 0x10, b"")
                live.remove(c)
    return packets


def _time(fn: Callable[[], tuple[int, int]], repeat: int) -> tuple[float, int, int]:
    best = float("inf")
    result = (0, 0)
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result[0], result[1]


def stage_read(path: str) -> tuple[int, int]:
    n = 0
    with open_capture(path) as reader:
        for _pkt in reader:
            n += 1
    return n, 0


def stage_parse(path: str) -> tuple[int, int]:
    """What ``read`` does: packets.segments (the typed record loop for a classic pcap, when built)."""
    n = segs = 0
    with open_capture(path) as reader:
        for seg in segments(reader):
            n += 1
            if type(seg) is Segment:
                segs += 1
    return n, segs


def stage_parse_each(path: str) -> tuple[int, int]:
    """parse_packet on each packet the reader yields (the pure path, and pcapng's)."""
    n = segs = 0
    with open_capture(path) as reader:
        for pkt in reader:
            n += 1
            if type(parse_packet(pkt)) is Segment:
                segs += 1
    return n, segs


def stage_reassemble(path: str) -> tuple[int, int]:
    n = 0
    delivered = 0
    ts = 0.0
    reasm = Reassembler()
    with open_capture(path) as reader:
        for seg in segments(reader):
            n += 1
            if type(seg) is Segment:
                for ev in reasm.feed(seg):
                    if type(ev) is StreamData:
                        delivered += len(ev.data)
                ts = seg.ts
    reasm.flush(ts)
    return n, delivered


def stage_dpkt(path: str) -> tuple[int, int]:
    import dpkt

    n = 0
    with open(path, "rb") as f:
        for _ts, _buf in dpkt.pcap.Reader(f):
            n += 1
    return n, 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", nargs="?", help="capture to measure (default: generate one)")
    ap.add_argument("--mb", type=float, default=264.0, help="size of the generated capture (MB)")
    ap.add_argument("--mss", type=int, default=1448, help="segment size of the generated capture")
    ap.add_argument("--reorder", type=float, default=0.0, help="swap probability of generated segments")
    ap.add_argument("--repeat", type=int, default=2, help="runs per stage; the best is kept")
    args = ap.parse_args(argv)

    tmp: tempfile.TemporaryDirectory[str] | None = None
    if args.capture:
        path = args.capture
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench_packets_")
        path = os.path.join(tmp.name, "generated.pcap")
        t0 = time.perf_counter()
        count = generate(path, args.mb, mss=args.mss, reorder=args.reorder)
        print(f"generated {path}: {count} packets, {os.path.getsize(path) / 1e6:.1f} MB "
              f"in {time.perf_counter() - t0:.1f} s")
    try:
        size_mb = os.path.getsize(path) / 1e6
        stages: list[tuple[str, Callable[[], tuple[int, int]]]] = [
            ("read", lambda: stage_read(path)),
            ("read+parse (parse_packet each)", lambda: stage_parse_each(path)),
            ("read+parse", lambda: stage_parse(path)),
            ("read+parse+reassemble", lambda: stage_reassemble(path)),
        ]
        with open(path, "rb") as f:
            if f.read(4) in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
                stages.insert(0, ("dpkt.pcap.Reader (reference)", lambda: stage_dpkt(path)))
        with open_capture(path) as probe:
            compressed = probe.compressed
        if compressed:
            print("(gzip-compressed: MB/s counts the compressed file)")
        print(f"{'stage':<30} {'seconds':>8} {'packets/s':>12} {'MB/s':>8}")
        for name, fn in stages:
            secs, packets, extra = _time(fn, args.repeat)
            note = f"  ({extra} TCP segments)" if name.startswith("read+parse ") or name == "read+parse" else (
                f"  ({extra / 1e6:.1f} MB of stream data delivered)" if name.endswith("reassemble") else "")
            print(f"{name:<30} {secs:8.3f} {packets / secs:12,.0f} {size_mb / secs:8.1f}{note}")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
