"""Which software can run the consumer group protocol (KIP-848), from what clients name in ApiVersions v3+."""

from __future__ import annotations

import pytest

from contract.consumer_protocol import supports_consumer_protocol


@pytest.mark.parametrize("name,version,expected", [
    ("apache-kafka-java", "4.0.0", True),
    ("apache-kafka-java", "4.1.1", True),
    ("apache-kafka-java", "3.9.1", False),  # early access / preview only
    ("apache-kafka-java", "8.0.0-ccs", True),  # Confluent Platform 8.0 = Apache Kafka 4.0
    ("apache-kafka-java", "7.9.2-ccs", False),  # Confluent Platform 7.9 = Apache Kafka 3.9
    ("librdkafka", "2.12.0", True),
    ("librdkafka", "2.11.1", False),
    ("librdkafka", "2.0.2", False),  # kcat's
    ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0", True),  # what the captures' consumers name
    ("confluent-kafka-go", "2.12.0-rdkafka-2.11.0", False),  # judged by its librdkafka
    ("kafka-python", "3.0.12", None),
    ("apache-kafka-java", "unknown", None),
    (None, None, None),
])
def test_software(name: str | None, version: str | None, expected: bool | None) -> None:
    assert supports_consumer_protocol(name, version) is expected
