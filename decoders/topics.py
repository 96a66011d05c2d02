"""The topics a decoded message names, as its spec marks them (``decoders/codegen/topic_model.py``).

Stateless: which name an id stands for is the inspector's to learn (``inspector/kafka/topic_names.py``). A message's
references come as one list, in the order the message has them: a name (``str``), an id (a 1-tuple of its
``Uuid.toString()``) or, in a response struct naming one topic both ways, a pair (a 2-tuple ``(name, id)``,
either None when absent); empty names and the zero id are none. A message naming nothing gives None, and one
naming a single topic by name (most Produce and Fetch messages) that name alone, without a list.

A body the compiled JSON writers wrote as text (Produce, Fetch) comes with the references they collected as they
wrote it (``DecodedMessage.topics``); any other is walked by the steps ``decoders/generated/topic_fields.py``
holds, rendered from the same model. ``tests/decoders/test_topics.py`` holds the two to the same references.
"""

from __future__ import annotations

from typing import Any

from decoders.api import DecodedMessage
from decoders.generated import topic_fields as _fields

#: The references of a message: names, ids as 1-tuples, pairs as 2-tuples (see the module's docstring).
Refs = list[Any]

_NAME, _NAMES, _ID, _STRUCT, _STRUCTS, _PAIR = (_fields.NAME, _fields.NAMES, _fields.ID, _fields.STRUCT,
                                                 _fields.STRUCTS, _fields.PAIR)
#: API key -> version -> steps, by kind (compiled, typed dicts: a C lookup each).
_REQUEST: dict[int, dict[int, Any]] = _fields.REQUEST
_RESPONSE: dict[int, dict[int, Any]] = _fields.RESPONSE
#: Kafka's Uuid.ZERO_UUID, as Uuid.toString() writes it: "no id".
ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def topic_refs(msg: DecodedMessage) -> Refs | str | None:
    """The topics ``msg`` names (None: none, or no body): the writer's list for a body written as text, else its
    decoded body walked by its spec's steps."""
    if msg.text is not None:
        return msg.topics
    body = msg.body
    api_key = msg.api_key
    version = msg.body_version if msg.body_version is not None else msg.api_version
    if body is None or api_key is None or version is None:
        return None
    return body_refs(msg.kind, api_key, version, body)


def body_refs(kind: str, api_key: int, version: int, body: dict[str, Any]) -> Refs | str | None:
    """The topics a decoded ``body`` of this kind, API key and version names (None: none)."""
    table = _REQUEST if kind == "request" else _RESPONSE
    versions = table.get(api_key)
    if versions is None:
        return None
    steps = versions.get(version)
    if steps is None:
        return None
    out: Refs = []
    _walk(body, steps, out)
    if len(out) == 1 and type(out[0]) is str:
        return out[0]  # a lone name, as the writers give it
    return out or None


def _walk(d: dict[str, Any], steps: tuple[Any, ...], out: Refs) -> None:  # noqa: C901 - a flat dispatch on the step's op
    for key, op, child in steps:
        value = d.get(key)
        if op == _STRUCTS:
            if type(value) is list:
                for item in value:
                    if type(item) is dict:
                        _walk(item, child, out)
        elif op == _NAME:
            if type(value) is str and value:
                out.append(value)
        elif op == _ID:
            if type(value) is str and value != ZERO_ID:
                out.append((value,))
        elif op == _PAIR:
            name = value if type(value) is str and value else None
            topic_id = d.get(child)
            topic_id = topic_id if type(topic_id) is str and topic_id != ZERO_ID else None
            if name is not None or topic_id is not None:
                out.append((name, topic_id))
        elif op == _NAMES:
            if type(value) is list:
                for name in value:
                    if type(name) is str and name:
                        out.append(name)
        elif op == _STRUCT:
            if type(value) is dict:
                _walk(value, child, out)
