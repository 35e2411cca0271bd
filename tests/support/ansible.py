"""ansible-playbook for tests: the venv's own, the ``ansible_playbook`` fixture (a test that takes it is
marked ``ansible``), and the PLAY RECAP counters."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=str(VENV_BIN)) or shutil.which("ansible-playbook")


@pytest.fixture(scope="session")
def ansible_playbook() -> str:
    """The path of ansible-playbook; taking this fixture marks a test ``ansible`` (tests/support/tiers.py)."""
    if not ANSIBLE_PLAYBOOK:
        pytest.skip("ansible-playbook not installed (bash install.sh)")
    return ANSIBLE_PLAYBOOK


def play_recap(stdout: str) -> dict[str, dict[str, int]]:
    """PLAY RECAP counters per host: {host: {ok, changed, failed, ...}}."""
    out: dict[str, dict[str, int]] = {}
    recap = stdout.split("PLAY RECAP", 1)[-1]
    for line in recap.splitlines():
        if ":" not in line or "=" not in line:
            continue
        host, rest = line.split(":", 1)
        counts = {}
        for part in rest.split():
            if "=" in part:
                k, v = part.split("=", 1)
                if v.isdigit():
                    counts[k] = int(v)
        out[host.strip()] = counts
    return out


def run_playbook(plan: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``ansible-playbook NAME EXTRA`` in the plan directory ``plan``; it must succeed."""
    cp = subprocess.run([ANSIBLE_PLAYBOOK or "ansible-playbook", name, *extra], cwd=plan, capture_output=True, text=True,
                        timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    return cp
