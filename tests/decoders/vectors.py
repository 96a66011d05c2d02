"""Round-trip vectors made by encoders that are independent of ``decoders``.

Two encoders write the frames:

* kio (Aiven): one frozen dataclass per API key, version and direction (``kio.schema``), written
  with ``kio.serial.entity_writer``; values come from hypothesis (``st.from_type``, kio registers
  strategies for its primitive types) or from :func:`kio_instance`, which fills every field with a
  deterministic non-default value.
* kafka-python: the JSON-driven ``ApiMessage`` classes of kafka-python 3.x and the old
  ``Struct``-based ``kafka.protocol.old`` classes; values come from :class:`DetSource` or from a
  hypothesis ``st.data()`` (:class:`HypSource`).

The expected values always come from the encoder's own objects; the decoder under test is only
ever the thing being checked. Field names are matched by converting Kafka's CamelCase to the
encoder's snake_case (:func:`snake`), plus the explicit renames and layout equivalences listed in
:data:`KIO_RENAMES`, :data:`KP_RENAMES`, :data:`OLD_RENAMES`, :data:`OLD_WRAPPED` and
:data:`OLD_INLINED`; every field on both sides must be matched, and a field missing from the decoded
dict is only accepted for a tagged field the encoder left at its default (and so did not write).

This module: the checks shared by both encoders and the value sources; kio's vectors are in vectors_kio.py,
kafka-python's (new and old classes) in vectors_kp.py, the flat list for property tests in vectors_all.py.
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

from decoders import DecodedMessage, decode_request, decode_response

# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


#: Keys that ``decoders.embedded`` adds next to raw fields; never part of the wire format.
POSTPROCESS_KEYS = frozenset({
    "MetadataDecoded", "AssignmentDecoded", "MemberMetadataDecoded", "MemberAssignmentDecoded",
    "RequestDataDecoded", "RequestPrincipalDecoded", "ClientHostAddressDecoded", "ResponseDataDecoded",
})


try:  # the generated code imports decoders.records lazily, only for `records` fields
    import decoders.records  # noqa: F401

    HAVE_RECORDS = True
except ImportError:
    HAVE_RECORDS = False


RECORDS_MISSING = ("decoders.records does not exist yet: `records` fields cannot be decoded, so "
                   "messages that carry them are not compared")


def snake(name: str) -> str:
    """Kafka's CamelCase field name in snake_case, as kio and kafka-python spell it:
    ``ThrottleTimeMs`` -> ``throttle_time_ms``, ``KRaftVersion`` -> ``k_raft_version``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def kafka_uuid(value: uuid.UUID | None) -> str:
    """Kafka's Uuid.toString() (URL-safe base64, no padding); None is written as the zero UUID."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def records_view(obj: Any) -> bytes | None:
    """The raw bytes behind a ``decoders.records.Records`` object (its ``data``), if it has them."""
    raw = getattr(obj, "data", None)
    return bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else None


def check_records(expected: bytes | None, ours: Any, path: str) -> None:
    """A ``records`` field: compare the length and the raw bytes (not the record contents)."""
    if expected is None:
        assert ours is None, f"{path}: expected null records, got {ours!r}"
        return
    assert ours is not None, f"{path}: expected {len(expected)} bytes of records, got null"
    assert len(ours) == len(expected), f"{path}: records length {len(ours)} != {len(expected)}"
    assert records_view(ours) == bytes(expected), f"{path}: records bytes differ"


def check_int(expected: int, ours: Any, path: str) -> None:
    assert isinstance(ours, int) and not isinstance(ours, bool), f"{path}: expected int {expected}, got {ours!r}"
    assert ours == int(expected), f"{path}: {ours!r} != {int(expected)!r}"


def check_scalar(expected: Any, ours: Any, path: str) -> None:
    if isinstance(expected, bool):
        assert isinstance(ours, bool) and ours == expected, f"{path}: {ours!r} != {expected!r}"
    elif isinstance(expected, int):
        check_int(expected, ours, path)
    elif isinstance(expected, float):
        assert isinstance(ours, float) and ours == expected, f"{path}: {ours!r} != {expected!r}"
    elif isinstance(expected, str):
        assert isinstance(ours, str) and ours == expected, f"{path}: {ours!r} != {expected!r}"
    elif isinstance(expected, bytes | bytearray | memoryview):
        assert isinstance(ours, bytes) and ours == bytes(expected), f"{path}: {ours!r} != {bytes(expected)!r}"
    elif expected is None:
        assert ours is None, f"{path}: expected null, got {ours!r}"
    else:  # pragma: no cover - a new type in an encoder
        raise AssertionError(f"{path}: no comparison for {type(expected).__name__}")


def check_message(msg: DecodedMessage, frame: bytes, kind: str, api_key: int, version: int,
                  correlation_id: int, client_id: str | None) -> None:
    """The envelope of a decoded message: status, size, header."""
    assert msg.status == "ok", (f"{kind} {api_key} v{version}: status {msg.status!r} "
                                f"(path {msg.error_path}, offset {msg.error_offset}) frame={frame.hex()}")
    assert msg.kind == kind
    assert msg.api_key == api_key and msg.api_version == version
    assert msg.correlation_id == correlation_id
    assert msg.size == len(frame)
    assert msg.body is not None
    assert msg.header is not None and msg.header["CorrelationId"] == correlation_id
    if kind == "request":
        assert msg.header["RequestApiKey"] == api_key
        assert msg.header["RequestApiVersion"] == version
        assert msg.client_id == client_id, f"client id {msg.client_id!r} != {client_id!r}"


def decode(frame: bytes, kind: str, api_key: int, version: int) -> DecodedMessage:
    """The message as the wire has it (``postprocess=False``: no embedded protocols decoded and no secret
    redacted, which test_embedded and test_redaction check); the full decode must give the same status."""
    if kind == "request":
        full, raw = decode_request(frame), decode_request(frame, postprocess=False)
    else:
        full, raw = decode_response(frame, api_key, version), decode_response(frame, api_key, version,
                                                                              postprocess=False)
    assert full.status == raw.status, (full.status, raw.status)
    return raw


def body_keys(body: dict[str, Any]) -> set[str]:
    return {k for k in body if k not in POSTPROCESS_KEYS}


def match_names(our_keys: set[str], encoder_names: list[str], renames: dict[str, str]) -> dict[str, str]:
    """Map each encoder (snake_case) name to the decoder's CamelCase key present in ``our_keys``."""
    by_snake: dict[str, str] = {}
    for key in our_keys:
        by_snake.setdefault(snake(key), key)
    out: dict[str, str] = {}
    for name in encoder_names:
        target = renames.get(name, name)
        key = by_snake.get(target)
        if key is not None:
            out[name] = key
    return out


# --------------------------------------------------------------------------------------------
# Deterministic and hypothesis value sources (kafka-python; kio uses st.from_type)
# --------------------------------------------------------------------------------------------


class DetSource:
    """Deterministic, non-default values: every nullable is set, every array has two elements."""

    def __init__(self, seed: int = 1) -> None:
        self.n = seed

    def _next(self) -> int:
        self.n += 1
        return self.n

    def integer(self, lo: int, hi: int) -> int:
        n = self._next()
        span = hi - lo + 1
        v = lo + (n * 2654435761 + 12345) % span
        if v in (0, -1):
            v = lo + n % span if lo + n % span not in (0, -1) else hi
        return v

    def boolean(self) -> bool:
        return True

    def text(self) -> str:
        return f"s{self._next()}-\u00e9\u20ac\U0001d11e"

    def binary(self) -> bytes:
        n = self._next()
        return bytes((n + i * 37) % 256 for i in range(3 + n % 5))

    def floating(self) -> float:
        return self._next() + 0.25

    def count(self) -> int:
        return 2

    def null(self) -> bool:
        return False

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(int=(self._next() * 0x9E3779B97F4A7C15) & ((1 << 128) - 1) | 1)


class HypSource:
    """Values drawn from a hypothesis ``st.data()`` object."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data = data
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def boolean(self) -> bool:
        return self.data.draw(self.st.booleans())

    def text(self) -> str:
        return self.data.draw(self.st.text(max_size=12))

    def binary(self) -> bytes:
        return self.data.draw(self.st.binary(max_size=24))

    def floating(self) -> float:
        return self.data.draw(self.st.floats(allow_nan=False))

    def count(self) -> int:
        return self.data.draw(self.st.integers(0, 3))

    def null(self) -> bool:
        return self.data.draw(self.st.booleans())

    def uuid(self) -> uuid.UUID:
        return self.data.draw(self.st.uuids())
