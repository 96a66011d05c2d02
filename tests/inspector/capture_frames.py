"""Every Kafka frame the inspector decodes in the bundled and the shared real captures.

Used by tests that run each frame through another decoder (e.g. the compiled decoders against the
pure ones): the frames are recorded as ``inspector.connection`` hands them to the decoders.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from inspector import connection
from inspector.reader import iter_capture
from inspector.summary import Summary

REPO = Path(__file__).resolve().parents[2]
CAPTURES = sorted((REPO / "pcaps").glob("*.pcap")) + sorted((REPO.parent / "shared" / "real-captures").glob("*.pcap*"))


def capture_frames() -> Iterator[tuple[str, int, int, bytes]]:
    """(kind, api key, api version, frame) of every request and response frame in the captures."""
    seen: list[tuple[str, int, int, bytes]] = []
    real_request, real_response = connection.decode_request, connection.decode_response

    def request(frame: Any, **kw: Any) -> Any:
        msg = real_request(frame, **kw)
        if msg.api_key is not None and msg.api_version is not None and kw.get("postprocess", True):
            seen.append(("request", msg.api_key, msg.api_version, bytes(frame)))
        return msg

    def response(frame: Any, api_key: int, api_version: int, **kw: Any) -> Any:
        seen.append(("response", api_key, api_version, bytes(frame)))
        return real_response(frame, api_key, api_version, **kw)

    with mock.patch.object(connection, "decode_request", request), \
            mock.patch.object(connection, "decode_response", response):
        for path in CAPTURES:
            for _ in iter_capture(str(path), Summary()):
                pass
            yield from seen
            seen.clear()
