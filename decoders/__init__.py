"""The Kafka protocol: structural schema, generated decoders and embedded protocols.

``decode_request(frame)`` and ``decode_response(frame, api_key, api_version)`` take the bytes
after a frame's 4-byte length prefix and return a :class:`DecodedMessage`.
This package never imports ``inspector``: it does no I/O.
"""

from pathlib import Path

from decoders import _compiled

_compiled.install("decoders", Path(__file__).resolve().parent)  # before any compiled module is imported

from decoders.api import OK, DecodedMessage, api_name, decode_request, decode_response  # noqa: E402

__all__ = ["OK", "DecodedMessage", "api_name", "decode_request", "decode_response"]
