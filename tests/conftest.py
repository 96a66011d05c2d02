from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The suite runs on shared, loaded machines: what the property tests check is behaviour, not how fast
# hypothesis generates inputs or how long one example takes.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

REPO = Path(__file__).resolve().parents[1]
REAL_CAPTURES = REPO.parent / "shared" / "real-captures"
PCAPS = REPO / "pcaps"


@pytest.fixture(scope="session")
def real_captures() -> list[Path]:
    files = sorted(REAL_CAPTURES.glob("*.pcap"))
    if not files:
        pytest.skip("shared/real-captures is not beside the repository")
    return files


@pytest.fixture(scope="session")
def project_captures() -> list[Path]:
    files = sorted(PCAPS.glob("*.pcap")) + sorted(PCAPS.glob("*.pcapng"))
    assert files, "pcaps/ must hold the project's real captures"
    return files


#: The suite's longest files (``pytest --durations``, on two workers), run first. ``make test`` spreads whole files
#: over its workers in this order (``--no-loadscope-reorder``; pytest-xdist's own order is most tests first, which
#: left these few-test, minute-long files for last, one worker running them while the other idled): the long ones
#: start together, the thousands of short ones fill in around them. Only the order changes; a file not named here
#: keeps its place after them.
SLOWEST_FIRST = (
    "pipelines/test_cluster.py",
    "pipelines/test_follow.py",
    "pipelines/test_follow_stream.py",
    "pipelines/test_lag.py",
    "pipelines/test_report_quiet.py",
    "pipelines/test_end_to_end.py",
    "pipelines/test_detectors.py",
    "pipelines/test_heartbeat_groups.py",
    "pipelines/test_episode_keys_groups.py",
    "bench/test_follow_latency.py",
    "pipelines/test_episode_keys.py",
    "pipelines/test_episode_keys_heartbeat.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    tests = REPO / "tests"

    def place(item: pytest.Item) -> int:
        name = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        return rank.get(name, len(rank))

    items.sort(key=place)  # stable: each file's tests, and the other files, keep their order
