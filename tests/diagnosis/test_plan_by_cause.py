"""PLAN.md and plan.json lead with the causes: the changes in the order of the causes they serve,
hygiene after them, each cause with what it is predicted to buy (docs/diagnosis.md)."""

from __future__ import annotations

from advisor.apply.plan_markdown import plan_markdown
from advisor.apply.planner import build_plan
from advisor.diagnosis import DiagnosisInput, diagnose
from advisor.site.model import Site

from tests.support.diagnosis_site import ADDR, RACK_A, RACK_B, SERVERS, TAGS, findings, mesh, report, site_facts


def test_plan_md_is_ordered_by_cause_and_predicts_each():
    m = mesh()
    d = diagnose(DiagnosisInput(findings=findings(m), mesh=m, efficiency=None, facts=site_facts(), tags=TAGS,
                                addresses=ADDR))
    site = Site.model_validate({"name": "s", "hosts": [{"name": h, "roles": ["storage" if h in SERVERS else "worker"]}
                                                       for h in SERVERS + RACK_A + RACK_B]})
    plan = build_plan(report(m, site_facts(), d), site)
    md = plan_markdown(plan, "/x")
    assert md.index("## Causes, worst first") < md.index("## Changes")
    causes = md.split("## Causes, worst first", 1)[1].split("## Changes", 1)[0]
    assert "packet loss" in causes and "by hand:" in causes and "of expected" in causes
    changes = md.split("## Changes", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in changes.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    # the first row is a change of the worst cause the plan could make (this site's firewall facts are
    # too thin for the firewall adapter: that cause is under "Cannot apply here")
    first = next(c for c in plan.as_dict()["causes"] if c["planned"])
    assert first["planned"][0]["key"] in rows[0]
    assert "Cannot apply here" in md
    assert "gpfs pagepool" in rows[-1] or "pagepool" in rows[-1]  # hygiene comes last
    assert [c["id"] for c in plan.as_dict()["causes"]] == [c.id for c in d.causes]
    assert plan.as_dict()["plan_prediction"]
