"""Every request and response version kafka-python can encode, decoded by ``decoders``.

Two encoders in kafka-python 3.x:

* the JSON-driven ``ApiMessage`` classes (``kafka.protocol.{admin,consumer,metadata,producer}``,
  ``kafka.protocol.sasl``), one test per class and version in the class's validVersions;
* the old ``Struct`` classes in ``kafka.protocol.old``, one test per ``<Name>_v<N>`` class.

Each test encodes a deterministic message (every field non-default, every array of two) and
``KAFKA_PYTHON_EXAMPLES`` hypothesis-drawn messages, with header, and compares every field.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.decoders import vectors as V
from tests.decoders import vectors_kp as VP

EXAMPLES = int(os.environ.get("KAFKA_PYTHON_EXAMPLES", "8"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NEW_CASES = VP.kp_cases()
OLD_CASES = VP.old_cases()
OLD_GOOD = [c for c in OLD_CASES if (c.api_key, c.version, c.kind) not in VP.OLD_ENCODER_BUGS]
OLD_BAD = [c for c in OLD_CASES if (c.api_key, c.version, c.kind) in VP.OLD_ENCODER_BUGS]

CORRELATION_IDS = st.integers(-(2**31), 2**31 - 1)
CLIENT_IDS = st.text(max_size=16)


def test_case_counts() -> None:
    assert len(NEW_CASES) >= 450, len(NEW_CASES)
    assert len({(c.api_key, c.kind) for c in NEW_CASES}) >= 100
    assert len(OLD_CASES) >= 270, len(OLD_CASES)
    assert len({c.id for c in NEW_CASES}) == len(NEW_CASES)
    assert len({c.id for c in OLD_CASES}) == len(OLD_CASES)


# --- JSON-driven ApiMessage classes ----------------------------------------------------------


def new_roundtrip(case: VP.KpCase, src: V.DetSource | V.HypSource, correlation_id: int, client_id: str) -> None:
    msg = VP.kp_message(case.cls, case.version, src)
    frame = VP.kp_frame(msg, correlation_id, client_id)
    decoded = V.decode(frame, case.kind, case.api_key, case.version)
    V.check_message(decoded, frame, case.kind, case.api_key, case.version, correlation_id, client_id)
    VP.kp_compare(case.cls._struct, msg, decoded.body, case.version, case.api_key)


@pytest.mark.parametrize("case", NEW_CASES, ids=[c.id for c in NEW_CASES])
def test_kafka_python_roundtrip(case: VP.KpCase) -> None:
    if not V.HAVE_RECORDS and VP.kp_has_records(case.cls, case.version):
        pytest.skip(V.RECORDS_MISSING)
    new_roundtrip(case, V.DetSource(), 0x0A0B0C0D, "kafka-python-client")

    @SETTINGS
    @given(data=st.data(), correlation_id=CORRELATION_IDS, client_id=CLIENT_IDS)
    def generated(data: Any, correlation_id: int, client_id: str) -> None:
        new_roundtrip(case, V.HypSource(data), correlation_id, client_id)

    generated()


# --- old Struct classes ----------------------------------------------------------------------


def old_roundtrip(case: VP.OldCase, src: V.DetSource | V.HypSource, correlation_id: int, client_id: str) -> None:
    msg = VP.old_message(case.cls, src)
    frame = VP.old_frame(msg, correlation_id, client_id)
    decoded = V.decode(frame, case.kind, case.api_key, case.version)
    V.check_message(decoded, frame, case.kind, case.api_key, case.version, correlation_id, client_id)
    values = tuple(getattr(msg, name) for name in case.cls.SCHEMA.names)
    VP.old_compare(case.cls.SCHEMA, values, decoded.body, (case.api_key, case.kind))


@pytest.mark.parametrize("case", OLD_GOOD, ids=[c.id for c in OLD_GOOD])
def test_kafka_python_old_roundtrip(case: VP.OldCase) -> None:
    if not V.HAVE_RECORDS and any(name == "records" for name in _all_names(case.cls.SCHEMA)):
        pytest.skip(V.RECORDS_MISSING)
    old_roundtrip(case, V.DetSource(), 0x11223344, "kafka-python-old")

    @SETTINGS
    @given(data=st.data(), correlation_id=CORRELATION_IDS, client_id=CLIENT_IDS)
    def generated(data: Any, correlation_id: int, client_id: str) -> None:
        old_roundtrip(case, V.HypSource(data), correlation_id, client_id)

    generated()


@pytest.mark.parametrize("case", OLD_BAD, ids=[c.id for c in OLD_BAD])
def test_kafka_python_old_encoder_bug_is_refused(case: VP.OldCase) -> None:
    """These old classes write frames that break Kafka's spec (see ``OLD_ENCODER_BUGS``): the
    decoder must report that with a status naming where it stopped, and not raise."""
    msg = VP.old_message(case.cls, V.DetSource())
    frame = VP.old_frame(msg)
    decoded = V.decode(frame, case.kind, case.api_key, case.version)
    assert decoded.status != "ok", f"{case.id}: {VP.OLD_ENCODER_BUGS[(case.api_key, case.version, case.kind)]}"
    assert decoded.status.startswith(("truncated", "invalid", "header", "trailing")), decoded.status
    assert decoded.error_offset is not None and 0 <= decoded.error_offset <= len(frame)


def _all_names(schema: Any) -> list[str]:
    names = []
    for name, tp in zip(schema.names, schema.fields, strict=True):
        names.append(name)
        inner = getattr(tp, "array_of", tp)
        if hasattr(inner, "names"):
            names.extend(_all_names(inner))
    return names
