"""The compiled readers' string text (decoders/accel/_utf8.pyx) is ``bytes.decode("utf-8", "backslashreplace")``,
the plain readers', on any bytes: valid text in every UTF-8 length, and every kind of invalid sequence."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from decoders.accel import _utf8  # type: ignore[attr-defined]

INVALID = [
    b"\xff", b"\xfe", b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf",  # never valid, overlong
    b"\xe0\x80\x80", b"\xf0\x80\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf",  # overlong, encoded surrogates
    b"\xf4\x90\x80\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9d\x84",  # past U+10FFFF, truncated sequences
    b"\xe2\x28\xa1", b"\xf0\x28\x8c\x28", b"\xc3\x28",  # a sequence cut by an ASCII byte
]
VALID = ["", "orders", "paiements-é", "€uro", "𝄞-events", "\x7f\x00", "日本語のトピック", "\U0010ffff"]


def expected(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def test_valid_and_each_kind_of_invalid_sequence() -> None:
    for text in VALID:
        assert _utf8.decode(text.encode()) == text
    for bad in INVALID:
        for text in VALID:
            for raw in (bad, text.encode() + bad, bad + text.encode(), text.encode() + bad + text.encode() + bad):
                assert _utf8.decode(raw) == expected(raw), raw


def test_random_mixtures_of_valid_text_and_bytes() -> None:
    rng = random.Random(5)
    pieces = [text.encode() for text in VALID] + INVALID + [bytes([b]) for b in range(256)]
    for _ in range(20000):
        raw = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 8)))
        assert _utf8.decode(raw) == expected(raw), raw


@settings(max_examples=2000, deadline=None)
@given(raw=st.binary(max_size=64))
def test_any_bytes(raw: bytes) -> None:
    assert _utf8.decode(raw) == expected(raw)
