from __future__ import annotations

from pathlib import Path

import pytest

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
