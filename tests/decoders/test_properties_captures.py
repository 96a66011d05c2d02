"""Properties of ``decode_request``/``decode_response`` on the frames of the real captures in
``shared/real-captures``: every request listed for a capture decodes, cut and padded frames never raise.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dpkt
import pytest

from decoders import decode_request, decode_response
from tests.decoders.test_properties import assert_truncated, check_sane

# --------------------------------------------------------------------------------------------
# Real captures (shared/real-captures)
# --------------------------------------------------------------------------------------------

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "real-captures"


SERVER_PORTS = {9092, 36333}


#: Requests in each capture (api key, version), as listed in shared/README.md.
EXPECTED_REQUESTS: dict[str, list[tuple[int, int]]] = {
    "deepflow-00-produce-v2.pcap": [(0, 2)],
    "deepflow-00-produce-v7-sw8.pcap": [(0, 7)],
    "deepflow-00-produce-v9.pcap": [(0, 9)],
    "deepflow-01-fetch-v12-ok.pcap": [(1, 12)],
    "deepflow-01-fetch-v12-perf.pcap": [(1, 12)],
    "deepflow-01-fetch-v12-unknown.pcap": [(1, 12)],
    "deepflow-11-join-group-v7.pcap": [(11, 7)],
    "deepflow-13-leave-group-v4.pcap": [(13, 4)],
    "deepflow-14-sync-group-v5.pcap": [(14, 5)],
    "deepflow-18-api-versions-v3.pcap": [(18, 3)],
    "deepflow-mixed-with-unsupported.pcap": [(1, 13), (8, 8), (12, 4)],
    "gosniffer-kafka.pcap": [(3, 0), (0, 1)],
}


def tcp_flows(path: Path) -> dict[tuple[bytes, int, bytes, int], tuple[bytes, bool]]:
    """Per-direction TCP payload, concatenated in sequence order, and whether any packet was cut
    short by the capture's snap length."""
    segments: dict[tuple[bytes, int, bytes, int], dict[int, bytes]] = {}
    cut: set[tuple[bytes, int, bytes, int]] = set()
    with path.open("rb") as fh:
        reader = dpkt.pcap.Reader(fh)
        link = reader.datalink()
        for _ts, buf in reader:
            if link == dpkt.pcap.DLT_EN10MB:
                ip = dpkt.ethernet.Ethernet(buf).data
            elif link == dpkt.pcap.DLT_LINUX_SLL:
                ip = dpkt.sll.SLL(buf).data
            elif link == dpkt.pcap.DLT_NULL:
                ip = dpkt.loopback.Loopback(buf).data
            else:
                ip = dpkt.ip.IP(buf)
            if not isinstance(ip, dpkt.ip.IP | dpkt.ip6.IP6) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            if not tcp.data:
                continue
            key = (bytes(ip.src), tcp.sport, bytes(ip.dst), tcp.dport)
            if isinstance(ip, dpkt.ip.IP) and ip.len > len(bytes(ip)):
                cut.add(key)
            segments.setdefault(key, {}).setdefault(tcp.seq, bytes(tcp.data))  # drop retransmissions
    return {key: (b"".join(segs[s] for s in sorted(segs)), key in cut) for key, segs in segments.items()}


def split_frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(declared size, available bytes) of each length-prefixed frame from a message boundary."""
    pos = 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        yield size, data[pos + 4 : pos + 4 + size]
        pos += 4 + size


def capture_frames(path: Path) -> list[dict[str, Any]]:
    """Every frame of a capture with its direction and connection."""
    out = []
    for (src, sport, dst, dport), (data, cut) in tcp_flows(path).items():
        is_request = dport in SERVER_PORTS
        conn = (src, sport, dst, dport) if is_request else (dst, dport, src, sport)
        for size, frame in split_frames(data):
            out.append({"request": is_request, "conn": conn, "size": size, "frame": frame,
                        "complete": len(frame) == size, "packet_cut": cut})
    return out


def need_captures() -> None:
    if not CAPTURES.is_dir():
        pytest.skip(f"{CAPTURES} is absent")


@pytest.mark.parametrize("name", sorted(EXPECTED_REQUESTS))
def test_real_capture_requests(name: str) -> None:
    need_captures()
    frames = [f for f in capture_frames(CAPTURES / name) if f["request"]]
    seen = []
    for f in frames:
        msg = decode_request(f["frame"])
        check_sane(msg, len(f["frame"]))
        if f["complete"]:
            assert msg.ok, f"{name}: {msg.api_key} v{msg.api_version}: {msg.status}"
            assert msg.body is not None and msg.client_id
        else:
            # A frame cut by the capture must be reported as truncated, never as ok.
            assert not msg.ok and "truncated" in msg.status, msg.status
        seen.append((msg.api_key, msg.api_version))
    assert sorted(seen) == sorted(EXPECTED_REQUESTS[name])


@pytest.mark.parametrize("name", sorted(EXPECTED_REQUESTS))
def test_real_capture_responses(name: str) -> None:
    """Responses, matched to their request by connection and correlation id."""
    need_captures()
    frames = capture_frames(CAPTURES / name)
    requests = {}
    for f in frames:
        if f["request"]:
            msg = decode_request(f["frame"])
            requests[(f["conn"], msg.correlation_id)] = (msg.api_key, msg.api_version)
    responses = [f for f in frames if not f["request"]]
    assert len(responses) == len(requests), "every request in these captures has its response"
    for f in responses:
        (corr,) = struct.unpack_from(">i", f["frame"])
        api_key, version = requests[(f["conn"], corr)]
        msg = decode_response(f["frame"], api_key, version)
        check_sane(msg, len(f["frame"]))
        if f["complete"]:
            assert msg.ok, f"{name}: response {api_key} v{version}: {msg.status}"
        else:
            assert not msg.ok and "truncated" in msg.status, msg.status


def test_real_capture_truncation_inventory() -> None:
    """Which capture frames are cut short. shared/README.md says some of these captures have
    truncated payloads; in the copies in shared/ every packet is whole (IP total length == bytes
    captured) and every length-prefixed frame is complete, so this pins that down. A capture with
    cut frames makes this fail, and the request/response tests above then require a truncation
    status (never "ok") for those frames; cut frames are also covered synthetically by
    test_real_capture_truncated_at_every_cut_point."""
    need_captures()
    cut = {name: sum(not f["complete"] or f["packet_cut"] for f in capture_frames(CAPTURES / name))
           for name in EXPECTED_REQUESTS}
    assert cut == dict.fromkeys(EXPECTED_REQUESTS, 0), cut


def real_request_frames() -> list[tuple[str, bytes]]:
    if not CAPTURES.is_dir():
        return []
    return [(f"{name}#{i}", f["frame"]) for name in sorted(EXPECTED_REQUESTS)
            for i, f in enumerate(x for x in capture_frames(CAPTURES / name) if x["request"])]


REAL = real_request_frames()


@pytest.mark.skipif(not REAL, reason="shared/real-captures is absent")
@pytest.mark.parametrize("item", REAL, ids=[r[0] for r in REAL])
def test_real_capture_truncated_at_every_cut_point(item: tuple[str, bytes]) -> None:
    """Real request frames cut at every byte: a truncation status, never ok, never an exception."""
    name, frame = item
    full = decode_request(frame)
    assert full.ok, full.status
    assert_truncated(name, "request", frame, full.api_key, full.api_version)
