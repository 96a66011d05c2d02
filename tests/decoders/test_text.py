"""JSON text written by the compiled decoders straight from the frame (``text`` mode: Produce and Fetch).

``read``'s events table asks for it: the body column takes the text as it is, and the message's ``body`` holds
only the top-level integer fields. Where a writer gives the text, it must be exactly what the body column
would write for the dict decoded the usual way (orjson's text, record sets as the records twin's summaries),
with the same non-zero ErrorCode values; where it gives up (tagged fields, a string that is not ASCII, a record
set the twin leaves, a frame that does not decode), the message must be the usual one. The topics the writer
collects as it writes must be those the decoded dict names (``decoders/topics.py``). Inputs: every frame
of the real captures, the independent encoders' vectors whole, cut, with trailing bytes, corrupted and under
small element budgets, random bytes after valid headers, and hand-built frames with strings to escape.
"""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from decoders import _runtime as rt
from decoders import api
from decoders.codegen.model import is_flexible, resolve_struct, versions_of
from decoders.codegen.render_cy import TEXT_APIS
from decoders.generated import registry
from decoders.generated_modules import accel_module
from decoders.spec.convert import SCHEMA_DIR
from decoders.topics import topic_refs
from inspector.rows.event_table import PROMOTED_KEYS, body_json
from tests import frames as F
from tests.decoders import vectors as V
from tests.decoders import vectors_all as VA
from tests.decoders import vectors_kio as VK
from tests.decoders import vectors_kp as VP
from tests.error_code_regex import error_codes

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = ("kind", "api_key", "api_version", "correlation_id", "status", "size", "client_id", "header_version",
          "header", "body_version", "error_path", "error_offset", "notes", "inner")


def decode(kind: str, api_key: int, version: int, frame: bytes, text: bool,
           budget: int = rt.MAX_ELEMENTS) -> api.DecodedMessage:
    if kind == "request":
        return api.decode_request_bytes(frame, True, budget, text)
    return api.decode_response_bytes(frame, api_key, version, None, True, budget, text)


def plain(msg: api.DecodedMessage) -> tuple[Any, ...]:
    return tuple(getattr(msg, name) for name in FIELDS) + (body_json(msg.body) if msg.body is not None else None,)


def check(kind: str, api_key: int, version: int, frame: bytes, budget: int = rt.MAX_ELEMENTS) -> bool:
    """Whether the text writer wrote ``frame``'s body; either way, asserts it agrees with the dict path."""
    usual = decode(kind, api_key, version, frame, False, budget)
    written = decode(kind, api_key, version, frame, True, budget)
    assert usual.text is None
    if written.text is None:
        assert written.codes is None and written.topics is None
        assert plain(written) == plain(usual), (kind, api_key, version, frame.hex())
        return False
    assert api_key in TEXT_APIS
    assert usual.status == api.OK and usual.body is not None, (kind, api_key, version, frame.hex())
    for name in FIELDS:
        assert getattr(written, name) == getattr(usual, name), (name, frame.hex())
    expected = body_json(usual.body).encode()
    assert written.text == expected, (kind, api_key, version, frame.hex())
    assert written.codes == error_codes(expected)
    assert written.topics == topic_refs(usual)  # the topics the writer collected, the dict's (decoders/topics.py)
    assert written.body == {k: v for k, v in usual.body.items() if type(v) is int}
    return True


def test_every_frame_of_the_real_captures() -> None:
    from tests.inspector.capture_frames import capture_frames

    written = seen = candidates = 0
    for kind, api_key, version, frame in capture_frames():
        if registry.REQUEST_HEADER_VERSION.get((api_key, version)) is None:
            continue
        written += check(kind, api_key, version, frame)
        seen += 1
        candidates += api_key in TEXT_APIS
    assert seen > 1000
    # Measured: 494 of the 522 Produce and Fetch frames (the others: message sets of magic 0/1, which the
    # records twin leaves, and Fetch v16 responses with tagged fields).
    assert candidates > 500 and written > 0.9 * candidates


class _AsciiSource(V.DetSource):
    """The deterministic values with ASCII strings (characters to escape among them) and bytes that are a record
    batch of the kind clients send (the records twin summarises it): values the text writers write. With
    ``nulls``, every nullable field is null instead (record sets, tagged fields, nullable strings)."""

    def __init__(self, nulls: bool = False) -> None:
        super().__init__()
        self.nulls = nulls

    def text(self) -> str:
        n = self._next()
        return f"s{n}-" + 'q"b\\t\t\x01'[: n % 9] + "-ascii"

    def binary(self) -> bytes:
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        for i in range(1 + self._next() % 3):
            builder.append(i, 1_700_000_000_000 + i, f"k{i}".encode(), b"v" * i, [("h", b"x")])
        return bytes(builder.build())

    def null(self) -> bool:
        return self.nulls


@cache
def text_vectors() -> list[VA.Vector]:
    """The encoders' vectors of the text APIs, and kafka-python's again with the values above."""
    out = [vec for vec in VA.all_vectors() if vec.api_key in TEXT_APIS]
    for nulls in (False, True):
        out += [VA.Vector(f"kp-ascii-{c.id}", c.kind, c.api_key, c.version,
                         VP.kp_frame(VP.kp_message(c.cls, c.version, _AsciiSource(nulls))))
                for c in VP.kp_cases() if c.api_key in TEXT_APIS]
        out += [VA.Vector(f"kio-ascii-{c.id}", c.kind, c.api_key, c.version,
                         VK.kio_frame(VK.untagged(VK.kio_instance(c.cls, _AsciiSource(nulls)))))
                for c in VK.kio_cases() if c.api_key in TEXT_APIS]
        out += [VA.Vector(f"old-ascii-{c.id}", c.kind, c.api_key, c.version,
                         VP.old_frame(VP.old_message(c.cls, _AsciiSource(nulls))))
                for c in VP.old_cases()
                if c.api_key in TEXT_APIS and (c.api_key, c.version, c.kind) not in VP.OLD_ENCODER_BUGS]
    return out


def test_vectors_whole_cut_with_trailing_bytes_and_corrupted() -> None:
    """Every version of both kinds of every text API is written whole at least once (from the ASCII vectors),
    and agrees with the dict path however it is damaged."""
    rng = random.Random(5)
    written: set[tuple[str, int, int]] = set()
    for vec in text_vectors():
        frame = vec.frame
        if check(vec.kind, vec.api_key, vec.version, frame):
            written.add((vec.kind, vec.api_key, vec.version))
        cuts = range(len(frame)) if len(frame) <= 120 else sorted(rng.sample(range(len(frame)), 120))
        for cut in cuts:
            check(vec.kind, vec.api_key, vec.version, frame[:cut])
        check(vec.kind, vec.api_key, vec.version, frame + b"\x00\x01\xff")
        for _ in range(8):
            mutated = bytearray(frame)
            pos = rng.randrange(8, len(frame))
            mutated[pos] = rng.choice((0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            check(vec.kind, vec.api_key, vec.version, bytes(mutated))
    assert written == set(KNOWN)


def test_vectors_under_small_element_budgets() -> None:
    """The writer spends the element budget as the dict path does: over it, it leaves the frame to that path."""
    for vec in text_vectors():
        for budget in (0, 1, 2, 5, 20):
            check(vec.kind, vec.api_key, vec.version, vec.frame, budget)


KNOWN = sorted((kind, key, v) for kind, table in (("request", registry.REQUEST_HEADER_VERSION),
                                                  ("response", registry.RESPONSE_HEADER_VERSION))
               for (key, v) in table if key in TEXT_APIS)


@SETTINGS
@given(case=st.sampled_from(KNOWN), tail=st.binary(max_size=300))
def test_random_bytes_after_a_valid_header(case: tuple[str, int, int], tail: bytes) -> None:
    kind, key, version = case
    versions = registry.REQUEST_HEADER_VERSION if kind == "request" else registry.RESPONSE_HEADER_VERSION
    head = F.valid_header(kind, key, version, versions[(key, version)])
    check(kind, key, version, head + tail)


@pytest.mark.parametrize("topic", ["plain-topic", "", 'quote"back\\slash', "tab\tnew\nline\rfeed\x0cbs\x08",
                                   "ctl\x00\x01\x1f\x7f", "exactly8", "sixteen-chars-ab", "ünïcödé", "日本"])
def test_strings_escaped_as_orjson_escapes_them(topic: str) -> None:
    """ASCII strings are escaped by the writer (every class of character, in and out of 8-byte words); a
    string with other bytes is left to the dict path."""
    request = F.produce_request_v3(7, 1, topic)
    response = F.produce_response_v3(7, topic)
    assert check("request", 0, 3, request) == topic.isascii()
    assert check("response", 0, 3, response) == topic.isascii()


def test_error_codes_in_the_text() -> None:
    """Non-zero ErrorCode values are collected in order, the top-level one included (the events table takes
    it out of the nested ones); zero is not."""
    ok = F.produce_response_v3(9)
    assert check("response", 0, 3, ok)
    assert decode("response", 0, 3, ok, True).codes is None
    failed = bytearray(ok)
    at = 4 + 4 + 2 + 1 + 4 + 4  # correlation id, topics, the name "t", partitions, Index: the ErrorCode
    failed[at:at + 2] = (6).to_bytes(2, "big")  # NOT_LEADER_OR_FOLLOWER
    assert check("response", 0, 3, bytes(failed))
    assert decode("response", 0, 3, bytes(failed), True).codes == [6]


def test_the_partial_body_holds_what_the_read_path_reads() -> None:
    """The events table, the summary and the connection read a text-mode message's top-level fields from its
    partial body (top-level integers): every promoted key of a TEXT_APIS message there must be one, or tagged
    (a tagged field present makes the writer give up)."""
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(SCHEMA_DIR).glob("*.json"))]
    checked = 0
    for doc in docs:
        if doc.get("apiKey") not in TEXT_APIS:
            continue
        for kind in ("request", "response"):
            for variant in doc[kind]:
                for version in versions_of(variant):
                    root = doc["name"] + kind.capitalize()
                    st_ = resolve_struct(root, variant["fields"], version, is_flexible(variant, version))
                    for f in st_.fields:
                        if f.name in PROMOTED_KEYS or f.name in ("ErrorCode", "Acks"):
                            assert f.kind == "fixed" and f.type_name.startswith(("int", "uint")), (root, version, f)
                    checked += 1
    assert checked > 30


def test_writers_cover_every_version_of_the_text_apis() -> None:
    for key in TEXT_APIS:
        module = accel_module(registry.API_MODULES[key])
        assert module is not None
        assert set(module.REQUEST_TEXT) == set(module.REQUEST)
        assert set(module.RESPONSE_TEXT) == set(module.RESPONSE)
    others = [k for k in registry.API_MODULES if k not in TEXT_APIS]
    assert not any(hasattr(accel_module(registry.API_MODULES[k]), "REQUEST_TEXT") for k in others)
