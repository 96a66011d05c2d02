"""The Kafka protocol: structural schema, generated decoders and embedded protocols.

``decode_request(frame)`` and ``decode_response(frame, api_key, api_version)`` take the bytes
after a frame's 4-byte length prefix and return a :class:`DecodedMessage`.
This package never imports ``inspector``: it does no I/O.
"""

from decoders.api import OK, DecodedMessage, api_name, decode_request, decode_response

__all__ = ["OK", "DecodedMessage", "api_name", "decode_request", "decode_response"]
