"""The project's schema: converted from Kafka's specs, complete, and free of Kafka's prose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.apis import API_NAMES, REMOVED_APIS, REMOVED_VERSIONS
from decoders.generated import registry
from decoders.spec.convert import SCHEMA_DIR, SpecError, convert, load_kafka_json, write_schema
from decoders.spec.versions import OPEN, VersionRange

SPEC_ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-spec"
NEWEST = SPEC_ROOT / "apache-kafka-678c0e07"
OLDER = SPEC_ROOT / "apache-kafka-1eb76443"
ADDITIONS = SPEC_ROOT / "apache-kafka-additions-2026"


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def test_version_ranges() -> None:
    assert VersionRange.parse("3+") == VersionRange(3, OPEN)
    assert VersionRange.parse("1-4") == VersionRange(1, 4)
    assert VersionRange.parse("7") == VersionRange(7, 7)
    assert VersionRange.parse("none") is None
    assert 4 in VersionRange(1, 4) and 5 not in VersionRange(1, 4)


def test_every_api_key_0_to_94_is_covered() -> None:
    assert sorted(API_NAMES) == list(range(95)) == sorted(registry.API_MODULES) == sorted(registry.VERSION_RANGES)
    assert API_NAMES[94] == "UnregisterController"  # Kafka 4.4, from the additions folder
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
    index = json.loads((SCHEMA_DIR / "index.json").read_text())
    current = {index["sources"][0], *index.get("additions", [])}
    for path in SCHEMA_DIR.glob("api-*.json"):
        doc = json.loads(path.read_text())
        old = [VersionRange.parse(v["versions"]) for v in doc["request"] if v["source"] not in current]
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
    docs = convert([NEWEST, OLDER], [ADDITIONS])
    write_schema(docs, tmp_path)
    for name, doc in docs.items():
        assert json.loads((SCHEMA_DIR / name).read_text()) == doc, name
    assert {p.name for p in SCHEMA_DIR.glob("*.json")} == set(docs)


@pytest.mark.skipif(not NEWEST.is_dir(), reason="Kafka specs are not beside the repository")
def test_kafka_json_comments_are_stripped() -> None:
    spec = load_kafka_json(NEWEST / "ApiVersionsRequest.json")
    assert spec["apiKey"] == 18 and spec["validVersions"] == "0-5"


LICENCE = "// Licensed to the Apache Software Foundation (ASF).\n"


def _spec(folder: Path, name: str, spec: dict) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(LICENCE + json.dumps(spec))


def _api(key: int, kind: str, valid: str, headers: dict | None = None, name: str = "Thing") -> dict:
    spec = {"apiKey": key, "type": kind, "name": f"{name}{kind.title()}", "validVersions": valid,
            "flexibleVersions": "1+", "fields": [{"name": "ErrorCode", "type": "int16", "versions": "0+"}]}
    if headers is not None:
        spec["headerVersions"] = headers
    return spec


def _pair(folder: Path, key: int, valid: str, request_headers: dict | None = None,
          response_headers: dict | None = None, name: str = "Thing") -> None:
    _spec(folder, f"{name}Request", _api(key, "request", valid, request_headers, name))
    _spec(folder, f"{name}Response", _api(key, "response", valid, response_headers, name))


def test_header_versions_are_kept_per_variant_and_absent_without_them(tmp_path: Path) -> None:
    """Kafka's trunk writes ``headerVersions`` into every message spec (KAFKA-20923); older specs have none."""
    new = tmp_path / "new"
    _pair(new, 200, "0-3", {"0": "1", "1+": "2"}, {"0": "0", "1+": "1"})
    _pair(new, 201, "0-1", name="Old")
    docs = convert([new])
    thing = docs["api-200-Thing.json"]
    assert thing["request"][0]["headerVersions"] == {"0": 1, "1-3": 2}
    assert thing["response"][0]["headerVersions"] == {"0": 0, "1-3": 1}
    assert all("headerVersions" not in v for v in docs["api-201-Old.json"]["request"])


def test_header_versions_are_clipped_to_the_versions_a_source_gives(tmp_path: Path) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    _pair(new, 200, "2-3", {"0+": "2"}, {"0+": "1"})
    _pair(old, 200, "0-3")
    request = convert([new, old])["api-200-Thing.json"]["request"]
    assert [(v["versions"], v.get("headerVersions")) for v in request] == [("0-1", None), ("2-3", {"2-3": 2})]


def test_the_generator_takes_header_versions_where_the_spec_gives_them() -> None:
    from decoders.codegen.generate import _header_version
    flexible = {"versions": "0-2", "headerVersions": {"0": 1, "1-2": 2}}
    assert [_header_version(flexible, v, 2) for v in range(3)] == [1, 2, 2]
    assert _header_version({"versions": "0-2"}, 1, 2) == 2  # none given: derived from flexibility


@pytest.mark.parametrize("headers,problem", [
    ({"0-1": "1"}, "does not cover versions 2-3"),
    ({"0+": "3"}, "is not a request header version"),
    ({"0-2": "1", "2+": "2"}, "names version 2 twice"),
    ({"x": "1"}, "headerVersions 'x'"),
    ([], "not a map"),
])
def test_bad_header_versions_are_one_error(tmp_path: Path, headers: object, problem: str) -> None:
    new = tmp_path / "new"
    _spec(new, "ThingRequest", _api(200, "request", "0-3", headers))  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=problem):
        convert([new])


def test_additions_come_after_the_newest_and_are_current(tmp_path: Path) -> None:
    """A partial folder of newer specs adds what the newest full directory lacks (a new API, a new version),
    is never taken for versions the newest has, and nothing it gives is "removed"."""
    newest, additions, older = tmp_path / "newest", tmp_path / "additions", tmp_path / "older"
    _pair(newest, 200, "1-3")
    _pair(older, 200, "0-3")
    _pair(additions, 200, "1-4", {"1+": "2"}, {"1+": "1"})  # v4 is new; v1-3 stay the newest's
    _pair(additions, 94, "0", None, {"0+": "1"}, name="UnregisterController")
    docs = convert([newest, older], [additions])
    thing = docs["api-200-Thing.json"]
    assert [(v["versions"], v["source"]) for v in thing["request"]] == [
        ("0", "older"), ("1-3", "newest"), ("4", "additions")]
    assert thing["removedVersions"] == "0" and "removedApi" not in thing
    unregister = docs["api-094-UnregisterController.json"]
    assert "removedVersions" not in unregister and "removedApi" not in unregister
    assert docs["index.json"]["sources"] == ["newest", "additions", "older"]
    assert docs["index.json"]["additions"] == ["additions"]
    assert "additions" not in convert([newest, older])["index.json"]


@pytest.mark.skipif(not ADDITIONS.is_dir(), reason="Kafka specs are not beside the repository")
def test_the_real_additions_folder_reads() -> None:
    docs = convert([NEWEST, OLDER], [ADDITIONS])
    doc = docs["api-094-UnregisterController.json"]
    assert doc["response"][0]["headerVersions"] == {"0": 1}
    assert "headerVersions" not in doc["request"][0]
    assert doc["listeners"] == ["broker", "controller"]
