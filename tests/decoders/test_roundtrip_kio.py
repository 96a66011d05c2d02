"""Every request and response schema kio has, written by kio, decoded by ``decoders``.

One test per (api key, version, direction): a deterministic instance with every field set to a
non-default value, then ``KIO_EXAMPLES`` hypothesis instances (``st.from_type``), each with a
random correlation id and client id. Field-by-field comparison is in ``vectors.kio_compare``.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoders.generated import registry
from tests.decoders import vectors as V
from tests.decoders import vectors_kio as VK

CASES = VK.kio_cases()
EXAMPLES = int(os.environ.get("KIO_EXAMPLES", "8"))

CORRELATION_IDS = st.integers(-(2**31), 2**31 - 1)
CLIENT_IDS = st.none() | st.text(max_size=16)


def roundtrip(instance: Any, correlation_id: int = 0x01020304, client_id: str | None = "kio-client") -> None:
    cls = type(instance)
    kind = VK.kio_kind(cls)
    api_key, version = int(cls.__api_key__), int(cls.__version__)
    frame = VK.kio_frame(instance, correlation_id, client_id)
    msg = V.decode(frame, kind, api_key, version)
    V.check_message(msg, frame, kind, api_key, version, correlation_id, client_id)
    VK.kio_compare(instance, msg.body)


def test_case_count() -> None:
    # kio 0.6.5 models 89 API keys; both directions of every version.
    assert len({c.api_key for c in CASES}) >= 89
    assert len(CASES) >= 600
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kio_roundtrip(case: VK.KioCase) -> None:
    assert case.version in range(registry.VERSION_RANGES[case.api_key][0],
                                 registry.VERSION_RANGES[case.api_key][1] + 1), "version unknown to the decoders"
    if not V.HAVE_RECORDS and VK.kio_has_records(case.cls):
        pytest.skip(V.RECORDS_MISSING)
    roundtrip(VK.kio_instance(case.cls))

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much, HealthCheck.large_base_example])
    @given(instance=st.from_type(case.cls), correlation_id=CORRELATION_IDS, client_id=CLIENT_IDS)
    def generated(instance: Any, correlation_id: int, client_id: str | None) -> None:
        roundtrip(instance, correlation_id, client_id)

    generated()
