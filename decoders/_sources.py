"""What each compiled module is built from, and the fingerprint the build records of it.

Build-time only: ``setup.py`` loads this file by path (standard library only, the package not imported) to
write each folder's :data:`MANIFEST` beside the extensions it builds, and the test suite reads those
manifests to fail on an extension built from other sources (a stale build: run ``make setup``). Nothing at
run time imports it: Python imports the extension, and keeping it current is the build's business.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

#: Per folder of compiled modules: module name -> SHA-256 of the sources it was built from.
MANIFEST = "_compiled.json"

_CIMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+cimport\b|cimport\s+([\w.]+))", re.MULTILINE)


def _top(path: Path) -> Path:
    """The folder holding the top-level package of ``path``."""
    root = path.parent
    while (root / "__init__.py").exists():
        root = root.parent
    return root


def source_files(path: Path) -> list[Path]:
    """The files an extension is compiled from: a ``.py`` with its ``.pxd`` (when there is one), or a ``.pyx``;
    with this project's ``.pxd`` files that either cimports (their declarations and inline code go into it)."""
    files = [path]
    declarations = path.with_suffix(".pxd")
    if path.suffix == ".py" and declarations.exists():
        files.append(declarations)
    texts = [f.read_bytes().decode(errors="replace") for f in files]
    root = _top(path)
    for text in texts:
        for match in _CIMPORT.findall(text):
            module = match[0] or match[1]
            shared = root.joinpath(*module.split(".")).with_suffix(".pxd")
            if shared.exists() and shared not in files:
                files.append(shared)
    return files


def fingerprint(path: Path) -> str:
    """SHA-256 of the files :func:`source_files` names, in that order."""
    digest = hashlib.sha256()
    for f in source_files(path):
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


def write_manifests(sources: list[Path], target: Path, root: Path) -> None:
    """Record the fingerprint of each compiled source (under ``root``) in the manifest of its folder under
    ``target`` (the tree the extensions are written to)."""
    folders: dict[Path, dict[str, str]] = {}
    for path in sources:
        folders.setdefault(path.parent.relative_to(root), {})[path.stem] = fingerprint(path)
    for folder, entries in folders.items():
        manifest = target / folder / MANIFEST
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")


def stale(folder: Path) -> list[str]:
    """Modules of ``folder`` whose extension was not built from the sources there now (or has no record)."""
    try:
        built: dict[str, str] = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        built = {}
    names = sorted({so.name.split(".", 1)[0] for so in folder.glob("*.so")})
    out = []
    for name in names:
        source = next((folder / f"{name}{suffix}" for suffix in (".pyx", ".py")
                       if (folder / f"{name}{suffix}").exists()), None)
        if source is None or built.get(name) != fingerprint(source):
            out.append(name)
    return out
