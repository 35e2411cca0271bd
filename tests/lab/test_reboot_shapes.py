"""Fixes survive a reboot on three shapes of lab (bench/bench_reboot.py, the same code): the ``ifca``
scenario, the ``xrootd`` storage-system scenario (a real xrootd restarted from its file at reboot) and
a generated site (seed 2: GPFS, SAN, disks, EOS and dCache emulations on three hosts).

For each: scan (no mesh, no efficiency test) -> plan -> real ansible-playbook apply -> a second apply
changes nothing -> every host rebooted -> no finding the apply fixed fails again -> rollback.yml and a
reboot give back the before state's failures (by rule, host and subject). Each shape gets a lab of its
own (the apply changes it: the session's read-only labs cannot be shared). Needs root (CI is root);
about a minute per shape here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.support.lab import REPO, lab_cli, require_root

pytestmark = pytest.mark.usefixtures("ansible_playbook")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_reboot", REPO / "bench" / "bench_reboot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("shape", ["ifca", "xrootd", "seed2"])
def test_fixes_survive_reboot(shape: str, lab_registry: Path, tmp_path: Path) -> None:  # noqa: F811
    require_root()
    bench = _bench()
    scenario = shape
    if shape.startswith("seed"):
        scenario = str(tmp_path / f"{shape}.yml")
        lab_cli(["generate", "--seed", shape[4:], "--out", scenario])
    work = tmp_path / "work"
    work.mkdir()
    row = bench.Shape(f"t{shape}", scenario, work).run()
    assert row["failing_before"] > 0 and row["fixed"] > 0, row
    assert row["changed_1"] > 0 and row["changed_2"] == 0, row
    assert row["returned"] == [], row
    assert row["rollback_same"], row
    assert row["ok"], row["problems"]
