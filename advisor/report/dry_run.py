"""The console text of ``scan --dry-run`` (advisor/scan/dry_run.py builds what it shows): plain text, the
scripts printed exactly as they would be sent, never wrapped or cut."""

from __future__ import annotations

from typing import Any

from rich.console import Console


def _privilege_text(p: dict[str, Any]) -> str:
    """How a probe runs (advisor.collect.probe_plan.Privilege), with sudo only where the scan uses it."""
    unless = " unless the login is root" if p["sudo"] is None else ""
    privilege = p["privilege"]
    if privilege == "helper":
        if p["sudo"] is False:
            return f"{p['helper']} {p['probe']} (the probe helper, as root: no sudo)"
        return f"sudo -n {p['helper']} {p['probe']}{unless}"
    if privilege == "root":
        return "as root (the login user): no sudo"
    if privilege == "sudo":
        return f"sudo -n{unless}"
    return "as the login user (sudo: false)" if p["needs_root"] else ""


def _lines(plan: dict[str, Any]) -> list[str]:
    out = [f"site {plan['site']}: what a scan would run (dry run: no host was contacted)"]
    if plan.get("from_capture"):
        out.append(f"reads the outputs saved in {plan['from_capture']}; runs nothing on any host")
    for h in plan["hosts"]:
        out += ["", f"== {h['host']} ({', '.join(h['roles']) or 'no role'}): {h['reached_by']}"]
        if h["temp_dir"]:
            out.append(f"   every script and its output in {h['temp_dir']}")
        skipped = [p["probe"] for p in h["probes"] if p["skipped"]]
        for p in h["probes"]:
            if p["skipped"]:
                continue
            how = [_privilege_text(p), f"timeout {p['timeout_s']:g} s"] \
                + (["or read in-process (psutil) on the local host"] if p["in_process"] else [])
            out.append(f"-- {p['probe']}: " + ", ".join(w for w in how if w) + (" (needs root)" if p["needs_root"] else ""))
            out += ["   " + line for line in p["script"].rstrip("\n").splitlines()]
        if skipped:
            out.append(f"-- not run (--probes/--skip-probes): {', '.join(skipped)}")
    mesh = plan.get("mesh")
    if mesh:
        out += ["", f"== iperf3 mesh: {len(mesh['paths'])} path(s) in {len(mesh['rounds'])} round(s), "
                    f"{mesh['duration_s']:g} s per test, {mesh['streams']} stream(s)"]
        if mesh.get("retest_below"):
            out.append(f"   paths below {mesh['retest_below']:g} of their expected rate are measured again, alone")
        out += [f"   {n}" for n in mesh.get("notes", [])]
        for i, rnd in enumerate(mesh["rounds"], start=1):
            out.append(f"-- round {i}")
            for t in rnd:
                out.append(f"   {t['src']} -> {t['dst']}"
                           + (" and back (--bidir, where both ends run iperf3 >= 3.7)" if t["bidir"] else "")
                           + f", port {t['port']}")
                out.append(f"      on {t['dst']}: {t['on_dst']}")
                out.append(f"      on {t['src']}: {t['on_src']}")
    eff = plan.get("efficiency")
    if eff:
        out.append("")
        if "error" in eff:
            out.append(f"== active efficiency test: would not run: {eff['error']}")
        else:
            out.append(f"== active efficiency test: workers {', '.join(eff['workers'])} (one at a time), "
                       f"protocols {', '.join(eff['protocols'])}, clients {eff['clients']}, {eff['mb_per_host']} MiB per host")
            for proto, src in eff["sources"].items():
                out.append(f"   {proto} source: " + ", ".join(f"{k} {v}" for k, v in src.items()))
            out.append(f"   on the source host: {eff['on_source']}")
            out.append(f"   on each worker: {eff['on_worker']}")
    return out


def render_dry_run(plan: dict[str, Any], console: Console) -> None:
    console.print("\n".join(_lines(plan)), markup=False, highlight=False, soft_wrap=True)
