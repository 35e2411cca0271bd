"""Removing a lab, and finding the labs there are: by their records, their state directories, the
namespaces with the lab's prefix and the root interfaces with its alias (so a lab whose ``up`` was
killed is found and removed too). Processes are killed by pid only: the pids recorded (checked to
be the lab's by their command line) and the pids the kernel lists inside the lab's namespaces."""

from __future__ import annotations

import shutil

from advisor.lab import netns as nx
from advisor.lab.records import (
    LabRecord,
    claims_lock,
    existing_lab_names,
    lab_dir,
    labs_dir,
    ns_prefix,
    read_pids,
    registry_prefix,
    release_index,
)
from advisor.lab.site_files import unregister_site


def leftover_namespaces(name: str) -> list[str]:
    return [n for n in nx.list_netns() if n.startswith(ns_prefix(name))]


def _lab_root_ifaces(name: str) -> list[str]:
    alias = f"{ns_prefix(name)}ctl"
    return [l["ifname"] for l in nx.root_links() if l.get("ifalias") == alias]


def teardown_lab(name: str) -> dict:
    """Remove every trace of lab ``name``: processes, namespaces, root interfaces, files."""
    rec = LabRecord.load(name)
    d = lab_dir(name)
    namespaces = set(leftover_namespaces(name))
    ifaces = set(_lab_root_ifaces(name))
    if rec is not None:
        namespaces |= {n for n in rec.namespaces if n in set(nx.list_netns())}
        ifaces |= {i for i in rec.root_ifaces if any(l["ifname"] == i for l in nx.root_links())
                   and _iface_alias(i) in (None, "", f"{ns_prefix(name)}ctl")}
    # processes: what the kernel says is inside the lab's namespaces, plus recorded pids that are ours
    pids: set[int] = set()
    inodes = {nx.netns_inode(n) for n in namespaces} - {None}
    for n in namespaces:
        pids |= set(nx.netns_pids(n))
    for pid, _what, _host in read_pids(d):
        if not nx.pid_alive(pid):
            continue
        if str(d) in nx.pid_cmdline(pid) or nx.netns_inode_of_pid(pid) in inodes:
            pids.add(pid)
    nx.kill_pids(pids)
    # namespaces (their veths go with them) and the root veth
    if namespaces:
        nx.run(["ip", "-batch", "-"], input="".join(f"netns del {n}\n" for n in sorted(namespaces)), check=False)
        for n in sorted(namespaces):
            if n in nx.list_netns():
                nx.run(["ip", "netns", "del", n], check=False)
    for i in sorted(ifaces):
        nx.run(["ip", "link", "del", i], check=False)
    unregister_site(name)
    if rec is not None:
        with claims_lock():
            release_index(rec.index, d)
    if d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
    return {"name": name, "namespaces": sorted(namespaces), "interfaces": sorted(ifaces), "pids": sorted(pids)}


def _iface_alias(ifname: str) -> str | None:
    for l in nx.root_links():
        if l.get("ifname") == ifname:
            return l.get("ifalias")
    return None


def all_lab_names() -> list[str]:
    names = set(existing_lab_names())
    d = labs_dir()
    if d.is_dir():
        names |= {p.name for p in d.iterdir() if p.is_dir() and p.name != "sites"}
    pre = registry_prefix()
    for n in nx.list_netns():
        if n.startswith(pre) and "~" in n:
            names.add(n[len(pre):].split("~", 1)[0])
    for l in nx.root_links():
        a = l.get("ifalias") or ""
        if a.startswith(pre) and a.endswith("~ctl") and "~" not in a[len(pre):-len("~ctl")]:
            names.add(a[len(pre):-len("~ctl")])
    return sorted(names)
