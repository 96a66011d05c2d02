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

from contract.apis import ApiKey
from decoders._runtime import MAX_ELEMENTS
from decoders.api import DecodedMessage, decode_response, decode_response_exact, hit_elements_limit
from decoders.generated import registry

#: Kafka's error codes run from -1 (UNKNOWN_SERVER_ERROR) upward; leave room for new ones.
MIN_ERROR, MAX_ERROR = -1, 200
MAX_THROTTLE_MS = 24 * 3600 * 1000


@dataclass(frozen=True)  # compiled, an extension type (guess.pxd); from source, the slots below
class Guess:
    __slots__ = ("message", "candidates", "confidence")

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


#: APIs that make up nearly all traffic: a small prior when the bytes fit several layouts.
COMMON_APIS = frozenset({
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP,
    ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS, ApiKey.INIT_PRODUCER_ID, ApiKey.DESCRIBE_CONFIGS})


def _score(msg: DecodedMessage) -> float:
    """How much the decode looks like real data: readable strings count for, garbled ones against."""
    total = 0.0

    def walk(value: Any) -> None:
        nonlocal total
        if isinstance(value, dict):
            for item in value.values():
                total += 0.01
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and value:
            total += 3.0 if value.isprintable() and "\\x" not in value else -5.0

    walk(msg.body)
    if msg.api_key in COMMON_APIS:
        total += 1.0
    return total


def guess_response(
    frame: bytes, preferred: Iterable[tuple[int, int]] = (), api_keys: Iterable[int] | None = None,
    max_elements: int = MAX_ELEMENTS,
) -> Guess:
    """Try every known (api key, version); ``preferred`` ones (seen on the connection) rank first.
    Each candidate decode has the element budget ``max_elements`` (see ``decode_request``)."""
    preferred_set = set(preferred)
    keys = sorted(registry.API_NAMES) if api_keys is None else sorted(api_keys)
    found: list[tuple[int, float, int, DecodedMessage]] = []
    over_budget: list[tuple[int, int]] = []  # candidates whose decode stopped at the element budget
    for key in keys:
        lo, hi = registry.VERSION_RANGES[key]
        for version in range(lo, hi + 1):
            if (key, version) not in registry.RESPONSE_HEADER_VERSION:
                continue
            # Exact decodes only: most layouts fail, and their error detail is not needed.
            msg = decode_response_exact(frame, key, version, max_elements, over_budget)
            if msg is not None and _plausible(msg.body):
                rank = 0 if (key, version) in preferred_set else 1
                found.append((rank, -_score(msg), key, msg))
    if not found:
        return _over_budget(frame, over_budget, preferred_set, max_elements)
    found.sort(key=lambda item: (item[0], item[1], item[2], item[3].api_version or 0))
    best = found[0][3]
    assert best.api_key is not None and best.api_version is not None
    best = decode_response(frame, best.api_key, best.api_version, max_elements=max_elements)
    candidates = tuple((m.api_key or 0, m.api_version or 0) for _, _, _, m in found)
    return Guess(best, candidates, _confidence(found))


#: Candidates stopped by the element budget decoded again (with the error detail) to confirm it: a few, since
#: resynchronisation asks this of every candidate frame start (hostile data included).
MAX_BUDGET_CONFIRMS = 4


def _over_budget(frame: bytes, candidates: list[tuple[int, int]], preferred: set[tuple[int, int]],
                 max_elements: int) -> Guess:
    """No candidate decodes within the element budget: when some stopped only at that budget (everything
    before their big array decoded), the response is reported as such (its status names the array and
    ``--max-elements``) rather than as undecodable. Candidates the connection used rank first."""
    ranked = sorted(candidates, key=lambda kv: (kv not in preferred, kv[0] not in COMMON_APIS, kv))
    for key, version in ranked[:MAX_BUDGET_CONFIRMS]:
        msg = decode_response(frame, key, version, max_elements=max_elements)
        if hit_elements_limit(msg):
            keys = {k for k, _ in ranked}
            confidence = 1.0 / len(keys) + (0.25 if (key, version) in preferred else 0.0)
            return Guess(msg, tuple(ranked), round(min(1.0, confidence), 3))
    return Guess(None, (), 0.0)


def _confidence(found: list[tuple[int, float, int, DecodedMessage]]) -> float:
    """1.0 for a single layout; less the more other APIs fit about as well as the best one.

    Versions of the same API that decode alike do not lower it much: the API is what matters.
    """
    best_rank, best_neg_score, best_key, _ = found[0]
    rivals = {key for rank, neg_score, key, _ in found
              if key != best_key and rank == best_rank and (neg_score - best_neg_score) < 3.0}
    same_api_versions = sum(1 for _, _, key, _ in found if key == best_key)
    confidence = 1.0 / (1 + len(rivals))
    if same_api_versions > 1:
        confidence *= 0.9
    if best_rank == 0:  # the connection already used this api key and version
        confidence = min(1.0, confidence + 0.25)
    return round(confidence, 3)
