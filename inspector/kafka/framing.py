"""Split one direction of a TCP stream into Kafka's length-prefixed frames (sans-I/O).

A Kafka frame is a 4-byte big-endian length followed by that many bytes. The framer takes stream
bytes (memoryviews, no copies until a frame is complete: its pieces are joined once) and gaps,
and returns events. After a gap, or when a capture starts mid-stream, it is *lost*: it scans for
the next offset where a frame plausibly starts (the caller supplies the test, since what is
plausible depends on whether this side sends requests or responses) and reports the bytes it
skipped. Nothing is dropped silently: every byte ends up in a Frame, in Skipped, or in a gap.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

from contract.limits import DEFAULT_LIMITS
from inspector.native._frames import whole_frames as _whole_frames  # the one loop slicing frames

_LEN = struct.Struct(">i").unpack_from
#: Buffered segments are joined into one bytes object this many at a time, so an incomplete frame costs
#: about its own size in memory (not a captured packet plus a memoryview per segment) and taking it out
#: of the buffer does not shift a list of one entry per segment.
COMPACT_CHUNKS = 32

#: A test of whether ``buf[pos:]`` starts a frame: returns a verdict.
#: It receives the buffered bytes and a position with at least 4 bytes after it.
Plausible = Callable[[bytes, int], int]


class Verdict:
    NO = 0  # not a frame start
    MAYBE = 1  # need the whole frame to tell (confirm() will be called)
    YES = 2


@dataclass  # compiled, an extension type (framing.pxd); from source, the slots below
class Frame:
    __slots__ = ("ts", "first_ts", "offset", "data")

    ts: float  # timestamp of the segment that completed the frame
    first_ts: float  # timestamp of the segment that started it
    offset: int  # stream offset of the length prefix
    data: bytes  # the frame without its length prefix


def _new_frame(ts: float, first_ts: float, offset: int, data: bytes) -> Frame:
    """Frame(...) for the hot path, every field positionally: compiled, stored from C (the class's own
    ``__init__`` parses its arguments as a Python call: docs/performance.md)."""
    f = Frame.__new__(Frame)
    f.ts = ts
    f.first_ts = first_ts
    f.offset = offset
    f.data = data
    return f


@dataclass(frozen=True)  # compiled, an extension type (framing.pxd); from source, the slots below
class Skipped:
    """Bytes that are not part of any frame the framer could find."""

    __slots__ = ("ts", "offset", "length", "reason")

    ts: float
    offset: int
    length: int
    reason: str


@dataclass(frozen=True)  # compiled, an extension type (framing.pxd); from source, the slots below
class Oversized:
    """A length prefix above the limit: the framer gives up on this position and resyncs."""

    __slots__ = ("ts", "offset", "length")

    ts: float
    offset: int
    length: int


FramerEvent = Frame | Skipped | Oversized

_patterns: dict[tuple[int, int], re.Pattern[bytes]] = {}


def _start_pattern(top: int, min_frame: int) -> re.Pattern[bytes]:
    """Positions whose 4 bytes may be a length prefix in ``min_frame..(top << 24 | 0xFFFFFF)``."""
    key = (top, min_frame)
    pattern = _patterns.get(key)
    if pattern is None:
        regex = b"[\\x00-" + re.escape(bytes([top])) + b"]"
        if 0 < min_frame <= 256:
            regex += b"(?!\\x00\\x00\\x00[\\x00-" + re.escape(bytes([min_frame - 1])) + b"])"
        pattern = _patterns[key] = re.compile(regex)
    return pattern


class Framer:
    """Frames one direction. Feed ``data()`` and ``gap()``; read the returned events."""

    def __init__(
        self,
        plausible: Plausible | None = None,
        confirm: Callable[[bytes], bool] | None = None,
        *,
        max_frame: int = DEFAULT_LIMITS.max_frame,
        max_scan: int = 4 * 1024 * 1024,
        synced: bool = True,
        min_frame: int = 0,
        scan_window: int = 4,
    ) -> None:
        self.plausible = plausible
        self.confirm = confirm
        self.max_frame = max_frame
        self.max_scan = max_scan
        self.synced = synced
        self.offset = 0  # stream offset of the first buffered byte
        self._chunks: list[memoryview | bytes] = []
        self._loose = 0  # chunks appended since the last compaction (at the end of _chunks)
        self.buffered = 0  # bytes held: an incomplete frame, or (lost) bytes not yet judged by the scan
        self._need = 4  # bytes needed before the next step (length prefix, then frame)
        self._length = -1  # current frame's length when its prefix was read
        self._first_ts = 0.0
        self._scan_need = 0  # lost: bytes the buffer needs before a rescan can decide anything new
        # Lost: a frame can only start where the length prefix is in min_frame..max_frame (``min_frame``:
        # the shortest frame the scan takes as a start), so its first byte is at most max_frame >> 24 and
        # it is not a tiny length like the ones in runs of zeros; the scan jumps over other positions
        # with one regex search instead of a Python test per byte.
        self.min_frame = min_frame
        # Bytes ``plausible`` needs after a position to judge it: a candidate closer to the end of the
        # buffered bytes waits for more data (else a frame start cut by a segment boundary is skipped).
        self.scan_window = max(4, scan_window)
        self._top = top = min(max_frame >> 24, 0x7F)
        self._maybe_start = _start_pattern(top, min_frame).search
        self.frames = 0
        self.bytes_framed = 0
        self.bytes_skipped = 0

    # -- input -----------------------------------------------------------------------------

    def data(self, ts: float, view: memoryview | bytes) -> list[FramerEvent]:
        if not view:
            return []
        if self.buffered == 0:
            self._first_ts = ts
            if self.synced:
                return self._whole_frames(ts, view)
        self._chunks.append(view)
        self.buffered += len(view)
        self._loose += 1
        out: list[FramerEvent] = []
        if self.synced:
            self._drain_synced(ts, out)
        if not self.synced and (self.buffered >= self._scan_need or self.buffered > self.max_scan):
            self._scan(ts, out)
        if self._loose >= COMPACT_CHUNKS:
            self._compact()
        return out

    def gap(self, ts: float, length: int) -> list[FramerEvent]:
        """``length`` bytes of the stream are missing here: drop the partial frame and resync."""
        out: list[FramerEvent] = []
        self._final_scan(ts, out)
        if self.buffered:
            out.append(Skipped(ts, self.offset, self.buffered, "incomplete frame before a gap"
                               if self.synced else "no frame found before a gap"))
            self.bytes_skipped += self.buffered
        self.offset += self.buffered + length
        self._reset_buffer()
        self.synced = False
        return out

    def release(self, ts: float, reason: str) -> list[FramerEvent]:
        """Give up the buffered bytes (an incomplete frame, or bytes a lost framer still scans) to free
        memory: frames complete in the buffer are still framed, the rest is reported as Skipped with
        ``reason``, and the framer resyncs at the next plausible frame start of the bytes that follow."""
        out: list[FramerEvent] = []
        self._final_scan(ts, out)
        if self.buffered:
            out.append(Skipped(ts, self.offset, self.buffered, reason))
            self.bytes_skipped += self.buffered
            self.offset += self.buffered
            self._reset_buffer()
            self.synced = False
        return out

    def finish(self, ts: float) -> list[FramerEvent]:
        """End of stream: report whatever is buffered."""
        out: list[FramerEvent] = []
        self._final_scan(ts, out)
        if not self.buffered:
            return out
        reason = "incomplete frame at end of stream" if self.synced else "no frame found at end of stream"
        if self.synced and self._length >= 0:
            reason = f"incomplete frame at end of stream ({self.buffered - 4} of {self._length} bytes)"
        out.append(Skipped(ts, self.offset, self.buffered, reason))
        self.bytes_skipped += self.buffered
        self.offset += self.buffered
        self._reset_buffer()
        return out

    # -- internals -------------------------------------------------------------------------

    def _whole_frames(self, ts: float, view: memoryview | bytes) -> list[FramerEvent]:
        """Fast path with nothing buffered: slice complete frames straight out of ``view``."""
        out: list[FramerEvent] = []
        n = len(view)
        pos = _whole_frames([view], self.max_frame, self.offset, ts, ts, _new_frame, out)
        if out:
            framed = pos
            self.frames += len(out)
            self.bytes_framed += framed
            self.offset += framed
        if pos < n:
            rest = view[pos:] if pos else view
            self._chunks.append(rest)
            self._loose = 1
            self.buffered = n - pos
            self._drain_synced(ts, out)
            if not self.synced:
                self._scan(ts, out)
        return out

    def _compact(self) -> None:
        """Join the chunks appended since the last compaction (those still buffered) into one."""
        chunks = self._chunks
        k = min(self._loose, len(chunks))
        if k > 1:
            chunks[-k:] = [b"".join(chunks[-k:])]
        self._loose = 0

    def _reset_buffer(self) -> None:
        self._chunks = []
        self._loose = 0
        self.buffered = 0
        self._scan_need = 0
        self._need = 4
        self._length = -1

    def _drop(self, n: int) -> None:
        """Remove the first ``n`` buffered bytes (framed)."""
        self.buffered -= n
        self.offset += n
        chunks = self._chunks
        while n:
            first = chunks[0]
            if len(first) <= n:
                n -= len(first)
                chunks.pop(0)
            else:
                chunks[0] = first[n:]
                n = 0

    def _peek_length(self) -> int:
        first = self._chunks[0]
        if len(first) >= 4:
            return int(_LEN(first, 0)[0])
        head = b""
        for c in self._chunks:
            head += bytes(c[: 4 - len(head)])
            if len(head) == 4:
                break
        return int(_LEN(head, 0)[0])

    def _drain_synced(self, ts: float, out: list[FramerEvent]) -> None:
        while self.buffered >= self._need:
            if self._length < 0:
                length = self._peek_length()
                if length < 0 or length > self.max_frame:
                    out.append(Oversized(ts, self.offset, length))
                    self.synced = False
                    return
                self._length = length
                self._need = 4 + length
                continue
            # A frame is complete in the buffered pieces: the one loop slices it and those after it.
            before = len(out)
            framed = _whole_frames(self._chunks, self.max_frame, self.offset, self._first_ts, ts, _new_frame, out)
            self.frames += len(out) - before
            self.bytes_framed += framed
            self._drop(framed)
            self._length = -1
            self._need = 4
            self._first_ts = ts

    def _final_scan(self, ts: float, out: list[FramerEvent]) -> None:
        """No more bytes will come (end of stream or a gap): frame starts that wait for bytes are not
        frame starts after all, so look for complete frames behind them before giving up."""
        while not self.synced and self.buffered >= 4:
            offset = self.offset
            self._scan(ts, out, final=True)
            if self.offset == offset and not self.synced:
                break

    def _scan(self, ts: float, out: list[FramerEvent], final: bool = False) -> None:
        """Lost: look for the next plausible frame start in the buffered bytes.

        A plausible start whose frame is not complete yet makes the scan wait for more bytes, unless
        the stream has ended (``final``) or the bytes behind it already exceed ``max_scan``: then it is
        not taken as a frame start and the scan goes on behind it.
        """
        buf = b"".join(bytes(c) for c in self._chunks)
        n = len(buf)
        pos = 0
        need = 0
        top = self._top
        maybe_start = self._maybe_start
        last = n - 4 if final else n - self.scan_window  # the last position that can be judged now
        while pos <= last:
            if buf[pos] > top or buf[pos] == 0:
                m = maybe_start(buf, pos)
                if m is None or m.start() > last:
                    pos = max(pos, last + 1)
                    break
                pos = m.start()
            verdict = self._test(buf, pos)
            if verdict == Verdict.NO:
                pos += 1
                continue
            (length,) = _LEN(buf, pos)
            if pos + 4 + length > n:
                if final or n - pos > self.max_scan:
                    pos += 1
                    continue
                # Plausible but incomplete: wait for more bytes (bounded by max_scan), without rescanning
                # (and re-joining) the buffer for every segment until the candidate frame is complete.
                need = 4 + length
                break
            if verdict == Verdict.YES or (self.confirm is None or self.confirm(buf[pos + 4 : pos + 4 + length])):
                self._resync(ts, buf, pos, out)
                return
            pos += 1
        # Keep scanning state: everything before pos is not a frame start (what is kept is at most a
        # candidate frame within max_scan, or the last scan_window - 1 bytes).
        keep_from = pos
        if keep_from > 0:
            out.append(Skipped(ts, self.offset, keep_from, "no frame start found"))
            self.bytes_skipped += keep_from
            self.offset += keep_from
        rest = buf[keep_from:]
        self._chunks = [rest] if rest else []
        self._loose = 0
        self.buffered = len(rest)
        self._scan_need = need

    def _test(self, buf: bytes, pos: int) -> int:
        (length,) = _LEN(buf, pos)
        if length < self.min_frame or length > self.max_frame or length < 0:
            return Verdict.NO
        if self.plausible is None:
            return Verdict.YES
        return self.plausible(buf, pos)

    def _resync(self, ts: float, buf: bytes, pos: int, out: list[FramerEvent]) -> None:
        if pos:
            out.append(Skipped(ts, self.offset, pos, "no frame start found"))
            self.bytes_skipped += pos
        self.offset += pos
        rest = buf[pos:]
        self._chunks = [rest]
        self._loose = 0
        self.buffered = len(rest)
        self._need = 4
        self._length = -1
        self._scan_need = 0
        self.synced = True
        self._drain_synced(ts, out)
