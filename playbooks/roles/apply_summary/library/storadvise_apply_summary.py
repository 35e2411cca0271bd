#!/usr/bin/python
# -*- coding: utf-8 -*-
# storadvise apply_summary: what each role changed and what failed, per host and setting.

from __future__ import annotations

DOCUMENTATION = r"""
module: storadvise_apply_summary
short_description: Summarise the storadvise roles' results per host and setting
description:
  - Takes the registered results of the storadvise roles (their C(changed_settings) and
    C(failed_settings)), the errors of roles that failed as a whole on a host, and the hosts that
    gave no result (unreachable, or stopped before the role ran), and returns one line per setting.
  - Writes the same summary as JSON to C(summary_file) on the controller.
options:
  results:
    description: "[{host, role, result, error}], one per host and role the host is in."
    type: list
    elements: dict
    required: true
  run:
    description: What ran (apply or rollback).
    type: str
    default: apply
  summary_file:
    description: Where the JSON summary is written (empty = not written).
    type: path
  check:
    description: The run was in check mode (the changes are those that would be made).
    type: bool
    default: false
  missing_hosts:
    description:
      - Hosts the plan names that the run's inventory does not hold (plan_groups.yml names them): each
        counts as failed, its planned changes as unfinished.
    type: list
    elements: str
    default: []
  plan_file:
    description:
      - The plan's plan.json (its C(changes), each with host, role and setting). For an apply, a role
        that gave no result on a host (the host went down, was unreachable, or the play stopped on it)
        or failed as a whole lists the plan's changes of that host and role under C(unfinished).
    type: path
author: storadvise
"""

RETURN = r"""
lines:
  description: The summary, one line per host, role and setting.
  type: list
  returned: always
failed_count:
  description: Settings that failed, plus roles that failed or gave no result on a host.
  type: int
  returned: always
failed_hosts:
  description: Hosts with at least one failure.
  type: list
  returned: always
unfinished_hosts:
  description: Hosts with planned changes that a role never finished (apply only).
  type: list
  returned: always
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule


def planned_changes(path):
    """host -> role -> [{setting, new}] from the plan's plan.json (empty when there is none)."""
    out = {}
    if not path or not os.path.isfile(path):
        return out
    try:
        with open(path) as f:
            changes = json.load(f).get("changes") or []
    except (OSError, ValueError):
        return out
    for c in changes:
        if isinstance(c, dict) and c.get("host") and c.get("role"):
            out.setdefault(c["host"], {}).setdefault(c["role"], []).append(
                {"setting": c.get("setting") or c.get("key"), "new": c.get("new", c.get("target"))})
    return out


def outcome(entry):
    """(changed, failed) lists of one host's role result."""
    result, error = entry.get("result"), entry.get("error")
    if error:
        return [], [{"setting": "(whole role)", "why": str(error)}]
    if result is None:
        return [], [{"setting": "(whole role)",
                     "why": "no result: the host was unreachable, or the play stopped on it before this role"}]
    if result.get("unreachable"):
        return [], [{"setting": "(whole role)", "why": "unreachable: %s" % str(result.get("msg") or "").strip()}]
    if result.get("skipped"):
        return [], []
    if result.get("failed"):
        return [], [{"setting": "(whole role)", "why": str(result.get("msg") or "failed")}]
    return list(result.get("changed_settings") or []), list(result.get("failed_settings") or [])


def main():
    module = AnsibleModule(argument_spec=dict(
        results=dict(type="list", elements="dict", required=True),
        run=dict(type="str", default="apply"),
        summary_file=dict(type="path"),
        check=dict(type="bool", default=False),
        plan_file=dict(type="path"),
        missing_hosts=dict(type="list", elements="str", default=[]),
    ), supports_check_mode=True)
    p = module.params
    planned = planned_changes(p["plan_file"]) if p["run"] == "apply" else {}
    hosts = {}
    for host in p["missing_hosts"]:
        h = hosts.setdefault(host, {"changed": [], "failed": []})
        h["failed"].append({"setting": "(whole host)", "role": "-",
                            "why": "not in the inventory this run used: nothing was changed on it"})
        todo = [dict(c, role=role) for role, changes in sorted(planned.get(host, {}).items()) for c in changes]
        if todo:
            h["unfinished"] = todo
    for entry in p["results"]:
        changed, failed = outcome(entry)
        h = hosts.setdefault(entry["host"], {"changed": [], "failed": []})
        h["changed"] += [dict(c, role=entry["role"]) for c in changed]
        h["failed"] += [dict(f, role=entry["role"]) for f in failed]
        if any(f["setting"] == "(whole role)" for f in failed):
            # the role never finished on this host: every change the plan gave it may be undone
            todo = planned.get(entry["host"], {}).get(entry["role"], [])
            if todo:
                h.setdefault("unfinished", []).extend(dict(c, role=entry["role"]) for c in todo)
    verb = "would change" if p["check"] else "changed"
    lines = []
    for host in sorted(hosts):
        h = hosts[host]
        lines.append("%s: %d %s, %d failed" % (host, len(h["changed"]), verb, len(h["failed"])))
        for c in h["changed"]:
            lines.append("  %s %s: %s %s -> %s" % (verb, c["role"], c.get("setting"), c.get("old"), c.get("new")))
        for f in h["failed"]:
            lines.append("  FAILED %s %s: %s" % (f["role"], f.get("setting"), f.get("why")))
        for u in h.get("unfinished", []):
            lines.append("  UNFINISHED %s %s -> %s" % (u["role"], u.get("setting"), u.get("new")))
    failed_hosts = sorted(h for h in hosts if hosts[h]["failed"])
    unfinished_hosts = sorted(h for h in hosts if hosts[h].get("unfinished"))
    count = sum(len(h["failed"]) for h in hosts.values())
    summary = {"run": p["run"], "check_mode": p["check"], "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "failed_count": count, "failed_hosts": failed_hosts, "unfinished_hosts": unfinished_hosts,
               "hosts": hosts}
    if p["summary_file"]:
        try:
            tmp = p["summary_file"] + ".tmp"
            with open(tmp, "w") as f:
                json.dump(summary, f, indent=2, sort_keys=True, default=str)
                f.write("\n")
            os.rename(tmp, p["summary_file"])
        except OSError as exc:
            module.warn("could not write %s: %s" % (p["summary_file"], exc))
    module.exit_json(changed=False, lines=lines, failed_count=count, failed_hosts=failed_hosts,
                     unfinished_hosts=unfinished_hosts, hosts=hosts)


if __name__ == "__main__":
    main()
