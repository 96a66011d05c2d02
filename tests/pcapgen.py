"""Write small TCP conversations to pcap files with scapy (for end-to-end tests)."""

from __future__ import annotations

from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

CLIENT = ("10.0.0.1", 40000)
BROKER = ("10.0.0.2", 9092)


def conversation(
    path: Path,
    messages: list[tuple[str, bytes]],
    *,
    handshake: bool = True,
    client: tuple[str, int] = CLIENT,
    broker: tuple[str, int] = BROKER,
    mss: int = 1400,
    drop: set[int] | None = None,
    start_ts: float = 1_700_000_000.0,
) -> list[object]:
    """``messages`` are ("c"|"b", bytes) in order; returns the packets (``drop`` indexes omitted)."""
    seq = {"c": 1000, "b": 5000}
    pkts = []
    ts = start_ts

    def add(src: str, flags: str, payload: bytes = b"") -> None:
        nonlocal ts
        s, d = (client, broker) if src == "c" else (broker, client)
        other = "b" if src == "c" else "c"
        p = Ether() / IP(src=s[0], dst=d[0]) / TCP(sport=s[1], dport=d[1], flags=flags, seq=seq[src],
                                                  ack=seq[other]) / payload
        p.time = ts
        ts += 0.001
        pkts.append(p)
        seq[src] += len(payload) + (1 if "S" in flags or "F" in flags else 0)

    if handshake:
        add("c", "S")
        add("b", "SA")
        add("c", "A")
    for who, data in messages:
        for i in range(0, len(data), mss):
            add(who, "PA", data[i : i + mss])
    if handshake:
        add("c", "FA")
        add("b", "FA")
    kept = [p for i, p in enumerate(pkts) if not drop or i not in drop]
    wrpcap(str(path), kept)
    return kept
