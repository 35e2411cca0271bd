from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLES = ROOT / "samples"
FIX = ROOT / "efficiency"


@pytest.fixture
def sample():
    return lambda name: str(SAMPLES / name)


@pytest.fixture
def fix():
    return lambda name: str(FIX / name)
