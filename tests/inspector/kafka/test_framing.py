"""The Kafka framer fed whole, one byte at a time, with trailing garbage, gaps and bad lengths."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from inspector.kafka import framing
from inspector.kafka.framing import Frame, Framer, Oversized, Skipped, Verdict
from tests.frames import api_versions_request_v0, frame, metadata_request_v0

PAYLOADS = [api_versions_request_v0(1), metadata_request_v0(2, ["orders", "payments"]), b"", b"\x00" * 1000]
STREAM = b"".join(frame(p) for p in PAYLOADS)


def _frames(events: list) -> list[bytes]:
    return [e.data for e in events if isinstance(e, Frame)]


def test_whole_stream_gives_every_frame_with_offsets() -> None:
    f = Framer()
    events = f.data(1.0, memoryview(STREAM))
    assert _frames(events) == PAYLOADS
    offsets = [e.offset for e in events if isinstance(e, Frame)]
    expected, pos = [], 0
    for p in PAYLOADS:
        expected.append(pos)
        pos += 4 + len(p)
    assert offsets == expected
    assert f.bytes_framed == len(STREAM) and f.buffered == 0


def test_byte_by_byte_gives_the_same_frames() -> None:
    f = Framer()
    events = []
    for i in range(len(STREAM)):
        events += f.data(float(i), memoryview(STREAM)[i : i + 1])
    assert _frames(events) == PAYLOADS
    first = next(e for e in events if isinstance(e, Frame))
    assert first.first_ts == 0.0 and first.ts == 4 + len(PAYLOADS[0]) - 1


@given(st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=80))
def test_any_chunking_gives_the_same_frames(sizes: list[int]) -> None:
    f = Framer()
    events, pos, i = [], 0, 0
    view = memoryview(STREAM)
    while pos < len(STREAM):
        n = sizes[i % len(sizes)]
        events += f.data(0.0, view[pos : pos + n])
        pos += n
        i += 1
    assert _frames(events) == PAYLOADS


def test_trailing_garbage_is_reported_at_finish_not_lost() -> None:
    f = Framer()
    events = f.data(0.0, STREAM + b"\x00\x00\x01")
    assert _frames(events) == PAYLOADS
    end = f.finish(9.0)
    assert len(end) == 1 and isinstance(end[0], Skipped)
    assert end[0].length == 3 and end[0].offset == len(STREAM)
    assert f.bytes_framed + f.bytes_skipped == len(STREAM) + 3


def test_incomplete_frame_at_end_is_reported_with_its_size() -> None:
    f = Framer()
    f.data(0.0, frame(b"abcdef")[:7])
    (skipped,) = f.finish(1.0)
    assert isinstance(skipped, Skipped) and skipped.length == 7
    assert "3 of 6 bytes" in skipped.reason


def test_negative_or_huge_length_is_oversized_then_resync() -> None:
    f = Framer(max_frame=1 << 20)
    bad = struct.pack(">i", -5) + b"junk"
    events = f.data(0.0, bad + STREAM)
    assert isinstance(events[0], Oversized) and events[0].length == -5
    # Without a plausibility test every offset with a sane length is a frame start, so the framer
    # resynchronises somewhere; with one, it lands exactly on the first real frame.
    f2 = Framer(lambda buf, pos: Verdict.YES if buf[pos + 4 : pos + 6] in (b"\x00\x12", b"\x00\x03") else Verdict.NO,
                max_frame=1 << 20)
    events = f2.data(0.0, bad + STREAM)
    assert isinstance(events[0], Oversized)
    skipped = [e for e in events if isinstance(e, Skipped)]
    assert sum(s.length for s in skipped) == len(bad)
    assert _frames(events) == PAYLOADS


def test_gap_drops_partial_frame_and_resyncs_on_plausible_start() -> None:
    def plausible(buf: bytes, pos: int) -> int:
        (length,) = struct.unpack_from(">i", buf, pos)
        return Verdict.MAYBE if 0 < length < 5000 else Verdict.NO

    f = Framer(plausible, confirm=lambda data: data[:2] == b"\x00\x03")
    first = frame(api_versions_request_v0(7))
    events = f.data(0.0, first[:10])
    assert events == []
    events = f.gap(1.0, 25)
    assert len(events) == 1 and isinstance(events[0], Skipped) and events[0].length == 10
    # After the gap: the tail of some frame, then a real Metadata request.
    tail = b"\x01\x02\x03\x04\x05"
    meta = frame(metadata_request_v0(8, ["x"]))
    events = f.data(2.0, tail + meta)
    assert _frames(events) == [metadata_request_v0(8, ["x"])]
    skipped = [e for e in events if isinstance(e, Skipped)]
    assert sum(s.length for s in skipped) == len(tail)
    assert skipped[0].offset == 10 + 25


def test_stream_that_never_frames_is_skipped_in_bounded_memory() -> None:
    f = Framer(lambda buf, pos: Verdict.NO, synced=False, max_scan=1 << 16)
    total = 0
    skipped = 0
    for _ in range(64):
        chunk = b"\xff" * 65536
        total += len(chunk)
        skipped += sum(e.length for e in f.data(0.0, chunk) if isinstance(e, Skipped))
        assert f.buffered < 1 << 17
    skipped += sum(e.length for e in f.finish(0.0) if isinstance(e, Skipped))
    assert skipped == total


@given(st.lists(st.one_of(st.binary(max_size=40),
                          st.builds(lambda n, b: struct.pack(">i", n) + b,
                                    st.integers(-5, 60), st.binary(max_size=60))), max_size=12),
       st.integers(0, 64))
def test_whole_frames_are_sliced_as_the_length_prefixes_say(parts: list[bytes], max_frame: int) -> None:
    """The loop slicing frames (inspector/native/_frames.pyx) against the definition: from the start, while a
    4-byte length in 0..max_frame and that many bytes follow, one frame each; the rest is the framer's to report.
    The same from the bytes in one piece and cut into pieces anywhere (what the framer has buffered)."""
    data = b"".join(parts)
    expected, pos = [], 0
    while len(data) - pos >= 4:
        (length,) = struct.unpack_from(">i", data, pos)
        if not 0 <= length <= max_frame or pos + 4 + length > len(data):
            break
        expected.append((pos, data[pos + 4:pos + 4 + length]))
        pos += 4 + length
    out: list[Frame] = []
    assert framing._whole_frames([memoryview(data)], max_frame, 100, 1.5, 1.5, framing._new_frame, out) == pos
    assert [(f.offset - 100, f.data, f.ts, f.first_ts) for f in out] == [(p, d, 1.5, 1.5) for p, d in expected]
    pieces = [memoryview(part) for part in parts] + [b""]  # as the parts were drawn: cut anywhere, an empty one
    out = []
    assert framing._whole_frames(pieces, max_frame, 100, 0.5, 1.5, framing._new_frame, out) == pos
    assert [(f.offset - 100, f.data, f.ts, f.first_ts) for f in out] == [
        (p, d, 1.5, 0.5 if i == 0 else 1.5) for i, (p, d) in enumerate(expected)]
    f = Framer(max_frame=max_frame, synced=True)
    events = f.data(1.0, memoryview(data)) + f.finish(2.0)
    assert [(e.offset, e.data) for e in events if isinstance(e, Frame)][:len(expected)] == expected
    assert f.bytes_framed + f.bytes_skipped + f.buffered == len(data)
