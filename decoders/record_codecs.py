"""Decompression of record data (gzip, snappy raw and xerial, lz4, zstd), bounded by the call's budget.

A codec never raises: :func:`decompress` returns the payload, or None and a reason. Output is capped by
``CallState.budget`` bytes, so a compression bomb costs at most about its budget in memory and work.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

from decoders.checksums import xxh32
from decoders.record_budget import CallState
from decoders.record_header import COMPRESSION_NAMES

__all__ = ["COMPRESSION_NAMES", "decompress"]


_I32: Final = struct.Struct(">i")

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE: Final = 16
_LZ4_FRAME_MAGIC: Final = b"\x04\x22\x4d\x18"

_MIN_OUTPUT_GUESS: Final = 64 * 1024
_GZIP_CHUNK: Final = 1024 * 1024
_WRITE_ZERO: Final = "failed to write whole buffer"  # cramjam's "output buffer full" error


def _cramjam() -> ModuleType:
    """cramjam, imported on first use (a read that decompresses nothing never needs it: ~2 ms of every start)."""
    import cramjam

    return cramjam


def decompress(codec: int, src: memoryview, ctx: CallState, legacy: bool) -> tuple[memoryview | None, str]:
    """Inflate ``src`` within ``ctx.budget``; returns (payload, "") or (None, reason)."""
    try:
        if codec == 1:
            return _gunzip(src, ctx)
        if codec == 2:
            return _unsnappy(src, ctx)
        if codec == 3:
            return _bounded(_cramjam().lz4.decompress_into, "lz4", _fix_lz4_header(src) if legacy else src, ctx)
        if codec == 4:
            return _bounded(_cramjam().zstd.decompress_into, "zstd", src, ctx)
    except Exception as exc:  # a codec must never take the caller down
        return None, f"{COMPRESSION_NAMES[codec]} decompression failed: {exc}"
    return None, f"unsupported compression codec {codec}"


def _gunzip(src: memoryview, ctx: CallState) -> tuple[memoryview | None, str]:
    limit = ctx.budget
    out = bytearray()
    d = zlib.decompressobj(47)  # gzip or zlib header, auto-detected
    buf: bytes | memoryview = src
    try:
        while True:
            chunk = d.decompress(buf, min(_GZIP_CHUNK, limit - len(out) + 1))
            out += chunk
            if len(out) > limit:
                ctx.budget = 0
                return None, ctx.limit_reason()
            if d.eof:
                rest = d.unused_data
                if not rest:
                    break
                d = zlib.decompressobj(47)  # concatenated gzip members (GZIPInputStream reads them)
                buf = rest
                continue
            tail = d.unconsumed_tail
            if not chunk and len(tail) >= len(buf):
                return None, "gzip decompression failed: truncated stream"
            buf = tail
    except zlib.error as exc:
        return None, f"gzip decompression failed: {exc}"
    ctx.budget -= len(out)
    return memoryview(out), ""


def _unsnappy(src: memoryview, ctx: CallState) -> tuple[memoryview | None, str]:
    """Raw snappy or the xerial (snappy-java) framing; sizes are known before inflating."""
    snappy = _cramjam().snappy
    n = len(src)
    blocks: list[tuple[memoryview, int]] = []
    total = 0
    if n >= _XERIAL_HEADER_SIZE and src[:8] == _XERIAL_MAGIC:  # type: ignore[comparison-overlap]  # equal by content
        p = _XERIAL_HEADER_SIZE
        while p < n:
            if n - p < 4:
                return None, f"snappy decompression failed: truncated xerial block header at compressed byte {p}"
            (blen,) = _I32.unpack_from(src, p)
            p += 4
            if blen < 0 or blen > n - p:
                return None, (
                    f"snappy decompression failed: xerial block length {blen} exceeds data at compressed byte {p - 4}"
                )
            block = src[p : p + blen]
            p += blen
            ulen = snappy.decompress_raw_len(block)
            total += ulen
            if total > ctx.budget:
                return None, ctx.limit_reason()
            blocks.append((block, ulen))
    else:
        total = snappy.decompress_raw_len(src)
        if total > ctx.budget:
            return None, ctx.limit_reason()
        blocks.append((src, total))
    out = bytearray(total)
    view = memoryview(out)
    o = 0
    for block, ulen in blocks:
        written = snappy.decompress_raw_into(block, view[o : o + ulen])
        if written != ulen:
            return None, f"snappy decompression failed: block inflated to {written} bytes, expected {ulen}"
        o += ulen
    ctx.budget -= total
    return view, ""


def _fix_lz4_header(src: memoryview) -> memoryview:
    """Accept the broken LZ4 header checksum of Kafka's magic 0/1 (KafkaLZ4BlockOutputStream).

    It hashed the frame magic as well as the descriptor; rewrite it to the correct value so a
    standard decoder accepts the frame.  Anything else is left alone for the decoder to judge.
    """
    if len(src) < 7 or src[:4] != _LZ4_FRAME_MAGIC:  # type: ignore[comparison-overlap]  # equal by content
        return src
    flg = src[4]
    hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(src) <= hc_pos:
        return src
    good = (xxh32(src[4:hc_pos]) >> 8) & 0xFF
    stored = src[hc_pos]
    if stored == good or stored != (xxh32(src[:hc_pos]) >> 8) & 0xFF:
        return src
    fixed = bytearray(src)
    fixed[hc_pos] = good
    return memoryview(fixed)


def _bounded(fn: Callable[[Any, Any], int], name: str, src: memoryview,
             ctx: CallState) -> tuple[memoryview | None, str]:
    """One-shot cramjam ``decompress_into`` with a bounded, geometrically grown output buffer.

    cramjam stops with "failed to write whole buffer" as soon as the output is full, so a bomb
    costs at most ~4/3 of the budget in work and the budget in memory.
    """
    budget = ctx.budget
    size = min(budget, max(_MIN_OUTPUT_GUESS, 4 * len(src)))
    while True:
        out = bytearray(size)
        try:
            written = fn(src, out)
        except Exception as exc:  # cramjam raises DecompressionError and friends
            if _WRITE_ZERO in str(exc):
                del out  # free before allocating the next, larger buffer
                if size >= budget:
                    ctx.budget = 0
                    return None, ctx.limit_reason()
                size = min(budget, size * 4)
                continue
            return None, f"{name} decompression failed: {exc}"
        if not 0 <= written <= size:
            return None, f"{name} decompression failed: decoder reported {written} bytes"
        del out[written:]
        ctx.budget -= written
        return memoryview(out), ""
