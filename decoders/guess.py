"""Decode a response whose request is not in the capture.

A response carries only its correlation id, so every (api key, version) is a candidate. A
candidate survives when it consumes the frame exactly and its values are plausible (error codes
in Kafka's range, throttle times and counts sane). Candidates the connection already used are
preferred. The result names every surviving candidate and a confidence, instead of giving up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from decoders.api import DecodedMessage, decode_response
from decoders.generated import registry

#: Kafka's error codes run from -1 (UNKNOWN_SERVER_ERROR) upward; leave room for new ones.
MIN_ERROR, MAX_ERROR = -1, 200
MAX_THROTTLE_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class Guess:
    message: DecodedMessage | None  # the best candidate's decode, or None
    candidates: tuple[tuple[int, int], ...]  # every surviving (api key, version), best first
    confidence: float  # 0..1


def _plausible(value: Any, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, int) and not isinstance(item, bool):
                if key == "ErrorCode" and not MIN_ERROR <= item <= MAX_ERROR:
                    return False
                if key == "ThrottleTimeMs" and not 0 <= item <= MAX_THROTTLE_MS:
                    return False
            elif isinstance(item, (dict, list)) and not _plausible(item, depth + 1):
                return False
        return True
    if isinstance(value, list):
        return all(_plausible(item, depth + 1) for item in value if isinstance(item, (dict, list)))
    return True


def _score(msg: DecodedMessage) -> int:
    """More decoded structure is more evidence: count the fields that carried something."""
    def walk(value: Any) -> int:
        if isinstance(value, dict):
            return sum(1 + walk(v) for v in value.values())
        if isinstance(value, list):
            return sum(walk(v) for v in value)
        return 0
    return walk(msg.body)


def guess_response(
    frame: bytes, preferred: Iterable[tuple[int, int]] = (), api_keys: Iterable[int] | None = None
) -> Guess:
    """Try every known (api key, version); ``preferred`` ones (seen on the connection) rank first."""
    preferred_set = set(preferred)
    keys = sorted(registry.API_NAMES) if api_keys is None else sorted(api_keys)
    found: list[tuple[int, int, int, DecodedMessage]] = []
    for key in keys:
        lo, hi = registry.VERSION_RANGES[key]
        for version in range(lo, hi + 1):
            if (key, version) not in registry.RESPONSE_HEADER_VERSION:
                continue
            msg = decode_response(frame, key, version, postprocess=False)
            if msg.ok and msg.body_version is None and _plausible(msg.body):
                rank = 0 if (key, version) in preferred_set else 1
                found.append((rank, -_score(msg), key, msg))
    if not found:
        return Guess(None, (), 0.0)
    found.sort(key=lambda item: (item[0], item[1], item[2], item[3].api_version or 0))
    best = found[0][3]
    assert best.api_key is not None and best.api_version is not None
    best = decode_response(frame, best.api_key, best.api_version)
    candidates = tuple((m.api_key or 0, m.api_version or 0) for _, _, _, m in found)
    top_rank = [f for f in found if f[0] == found[0][0]]
    confidence = 1.0 / len(top_rank)
    if found[0][0] == 0:
        confidence = min(1.0, confidence * 1.5)
    elif len(found) > 1:
        # Several wire-compatible layouts; they usually differ only in versions of one API.
        same_api = {m.api_key for _, _, _, m in found}
        confidence = 1.0 / (len(same_api) + 1) if len(same_api) > 1 else 0.5
    return Guess(best, candidates, round(confidence, 3))
