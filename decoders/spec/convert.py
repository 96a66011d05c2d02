"""Read Kafka's message JSON specs and write the project's structural schema.

Sources are given newest first. For every API key and direction, each version is taken from the
newest source that defines it, so versions that Kafka retired (Produce v0-2, keys 4-7, ...) come
from an older source while everything else follows the newest one. Each API's document records the
request versions only the older sources have (``removedVersions``, e.g. "0-2"; absent when none) and
whether the newest source lacks the API entirely (``removedApi``): what Kafka 4.0 removed (KIP-896),
derived from the specs, not typed by hand.

A partial folder of specs newer than the newest full directory (``additions``: a few files of Kafka's trunk) is
read right after the newest full directory: it adds what that lacks, and what it adds is current, not removed.
A spec's ``headerVersions`` (Kafka's trunk writes it into every request and response spec, KAFKA-20923:
``{"0+": "1"}``, header version by message version) is kept on each variant, clipped to its versions; a spec
without it gets its header versions from its flexibility, as before (``decoders.codegen.generate``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.errors import InspectorError
from decoders.spec.versions import OPEN, VersionRange

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"

#: Field attributes the project keeps. Everything else (about, default, ignorable, mapKey, ...)
#: is documentation or Java-codegen detail that decoding does not need.
KEPT_FIELD_KEYS = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "flexibleVersions",
    "entityType",
)

_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


class SpecError(InspectorError):
    """A spec file that cannot be understood."""


def load_kafka_json(path: Path) -> dict[str, Any]:
    """Kafka's spec files are JSON with whole-line ``//`` comments."""
    text = _COMMENT.sub("", path.read_text(encoding="utf-8"))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path.name}: {exc}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{path.name}: not a JSON object")
    return data


def _element_type(type_name: str) -> str:
    return type_name[2:] if type_name.startswith("[]") else type_name


def _normalise_fields(
    fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]], where: str
) -> list[dict[str, Any]]:
    out = []
    for raw in fields:
        item = {k: raw[k] for k in KEPT_FIELD_KEYS if k in raw}
        if "name" not in item or "type" not in item or "versions" not in item:
            raise SpecError(f"{where}: field without name/type/versions: {raw}")
        elem = _element_type(item["type"])
        if "fields" in raw:
            item["fields"] = _normalise_fields(raw["fields"], common, f"{where}.{item['name']}")
        elif elem in common:
            item["fields"] = _normalise_fields(common[elem], common, f"{where}.{item['name']}")
        out.append(item)
    return out


def _runs(versions: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in sorted(versions):
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _range_text(lo: int, hi: int) -> str:
    return str(VersionRange(lo, hi))


@dataclass
class _Message:
    """One message (request/response/header/data) merged across sources."""

    name: str
    covered: set[int] = field(default_factory=set)
    variants: list[dict[str, Any]] = field(default_factory=list)

    def add(self, spec: dict[str, Any], source: str, where: str) -> None:
        valid = VersionRange.parse(spec.get("validVersions"))
        if valid is None:
            return
        if valid.hi == OPEN:
            raise SpecError(f"{where}: open-ended validVersions")
        new = [v for v in range(valid.lo, valid.hi + 1) if v not in self.covered]
        if not new:
            return
        common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
        fields = _normalise_fields(spec.get("fields", []), common, where)
        headers = _header_versions(spec, valid, where)
        for lo, hi in _runs(new):
            variant: dict[str, Any] = {
                "versions": _range_text(lo, hi),
                "flexibleVersions": spec.get("flexibleVersions", "none"),
                "source": source,
                "fields": fields,
            }
            if headers is not None:
                variant["headerVersions"] = {_range_text(a, b): h for a, b, h in _header_runs(headers, lo, hi)}
            self.variants.append(variant)
        self.covered.update(new)


def _header_versions(spec: dict[str, Any], valid: VersionRange, where: str) -> dict[int, int] | None:
    """Message version -> header version from the spec's ``headerVersions``, None when it has none.

    Every valid version must have exactly one header version, a request header 0-2 or a response header 0-1."""
    raw = spec.get("headerVersions")
    if raw is None:
        return None
    top = 2 if spec.get("type") == "request" else 1
    if not isinstance(raw, dict) or not raw:
        raise SpecError(f"{where}: headerVersions is not a map of version ranges to header versions")
    out: dict[int, int] = {}
    for text, value in raw.items():
        try:
            rng = VersionRange.parse(text)
            header = int(value)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{where}: headerVersions {text!r}: {value!r}: {exc}") from exc
        if rng is None or not 0 <= header <= top:
            raise SpecError(f"{where}: headerVersions {text!r}: {value!r} is not a {spec.get('type')} header version")
        for v in range(max(rng.lo, valid.lo), min(rng.hi, valid.hi) + 1):
            if v in out:
                raise SpecError(f"{where}: headerVersions names version {v} twice")
            out[v] = header
    missing = [v for v in range(valid.lo, valid.hi + 1) if v not in out]
    if missing:
        raise SpecError(f"{where}: headerVersions does not cover versions "
                        + ",".join(_range_text(a, b) for a, b in _runs(missing)))
    return out


def _header_runs(headers: dict[int, int], lo: int, hi: int) -> list[tuple[int, int, int]]:
    """Versions ``lo``..``hi`` as (first, last, header version) runs of the same header version."""
    runs: list[tuple[int, int, int]] = []
    for v in range(lo, hi + 1):
        if runs and runs[-1][2] == headers[v] and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v, headers[v])
        else:
            runs.append((v, v, headers[v]))
    return runs


def convert(sources: list[Path], additions: list[Path] | None = None) -> dict[str, dict[str, Any]]:
    """Merge the given spec directories (newest first) into schema documents by file name.

    ``additions`` (partial folders of newer specs) are read right after the newest full directory, ``sources[0]``;
    what they define is current (never ``removedVersions``)."""
    if not sources:
        raise SpecError("no spec directory given")
    extra = list(additions or [])
    ordered = [sources[0], *extra, *sources[1:]]
    current = {src.name for src in ordered[: 1 + len(extra)]}
    apis: dict[int, dict[str, Any]] = {}
    others: dict[str, tuple[str, _Message]] = {}
    for src in ordered:
        files = sorted(src.glob("*.json"))
        if not files:
            raise SpecError(f"{src}: no spec files")
        for path in files:
            spec = load_kafka_json(path)
            kind = spec.get("type")
            name = spec.get("name", path.stem)
            where = f"{src.name}/{path.name}"
            if kind in ("request", "response"):
                key = int(spec["apiKey"])
                api = apis.setdefault(
                    key,
                    {
                        "apiKey": key,
                        "name": name.removesuffix("Request").removesuffix("Response"),
                        "listeners": spec.get("listeners", []),
                        "request": _Message(name),
                        "response": _Message(name),
                    },
                )
                if not api["listeners"] and spec.get("listeners"):
                    api["listeners"] = spec["listeners"]
                api[kind].add(spec, src.name, where)
            elif kind in ("header", "data"):
                entry = others.setdefault(name, (kind, _Message(name)))
                entry[1].add(spec, src.name, where)
    documents: dict[str, dict[str, Any]] = {}
    for key in sorted(apis):
        api = apis[key]
        if not api["request"].variants:
            continue
        doc = {
            "apiKey": key,
            "name": api["name"],
            "listeners": api["listeners"],
            "request": sorted(api["request"].variants, key=_variant_lo),
            "response": sorted(api["response"].variants, key=_variant_lo),
        }
        doc.update(_removed(doc["request"], current))
        documents[f"api-{key:03d}-{api['name']}.json"] = doc
    for name in sorted(others):
        kind, msg = others[name]
        if msg.variants:
            documents[f"{kind}-{name}.json"] = {
                "name": name,
                "type": kind,
                "variants": sorted(msg.variants, key=_variant_lo),
            }
    documents["index.json"] = {
        "sources": [src.name for src in ordered],
        **({"additions": [src.name for src in extra]} if extra else {}),
        "apis": {str(k): apis[k]["name"] for k in sorted(apis) if apis[k]["request"].variants},
    }
    return documents


def _removed(variants: list[dict[str, Any]], current: set[str]) -> dict[str, Any]:
    """``removedVersions`` (request versions only older sources define, as ranges) and ``removedApi``.

    ``current`` names the newest full directory and the additions read after it."""
    old: list[int] = []
    for variant in variants:
        rng = VersionRange.parse(variant["versions"])
        if variant["source"] not in current and rng is not None:
            old.extend(range(rng.lo, rng.hi + 1))
    if not old:
        return {}
    out: dict[str, Any] = {"removedVersions": ",".join(_range_text(lo, hi) for lo, hi in _runs(old))}
    if all(variant["source"] not in current for variant in variants):
        out["removedApi"] = True
    return out


def _variant_lo(variant: dict[str, Any]) -> int:
    rng = VersionRange.parse(variant["versions"])
    return rng.lo if rng else -1


def write_schema(documents: dict[str, dict[str, Any]], out_dir: Path = SCHEMA_DIR) -> list[Path]:
    """Replace the schema directory's contents with ``documents``; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.json"):
        if old.name not in documents:
            old.unlink()
    written = []
    for name, doc in documents.items():
        path = out_dir / name
        path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def load_schema(out_dir: Path = SCHEMA_DIR) -> dict[str, dict[str, Any]]:
    """Read back the project's schema documents by file name."""
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(out_dir.glob("*.json"))}
