"""apply-tuning.yml and rollback.yml come from the adapter registry: the shipped files are its
generation over the shipped adapters, in the registry's order, and the summary play is handed the
same list of roles."""

from __future__ import annotations

import yaml

from advisor.adapters import adapters
from advisor.apply.plan_model import registered_roles
from advisor.apply.playbooks_gen import generated, main
from advisor.util.resources import playbooks_dir


def test_the_shipped_playbooks_are_the_registry_s_generation():
    for name, text in generated(shipped_only=True).items():
        assert (playbooks_dir() / name).read_text() == text, f"{name} is stale: python -m advisor.apply.playbooks_gen --write"
    assert main([]) == 0


def test_one_order_for_the_plays_the_rollback_the_summary_and_the_plan():
    apply = yaml.safe_load(generated(shipped_only=True)["apply-tuning.yml"])
    rollback = yaml.safe_load(generated(shipped_only=True)["rollback.yml"])
    roles = [p["roles"][0]["role"] for p in apply[1:-1]]
    assert roles == registered_roles() == list(dict.fromkeys(a.role for a in adapters().values()))
    assert [p["roles"][0]["role"] for p in rollback[1:-1]] == roles[::-1]
    for book, run in ((apply, None), (rollback, "rollback")):
        summary = book[-1]["roles"][0]
        assert summary["role"] == "apply_summary" and summary["vars"]["apply_summary_roles"] == roles
        assert summary["vars"].get("apply_summary_run") == run
    assert all(p["hosts"] == f"storadvise_{p['roles'][0]['role']}" for p in apply[1:-1])
    # every play has its adapter's own title
    titles = {a.role: a.play_title for a in adapters().values()}
    assert all(p["name"] == titles[p["roles"][0]["role"]] for p in apply[1:-1])
