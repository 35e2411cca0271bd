"""Mesh strategies for thousands of workers (issue 14, item 6): which paths a run keeps, how the
rotation covers the matrix over runs, and that `mesh plan` prints rounds and wall time."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from advisor.util.errors import UsageError
from advisor.mesh.schedule import expand_pairs, mesh_schedule
from advisor.mesh.strategies import estimated_wall_seconds, runs_to_cover, select_paths
from advisor.site.model import Site

N_WORKERS, N_STORAGE = 400, 6


def big_site(pairs=({"a": "storage", "b": "worker"}, {"a": "storage"})) -> Site:
    hosts = [{"name": f"se{i:02d}", "roles": ["storage"], "vars": {"rack": f"s{i // 3}"}} for i in range(1, N_STORAGE + 1)]
    hosts += [{"name": f"wn{i:04d}", "roles": ["worker"], "vars": {"rack": f"r{(i - 1) // 40:02d}"}}
              for i in range(1, N_WORKERS + 1)]
    return Site.model_validate({"name": "t1", "hosts": hosts, "mesh": {"pairs": list(pairs), "duration": 5, "omit": 1}})


def test_bipartite_keeps_only_storage_worker_paths():
    site = big_site()
    reqs = expand_pairs(site)
    kept = select_paths(site, reqs, "bipartite")
    assert len(reqs) == 2 * N_STORAGE * N_WORKERS + N_STORAGE * (N_STORAGE - 1)
    assert len(kept) == 2 * N_STORAGE * N_WORKERS
    assert all(r.src.startswith("se") != r.dst.startswith("se") for r in kept)


def test_sample_gives_each_worker_k_partners_and_rotates_over_the_whole_matrix():
    site = big_site()
    reqs = expand_pairs(site)
    k = 2
    cover = runs_to_cover(site, reqs, "sample", k, "rack")
    assert cover == 3  # 6 storage partners, 2 per run
    seen: set[tuple[str, str]] = set()
    for run in range(cover):
        kept = select_paths(site, reqs, "sample", k=k, run=run)
        partners = Counter(r.dst for r in kept if r.src.startswith("se"))
        assert set(partners.values()) == {k} and len(partners) == N_WORKERS  # k storage partners per worker
        assert all((r.dst, r.src) in {(x.src, x.dst) for x in kept} for r in kept)  # both directions
        assert not any(r.src.startswith("se") and r.dst.startswith("se") for r in kept)
        seen |= {(r.src, r.dst) for r in kept}
    assert seen == {(r.src, r.dst) for r in select_paths(site, reqs, "bipartite")}
    # random, not the same partners for every worker; fixed for a given run
    first = select_paths(site, reqs, "sample", k=k, run=0)
    assert len({r.dst for r in first if r.src.startswith("se")}) > 1
    assert first == select_paths(site, reqs, "sample", k=k, run=0)
    assert first != select_paths(site, reqs, "sample", k=k, run=1)


def test_representative_one_host_per_rack_rotating():
    site = big_site(pairs=({"a": "worker"}, {"a": "storage", "b": "worker"}))
    reqs = expand_pairs(site)
    runs = runs_to_cover(site, reqs, "representative", 2, "rack")
    assert runs == 40
    reps_by_run = []
    for run in (0, 1):
        kept = select_paths(site, reqs, "representative", run=run)
        reps = {n for r in kept for n in (r.src, r.dst)}
        racks = Counter(next(h.vars["rack"] for h in site.hosts if h.name == n) for n in reps)
        assert set(racks.values()) == {1} and len(racks) == len({h.vars["rack"] for h in site.hosts})
        reps_by_run.append(reps)
    assert reps_by_run[0] != reps_by_run[1]


def test_estimate_and_bad_arguments():
    rounds = [[("a", "b"), ("c", "d"), ("e", "f")], [("a", "c")]]
    assert estimated_wall_seconds(rounds, 6, None, per_round_overhead=0.5) == 13.0
    assert estimated_wall_seconds(rounds, 6, 2, per_round_overhead=0.5) == 19.0
    site = big_site()
    with pytest.raises(UsageError, match="unknown mesh strategy"):
        select_paths(site, [], "everything")
    with pytest.raises(UsageError, match="--partners"):
        select_paths(site, [], "sample", k=0)


def test_mesh_plan_prints_rounds_and_estimated_wall_time(tmp_path):
    site = big_site()
    path = tmp_path / "t1.yml"
    import yaml

    path.write_text(yaml.safe_dump(json.loads(site.model_dump_json(exclude_defaults=True))))
    cmd = [sys.executable, "-m", "advisor.cli.root", "mesh", "plan", "--site", str(path), "--strategy", "sample",
           "--k", "2", "--run", "1"]
    r = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["strategy"] == "sample" and d["run"] == 1 and d["runs_to_cover"] == 3
    assert len(d["paths"]) == 2 * 2 * N_WORKERS
    rounds = mesh_schedule(select_paths(site, expand_pairs(site), "sample", k=2, run=1))
    assert d["rounds"] == len(rounds) and d["estimated_wall_s"] == round(estimated_wall_seconds(rounds, 6, None), 1)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"strategy sample: {2 * 2 * N_WORKERS} of ") and "rounds" in r.stdout
    assert "estimated wall time" in r.stdout
