"""The compiled decoders (decoders/accel) against the pure-Python ones they are generated beside.

The compiled readers are what ``decoders.api`` runs; the pure readers are the reference. On every input both
must agree: the same value and end offset, or the same failure (status kind, text, field path and offset, and
what is left of the element budget), as a frame is decoded once.
Inputs: the independent encoders' round-trip vectors whole, cut at many points and with trailing
garbage; frames from the real captures; random bytes after valid headers; the embedded and header
structures with random bytes.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoders import _runtime as rt
from decoders import api
from decoders.element_budget import ElementBudget
from decoders.generated import registry
from decoders.records import Records
from tests.decoders import vectors_all as VA
from tests.frames import valid_header

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_compiled_decoders_are_built_and_current() -> None:
    """`make setup` builds them from the model the plain readers were rendered from (the same BUILD_HASH): a
    regenerated model with an old build fails here, not silently at run time."""
    assert api.accelerated()
    assert set(registry.DATA_MODULES.values()) <= registry.ACCEL_MODULES  # headers, embedded protocols
    assert {registry.API_MODULES[k] for k in (0, 1, 3, 11, 14, 18)} <= registry.ACCEL_MODULES
    for name in list(registry.API_MODULES.values()) + list(registry.DATA_MODULES.values()):
        fast = api.accel_module(name)
        if name not in registry.ACCEL_MODULES:
            assert fast is None and not hasattr(api._module(name), "BUILD_HASH")  # plain readers only
            continue
        assert fast is not None
        assert fast.BUILD_HASH == api._module(name).BUILD_HASH, f"{name}: stale build, run `make setup`"


def test_apis_whose_readers_are_not_compiled_decode_with_the_plain_readers() -> None:
    """CreateTopics (an admin API) has no compiled readers: its fast path is the plain reader itself."""
    assert "api_019_create_topics" not in registry.ACCEL_MODULES
    entry = api._readers(19, 7, "request")
    assert entry is not None and entry.body is api._module("api_019_create_topics").REQUEST[7] and entry.text is None


def plain(value: Any) -> Any:
    if isinstance(value, Records):
        return ("records", bytes(value.data))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def outcome(header: Any, body: Any, frame: bytes, budget: int = rt.MAX_ELEMENTS) -> tuple[Any, ...]:
    left = ElementBudget(budget)
    try:
        h, p = header(frame, 0, left)
        v, end = body(frame, p, left)
    except rt.DecodeError as err:  # failing is one of the two outcomes compared: where, and why
        return ("fails", err.kind, err.describe(), err.path, err.offset, left.left)
    return (plain(h), plain(v), end, left.left)


def readers(kind: str, api_key: int, version: int) -> tuple[rt.Reader, rt.Reader, rt.Reader, rt.Reader] | None:
    """(plain header, plain body, compiled header, compiled body) readers, or None for an API whose readers are
    not compiled."""
    body_name = registry.API_MODULES[api_key]
    fast_body = api.accel_module(body_name)
    if fast_body is None:
        return None
    versions = registry.REQUEST_HEADER_VERSION if kind == "request" else registry.RESPONSE_HEADER_VERSION
    header_name = registry.DATA_MODULES["RequestHeader" if kind == "request" else "ResponseHeader"]
    header_version = versions[(api_key, version)]
    fast_header = api.accel_module(header_name)
    assert fast_header is not None
    body = api._module(body_name).REQUEST if kind == "request" else api._module(body_name).RESPONSE
    fast = fast_body.REQUEST if kind == "request" else fast_body.RESPONSE
    return (api._module(header_name).VERSIONS[header_version], body[version],
            fast_header.VERSIONS[header_version], fast[version])


def assert_same(kind: str, api_key: int, version: int, frame: bytes, budget: int = rt.MAX_ELEMENTS) -> None:
    pair = readers(kind, api_key, version)
    if pair is None:
        return  # an API whose readers are not compiled: nothing to compare
    pure = outcome(pair[0], pair[1], frame, budget)
    fast = outcome(pair[2], pair[3], frame, budget)
    assert fast == pure, (kind, api_key, version, budget, frame.hex())


@cache
def vectors() -> list[VA.Vector]:
    return VA.all_vectors()


def test_vectors_whole_cut_and_with_trailing_bytes() -> None:
    rng = random.Random(7)
    checked = 0
    for vec in vectors():
        frame = vec.frame
        cuts = range(len(frame)) if len(frame) <= 160 else sorted(rng.sample(range(len(frame)), 160))
        for cut in [len(frame), *cuts]:
            assert_same(vec.kind, vec.api_key, vec.version, frame[:cut])
        assert_same(vec.kind, vec.api_key, vec.version, frame + b"\x00\x01\xff")
        checked += 1
    assert checked > 1000


def test_vectors_under_small_element_budgets() -> None:
    """Both spend the element budget alike: the same elements left, or both over it."""
    for vec in vectors():
        for budget in (0, 1, 2, 5, 20):
            assert_same(vec.kind, vec.api_key, vec.version, vec.frame, budget)


def test_vectors_with_corrupted_bytes() -> None:
    rng = random.Random(11)
    for vec in vectors():
        frame = bytearray(vec.frame)
        for _ in range(8):
            if len(frame) <= 8:
                break
            mutated = bytearray(frame)
            pos = rng.randrange(8, len(frame))
            mutated[pos] = rng.choice((0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            assert_same(vec.kind, vec.api_key, vec.version, bytes(mutated))


KNOWN = sorted((kind, key, v) for kind, table in (("request", registry.REQUEST_HEADER_VERSION),
                                                  ("response", registry.RESPONSE_HEADER_VERSION))
               for (key, v) in table)


@SETTINGS
@given(case=st.sampled_from(KNOWN), tail=st.binary(max_size=300))
def test_random_bytes_after_a_valid_header(case: tuple[str, int, int], tail: bytes) -> None:
    kind, key, version = case
    versions = registry.REQUEST_HEADER_VERSION if kind == "request" else registry.RESPONSE_HEADER_VERSION
    head = valid_header(kind, key, version, versions[(key, version)])
    assert_same(kind, key, version, head + tail)


DATA = sorted((name, v) for name, module in registry.DATA_MODULES.items()
              for v in api._module(module).VERSIONS)


@SETTINGS
@given(case=st.sampled_from(DATA), raw=st.binary(max_size=200))
def test_embedded_and_header_structures(case: tuple[str, int], raw: bytes) -> None:
    name, version = case
    module = registry.DATA_MODULES[name]
    pure = api._module(module).VERSIONS[version]
    fast = api.accel_module(module).VERSIONS[version]  # type: ignore[union-attr]
    assert outcome(lambda b, p, budget: ({}, 0), fast, raw) == outcome(lambda b, p, budget: ({}, 0), pure, raw)


def test_real_capture_frames() -> None:
    """Every frame of the bundled captures and the shared real captures, through both readers."""
    from tests.inspector.capture_frames import capture_frames

    seen = 0
    for kind, api_key, version, frame in capture_frames():
        if api.registry.REQUEST_HEADER_VERSION.get((api_key, version)) is None:
            continue
        assert_same(kind, api_key, version, frame)
        seen += 1
    assert seen > 1000
