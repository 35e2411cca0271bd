"""The acceptance checklist of a new installation, judged from one scan report and the site.

Checks, each a line of the checklist (and a JUnit test case):

``reachable``   every host of the site was reached;
``mesh``        every mesh path the site defines ran and measured at least ``GREEN_RATIO`` of its
                expected rate (a site with a mesh whose scan has none fails: not measured);
``setting``     no finding at or above ``threshold`` (medium) fails, and no rule errored (a setting
                that could not be read is not accepted); named by rule pack (gpfs, xcache, network ...)
                so the GPFS and XCache settings the profile demands show as such;
``waiver``      every waiver of the site names a rule that exists and a host of the site, has an
                approver and an expiry date, and has not expired.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from dataclasses import asdict, dataclass
from typing import Any

from advisor.model.findings import SEVERITY_ORDER, FindingStatus
from advisor.rules.host_failures import UNREACHABLE_RULE
from advisor.mesh.results import GREEN_RATIO, path_ratio
from advisor.report.finding_text import said
from advisor.report.model import ScanReport
from advisor.rules.specs import RuleCatalog
from advisor.site.model import Site

DEFAULT_PROFILE = "pre-deployment"
DEFAULT_THRESHOLD = "medium"


@dataclass
class CheckItem:
    check: str
    subject: str
    passed: bool
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _reachable(report: ScanReport) -> list[CheckItem]:
    return [CheckItem("reachable", h.name, h.reachable, "; ".join(h.errors) if not h.reachable else "reached")
            for h in report.hosts]


def _mesh(report: ScanReport, site: Site) -> list[CheckItem]:
    paths = (report.mesh or {}).get("paths") or []
    if site.mesh and site.mesh.pairs and not paths:
        return [CheckItem("mesh", "all paths", False, "the site defines a mesh but the scan measured none")]
    items = []
    for p in paths:
        subject = f"{p.get('src')}->{p.get('dst')}"
        r = path_ratio(p)
        if p.get("status") != "ok":
            items.append(CheckItem("mesh", subject, False, f"test failed: {p.get('error') or 'no result'}"))
        elif r is None:
            items.append(CheckItem("mesh", subject, False, "no expected rate to judge the path against"))
        else:
            ok = r >= GREEN_RATIO
            items.append(CheckItem("mesh", subject, ok, f"{p['measured_bps'] / 1e6:,.0f} Mb/s = {r:.0%} of the "
                                   f"expected {p['expected_bps'] / 1e6:,.0f} Mb/s" + ("" if ok else f" (< {GREEN_RATIO:.0%})")
                                   if p.get("expected_bps") else f"{r:.0%} of the reference"))
    return items


def _settings(report: ScanReport, catalog: RuleCatalog, threshold: str) -> list[CheckItem]:
    """One item per rule, subject and host failing at or above ``threshold`` (a failed JUnit case), or
    errored; an unreachable host is the ``reachable`` check's, counted there only."""
    floor = SEVERITY_ORDER.index(threshold)
    items, seen = [], set()
    for f in report.findings:
        if f.rule_id == UNREACHABLE_RULE:
            continue
        pack = catalog.rules[f.rule_id].pack if f.rule_id in catalog.rules else "rules"
        pack = pack[:-4] if pack.endswith(".yml") else pack
        failing = f.status == FindingStatus.fail and f.severity.rank >= floor
        if not (failing or f.status == FindingStatus.error):
            continue
        for host in f.hosts or ["site"]:
            subject = f"{pack}: {f.rule_id}" + (f"[{f.subject}]" if f.subject else "") + f" on {host}"
            if subject in seen:
                continue
            seen.add(subject)
            msg = (f"{f.severity.value}: {said(f, host)}" if failing
                   else f"could not be checked: {f.message or 'probe error'}")
            items.append(CheckItem("setting", subject, False, msg))
    if not items:
        items.append(CheckItem("setting", "all rules", True, f"no finding at or above {threshold} fails, none errored"))
    return items


def _waivers(site: Site, catalog: RuleCatalog, today: dt.date) -> list[CheckItem]:
    items = []
    for i, w in enumerate(site.waivers):
        problems = []
        if not any(fnmatch.fnmatchcase(r, w.rule) for r in catalog.rules):
            problems.append("matches no rule")
        if not site.select(w.hosts):
            problems.append("matches no host of the site")
        if not w.approved_by:
            problems.append("no approved_by")
        if w.expires is None:
            problems.append("no expiry date")
        elif w.expired(today):
            problems.append(f"expired on {w.expires}")
        items.append(CheckItem("waiver", f"waivers[{i}] {w.rule} on {w.hosts}", not problems,
                               "; ".join(problems) or f"approved by {w.approved_by}, until {w.expires}"))
    return items


def audit_checklist(report: ScanReport, site: Site, catalog: RuleCatalog, *, threshold: str = DEFAULT_THRESHOLD,
                    today: dt.date | None = None) -> list[CheckItem]:
    today = today or dt.date.today()
    return (_reachable(report) + _mesh(report, site) + _settings(report, catalog, threshold)
            + _waivers(site, catalog, today))
