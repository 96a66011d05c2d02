"""Seed the fuzz corpora from real captures: ``python fuzz/make_corpus.py [--out fuzz/corpus] [CAPTURE...]``.

Default captures: ``pcaps/*.pcap*``, ``../shared/real-captures/*.pcap`` (the directory beside the
repository) and the small captures under ``tests/inspector/fixtures``. For each target it writes
inputs in the target's format (see ``fuzz/targets.py``) to ``OUT/TARGET/<sha1>``:

* request/response: every Kafka frame of every connection (responses prefixed with the api key and
  version of their request, found by correlation id);
* embedded: the member metadata and assignments carried by JoinGroup/SyncGroup/DescribeGroups, and a
  few principals;
* envelope: real requests and responses wrapped in an Envelope;
* records: every ``records`` field (Produce/Fetch), and small batches in each compression codec;
* reassembler/pipeline: the TCP segments of each capture as a segment script (also cut, reordered
  and with loss, as a seed for the accounting paths);
* capture: the capture files themselves (small ones), as pcapng and gzip too, and small pcapng files of
  every block kind;
* tls: each connection's first frames written over a real TLS connection of one of the target's profiles.

The corpora are not committed (``fuzz/.gitignore``); regenerate them with this script.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import random
import struct
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from decoders import decode_request  # noqa: E402
from decoders.records import Records, crc32c  # noqa: E402
from fuzz.hostile_inputs import eth_tcp  # noqa: E402
from fuzz.targets import MAX_LEN, TLS_PROFILES, encode_envelope, encode_segment  # noqa: E402
from inspector.capture.file import open_capture  # noqa: E402
from inspector.capture.packets import Segment, parse_packet  # noqa: E402
from inspector.kafka.framing import Frame, Framer  # noqa: E402
from inspector.tcp.reassembly import Reassembler  # noqa: E402
from inspector.tcp.stream_events import StreamData, StreamGap  # noqa: E402

SHARED = REPO.parent / "shared" / "real-captures"
MAX_SEEDS = 400  # per target and capture
SEGMENTS_PER_SCRIPT = 300


def default_captures() -> list[Path]:
    found = sorted(REPO.glob("pcaps/*.pcap")) + sorted(REPO.glob("pcaps/*.pcapng"))
    found += sorted(SHARED.glob("*.pcap"))
    found += sorted((REPO / "tests" / "inspector" / "fixtures").glob("*.pcap*"))
    return found


class Corpus:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, target: str, data: bytes) -> None:
        if not data or len(data) > MAX_LEN[target]:
            return
        directory = self.out / target
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / hashlib.sha1(data).hexdigest()
        if not path.exists():
            path.write_bytes(data)
            self.counts[target] += 1


def segments(path: Path) -> list[Segment]:
    with open_capture(str(path)) as reader:
        return [s for s in (parse_packet(p) for p in reader) if isinstance(s, Segment)]


def frames(segs: Iterable[Segment]) -> dict[tuple[int, int], list[Frame]]:
    """Frames per (connection, side), framed from the reassembled streams (no content detection)."""
    reassembler = Reassembler()
    framers: dict[tuple[int, int], Framer] = {}
    out: dict[tuple[int, int], list[Frame]] = defaultdict(list)
    events: list[Any] = []
    for seg in segs:
        events.extend(reassembler.feed(seg))
    events.extend(reassembler.flush(0.0))
    for ev in events:
        if isinstance(ev, (StreamData, StreamGap)):
            key = (ev.conn_id, ev.side)
            framer = framers.setdefault(key, Framer(max_frame=MAX_LEN["request"]))
            got = framer.data(ev.ts, ev.data) if isinstance(ev, StreamData) else framer.gap(ev.ts, ev.length)
            out[key].extend(f for f in got if isinstance(f, Frame))
    return out


def kafka_seeds(corpus: Corpus, segs: list[Segment]) -> None:
    by_side = frames(segs)
    conns = {cid for cid, _ in by_side}
    for cid in conns:
        sides = [by_side.get((cid, 0), []), by_side.get((cid, 1), [])]
        ok = [sum(decode_request(f.data, postprocess=False).ok for f in fs) for fs in sides]
        client = 0 if ok[0] >= ok[1] else 1
        pending: dict[int, tuple[int, int]] = {}
        requests = []
        for f in sides[client][:MAX_SEEDS]:
            corpus.add("request", f.data)
            msg = decode_request(f.data)
            if msg.ok and msg.api_key is not None and msg.api_version is not None:
                pending[msg.correlation_id or 0] = (msg.api_key, msg.api_version)
                requests.append((f.data, msg))
                embedded_seeds(corpus, msg.body or {})
        for f in sides[1 - client][:MAX_SEEDS]:
            if len(f.data) < 4:
                continue
            corr = struct.unpack_from(">i", f.data)[0]
            key, version = pending.get(corr, (-1, -1))
            if key >= 0:
                corpus.add("response", struct.pack(">hhhh", key, version, -1, -1) + f.data)
                records_seeds(corpus, f.data, key, version)
                if len(requests) < 50:
                    # The response as an EnvelopeResponse's ResponseData, its request as RequestData.
                    inner = next((d for d, m in requests if m.correlation_id == corr), b"")
                    corpus.add("envelope", encode_envelope(inner, _principal("User", "alice"), b"\x0a\x00\x00\x01",
                                                           key, version, f.data))
        for _data, msg in requests:
            records_seeds_from_body(corpus, msg.body)
        tls_seeds(corpus, sides[client][:6], sides[1 - client][:6], cid)


def tls_seeds(corpus: Corpus, requests: list[Frame], responses: list[Frame], n: int) -> None:
    """A connection's first frames, length prefix included, written over each TLS profile of the tls target
    (flags: none, close_notify, fed in pieces)."""
    ops = b""
    for i in range(max(len(requests), len(responses))):
        for kind, side in ((0, requests), (1, responses)):
            if i < len(side):
                framed = struct.pack(">i", len(side[i].data)) + side[i].data
                ops += struct.pack(">BH", kind, len(framed)) + framed
    if not ops:
        return
    profile = n % len(TLS_PROFILES)
    for flags in (b"\x00", b"\x04", b"\x08\x05"):
        corpus.add("tls", bytes([profile]) + flags + ops)


def _compact(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def _principal(ptype: str, name: str, token: bool = False) -> bytes:
    """DefaultPrincipalData v0 (flexible): version, Type, Name, TokenAuthenticated, no tags."""
    return struct.pack(">h", 0) + _compact(ptype) + _compact(name) + bytes([token]) + b"\x00"


def embedded_seeds(corpus: Corpus, body: Any) -> None:
    """Member metadata / assignments anywhere in a decoded body (the *Decoded siblings name them)."""
    if isinstance(body, dict):
        for key, value in body.items():
            if key.endswith("Decoded") and isinstance(value, dict) and "schema" in value:
                raw = body.get(key[: -len("Decoded")])
                if isinstance(raw, bytes):
                    schemas = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment",
                               "ConnectProtocolWorkerState", "ConnectProtocolAssignment", "DefaultPrincipalData")
                    if value["schema"] in schemas:
                        corpus.add("embedded", bytes([schemas.index(value["schema"])]) + raw)
                        corpus.add("embedded", bytes([len(schemas) + 4]) + raw)  # no protocol type
            else:
                embedded_seeds(corpus, value)
    elif isinstance(body, list):
        for item in body:
            embedded_seeds(corpus, item)


def records_seeds_from_body(corpus: Corpus, body: Any) -> None:
    if isinstance(body, Records):
        corpus.add("records", bytes(body.data))
    elif isinstance(body, dict):
        for value in body.values():
            records_seeds_from_body(corpus, value)
    elif isinstance(body, list):
        for item in body:
            records_seeds_from_body(corpus, item)


def records_seeds(corpus: Corpus, frame: bytes, key: int, version: int) -> None:
    if key not in (0, 1):
        return
    from decoders import decode_response

    records_seeds_from_body(corpus, decode_response(frame, key, version).body)


def v2_batch(codec: int, records: bytes, count: int) -> bytes:
    tail = struct.pack(">hiqqqhii", codec, count - 1, 0, 0, -1, -1, -1, count) + records
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc32c(tail)) + tail


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def _record(i: int, value: bytes) -> bytes:
    body = b"\x00" + _zigzag(i) + _zigzag(i) + _zigzag(1) + b"k" + _zigzag(len(value)) + value + _zigzag(1)
    body += _zigzag(1) + b"h" + _zigzag(1) + b"v"
    return _zigzag(len(body)) + body


def crafted_records(corpus: Corpus) -> None:
    import cramjam

    plain = b"".join(_record(i, b"value-%d" % i * 3) for i in range(5))
    codecs = {0: plain, 1: gzip.compress(plain), 2: bytes(cramjam.snappy.compress_raw(plain)),
              3: bytes(cramjam.lz4.compress(plain)), 4: bytes(cramjam.zstd.compress(plain))}
    for codec, payload in codecs.items():
        corpus.add("records", v2_batch(codec, payload, 5))
    corpus.add("records", v2_batch(0, plain, 5) + v2_batch(1, codecs[1], 5)[:40])  # a cut second batch
    corpus.add("records", gzip.compress(bytes(4096)))  # junk: compressed data without a batch


def segment_seeds(corpus: Corpus, segs: list[Segment], rng: random.Random) -> None:
    slots: dict[tuple[str, int, str, int], tuple[int, int]] = {}
    ops = []
    last = segs[0].ts if segs else 0.0
    for seg in segs[:SEGMENTS_PER_SCRIPT]:
        key = (seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port)
        if key not in slots:
            slot = len(slots) // 2 % 4
            rev = (seg.dst_ip, seg.dst_port, seg.src_ip, seg.src_port)
            slots[rev] = (slot, 1) if seg.flags & 0x12 != 0x12 else (slot, 0)
            slots[key] = (slot, 1 - slots[rev][1])
        slot, direction = slots[key]
        step = max(0, min(int((seg.ts - last) * 1e6), 0xFFFF))
        last = seg.ts
        ops.append(encode_segment(slot, direction, seg.flags, seg.seq, seg.ack, bytes(seg.payload), step,
                                  seg.missing))
    if not ops:
        return
    for target in ("reassembler", "pipeline"):
        prefix = b"" if target == "reassembler" else b"\x01"
        corpus.add(target, prefix + b"".join(ops))
        damaged = list(ops)
        for _ in range(max(1, len(damaged) // 10)):  # loss, duplication and reordering
            i = rng.randrange(len(damaged))
            choice = rng.random()
            if choice < 0.4:
                del damaged[i]
            elif choice < 0.7:
                damaged.insert(i, damaged[i])
            elif i + 1 < len(damaged):
                damaged[i], damaged[i + 1] = damaged[i + 1], damaged[i]
            if not damaged:
                break
        corpus.add(target, prefix + b"".join(damaged))


def capture_seeds(corpus: Corpus, path: Path) -> None:
    data = path.read_bytes()
    if len(data) > MAX_LEN["capture"]:
        return
    corpus.add("capture", data)
    corpus.add("capture", gzip.compress(data, 1))
    if path.suffix == ".pcap":
        try:
            import scapy.layers.inet  # noqa: F401 - registers the link layers rdpcap needs
            import scapy.layers.l2  # noqa: F401
            from scapy.utils import PcapNgWriter, rdpcap

            packets = rdpcap(str(path))[:40]
            tmp = corpus.out / ".pcapng.tmp"
            with PcapNgWriter(str(tmp)) as writer:
                for pkt in packets:
                    writer.write(pkt)
            corpus.add("capture", tmp.read_bytes())
            tmp.unlink()
        except Exception as exc:  # scapy cannot rewrite every link type; seeds are best effort
            print(f"  {path.name}: no pcapng seed ({exc})", file=sys.stderr)


def _ng(btype: int, body: bytes, e: str) -> bytes:
    """A pcapng block of either byte order (the body padded to 4 bytes)."""
    body += b"\0" * (-len(body) % 4)
    return struct.pack(e + "II", btype, 12 + len(body)) + body + struct.pack(e + "I", 12 + len(body))


def crafted_captures(corpus: Corpus) -> None:
    """Small well-formed pcapng files with every block kind the parser reads (section header, interface,
    enhanced, simple and obsolete packet blocks) and some it skips, in both byte orders and two sections: a
    few hundred bytes each, so that a mutation lands on a block's fields (the real captures are kilobytes of
    enhanced packet blocks)."""
    packet = eth_tcp(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02id")
    for e in ("<", ">"):
        shb = _ng(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), e)
        idb = _ng(1, struct.pack(e + "HHI", 1, 0, 65535) + struct.pack(e + "HH", 9, 1) + b"\x06\0\0\0"
                  + struct.pack(e + "HH", 0, 0), e)
        epb = _ng(6, struct.pack(e + "IIIII", 0, 0, 1, len(packet), len(packet)) + packet, e)
        spb = _ng(3, struct.pack(e + "I", len(packet)) + packet, e)
        opb = _ng(2, struct.pack(e + "HHIIII", 0, 0, 0, 2, len(packet), len(packet)) + packet, e)
        other = _ng(4, b"\0" * 4, e) + _ng(5, struct.pack(e + "III", 0, 0, 0), e)
        for blocks in ([epb], [spb], [opb], [epb, spb, opb], [other, epb, other]):
            corpus.add("capture", shb + idb + b"".join(blocks))
        corpus.add("capture", shb + idb + epb + shb + idb + spb)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz/make_corpus.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("captures", nargs="*", type=Path, help="default: pcaps/, shared real captures, fixtures")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "corpus")
    args = parser.parse_args(argv)
    corpus = Corpus(args.out)
    rng = random.Random(20260601)
    for path in args.captures or default_captures():
        segs = segments(path)
        kafka_seeds(corpus, segs)
        segment_seeds(corpus, segs, rng)
        capture_seeds(corpus, path)
    crafted_records(corpus)
    crafted_captures(corpus)
    for ptype, name in (("User", "alice"), ("User", ""), ("Group", "x" * 40)):
        corpus.add("embedded", bytes([4]) + _principal(ptype, name))
    for target in sorted(MAX_LEN):
        print(f"{target:12} {corpus.counts[target]:5} new seeds in {args.out / target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
