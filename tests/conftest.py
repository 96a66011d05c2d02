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
