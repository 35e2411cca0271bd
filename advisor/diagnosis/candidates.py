"""Candidate causes: the changes failed findings propose, grouped into one thing to fix each, and
how the path model sees each change (docs/diagnosis.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.diagnosis.localise import LossBlame
from advisor.diagnosis.report_types import FindingRef, Predicted
from advisor.diagnosis.paths import Fix
from advisor.model.findings import Change, Finding

#: the kernel's limit classes each kind of fix acts on (a cause whose paths agree is confident)
FIX_CLASS = {"sack": {"loss"}, "loss": {"loss"}, "loss_recv": {"loss"}, "nic_speed": {"link"}, "rmem": {"receiver_window"},
              "wmem": {"sender_buffer"}, "wscale": {"receiver_window", "sender_buffer"}, "firewall": {"policer", "loss"},
              "mtu_probing": set()}
BUFFER_FAMILY = {"net.core.rmem_max": "net.ipv4.tcp_rmem", "net.core.wmem_max": "net.ipv4.tcp_wmem"}


@dataclass
class ByHand:
    """A repair by hand a measurement names (a path-MTU black hole, a NIC negotiated low): what the cause
    says, as advisor/diagnosis/nic_causes.py words it."""

    title: str
    action: str
    hosts: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    confidence: float = 0.8


@dataclass
class Candidate:
    key: tuple
    kind: str  # change | by_hand
    changes: list[Change] = field(default_factory=list)
    proposed_by: list[Finding] = field(default_factory=list)
    fixes: set[Fix] = field(default_factory=set)
    blame: LossBlame | None = None
    by_hand: ByHand | None = None
    #: a measured state to repair by hand: its most severe finding, and every finding of its object
    state: Finding | None = None
    folded: list[Finding] = field(default_factory=list)
    explains: dict[tuple, FindingRef] = field(default_factory=dict)
    predicted: list[Predicted] = field(default_factory=list)
    agree: int = 0
    judged: int = 0


def norm(v: Any) -> str:
    return " ".join(str(v).split()).lower() if v is not None else ""


def ref(f: Finding) -> FindingRef:
    return FindingRef(rule_id=f.rule_id, subject=f.subject, hosts=list(f.hosts))


def refkey(f: Finding) -> tuple:
    return f.rule_id, f.subject or "", tuple(f.hosts)


def fix_of(setting: Change) -> Fix | None:
    """The path model's view of a change (None: the change does not act on a TCP path)."""
    k, t = setting.key, norm(setting.target)
    if setting.adapter == "firewall" and t == "absent":
        return Fix("firewall", setting.host)
    if setting.adapter != "sysctl":
        return None
    if k == "net.ipv4.tcp_sack" and t == "1":
        return Fix("sack", setting.host)
    if k == "net.ipv4.tcp_window_scaling" and t == "1":
        return Fix("wscale", setting.host)
    if k == "net.ipv4.tcp_mtu_probing" and t in ("1", "2"):
        return Fix("mtu_probing", setting.host)
    if k in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
        try:
            return Fix("rmem" if k.endswith("rmem") else "wmem", setting.host, float(t.split()[-1]))
        except (ValueError, IndexError):
            return None
    return None


def _group_key(f: Finding, c) -> tuple:
    if c.adapter == "sysctl":
        family = BUFFER_FAMILY.get(c.key, c.key)
        return ("sysctl", family) if family != c.key else ("sysctl", c.key, norm(c.target))
    if c.adapter == "firewall":
        return ("firewall", c.host)
    return (c.adapter, f.rule_id)


def change_candidates(failed: list[Finding]) -> list[Candidate]:
    """The proposed changes, grouped into candidate causes: one setting to one target across hosts
    (a buffer maximum joins its TCP buffer), one host's firewall, one rule's changes elsewhere."""
    groups: dict[tuple, Candidate] = {}
    seen: set[tuple] = set()
    proposed: set[tuple[tuple, int]] = set()  # (candidate key, id of a finding in its proposed_by)
    for f in failed:
        for c in f.changes:
            if c.runtime is not None and norm(c.runtime) == norm(c.target):
                continue  # nothing to change at run time: persistence is the planner's business
            key = _group_key(f, c)
            cand = groups.setdefault(key, Candidate(key=key, kind="change"))
            slot = (c.host, c.adapter, c.key)
            if slot not in seen:
                seen.add(slot)
                cand.changes.append(c)
                fx = fix_of(c)
                if fx:
                    cand.fixes.add(fx)
            if (key, id(f)) not in proposed:
                proposed.add((key, id(f)))
                cand.proposed_by.append(f)
    # a buffer family keyed without a target: split by target of its TCP key so that hosts raised
    # to different sizes by different rules stay one cause only when the size agrees
    return list(groups.values())


