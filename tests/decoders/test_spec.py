"""The project's schema: converted from Kafka's specs, complete, and free of Kafka's prose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.apis import API_NAMES, REMOVED_APIS, REMOVED_VERSIONS
from decoders.generated import registry
from decoders.spec.convert import SCHEMA_DIR, convert, load_kafka_json, write_schema
from decoders.spec.versions import OPEN, VersionRange

SPEC_ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-spec"
NEWEST = SPEC_ROOT / "apache-kafka-678c0e07"
OLDER = SPEC_ROOT / "apache-kafka-1eb76443"


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def test_version_ranges() -> None:
    assert VersionRange.parse("3+") == VersionRange(3, OPEN)
    assert VersionRange.parse("1-4") == VersionRange(1, 4)
    assert VersionRange.parse("7") == VersionRange(7, 7)
    assert VersionRange.parse("none") is None
    assert 4 in VersionRange(1, 4) and 5 not in VersionRange(1, 4)


def test_every_api_key_0_to_93_is_covered() -> None:
    assert sorted(API_NAMES) == list(range(94)) == sorted(registry.API_MODULES) == sorted(registry.VERSION_RANGES)
    assert API_NAMES[58] == "Envelope" and API_NAMES[70] == "ControllerRegistration"
    assert registry.API_NAMES is API_NAMES  # the decoders use the contract's names, not a copy


@pytest.mark.parametrize("key,lo,hi", [
    (0, 0, 13),  # Produce v0-2 retired in 4.0, still decoded
    (1, 0, 18),  # Fetch v0-3 retired in 4.0
    (4, 0, 7), (5, 0, 4), (6, 0, 8), (7, 0, 3),  # LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown
    (18, 0, 5),  # ApiVersions v5 (KIP-1242)
    (60, 0, 2),  # DescribeCluster with EndpointType (KIP-919)
])
def test_version_coverage(key: int, lo: int, hi: int) -> None:
    assert registry.VERSION_RANGES[key] == (lo, hi)


def test_retired_versions_come_from_the_older_spec() -> None:
    produce = _schema("api-000-Produce.json")
    assert [(v["versions"], v["source"]) for v in produce["request"]] == [
        ("0-2", "apache-kafka-1eb76443"), ("3-13", "apache-kafka-678c0e07")]


def test_what_kafka_4_removed_is_recorded_from_the_specs() -> None:
    """The converter records the request versions only the older specs have (KIP-896), and the APIs the newest
    lacks; contract/apis.py carries them, for the readiness checks."""
    assert _schema("api-000-Produce.json")["removedVersions"] == "0-2"
    assert "removedApi" not in _schema("api-000-Produce.json")
    assert _schema("api-007-ControlledShutdown.json")["removedVersions"] == "0-3"
    assert _schema("api-007-ControlledShutdown.json")["removedApi"] is True
    assert "removedVersions" not in _schema("api-003-Metadata.json")
    assert REMOVED_APIS == frozenset({4, 5, 6, 7})
    assert (REMOVED_VERSIONS[0], REMOVED_VERSIONS[1], REMOVED_VERSIONS[8]) == ((0, 2), (0, 3), (0, 1))
    newest = json.loads((SCHEMA_DIR / "index.json").read_text())["sources"][0]
    for path in SCHEMA_DIR.glob("api-*.json"):
        doc = json.loads(path.read_text())
        old = [VersionRange.parse(v["versions"]) for v in doc["request"] if v["source"] != newest]
        expected = (min(r.lo for r in old if r), max(r.hi for r in old if r)) if old else None
        assert REMOVED_VERSIONS.get(doc["apiKey"]) == expected, path.name


def test_api_versions_v5_carries_cluster_and_node_id() -> None:
    fields = {f["name"]: f for f in _schema("api-018-ApiVersions.json")["request"][-1]["fields"]}
    assert fields["ClusterId"]["versions"] == "5+" and fields["ClusterId"]["nullableVersions"] == "5+"
    assert fields["NodeId"]["type"] == "int32"


def test_header_versions_follow_flexibility_and_exceptions() -> None:
    assert registry.REQUEST_HEADER_VERSION[(7, 0)] == 0  # ControlledShutdown v0
    assert registry.REQUEST_HEADER_VERSION[(3, 8)] == 1 and registry.REQUEST_HEADER_VERSION[(3, 9)] == 2
    assert all(registry.RESPONSE_HEADER_VERSION[(18, v)] == 0 for v in range(6))  # ApiVersions
    assert registry.RESPONSE_HEADER_VERSION[(3, 9)] == 1


def test_schema_keeps_structure_but_no_prose() -> None:
    text = "".join(p.read_text() for p in SCHEMA_DIR.glob("*.json"))
    assert '"about"' not in text and "//" not in text and '"default"' not in text
    assert '"taggedVersions"' in text and '"nullableVersions"' in text


@pytest.mark.skipif(not NEWEST.is_dir(), reason="Kafka specs are not beside the repository")
def test_committed_schema_is_what_the_converter_makes(tmp_path: Path) -> None:
    docs = convert([NEWEST, OLDER])
    write_schema(docs, tmp_path)
    for name, doc in docs.items():
        assert json.loads((SCHEMA_DIR / name).read_text()) == doc, name
    assert {p.name for p in SCHEMA_DIR.glob("*.json")} == set(docs)


@pytest.mark.skipif(not NEWEST.is_dir(), reason="Kafka specs are not beside the repository")
def test_kafka_json_comments_are_stripped() -> None:
    spec = load_kafka_json(NEWEST / "ApiVersionsRequest.json")
    assert spec["apiKey"] == 18 and spec["validVersions"] == "0-5"
