"""Fuzzing in the test suite: saved hostile inputs replayed, hypothesis fuzzing, and a short atheris run.

* Every input under ``tests/fixtures/hostile/TARGET/`` (hand-made hostile inputs written by
  ``fuzz/hostile_inputs.py`` and inputs minimised from fuzzer findings) goes through the fuzz target
  ``TARGET`` of ``fuzz/targets.py``: no exception, no invariant broken, and quickly.
* Hypothesis feeds random and mutated-seed inputs to every target (runs without atheris).
* ``fuzz/run.py --seconds 1 --fresh`` runs each atheris target for a second (skipped when atheris
  is not installed); the long runs are described in docs/fuzzing.md.
"""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.targets import TARGETS, encode_segment, parse_segments

REPO = Path(__file__).resolve().parents[1]
HOSTILE = REPO / "tests" / "fixtures" / "hostile"
INPUTS = sorted(p for p in HOSTILE.glob("*/*") if p.is_file() and p.parent.name in TARGETS)
#: Seconds one saved input may take (the fuzzers' per-input limit is 10 s; these are all far below).
MAX_SECONDS = 2.0


def test_every_target_has_saved_inputs() -> None:
    assert {p.parent.name for p in INPUTS} == set(TARGETS)


@pytest.mark.parametrize("path", INPUTS, ids=[f"{p.parent.name}/{p.name}" for p in INPUTS])
def test_saved_input(path: Path) -> None:
    started = time.perf_counter()
    TARGETS[path.parent.name](path.read_bytes())
    assert time.perf_counter() - started < MAX_SECONDS


def _seeds(target: str) -> list[bytes]:
    return [p.read_bytes() for p in INPUTS if p.parent.name == target]


def _mutated(target: str) -> st.SearchStrategy[bytes]:
    """Random bytes, and saved inputs with a few bytes overwritten, cut or extended."""
    seeds = _seeds(target)

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(st.sampled_from(seeds)))
        for _ in range(draw(st.integers(0, 6))):
            if data and draw(st.booleans()):
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        cut = draw(st.integers(0, len(data)))
        return bytes(data[:cut]) + draw(st.binary(max_size=64))

    return st.one_of(st.binary(max_size=4096), mutate())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_hypothesis_fuzz(target: str) -> None:
    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_mutated(target))
    def run(data: bytes) -> None:
        TARGETS[target](data)

    run()


def test_segment_script_round_trip() -> None:
    """The seed encoder and the script parser agree (make_corpus.py relies on it)."""
    script = encode_segment(2, 1, 0x18, 123456, 654321, b"payload", 500) + encode_segment(0, 0, 0x02, 7, 0, b"")
    a, b = list(parse_segments(script))
    assert (a.src_port, a.dst_port, a.seq, a.ack, bytes(a.payload), a.flags) == (9092, 40002, 123456, 654321,
                                                                               b"payload", 0x18)
    assert (b.src_port, b.seq, b.flags, b.truncated) == (40000, 7, 0x02, False)


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed")
def test_short_atheris_run() -> None:
    """Every atheris target for a second from an empty corpus plus the saved inputs: no findings."""
    proc = subprocess.run([sys.executable, str(REPO / "fuzz" / "run.py"), "--seconds", "1", "--timeout", "10",
                           "--fresh"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(TARGETS)
    for line in lines:
        name, execs = line.split()[:2]
        assert name in TARGETS and int(execs.replace(",", "")) > 0, line


#: Run in a fresh interpreter: the fuzzers' source finder loads setup.py's COMPILED modules from their .py, then
#: every saved input goes through its target on that source.
_FROM_SOURCE = """
import sys
from pathlib import Path
from fuzz import source_import
modules = source_import.source_modules()
source_import.install(modules)
from fuzz.targets import TARGETS
for path in sorted(Path(sys.argv[1]).glob("*/*")):
    if path.is_file() and path.parent.name in TARGETS:
        TARGETS[path.parent.name](path.read_bytes())
for name in modules:
    __import__(name)
wrong = source_import.check(modules, compiled=False)
assert not wrong, wrong
import decoders.element_budget
assert decoders.element_budget.__file__.endswith(".so"), decoders.element_budget.__file__
print(len(modules))
"""


def test_fuzzers_run_the_compiled_modules_from_source() -> None:
    """What the fuzzers instrument (fuzz/source_import.py): every plain module setup.py compiles, from its .py,
    runs the saved inputs without an exception or a broken invariant; but the element budget, whose extension
    type the compiled fast readers take, stays compiled (from source, they would read its slots as C fields)."""
    from fuzz.source_import import compiled_modules, source_modules

    assert set(compiled_modules()) - set(source_modules()) == {"decoders.element_budget"}
    modules = source_modules()
    assert {"decoders.records", "inspector.tcp.reassembly", "inspector.kafka.pipeline",
            "inspector.capture.file"} <= set(modules)
    assert all(path.is_file() for path in modules.values())
    proc = subprocess.run([sys.executable, "-c", _FROM_SOURCE, str(HOSTILE)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == [str(len(modules))]


class _At:
    def __init__(self, pos: int) -> None:
        self.pos = pos

    def start(self) -> int:
        return self.pos


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.sampled_from([b"\x00", b"\x00\x00\x00\x03", b"\x00\x00\x00\x10", b"\x06\xff\xff\xff", b"\x07",
                                 b"\x00\x12", b"\xff", b"x" * 7]), max_size=40),
       st.binary(max_size=64), st.integers(1, 64))
def test_frame_start_prefilter_skips_only_what_the_per_byte_test_rejects(
        parts: list[bytes], noise: bytes, chunk: int) -> None:
    """The scan's regex jump over impossible frame starts finds exactly what a test at every byte finds."""
    from inspector.kafka.framing import Framer, Verdict

    def plausible(buf: bytes, pos: int) -> int:
        return Verdict.MAYBE if buf[pos + 4:pos + 6] == b"\x00\x12" else Verdict.NO

    frame = struct.pack(">i", 10) + b"\x00\x12" + b"\x00" * 8
    stream = b"".join(parts) + noise + frame + b"".join(reversed(parts))
    events = []
    for prefilter in (True, False):
        f = Framer(plausible, lambda data: data[:2] == b"\x00\x12", max_frame=100 << 20, synced=False, min_frame=4,
                   scan_window=6)
        if not prefilter:  # every position goes through the per-byte test
            f._top = -1
            f._maybe_start = lambda buf, pos: _At(pos)  # type: ignore[assignment,return-value]
        got = []
        for i in range(0, len(stream), chunk):
            got += f.data(0.0, stream[i:i + chunk])
        got += f.finish(0.0)
        events.append([(type(e).__name__, e.offset, getattr(e, "length", None)) for e in got])
    assert events[0] == events[1]
    assert any(e[0] == "Frame" for e in events[0]), events[0]  # the real frame is found, whatever the chunks
