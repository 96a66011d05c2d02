"""decoders.api's big-endian integer readers (compiled: byte reads in C) against struct."""

from __future__ import annotations

import struct

import pytest

from decoders import api


def test_be16_every_value() -> None:
    for value in range(-(1 << 15), 1 << 15):
        data = b"\xee" + struct.pack(">h", value) + b"\xee"
        assert api.be16(data, 1) == value


@pytest.mark.parametrize("step", [1, 7919, 65537])
def test_be32_across_the_range(step: int) -> None:
    values = list(range(-(1 << 31), 1 << 31, step * 65521)) + [-(1 << 31), -1, 0, 1, (1 << 31) - 1, 0x7F000000,
                                                               -0x80000000 + 0xFFFFFF, 255, 256, -256]
    for value in values:
        data = b"\x01\x02" + struct.pack(">i", value)
        assert api.be32(data, 2) == value


def test_reads_past_the_end_raise() -> None:
    with pytest.raises(IndexError):
        api.be32(b"\x00\x00\x00", 0)
    with pytest.raises(IndexError):
        api.be16(b"\x00", 0)
