"""The image's recipe, checked without a Docker engine: what it copies, what it pins, and the Kubernetes examples.

Building and running the image takes minutes and a Docker engine: `make docker-test` (docker/test.sh) does that,
not this suite. These tests hold the files it builds from to what the project is: the packages pyproject.toml
names are all copied and let through .dockerignore (the build once failed without setup.py and contract/), every
dependency is pinned to a version pyproject.toml accepts, and the Kubernetes examples parse and ask the runtime for
what docker/test.sh ran the image with.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

yaml = pytest.importorskip("yaml", reason="PyYAML (the dev extra) parses the Kubernetes examples")

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DOCKERFILE = (ROOT / "Dockerfile").read_text()
KUBERNETES = ROOT / "docs" / "kubernetes"


def copied() -> set[str]:
    """The build-context paths the Dockerfile's COPY instructions take (not those from another stage)."""
    paths: set[str] = set()
    for line in re.findall(r"^COPY (?!--from)(.+)$", DOCKERFILE, re.MULTILINE):
        paths.update(p.rstrip("/") for p in shlex.split(line)[:-1])
    return paths


def allowed() -> set[str]:
    """What the allow-list .dockerignore lets in: its `!path` lines under a leading `*`."""
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    assert lines[0] == "*", ".dockerignore is an allow-list: `*`, then the `!` lines"
    return {line[1:].rstrip("/") for line in lines if line.startswith("!")}


def constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "docker" / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"not name==version: {line!r}"
            pins[canonicalize_name(name)] = version
    return pins


def test_every_package_and_build_file_is_copied_and_let_in() -> None:
    packages = {pattern.rstrip("*") for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    needed = packages | {"pyproject.toml", "setup.py"}
    assert needed <= copied(), f"the Dockerfile copies none of {sorted(needed - copied())}"
    assert copied() <= allowed(), f".dockerignore keeps out {sorted(copied() - allowed())}"


def test_every_requirement_is_pinned_to_a_version_pyproject_accepts() -> None:
    pins = constraints()
    requirements = (PYPROJECT["build-system"]["requires"] + PYPROJECT["project"]["dependencies"]
                    + PYPROJECT["project"]["optional-dependencies"]["spark"])
    for text in requirements:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned in docker/constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"docker/constraints.txt pins {requirement.name}=={pins[name]}, pyproject.toml asks {requirement}"


def image_checks() -> list[str]:
    """The Python programs the Dockerfile's checks run in the image (``python -c "..."``), continuation lines
    joined."""
    joined = DOCKERFILE.replace("\\\n", "")
    return re.findall(r'python -c "([^"]+)"', joined)


def test_the_images_import_checks_run_against_this_tree() -> None:
    """Each check the image's build runs passes here, against this checkout's modules instead of the image's
    ``/opt/venv``: a name the code no longer has (as ``decoders.api.accelerated`` once) fails the suite, not
    only the image's build, which the suite does not run."""
    checks = image_checks()
    assert len(checks) >= 2, "the Dockerfile's import checks were not found"
    for check in checks:
        here = check.replace("'/opt/venv/'", repr(str(ROOT) + "/"))
        run = subprocess.run([sys.executable, "-c", here], cwd="/", capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert run.returncode == 0, f"the image's check fails here: {check}\n{run.stderr[-2000:]}"


def manifests() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for path in sorted(KUBERNETES.glob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert len(documents) == 1, f"{path.name}: one object a file"
        document = documents[0]
        assert {"apiVersion", "kind", "metadata", "spec"} <= document.keys(), path.name
        found[document["kind"]] = document
    return found


def container(workload: dict) -> dict:
    (only,) = workload["spec"]["template"]["spec"]["containers"]
    return only


def hardened_capabilities() -> set[str]:
    """The capabilities docker/test.sh runs the tap with."""
    line = re.search(r"^hardened=\((.*)\)$", (ROOT / "docker" / "test.sh").read_text(), re.MULTILINE)
    assert line is not None
    words = shlex.split(line.group(1))
    return {words[i + 1] for i, word in enumerate(words) if word == "--cap-add"}


def test_kubernetes_examples_parse_and_ask_for_what_was_run() -> None:
    kinds = manifests()
    assert set(kinds) == {"PersistentVolumeClaim", "DaemonSet", "Deployment", "Job"}
    claim = kinds["PersistentVolumeClaim"]["metadata"]["name"]

    tap_pod = kinds["DaemonSet"]["spec"]["template"]
    tap = container(kinds["DaemonSet"])
    assert tap_pod["spec"]["hostNetwork"] is True
    assert tap["args"][0] == "tap"
    assert set(tap["securityContext"]["capabilities"]["add"]) == hardened_capabilities()
    assert tap["securityContext"]["capabilities"]["drop"] == ["ALL"]
    exposed = re.findall(r"^EXPOSE (\d+)$", DOCKERFILE, re.MULTILINE)
    (port,) = [p["containerPort"] for p in tap["ports"] if p["name"] == "metrics"]
    annotations = tap_pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(port) == exposed[0]
    assert f"--metrics=:{port}" in tap["args"]

    follow = container(kinds["Deployment"])
    assert follow["args"][0] == "report" and "--follow" in follow["args"]
    assert kinds["Deployment"]["spec"]["replicas"] == 1
    assert kinds["Deployment"]["spec"]["strategy"]["type"] == "Recreate"
    assert container(kinds["Job"])["args"][0] == "report"

    for kind in ("DaemonSet", "Deployment", "Job"):
        volumes = kinds[kind]["spec"]["template"]["spec"]["volumes"]
        assert {"name": "data", "persistentVolumeClaim": {"claimName": claim}} in volumes, kind
        assert container(kinds[kind])["securityContext"]["readOnlyRootFilesystem"] is True, kind
