"""A flat list of valid frames, one per kio case, kafka-python case and (spec-conformant) old case, for the
property tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.decoders.vectors import DetSource
from tests.decoders.vectors_kio import kio_cases, kio_frame, kio_instance
from tests.decoders.vectors_kp import (
    OLD_ENCODER_BUGS,
    kp_cases,
    kp_frame,
    kp_message,
    old_cases,
    old_frame,
    old_message,
)

# --------------------------------------------------------------------------------------------
# A flat list of valid frames for property tests
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vector:
    id: str
    kind: str
    api_key: int
    version: int
    frame: bytes


def all_vectors() -> list[Vector]:
    """One deterministic frame per kio case, kafka-python case and (spec-conformant) old case."""
    out = [Vector(f"kio-{c.id}", c.kind, c.api_key, c.version, kio_frame(kio_instance(c.cls)))
           for c in kio_cases()]
    out += [Vector(f"kp-{c.id}", c.kind, c.api_key, c.version,
                   kp_frame(kp_message(c.cls, c.version, DetSource())))
            for c in kp_cases()]
    out += [Vector(f"old-{c.id}", c.kind, c.api_key, c.version, old_frame(old_message(c.cls, DetSource())))
            for c in old_cases() if (c.api_key, c.version, c.kind) not in OLD_ENCODER_BUGS]
    return out
