"""The compiled decoders (decoders/accel) against the plain Python readers the other renderer makes of the same model.

The compiled readers are what ``decoders.api`` runs; the plain readers, rendered in the tests
(``tests/decoders/plain_readers.py``), are the reference. On every input both
must agree: the same value and end offset, or the same failure (status kind, text, field path and offset, and
what is left of the element budget), as a frame is decoded once.
Inputs: the independent encoders' round-trip vectors whole, cut at many points and with trailing
garbage; frames from the real captures; random bytes after valid headers; the embedded and header
structures with random bytes.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoders import _runtime as rt
from decoders import api
from decoders.element_budget import ElementBudget
from decoders.generated import registry
from decoders.generated_modules import accel_module
from decoders.records import Records
from tests.decoders import vectors_all as VA
from tests.decoders.plain_readers import plain_module
from tests.frames import valid_header

REPO = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_each_layout_has_one_reader() -> None:
    """The hot APIs' and every header's and embedded structure's readers are compiled and ship alone (their plain
    readers are rendered only here, as the reference); the other APIs' are plain and ship alone. (That each
    extension is built from the ``.pyx`` there now: tests/inspector/test_compiled.py.)"""
    assert set(registry.DATA_MODULES.values()) <= registry.ACCEL_MODULES  # headers, embedded protocols
    assert {registry.API_MODULES[k] for k in (0, 1, 3, 11, 14, 18)} <= registry.ACCEL_MODULES
    generated = REPO / "decoders" / "generated"
    for name in list(registry.API_MODULES.values()) + list(registry.DATA_MODULES.values()):
        fast = accel_module(name)
        compiled = name in registry.ACCEL_MODULES
        assert (fast is not None) == compiled
        assert (generated / f"{name}.py").exists() != compiled, name
        assert (REPO / "decoders" / "accel" / f"{name}.pyx").exists() == compiled, name


def test_apis_whose_readers_are_not_compiled_decode_with_the_plain_readers() -> None:
    """CreateTopics (an admin API) has no compiled readers: its fast path is the plain reader itself."""
    assert "api_019_create_topics" not in registry.ACCEL_MODULES
    entry = api._readers(19, 7, "request")
    assert entry is not None and entry.body is plain_module("api_019_create_topics").REQUEST[7] and entry.text is None


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
    fast_body = accel_module(body_name)
    if fast_body is None:
        return None
    versions = registry.REQUEST_HEADER_VERSION if kind == "request" else registry.RESPONSE_HEADER_VERSION
    header_name = registry.DATA_MODULES["RequestHeader" if kind == "request" else "ResponseHeader"]
    header_version = versions[(api_key, version)]
    fast_header = accel_module(header_name)
    assert fast_header is not None
    body = plain_module(body_name).REQUEST if kind == "request" else plain_module(body_name).RESPONSE
    fast = fast_body.REQUEST if kind == "request" else fast_body.RESPONSE
    return (plain_module(header_name).VERSIONS[header_version], body[version],
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
              for v in plain_module(module).VERSIONS)


@SETTINGS
@given(case=st.sampled_from(DATA), raw=st.binary(max_size=200))
def test_embedded_and_header_structures(case: tuple[str, int], raw: bytes) -> None:
    name, version = case
    module = registry.DATA_MODULES[name]
    pure = plain_module(module).VERSIONS[version]
    fast = accel_module(module).VERSIONS[version]  # type: ignore[union-attr]
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


def quiet_outcome(quiet: Any, raw: bytes, budget: int) -> tuple[Any, ...]:
    """An embedded structure read by a compiled quiet entry: its value, or its failure's status as
    ``decoders.embedded`` takes it (``_where.last_failure``)."""
    from decoders.accel import _where  # type: ignore[attr-defined]

    left = ElementBudget(budget)
    read = quiet(raw, 0, left)
    if read is None:
        return ("fails", *_where.last_failure(), left.left)
    return (plain(read[0]), read[1], left.left)


def raising_outcome(reader: rt.Reader, raw: bytes, budget: int) -> tuple[Any, ...]:
    left = ElementBudget(budget)
    try:
        value, end = reader(raw, 0, left)
    except rt.DecodeError as err:
        return ("fails", err.describe(), rt.spent_budget(err), left.left)
    return (plain(value), end, left.left)


def _subscription_v3() -> bytes:
    """A ConsumerProtocolSubscription v3 body (after its version): topics, user data, owned partitions, generation
    and rack, some names not ASCII."""
    def string(text: str) -> bytes:
        raw = text.encode()
        return len(raw).to_bytes(2, "big") + raw

    topics = ["orders", "paiements-é", "𝄞-events"]
    owned = b"".join(string(t) + (2).to_bytes(4, "big") + (0).to_bytes(4, "big") + (7).to_bytes(4, "big")
                     for t in topics[:2])
    return (len(topics).to_bytes(4, "big") + b"".join(string(t) for t in topics) + (3).to_bytes(4, "big") + b"abc"
            + (2).to_bytes(4, "big") + owned + (9).to_bytes(4, "big") + string("rack-1"))


@SETTINGS
@given(case=st.sampled_from(DATA), raw=st.binary(max_size=200), budget=st.sampled_from((0, 3, rt.MAX_ELEMENTS)))
def test_quiet_entries_fail_with_the_plain_readers_status(case: tuple[str, int], raw: bytes, budget: int) -> None:
    """An embedded structure's quiet entry (``QUIET_VERSIONS``: None on failure, no exception made) gives what the
    plain reader gives: the same value, or the same status text and budget stop (``decoders.embedded`` writes
    these), with the same elements left."""
    name, version = case
    module = registry.DATA_MODULES[name]
    quiet = accel_module(module).QUIET_VERSIONS[version]  # type: ignore[union-attr]
    pure = plain_module(module).VERSIONS[version]
    expected = raising_outcome(pure, raw, budget)
    assert quiet_outcome(quiet, raw, budget) == expected


def test_quiet_entries_on_a_subscription_cut_and_corrupted() -> None:
    """Every cut of a valid ConsumerProtocolSubscription v3 and every byte of it overwritten (garbage counts,
    lengths, names that are not UTF-8): the quiet entry and the plain reader agree, and the raising compiled entry
    too."""
    module = registry.DATA_MODULES["ConsumerProtocolSubscription"]
    fast = accel_module(module)
    assert fast is not None
    pure = plain_module(module).VERSIONS[3]
    body = _subscription_v3()
    inputs = [body[:cut] for cut in range(len(body) + 1)]
    inputs += [body[:i] + bytes([b]) + body[i + 1:] for i in range(len(body)) for b in (0x00, 0x7F, 0x80, 0xFF)]
    inputs += [body[:i] + b"\x7f\xff\xff\xff" + body[i + 4:] for i in range(len(body) - 3)]
    no_header = lambda b, p, budget: ({}, 0)  # noqa: E731
    fails = 0
    for raw in inputs:
        for budget in (2, rt.MAX_ELEMENTS):
            expected = raising_outcome(pure, raw, budget)
            assert quiet_outcome(fast.QUIET_VERSIONS[3], raw, budget) == expected, raw.hex()
            assert outcome(no_header, fast.VERSIONS[3], raw, budget) == outcome(no_header, pure, raw, budget)
            fails += expected[0] == "fails"
    assert fails > len(inputs)  # most fail, some at the budget (the budget of 2)


def test_no_reader_nests_deeper_than_a_failure_notes() -> None:
    """A failure notes its field path in a fixed array (``_where.MAX_PATH`` fields): the deepest chain of compiled
    readers calling one another, plus the failing field, fits in it."""
    import re
    from pathlib import Path

    from decoders.accel import _where  # type: ignore[attr-defined]

    deepest = 0
    for pyx in Path(api.__file__).parent.joinpath("accel").glob("[!_]*.pyx"):
        calls: dict[str, set[str]] = {}
        current = None
        for line in pyx.read_text().splitlines():
            head = re.match(r"cdef object (_f\d+)\(", line)
            if head:
                current = calls.setdefault(head.group(1), set())
            elif line and not line.startswith(" "):
                current = None
            elif current is not None:
                current.update(re.findall(r"\b(_f\d+)\(", line))

        @cache
        def depth(fn: str, calls: dict[str, set[str]] = calls) -> int:
            return 1 + max((depth(sub) for sub in calls[fn]), default=0)

        deepest = max([deepest, *(depth(fn) for fn in calls)])
    assert 3 <= deepest <= _where.MAX_PATH
