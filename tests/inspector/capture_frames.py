"""Every Kafka frame the inspector decodes in the bundled and the shared real captures.

Used by tests that run each frame through another decoder (e.g. the compiled decoders against the
pure ones): each request the inspector decoded, and each response it decoded as its request's answer, with
the frame's bytes cut from the reassembled stream at the message's offset (the inspector's modules call
each other from C when compiled: nothing to intercept on the way).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from inspector.capture.file import open_capture
from inspector.capture.packets import Segment, segments
from inspector.read.reader import iter_capture
from inspector.rows.summary import Summary
from inspector.tcp.reassembly import Reassembler
from inspector.tcp.stream_events import Event, StreamData

REPO = Path(__file__).resolve().parents[2]
CAPTURES = sorted((REPO / "pcaps").glob("*.pcap")) + sorted((REPO.parent / "shared" / "real-captures").glob("*.pcap*"))

Streams = dict[tuple[int, tuple[str, int]], bytearray]


def capture_frames() -> Iterator[tuple[str, int, int, bytes]]:
    """(kind, api key, api version, frame) of every request and response frame in the captures."""
    for path in CAPTURES:
        streams = _streams(path)
        for ev in iter_capture(str(path), Summary()):
            msg = ev.message
            if msg.api_key is None or msg.api_version is None or ev.request_missing:
                continue
            sender = ev.client if ev.direction == "request" else ev.broker
            data = streams[ev.conn_id, (sender.ip, sender.port)]
            start = ev.frame_offset + 4  # after the length prefix
            yield ev.direction.value, msg.api_key, msg.api_version, bytes(data[start : start + msg.size])


def _streams(path: Path) -> Streams:
    """Each direction's stream bytes, by (conn_id, sender), as a reassembler delivers them (conn ids as the
    inspector gives them reading the capture alone)."""
    reassembler = Reassembler()
    streams: Streams = {}

    def keep(events: Iterable[Event]) -> None:
        for ev in events:
            if isinstance(ev, StreamData):
                buf = streams.setdefault((ev.conn_id, ev.src), bytearray())
                end = ev.offset + len(ev.data)
                if len(buf) < end:
                    buf.extend(bytes(end - len(buf)))
                buf[ev.offset : end] = ev.data

    ts = 0.0
    with open_capture(str(path)) as reader:
        for seg in segments(reader):
            if isinstance(seg, Segment):
                ts = seg.ts
                keep(reassembler.feed(seg))
    keep(reassembler.flush(ts))
    return streams
