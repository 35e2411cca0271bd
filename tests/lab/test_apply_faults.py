"""The apply under faults on a generated site (seed 2: three hosts, the network_tuning and dcache_tuning
roles), with bench/bench_apply_faults.py's code: ansible-playbook SIGKILLed (by pid, with its workers)
mid-play in each role, then run again, finishes like an uninterrupted apply with no line twice in any
persisted file; a host taken down mid-play (its boot process killed by pid) leaves the other hosts
complete and apply-summary.json names it with its unfinished changes. Real lab, sshd and
ansible-playbook; needs root (CI is root); about five minutes here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.support.lab import REPO, lab_cli, require_root


def _bench():
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("bench_apply_faults", REPO / "bench" / "bench_apply_faults.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_duplicates_helper() -> None:
    bench = _bench()
    before = {Path("/x"): "a = 1\n# c\n# c\n"}
    assert bench.new_duplicates(before, {Path("/x"): "a = 1\n# c\n# c\nb = 2\n"}) == []
    assert bench.new_duplicates(before, {Path("/x"): "a = 1\nb = 2\nb = 2\n"}) == ["/x: 'b = 2' x2"]
    assert bench.new_duplicates(before, {Path("/x"): "a = 1\na = 1\n"}) == ["/x: 'a = 1' x2"]


@pytest.mark.usefixtures("ansible_playbook")
def test_apply_killed_mid_play_and_a_host_down(lab_registry: Path, tmp_path: Path) -> None:  # noqa: F811
    require_root()
    bench = _bench()
    scenario = tmp_path / "seed2.yml"
    lab_cli(["generate", "--seed", "2", "--out", str(scenario)])
    work = tmp_path / "work"
    work.mkdir()
    row = bench.FaultShape("tseed2", str(scenario), work).run()
    assert row["kills"] and set(row["kills"]) == set(row["roles"]), row
    assert all(v == "ok" for v in row["kills"].values()), row["kills"]
    down = row["host_down"]
    assert down["host"] in down["unfinished_hosts"] and down["unfinished"], down
    assert row["ok"], row["problems"]
