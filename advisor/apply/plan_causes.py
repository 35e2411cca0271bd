"""PLAN.md and the plan's console ordered by cause (docs/diagnosis.md): the causes the plan acts on,
worst first, each with what it is predicted to buy; the change rows in the order of the causes they
serve (hygiene after them), and the changes set aside. Renders what the plan holds."""

from __future__ import annotations

from advisor.apply.plan_model import Plan
from advisor.diagnosis.report_types import Predicted
from advisor.report.console_causes import held_by_line, prediction_line
from advisor.util.host_ranges import hosts_text
from advisor.report.safe_text import markdown_text


def _slots(cause: dict) -> set[tuple[str, str, str]]:
    return {(c["host"], c["adapter"], c["key"]) for c in cause.get("planned") or []}


def order_by_cause(plan: Plan, groups: list) -> list:
    """The change rows (advisor.apply.plan_markdown.ChangeGroup, in apply order), those of the worst
    cause first (a row serving several causes goes with the first); the rows no cause needs (hygiene)
    after them, in apply order."""
    rank: dict[tuple[str, str, str], int] = {}
    for i, cause in enumerate(plan.causes):
        for slot in _slots(cause):
            rank.setdefault(slot, i)
    last = len(plan.causes)
    return sorted(groups, key=lambda g: min((rank.get((pc.change.host, pc.change.adapter, pc.change.key), last)
                                             for pc in g.changes), default=last))


def cause_lines(plan: Plan) -> list[str]:
    """PLAN.md's "Causes, worst first" section (empty when the scan had none)."""
    if not plan.causes:
        return []
    lines = ["## Causes, worst first", "",
             "What each change is for and what it is predicted to buy (docs/diagnosis.md); the changes below "
             "are in this order.", ""]
    numbers = {o["id"]: (n, o["title"]) for n, o in enumerate(plan.causes, 1)}
    for i, c in enumerate(plan.causes, 1):
        preds = [Predicted.model_validate(p) for p in c.get("predicted") or []]
        if c["kind"] == "change":
            what = f"{len(c['planned'])} change(s) planned" + (
                f", {c['not_planned']} not (see below)" if c.get("not_planned") else "")
            line = prediction_line(preds)
        else:
            what, line = "by hand", "after the plan: " + prediction_line(preds, after_key="after_plan")
        lines.append(f"{i}. **{_md(c['title'])}** on {_md(hosts_text(c['hosts'], limit=8))} ({what}): {_md(line)}")
        rest = held_by_line(preds, numbers)
        if rest:
            lines.append(f"   - {_md(rest)}")
        if c.get("action"):
            lines.append(f"   - by hand: {_md(c['action'])}")
    return lines + [""]


def set_aside_lines(plan: Plan) -> list[str]:
    if not plan.set_aside:
        return []
    by: dict[tuple[str, str, str], list[str]] = {}
    for a in plan.set_aside:
        by.setdefault((a["key"], str(a["target"]), a["reason"]), []).append(a["host"])
    lines = ["## Set aside", "", "Proposed only by an analysis of symptoms that no cause supports; not planned:", ""]
    lines += [f"- {_md(hosts_text(hosts))}: {_md(key)} -> {_md(target)}: {_md(reason)}"
              for (key, target, reason), hosts in by.items()]
    return lines + [""]


def _md(text: object) -> str:
    """Host or rule text inside Markdown: escaped, newlines made visible (advisor/report/safe_text.py)."""
    return markdown_text(text)
