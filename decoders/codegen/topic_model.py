"""Where a message names topics: the one model of it, lowered from the resolved structs for every renderer.

The Kafka specs mark a topic's name with ``"entityType": "topicName"`` (a string field, or an array of strings);
a topic's id is a ``uuid`` field named ``TopicId`` (the specs give ids no entity type). A response struct that
holds a name and an id at one version names one topic both ways: a *pair*, from which the inspector learns
which name an id stands for (Metadata v10+, CreateTopics v7+, DescribeTopicPartitions, ConsumerGroupDescribe's
assignments, ...). A request's pair is not learned from (a client may ask about a name and an id it supposes).

:func:`topic_steps` lowers a struct to the fields that name a topic or lead to one, in wire order. Two renderers
spell these steps: ``render_topics`` as the table ``decoders/topics.py`` walks a decoded body by, and
``render_cy_text`` as calls in the compiled JSON writers (Produce, Fetch), which collect the same references as
they write the text. Both give a message's references in the order the message has them: a name (``str``), an
id (a 1-tuple of its ``Uuid.toString()``) or a pair (a 2-tuple ``(name, id)``, either None when absent); empty
names and the zero id (``Uuid.ZERO_UUID``: "no id") are not references (decoders/topics.py says how they come).
"""

from __future__ import annotations

from dataclasses import dataclass

from decoders.codegen.model import Field, Struct

#: What a step does (the generated table holds these numbers; decoders/topics.py reads them).
NAME, NAMES, ID, STRUCT, STRUCTS, PAIR = range(6)
#: The entity type the specs give topic-name fields.
TOPIC_NAME = "topicName"
#: The name of the uuid fields that hold a topic's id.
TOPIC_ID = "TopicId"


def topic_role(f: Field) -> int | None:
    """NAME, NAMES (an array of names) or ID when ``f`` names a topic itself, else None."""
    if f.entity_type == TOPIC_NAME:
        if f.kind == "string":
            return NAME
        if f.kind == "array" and f.element is not None and f.element.kind == "string":
            return NAMES
    if f.kind == "fixed" and f.type_name == "uuid" and f.name == TOPIC_ID:
        return ID
    return None


@dataclass(frozen=True, slots=True)
class TopicStep:
    """One field of a struct that names a topic or leads to one.

    ``op`` is one of NAME, NAMES, ID, STRUCT (a nested struct), STRUCTS (an array of structs) or PAIR; a PAIR's
    ``field`` is the name and ``other`` the id, and it stands where the later of the two is on the wire.
    """

    field: Field
    op: int
    children: tuple[TopicStep, ...] = ()
    other: Field | None = None


def _pair(st: Struct) -> tuple[Field, Field] | None:
    """The name and id fields of a struct that holds exactly one of each, else None."""
    fields = st.fields + st.tagged
    names = [f for f in fields if topic_role(f) == NAME]
    ids = [f for f in fields if topic_role(f) == ID]
    return (names[0], ids[0]) if len(names) == 1 and len(ids) == 1 else None


def topic_steps(st: Struct, response: bool) -> tuple[TopicStep, ...]:
    """``st``'s fields that name a topic or lead to one, in wire order (tagged fields after the regular ones, as
    the decoders read them); in a response, a name and an id of one struct as one PAIR step."""
    pair = _pair(st) if response else None
    fields = st.fields + st.tagged
    later = max(fields.index(pair[0]), fields.index(pair[1])) if pair is not None else -1
    out: list[TopicStep] = []
    for i, f in enumerate(fields):
        if pair is not None and (f is pair[0] or f is pair[1]):
            if i == later:
                out.append(TopicStep(pair[0], PAIR, other=pair[1]))
            continue
        role = topic_role(f)
        if role is not None:
            out.append(TopicStep(f, role))
        elif f.struct is not None:
            children = topic_steps(f.struct, response)
            if children:
                out.append(TopicStep(f, STRUCTS if f.kind == "array" else STRUCT, children))
    return tuple(out)
