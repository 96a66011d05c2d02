"""Checksums of Kafka record data: CRC-32C (RecordBatch v2) and XXH32 (the LZ4 frame header)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

__all__ = ["crc32c", "xxh32"]


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C_TABLE: Final = _crc32c_table()


def _crc32c_pure(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C (Castagnoli), table-driven pure Python."""
    table = _CRC32C_TABLE
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_crc32c_impl: Callable[[bytes | bytearray | memoryview], int] | None = None


def _crc32c_choose() -> Callable[[bytes | bytearray | memoryview], int]:
    """The optional C implementation (the ``crc32c`` package; same results, much faster), else the pure
    one. Chosen on first use: importing ``crc32c`` costs ~20 ms, and only record-level decoding needs it."""
    global _crc32c_impl
    try:
        import crc32c as _crc32c_ext

        _crc32c_impl = _crc32c_ext.crc32c
    except ImportError:  # pragma: no cover - depends on the environment
        _crc32c_impl = _crc32c_pure
    return _crc32c_impl


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data`` (the RecordBatch v2 checksum)."""
    return (_crc32c_impl or _crc32c_choose())(data)


_XXH_P1: Final = 2654435761
_XXH_P2: Final = 2246822519
_XXH_P3: Final = 3266489917
_XXH_P4: Final = 668265263
_XXH_P5: Final = 374761393
_M32: Final = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 (used by the LZ4 frame header checksum); pure Python, meant for short inputs."""
    buf = bytes(data)
    n = len(buf)
    i = 0
    if n >= 16:
        v1 = (seed + _XXH_P1 + _XXH_P2) & _M32
        v2 = (seed + _XXH_P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _XXH_P1) & _M32
        while i <= n - 16:
            a, b, c, d = struct.unpack_from("<IIII", buf, i)
            v1 = (_rotl32((v1 + a * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            v2 = (_rotl32((v2 + b * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            v3 = (_rotl32((v3 + c * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            v4 = (_rotl32((v4 + d * _XXH_P2) & _M32, 13) * _XXH_P1) & _M32
            i += 16
        h = (_rotl32(v1, 1) + _rotl32(v2, 7) + _rotl32(v3, 12) + _rotl32(v4, 18)) & _M32
    else:
        h = (seed + _XXH_P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (w,) = struct.unpack_from("<I", buf, i)
        h = (_rotl32((h + w * _XXH_P3) & _M32, 17) * _XXH_P4) & _M32
        i += 4
    while i < n:
        h = (_rotl32((h + buf[i] * _XXH_P5) & _M32, 11) * _XXH_P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _XXH_P2) & _M32
    h ^= h >> 13
    h = (h * _XXH_P3) & _M32
    h ^= h >> 16
    return h
