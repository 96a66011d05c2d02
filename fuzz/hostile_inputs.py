"""Write the hand-made hostile inputs of ``tests/fixtures/hostile/TARGET/`` (committed, small).

    python fuzz/hostile_inputs.py [--out tests/fixtures/hostile]

Each file is an input in the format of a fuzz target (``fuzz/targets.py``): the regression tests
replay them through the target, and ``fuzz/run.py`` reads them as extra seeds. Inputs minimised from
fuzzer findings are added to the same directories by hand (``crash-*``, ``timeout-*``, ``slow-*``)
and listed in ``tests/fixtures/hostile/README.md``.
"""

from __future__ import annotations

import argparse
import gzip
import struct
import sys
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from decoders.records import crc32c  # noqa: E402
from fuzz.targets import encode_envelope, encode_segment  # noqa: E402


def kstr(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(s)) + s.encode()


def header(key: int, version: int, corr: int, client: str = "hostile") -> bytes:
    return struct.pack(">hhi", key, version, corr) + kstr(client)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def envelope(inner: bytes, corr: int) -> bytes:
    head = struct.pack(">hhi", 58, 0, corr) + kstr("controller") + b"\x00"
    principal = struct.pack(">h", 0) + b"\x05User\x06alice\x00\x00"
    return head + uvarint(len(inner) + 1) + inner + uvarint(len(principal) + 1) + principal + b"\x05\x0a\0\0\x01\x00"


def batch(codec: int, payload: bytes, count: int = 1) -> bytes:
    tail = struct.pack(">hiqqqhii", codec, count - 1, 0, 0, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc32c(tail)) + tail


def zstd_zeros(size: int) -> bytes:
    import cramjam

    c = cramjam.zstd.Compressor(level=3)
    chunk = bytes(1 << 20)
    for _ in range(size >> 20):
        c.compress(chunk)
    return bytes(c.finish())


def gzip_zeros(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    return b"".join([c.compress(chunk) for _ in range(size >> 20)] + [c.flush()])


def pcap(records: list[tuple[bytes, int]]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, (data, wirelen) in enumerate(records):
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(data), wirelen) + data
    return out


def ng_block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def eth_tcp(payload: bytes, seq: int = 1000, flags: int = 0x18) -> bytes:
    ip_len = 20 + 20 + len(payload)
    eth = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 1, 0, 64, 6, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tcp = struct.pack("!HHIIBBHHH", 40000, 9092, seq, 1, 0x50, flags, 65535, 0, 0)
    return eth + ip + tcp + payload


def inputs() -> dict[str, dict[str, bytes]]:
    frames_2_31 = {
        "metadata-v0-topics-count-2_31-1": header(3, 0, 1) + struct.pack(">i", 0x7FFFFFFF) + kstr("t"),
        "sasl-authenticate-bytes-2_31-1": header(36, 0, 2) + struct.pack(">i", 0x7FFFFFFF) + b"abc",
        "apiversions-v3-compact-string-2_31-1": header(18, 3, 3) + b"\x00" + uvarint(0x80000000) + b"abc",
        "apiversions-v3-header-tags-2_31-1": header(18, 3, 4) + uvarint(0x7FFFFFFF) + bytes(10),
        "apiversions-v3-body-tags-2_31-1": header(18, 3, 5) + b"\x00\x02a\x02b" + uvarint(0x7FFFFFFF) + bytes(8),
        "apiversions-v3-tagged-field-length-lies": header(18, 3, 6) + b"\x00\x02a\x02b\x01\x00" + uvarint(100),
        "apiversions-v3-5000-unknown-tags": header(18, 3, 7) + uvarint(5000) + (uvarint(9) + b"\x00") * 5000
        + b"\x02a\x02b\x00",
        "varint-longer-than-5-bytes": header(18, 3, 8) + b"\x00" + b"\xff" * 12,
    }
    nested = header(18, 0, 99)
    for depth in range(60):
        nested = envelope(nested, 100 + depth)
    frames_2_31["envelope-nested-60-deep"] = nested
    records = {
        "zstd-bomb-64MiB-zeros": batch(4, zstd_zeros(64 << 20)),
        "gzip-bomb-16MiB-zeros": batch(1, gzip_zeros(16 << 20)),
        "gzip-members-bomb": batch(1, gzip.compress(bytes(2 << 20)) * 8),
        "snappy-claims-4GiB": batch(2, b"\xff\xff\xff\xff\x0f" + b"\x00" * 40),
        "two-zstd-bombs": batch(4, zstd_zeros(8 << 20)) * 2,
        "batch-length-negative": struct.pack(">qi", 0, -5) + bytes(60),
        "record-count-2_31-1": batch(0, b"\x02\x00", 0x7FFFFFFF),
    }
    ng = ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)) + ng_block(1, struct.pack("<HHI", 1, 0, 0))
    packet = eth_tcp(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02id")
    epb = ng_block(6, struct.pack("<IIIII", 0, 0, 1, len(packet), len(packet)) + packet)
    captures = {
        "pcapng-unknown-blocks": ng + ng_block(0x0BADBEEF, b"?" * 13) + epb + ng_block(0x40000BAD, b"") + epb,
        "pcapng-block-length-2GiB": ng + struct.pack("<II", 6, 0x7FFFFFFC) + epb[8:],
        "pcapng-epb-caplen-lies": ng + epb[:20] + struct.pack("<I", 0xFFFFFFF0) + epb[24:],
        "pcapng-idb-options-overrun": ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
        + ng_block(1, struct.pack("<HHI", 1, 0, 0) + struct.pack("<HH", 9, 0xFFFF)) + epb,
        "pcap-record-length-lies": pcap([(packet, len(packet))]) + struct.pack("<IIII", 2, 0, 0xFFFFFF00, 60),
        "pcap-snaplen-cut": pcap([(packet[:60], len(packet))]),
        "pcap-ipv6-extension-loop": pcap([(b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x86\xdd" + b"\x60" + bytes(3)
                                          + struct.pack("!HBB", 400, 0, 64) + bytes(32) + b"\x00\x31" * 200, 500)]),
        "gzip-cut": gzip.compress(pcap([(packet, len(packet))] * 20))[:-25],
        # Blocks shorter than their fixed fields (their fields were read from the next block or past the data):
        # the 40-byte file of issue 34, then a 12-byte simple packet block (was a packet of caplen -4), a
        # 16-byte interface block, 28-byte obsolete and enhanced packet blocks, each followed by a good packet.
        "pcapng-epb-12-bytes": ng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
        + bytes.fromhex("060000000c0000000c000000"),
        "pcapng-blocks-shorter-than-their-fields": ng + ng_block(3, b"") + epb + ng_block(1, bytes(4)) + epb
        + ng_block(2, bytes(16)) + epb + ng_block(6, bytes(16)) + epb,
        "pcapng-trailing-length-lies": ng + epb[:-4] + struct.pack("<I", len(epb) - 8) + epb,
    }
    # A stream whose first bytes claim a 100 MB frame (mid-connection), then bytes that never complete it.
    claim = struct.pack(">i", 100 * 1024 * 1024 - 10) + header(0, 3, 7) + bytes(20000)
    script = b"".join(encode_segment(0, 0, 0x18, 1000 + off, 1, claim[off:off + 1448])
                      for off in range(0, len(claim), 1448))
    # Data behind a hole larger than the buffer limit, and an ACK for bytes never captured.
    hole = encode_segment(1, 0, 0x02, 5000, 0, b"") + encode_segment(1, 0, 0x18, 5001 + 9000, 1, b"x" * 1448) * 4
    hole += encode_segment(1, 1, 0x10, 9000, 5001 + 20000, b"")
    streams = {"claims-100MB-frame-mid-stream": script, "hole-beyond-buffer-and-ack-of-lost-bytes": hole}
    envelopes = {
        "inner-is-an-envelope": encode_envelope(envelope(header(18, 0, 1), 2), None, b"\x7f\0\0\x01", 58, 0, None),
        "principal-garbage": encode_envelope(header(18, 0, 1), b"\x7f\xff" + b"\xff" * 30, b"\x01\x02\x03", 18, 0,
                                             struct.pack(">i", 1) + b"\xff" * 10),
        "response-data-for-unknown-inner": encode_envelope(b"", b"", b"", 999, 999, b"\x00" * 10),
    }
    def op(kind: int, payload: bytes) -> bytes:
        return struct.pack(">BH", kind, len(payload)) + payload

    kafka = struct.pack(">i", 12) + struct.pack(">hhi", 18, 0, 1) + struct.pack(">h", 0)
    tls = {  # the tls target: profile, flags, operations (fuzz/targets.py, target_tls)
        "tls13-kafka-both-ways": b"\x00\x04" + op(0, kafka) + op(1, b"\x00\x00\x00\x04\x00\x00\x00\x01")
        + op(0, bytes(range(256)) * 80),
        "tls13-client-cert-fed-byte-by-byte": b"\x01\x08\x01" + op(0, kafka),
        "tls12-cbc-no-etm-record-changed": b"\x06\x00" + op(0, kafka * 3) + op(3, b"\x00\x30\x01") + op(0, kafka),
        "tls12-gcm-alert-and-garbage-injected": b"\x03\x00" + op(0, kafka) + op(2, b"\x15\x03\x03\x00\x02\x02\x28")
        + op(0x82, b"\x17\x03\x03\xff\xff" + b"\x00" * 40),
        "tls13-wrong-keys": b"\x00\x02" + op(0, kafka) + op(1, kafka),
    }
    return {
        "tls": tls,
        "request": frames_2_31,
        "response": {"apiversions-v0-count-2_31-1": struct.pack(">hhhh", 18, 0, -1, -1)
                     + struct.pack(">ihi", 20, 0, 0x7FFFFFFF) + bytes(12),
                     "metadata-v12-compact-array-2_31-1": struct.pack(">hhhh", 3, 12, -1, -1)
                     + struct.pack(">i", 21) + b"\x00" + struct.pack(">i", 0) + uvarint(0x80000000) + bytes(6)},
        "records": records,
        "capture": captures,
        "pipeline": {name: b"\x01" + data for name, data in streams.items()},
        "reassembler": streams,
        "envelope": envelopes,
        "embedded": {"consumer-subscription-topics-2_31-1": b"\x00" + struct.pack(">hi", 0, 0x7FFFFFFF) + b"xx",
                     "connect-worker-state-allocation-nested": b"\x02" + struct.pack(">h", 1) + kstr("url")
                     + struct.pack(">q", 5) + struct.pack(">i", 8) + struct.pack(">h", 1) + bytes(6)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz/hostile_inputs.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "hostile")
    args = parser.parse_args(argv)
    for target, files in inputs().items():
        directory = args.out / target
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (directory / name).write_bytes(data)
        print(f"{target:12} {len(files)} inputs, {sum(map(len, files.values())):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
