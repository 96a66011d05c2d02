"""The tap's live view counts the Kafka connections open, not every TCP connection the capture filter lets through
(it said "connections open 3" when no Kafka connection was: an SSH session, a database's connections)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from scapy.utils import wrpcap

from inspector.tap.command import add_parser
from inspector.tap.driver import TapDriver
from inspector.tap.live_view import LiveStats, LiveView
from tests.frames import frame, metadata_request_v0, metadata_response_v0
from tests.pcapgen import conversation


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["tap", *argv])


def _kafka(n: int) -> list[tuple[str, bytes]]:
    return [("c", frame(metadata_request_v0(n, ["orders"]))),
            ("b", frame(metadata_response_v0(n, [(1, "b1", 9092)], ["orders"])))]


def test_only_kafka_connections_count_as_open(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch.pcap"
    packets = [
        # a Kafka connection, opened and closed (SYN ... FIN both ways)
        *conversation(scratch, _kafka(1), client=("10.0.0.1", 40001), start_ts=1_700_000_000.0),
        # a Kafka connection open when the capture ends (the tap started after its handshake)
        *conversation(scratch, _kafka(2), handshake=False, client=("10.0.0.1", 40002), start_ts=1_700_000_001.0),
        # an HTTP connection, open, on the same host: TCP the filter let through, not Kafka
        *conversation(scratch, [("c", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 4),
                                ("b", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" * 4)],
                      handshake=False, client=("10.0.0.1", 40003), broker=("10.0.0.3", 8080),
                      start_ts=1_700_000_002.0),
    ]
    pcap = tmp_path / "three.pcap"
    wrpcap(str(pcap), packets)
    driver = TapDriver(_args("-i", "lo", "-o", str(tmp_path / "out")))
    driver.decoder.feed(pcap.read_bytes())
    driver.refresh()
    counters = driver.counters
    assert (counters.open_connections, counters.other_connections) == (1, 1)
    assert counters.messages == 4

    view = LiveView(Console(record=True, width=200), interface="lo", bpf="tcp", output=tmp_path / "out")
    console = Console(record=True, width=200)
    console.print(view.render(counters, LiveStats()))
    assert "Kafka connections open 1 (+1 other TCP)" in console.export_text()

    driver.decoder.finish(driver.decoder.stream_ts)  # the end: every connection closed
    driver.refresh()
    assert (counters.open_connections, counters.other_connections) == (0, 0)
    console = Console(record=True, width=200)
    console.print(view.render(counters, LiveStats()))
    text = console.export_text()
    assert "Kafka connections open 0" in text and "other TCP" not in text
