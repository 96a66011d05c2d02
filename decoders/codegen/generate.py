"""Write every generated file from the schema: the decoders, the registry, where messages name topics
(``topic_fields.py``), ``contract/apis.py`` (the API keys and names), ``contract/body_schemas.py`` (the Spark
schemas of the bodies the detectors read).

Each message layout has one reader: ``render_cy`` renders the compiled ones (``decoders/accel``: the APIs of
``COMPILED_API_KEYS``, every header and embedded structure), ``render`` the plain Python ones of the other APIs
(``decoders/generated``: the admin, controller and inter-broker APIs, rare on the wire). ``plain_sources`` renders
the plain readers of every module, which the tests use as the compiled readers' reference. This module reads the
schema, renders and writes the files (``python -m decoders.codegen``; ``python -m decoders.regen`` after converting
new specs).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from decoders.codegen.model import is_flexible, versions_of
from decoders.codegen.render import render_api, render_data
from decoders.codegen.render_cy import COMPILED_API_KEYS, accel_files
from decoders.codegen.render_records import NATIVE_RECORDS, render_records
from decoders.codegen.render_schemas import render_body_schemas
from decoders.codegen.render_topics import render_topic_fields
from decoders.codegen.shared import HEADER, module_name
from decoders.spec.versions import VersionRange

GENERATED_DIR = Path(__file__).resolve().parent.parent / "generated"
ACCEL_DIR = Path(__file__).resolve().parent.parent / "accel"
#: The decoders' native modules; one of them, the record set summary writer, is rendered from its model.
NATIVE_DIR = Path(__file__).resolve().parent.parent / "native"
#: The top-level ``contract`` package: the API names are generated into it (``contract/apis.py``), once, for the
#: decoders, the inspector and the Spark jobs alike.
CONTRACT_DIR = Path(__file__).resolve().parent.parent.parent / "contract"


def _member(name: str) -> str:
    """An API's name as an enum member: ``OffsetForLeaderEpoch`` -> ``OFFSET_FOR_LEADER_EPOCH``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _api_names(apis: list[dict[str, Any]]) -> str:
    """``contract/apis.py``: the API keys as an enum and their names, the one copy every package uses, and what the
    newest specs removed."""
    names = {d["apiKey"]: d["name"] for d in apis}
    removed: dict[int, list[int]] = {}
    for d in apis:
        for part in filter(None, d.get("removedVersions", "").split(",")):
            lo, _, hi = part.partition("-")
            removed.setdefault(d["apiKey"], []).extend(range(int(lo), int(hi or lo) + 1))
    removed_versions = {key: (min(vs), max(vs)) for key, vs in removed.items()}
    removed_apis = sorted(d["apiKey"] for d in apis if d.get("removedApi"))
    lines = [
        HEADER.rstrip("\n"),
        '"""Kafka\'s API keys and their names, from the message specs; and what the newest specs removed."""',
        "",
        "from enum import IntEnum",
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """A request\'s API key (an int: compares, hashes and prints as its number)."""',
        "",
        *(f"    {_member(name)} = {key}" for key, name in sorted(names.items())),
        "",
        "",
        f"API_NAMES: dict[int, str] = {names!r}",
        "",
        "#: API key -> (lowest, highest) request version that only the older spec directory has: removed since",
        "#: (Kafka 4.0, KIP-896). A client sending one of them cannot talk to a broker of the newest Kafka.",
        f"REMOVED_VERSIONS: dict[int, tuple[int, int]] = {removed_versions!r}",
        "#: API keys the newest specs lack entirely (the ZooKeeper-era inter-broker APIs 4-7).",
        f"REMOVED_APIS: frozenset[int] = frozenset({removed_apis!r})",
    ]
    return "\n".join(lines) + "\n"


def _header_version(variant: dict[str, Any], version: int, derived: int) -> int:
    """The spec's ``headerVersions`` where it has them (Kafka's trunk, KAFKA-20923), else the version derived from
    flexibility and the two exceptions older specs left to the code (ControlledShutdown v0, ApiVersions)."""
    for text, header in variant.get("headerVersions", {}).items():
        rng = VersionRange.parse(text)
        if rng is not None and version in rng:
            return int(header)
    return derived


def _registry(apis: list[dict[str, Any]], data_docs: list[dict[str, Any]]) -> str:
    modules = {d["apiKey"]: module_name(d) for d in apis}
    listeners = {d["apiKey"]: d.get("listeners", []) for d in apis}
    request_header: dict[tuple[int, int], int] = {}
    response_header: dict[tuple[int, int], int] = {}
    versions: dict[int, tuple[int, int]] = {}
    for d in apis:
        key = d["apiKey"]
        seen: list[int] = []
        for variant in d["request"]:
            for v in versions_of(variant):
                seen.append(v)
                flexible = is_flexible(variant, v)
                derived = 0 if (key == 7 and v == 0) else (2 if flexible else 1)
                request_header[(key, v)] = _header_version(variant, v, derived)
        for variant in d["response"]:
            for v in versions_of(variant):
                flexible = is_flexible(variant, v)
                response_header[(key, v)] = _header_version(variant, v, 0 if key == 18 else (1 if flexible else 0))
        versions[key] = (min(seen), max(seen))
    data_modules = {d["name"]: module_name(d) for d in data_docs}
    accel = sorted([module_name(d) for d in apis if d["apiKey"] in COMPILED_API_KEYS] + list(data_modules.values()))
    lines = [
        HEADER.rstrip("\n"),
        '"""Which API keys and versions exist, and their header versions."""',
        "",
        "from contract.apis import API_NAMES as API_NAMES  # generated into the contract, once",
        "",
        f"API_MODULES: dict[int, str] = {modules!r}",
        f"API_LISTENERS: dict[int, list[str]] = {listeners!r}",
        f"VERSION_RANGES: dict[int, tuple[int, int]] = {versions!r}",
        f"REQUEST_HEADER_VERSION: dict[tuple[int, int], int] = {request_header!r}",
        f"RESPONSE_HEADER_VERSION: dict[tuple[int, int], int] = {response_header!r}",
        f"DATA_MODULES: dict[str, str] = {data_modules!r}",
        "#: The modules whose readers are compiled (decoders/accel); the others' readers are plain Python (here).",
        f"ACCEL_MODULES: frozenset[str] = frozenset({accel!r})",
    ]
    return "\n".join(lines) + "\n"


def schema_docs(schema_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The schema's documents: (all of them, the APIs, the headers and embedded structures)."""
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(schema_dir.glob("*.json"))]
    apis = [d for d in docs if "apiKey" in d]
    data_docs = [d for d in docs if d.get("type") in ("header", "data")]
    extra_dir = schema_dir.parent / "protocols"
    for p in sorted(extra_dir.glob("*.json")):
        data_docs.append(json.loads(p.read_text(encoding="utf-8")))
    return docs, apis, data_docs


def plain_sources(apis: list[dict[str, Any]], data_docs: list[dict[str, Any]]) -> dict[str, str]:
    """The plain Python readers of these APIs and structures, by module name (``api_011_join_group``): those of
    the APIs not compiled are ``decoders/generated``; the others are the reference the tests hold the compiled
    readers to (rendered from the same model by the other renderer)."""
    sources = {module_name(doc): render_api(doc) for doc in apis}
    for doc in data_docs:
        sources[module_name(doc)] = render_data(doc, range(0, 3) if doc["name"] == "RequestHeader" else None)
    return sources


def generate_all(schema_dir: Path, out_dir: Path = GENERATED_DIR, accel_dir: Path = ACCEL_DIR,
                 contract_dir: Path = CONTRACT_DIR, native_dir: Path = NATIVE_DIR) -> list[Path]:
    """Regenerate every decoder module from the schema; returns the files written.

    The compiled (Cython) readers go to ``accel_dir`` (``decoders/accel`` by default), the plain readers of the
    other APIs and the registry to ``out_dir``, the API names to ``contract_dir/apis.py``, and the record set
    summary writer, rendered from ``decoders.record_header``, to ``native_dir/_records.pyx``.
    """
    docs, apis, data_docs = schema_docs(schema_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    accel = accel_files(apis, data_docs)
    compiled = {name[:-4] for name in accel}  # their plain readers are not written (nor rendered)
    plain = plain_sources([d for d in apis if module_name(d) not in compiled],
                          [d for d in data_docs if module_name(d) not in compiled])
    files = {f"{name}.py": text for name, text in plain.items()}
    files["registry.py"] = _registry(apis, data_docs)
    files["topic_fields.py"] = render_topic_fields(apis)
    files["__init__.py"] = HEADER + '"""Decoders generated from the project schema."""\n'
    written = _write(out_dir, "*.py", files)
    written += _write(accel_dir, "*.pyx", accel)
    written += _write(contract_dir, "apis.py", {"apis.py": _api_names(apis)})  # the contract's other modules stay
    written += _write(contract_dir, "body_schemas.py", {"body_schemas.py": render_body_schemas(docs)})
    written += _write(native_dir, NATIVE_RECORDS, {NATIVE_RECORDS: render_records()})  # the hand-written ones stay
    return written


def _write(out_dir: Path, pattern: str, files: dict[str, str]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(pattern):
        if old.name not in files and not old.name.startswith("_"):  # hand-written helpers (_where.pyx) stay
            old.unlink()
    written = []
    for name, text in files.items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
