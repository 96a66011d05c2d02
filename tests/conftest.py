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


#: What runs one test at a time on one worker when the suite runs on several (pytest-xdist, ``--dist loadgroup``):
#: tests that capture on or replay onto the loopback interface, make network interfaces, or hold a timing to a
#: limit (one's traffic is not another's capture, and their timings are not another worker's load).
SERIAL = ("tests/inspector/tap/", "tests/bench/", "tests/inspector/cli/test_crash_consistency.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each module's tests in one group (its module-scoped fixtures are made once, on one worker); the
    ``SERIAL`` ones all in one."""
    for item in items:
        where = item.path.relative_to(REPO).as_posix()
        item.add_marker(pytest.mark.xdist_group("serial" if where.startswith(SERIAL) else where))


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
