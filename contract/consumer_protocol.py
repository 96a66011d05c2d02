"""Which client software can run the consumer group protocol of KIP-848 (``group.protocol=consumer``), from the
software a client names in ApiVersions v3+ (``ClientSoftwareName``, ``ClientSoftwareVersion``).

Kafka 4.0 made the consumer protocol generally available on brokers and in the Java client, and recommends it over
the classic one; a classic group whose members run such software can move to it (a group may hold classic and
consumer members while it moves, Kafka 4.0's online upgrade). Only generally available releases count, not early
access ones (the Java client from 3.7, librdkafka from 2.4), which needed settings on both sides:

* ``apache-kafka-java`` 4.0.0 and later (Apache Kafka 4.0). Confluent Platform builds name their own version with
  ``-ccs`` or ``-ce``: Confluent Platform 8.0 carries Apache Kafka 4.0 (its major version is Kafka's plus 4);
* ``librdkafka`` 2.12.0 and later (its release notes: KIP-848 generally available), and the clients built on it,
  which name their own software and end their version with librdkafka's (``confluent-kafka-python``
  ``2.16.1-rdkafka-2.16.0``; likewise confluent-kafka-go, -dotnet, -javascript).

Any other software (kafka-python, aiokafka, kafkajs, Sarama, ...) or an unparsable version is not known to support
it: :func:`supports_consumer_protocol` says None for unknown software, False for a known one too old.
"""

from __future__ import annotations

import re

#: Software name -> the first generally available version with the consumer protocol.
CONSUMER_PROTOCOL_SINCE: dict[str, tuple[int, int, int]] = {
    "apache-kafka-java": (4, 0, 0),
    "librdkafka": (2, 12, 0),
}
#: A wrapper of librdkafka ends its version with librdkafka's.
RDKAFKA_SUFFIX = re.compile(r"-rdkafka-(\d+(?:\.\d+)*)")
#: Confluent Platform's builds of the Java client: its major version minus this is Apache Kafka's.
CONFLUENT_BUILD = re.compile(r"-(ccs|ce)\b")
CONFLUENT_MAJOR_OFFSET = 4
_VERSION = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def _version(text: str) -> tuple[int, int, int] | None:
    found = _VERSION.match(text)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0), int(found.group(3) or 0)


def supports_consumer_protocol(name: str | None, version: str | None) -> bool | None:
    """Whether the software can run the consumer group protocol: True, False (known, too old), or None (software
    not named, or not known to)."""
    if name is None:
        return None
    text = version or ""
    wrapped = RDKAFKA_SUFFIX.search(text)
    if wrapped is not None:
        name, text = "librdkafka", wrapped.group(1)
    since = CONSUMER_PROTOCOL_SINCE.get(name)
    found = _version(text)
    if since is None or found is None:
        return None
    if name == "apache-kafka-java" and CONFLUENT_BUILD.search(text):
        found = (found[0] - CONFLUENT_MAJOR_OFFSET, *found[1:])
    return found >= since
