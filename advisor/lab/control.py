"""Bringing a lab up, taking it down, and reporting its state.

``lab_up`` records every name it will create before creating it and every pid as it starts it
(advisor.lab.records), so ``lab_down`` removes everything even after ``up`` was killed
(advisor.lab.teardown finds and removes a lab's traces). The path faults are
advisor.lab.path_faults.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from advisor.util.errors import StoradviseError
from advisor.lab import hosts as hostmod
from advisor.lab import netns as nx
from advisor.lab.reboot import reboot_host, record_defaults
from advisor.lab.records import (
    LabRecord,
    allocate_index,
    claims_lock,
    host_ns,
    lab_dir,
    labs_lock,
    ns_prefix,
    root_iface,
    subnet_for,
    switch_ns,
)
from advisor.lab.scenario import Scenario, load_scenario
from probes.sysctl_conf import sysctl_proc_path
from advisor.lab.site_files import write_site_files
from advisor.lab.path_faults import apply_path_faults
from advisor.lab.traffic_lab import start_traffic
from advisor.lab.teardown import all_lab_names, leftover_namespaces, teardown_lab

Progress = Callable[[str], None]
_NAME_OK = __import__("re").compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


def _noop(msg: str) -> None:
    pass


def require_root() -> None:
    if os.geteuid() != 0:
        raise StoradviseError("storadvise lab needs root (network namespaces, sshd, mounts): run it as root")


def check_lab_name(name: str) -> str:
    if not _NAME_OK.match(name):
        raise StoradviseError(f"bad lab name {name!r}: letters, digits, '.', '_' and '-' only, at most 40")
    return name


@dataclass
class UpResult:
    record: LabRecord
    reused: bool
    site_file: str


# -- up -------------------------------------------------------------------------------------


def refuse_unrealisable(sc: Scenario, caps: nx.Capabilities) -> None:
    missing = []
    if not caps.bridge:
        missing.append(f"Linux bridges ({caps.errors.get('bridge', '')})")
    if not caps.tbf and any(h.link_rate for h in sc.hosts):
        missing.append(f"link rates need the tbf qdisc ({caps.errors.get('tbf', '')})")
    if sc.needs_loss and not caps.nft_bridge_numgen:
        missing.append(f"path loss needs nftables bridge-family rules with numgen ({caps.errors.get('nft bridge', '')})")
    if sc.needs_delay and not caps.nfqueue:
        missing.append(
            "path delay needs the NFQUEUE delay forwarder (iptables NFQUEUE target, nfnetlink_queue and "
            f"br_netfilter in the switch namespace): {caps.errors.get('nfqueue') or caps.errors.get('iptables', 'not available')}"
        )
    if any(h.firewall and h.firewall.iptables for h in sc.hosts) and not caps.iptables:
        missing.append(f"an iptables firewall fault needs iptables ({caps.errors.get('iptables', '')})")
    if missing:
        raise StoradviseError(f"scenario {sc.name} cannot be realised on this machine: " + "; ".join(missing))


def lab_healthy(rec: LabRecord) -> bool:
    sshd = {host: pid for pid, what, host in rec.pids() if what == "sshd"}
    # the delay forwarders and the production traffic (a scenario's traffic:) run as long as the lab
    running = [pid for pid, what, _where in rec.pids() if what in ("delayq", "traffic")]
    return (rec.phase == "up" and all(h in sshd and nx.pid_alive(sshd[h]) for h in rec.hosts)
            and all(nx.pid_alive(p) for p in running))


def lab_up(scenario: str, name: str | None = None, recreate: bool = False, progress: Progress = _noop) -> UpResult:
    require_root()
    sc = load_scenario(scenario)
    name = check_lab_name(name or sc.name)
    for tool in ("ip", "tc", "nft", "ethtool", "unshare", "ssh-keygen"):
        if shutil.which(tool) is None:
            raise StoradviseError(f"storadvise lab needs {tool!r}, which is not installed")
    for tool in (hostmod.SSHD, hostmod.IPERF3):
        if not Path(tool).exists():
            raise StoradviseError(f"storadvise lab needs {tool} (openssh-server, iperf3), which is not installed")
    t0 = time.monotonic()
    with labs_lock():
        old = LabRecord.load(name)
        if old is not None and not recreate:
            if lab_healthy(old) and old.scenario == sc.name:
                return UpResult(old, True, old.site_file or "")
            raise StoradviseError(
                f"lab {name!r} exists (scenario {old.scenario}, phase {old.phase}"
                f"{'' if lab_healthy(old) else ', not healthy'}): use --recreate, or `storadvise lab down --name {name}`"
            )
        if old is not None or leftover_namespaces(name):
            progress(f"removing the old lab {name}")
            teardown_lab(name)
        progress("probing kernel capabilities")
        caps = nx.probe_capabilities(want_iptables=any(h.firewall and h.firewall.iptables for h in sc.hosts),
                                     want_delay=sc.needs_delay)
        refuse_unrealisable(sc, caps)
        with claims_lock():
            index = allocate_index(nx.root_routes_v4(), lab_dir(name))
            subnet = subnet_for(index)
            rec = LabRecord(name=name, index=index, subnet=str(subnet), scenario=sc.name, scenario_source=sc.source)
            rec.save()
        rec.controller_address = str(subnet.network_address + 1)
        rec.namespaces = [switch_ns(name, s.name) for s in sc.switches] + [host_ns(name, h.name) for h in sc.hosts]
        rec.root_ifaces = [root_iface(index)]
        for i, h in enumerate(sc.hosts):
            rec.hosts[h.name] = {
                "address": str(subnet.network_address + 11 + i),
                "ns": host_ns(name, h.name),
                "roles": [r.value for r in h.roles],
                "groups": list(h.groups),
                "switch": h.switch,
                "port": f"h{i}",
            }
        rec.save()  # the plan is on disk before anything exists
    rec.timings["probe"] = round(time.monotonic() - t0, 3)
    try:
        rec.phase = "building"
        rec.save()
        _build(rec, sc, progress)
        rec.phase = "up"
        rec.timings["up"] = round(time.monotonic() - t0, 3)
        rec.save()
    except BaseException as exc:
        rec.phase = "failed"
        rec.save()
        progress(f"up failed ({exc}); removing what was built")
        teardown_lab(name)
        if isinstance(exc, StoradviseError):
            raise
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise StoradviseError(f"lab up failed: {exc}") from exc
    return UpResult(rec, False, rec.site_file or "")


def _build(rec: LabRecord, sc: Scenario, progress: Progress) -> None:
    t = time.monotonic()
    d = rec.dir
    name = rec.name
    prefixlen = 24
    progress(f"creating {len(sc.switches)} switch(es) and {len(sc.hosts)} host namespaces in {rec.subnet}")
    # 1. namespaces and links, created from the root namespace directly in their target namespaces
    root = [f"netns add {ns}" for ns in rec.namespaces]
    for s in sc.switches:
        root.append(f"link add br0 netns {switch_ns(name, s.name)} type bridge")
    for h in sc.hosts:
        info = rec.hosts[h.name]
        root.append(f"link add eth0 netns {info['ns']} type veth peer name {info['port']} netns {switch_ns(name, h.switch)}")
    for i, s in enumerate(sc.switches):
        if s.uplink:
            root.append(f"link add up{i} netns {switch_ns(name, s.name)} type veth peer name dn{i} netns {switch_ns(name, s.uplink)}")
    ctl = rec.root_ifaces[0]
    root.append(f"link add {ctl} type veth peer name ctl netns {switch_ns(name, sc.controller_switch)}")
    nx.ip_batch(root)
    nx.ip_batch([f"link set {ctl} alias {ns_prefix(name)}ctl", f"link set {ctl} addrgenmode none",
                 f"addr add {rec.controller_address}/{prefixlen} dev {ctl}", f"link set {ctl} up"])
    # 2. switches
    for i, s in enumerate(sc.switches):
        ns = switch_ns(name, s.name)
        ports = [rec.hosts[h.name]["port"] for h in sc.hosts if h.switch == s.name]
        ports += [f"up{i}"] if s.uplink else []
        ports += [f"dn{j}" for j, c in enumerate(sc.switches) if c.uplink == s.name]
        ports += ["ctl"] if s.name == sc.controller_switch else []
        lines = ["link set lo up", "link set br0 up"]
        for p in ports:
            lines += [f"link set {p} mtu {s.mtu}"] if s.mtu else []
            lines += [f"link set {p} master br0", f"link set {p} up"]
        lines += [f"link set br0 mtu {s.mtu}"] if s.mtu else []
        nx.ip_batch(lines, ns)
        nx.tc_batch([nx.tbf_line(rec.hosts[h.name]["port"], h.shaping_rate(), h.link_queue) for h in sc.hosts
                     if h.switch == s.name and h.shaping_rate()], ns)
    # 3. hosts
    for h in sc.hosts:
        info = rec.hosts[h.name]
        nx.ip_batch(["link set lo up", f"addr add {info['address']}/{prefixlen} dev eth0", "link set eth0 up"]
                    + ([f"link set eth0 mtu {h.mtu}"] if h.mtu else []), info["ns"])
        if h.shaping_rate():
            nx.tc_batch([nx.tbf_line("eth0", h.shaping_rate(), h.link_queue)], info["ns"])
        nx.in_ns(info["ns"], ["ethtool", "-K", "eth0", "tso", "off", "gso", "off"])
    # each host's net.* values before any fault: what `lab reboot` resets to
    for h in sc.hosts:
        hdir = d / "hosts" / h.name
        hdir.mkdir(parents=True, exist_ok=True)
        record_defaults(rec.hosts[h.name]["ns"], hdir)
    # the controller's route for the lab prefix must be the lab veth, nothing else
    route = nx.run(["ip", "route", "get", rec.hosts[sc.hosts[0].name]["address"]]).stdout
    if f"dev {ctl}" not in route:
        raise StoradviseError(f"the route to the lab goes elsewhere ({route.strip()}); refusing to continue")
    rec.timings["network"] = round(time.monotonic() - t, 3)
    # 4. path faults: loss in the switch that delivers to the receiver
    t = time.monotonic()
    apply_path_faults(rec, sc)
    # 5. host faults: sysctls, firewalls
    progress("injecting faults (sysctls, firewalls, emulated storage systems)")
    for h in sc.hosts:
        ns = rec.hosts[h.name]["ns"]
        if h.sysctls:
            _apply_sysctls(ns, h.name, h.sysctls)
        for key in h.read_only_sysctls:
            if not Path(sysctl_proc_path(key)).exists():
                raise StoradviseError(f"host {h.name}: read_only_sysctls: no sysctl {key} on this machine")
        if h.firewall:
            if h.firewall.nft:
                nx.in_ns(ns, ["nft", "-f", "-"], input=_fill(h.firewall.nft, rec, sc, h.name))
            if h.firewall.iptables:
                nx.in_ns(ns, ["iptables-restore"], input=_fill(h.firewall.iptables, rec, sc, h.name))
    emu = d / "emu"
    emulated = sc.emulated()
    for emulation, spec in emulated:
        emulation.setup(emu, spec, sc)
    rec.timings["faults"] = round(time.monotonic() - t, 3)
    # 6. host files and processes
    t = time.monotonic()
    progress(f"starting sshd and iperf3 in {len(sc.hosts)} hosts")
    client_pub = hostmod.keygen(d / "client_key", f"storadvise-lab-{name}")
    (d / "authorized_keys").write_text(client_pub + "\n")
    known = []
    procs = {}
    for h in sc.hosts:
        info = rec.hosts[h.name]
        hdir = d / "hosts" / h.name
        persisted = {}
        if h.persist_sysctls is not None:
            p = h.persist_sysctls
            vals = p.values if p.values is not None else h.sysctls
            text = "".join(f"# {c}\n" for c in (p.comment or "").splitlines()) + "".join(f"{k} = {v}\n" for k, v in vals.items())
            persisted[p.file] = text
        pub = hostmod.prepare_host_dir(hdir, d, h.name, info["address"], persisted)
        _persist_firewall(hdir, h, rec, sc)
        known.append(f"{info['address']} {' '.join(pub.split()[:2])}")
        emus: dict[str, Path] = {}
        for emulation, spec in emulated:
            if h.name in emulation.hosts(spec, sc):
                binds = emulation.install(hdir, emu)
                twice = sorted(set(binds) & set(emus))
                if twice:  # the scenario's check refuses this for the declared bind_dirs
                    raise StoradviseError(f"{h.name}: the {emulation.section} emulation binds {', '.join(twice)} "
                                          "that another emulation binds already")
                emus.update(binds)
        (hdir / "boot.sh").write_text(hostmod.boot_script(d, hdir, h.name, info["address"], emus, h.iperf3,
                                                          h.read_only_sysctls, h.cpu_load))
    (d / "known_hosts").write_text("\n".join(known) + "\n")
    for h in sc.hosts:
        p = hostmod.spawn_host(rec.hosts[h.name]["ns"], d / "hosts" / h.name)
        rec.add_pid(p.pid, "sshd", h.name)
        procs[h.name] = p
    _wait_ready(rec, sc, procs)
    for emulation, spec in emulated:
        emulation.start(rec, spec, sc)
    if sc.traffic:
        progress(f"starting the production traffic ({len(sc.traffic)} entries)")
        start_traffic(rec, sc)
    rec.timings["processes"] = round(time.monotonic() - t, 3)
    rec.site_file = str(write_site_files(rec, sc))


def _persist_firewall(hdir: Path, h, rec: LabRecord, sc: Scenario) -> None:
    """The host's persisted ruleset (its private /etc copies, loaded by `lab reboot`)."""
    etc = hdir / "etc"
    (etc / "iptables").mkdir(parents=True, exist_ok=True)
    if not h.firewall or not h.firewall.persist:
        return
    if h.firewall.nft:
        (etc / "nftables.conf").write_text("#!/usr/sbin/nft -f\n" + _fill(h.firewall.nft, rec, sc, h.name))
    if h.firewall.iptables:
        (etc / "iptables" / "rules.v4").write_text(_fill(h.firewall.iptables, rec, sc, h.name))


def lab_reboot(name: str | None, host: str) -> dict:
    """Restart one host's namespace state from its persisted files (advisor/lab/reboot.py)."""
    require_root()
    if name is None:
        owners = [n for n in all_lab_names() if (r := LabRecord.load(n)) is not None and host in r.hosts]
        if len(owners) != 1:
            raise StoradviseError(f"host {host!r} is in {len(owners)} labs ({', '.join(owners) or 'none'}): give --name LAB")
        name = owners[0]
    rec = LabRecord.load(check_lab_name(name))
    if rec is None:
        raise StoradviseError(f"no lab named {name!r}")
    return reboot_host(rec, host)


def _fill(text: str, rec: LabRecord, sc: Scenario, self_host: str) -> str:
    import re

    def sub(m: "re.Match[str]") -> str:
        kind, arg = m.group(1), m.group(2)
        if kind == "self":
            return rec.hosts[self_host]["address"]
        if kind == "prefix":
            return rec.subnet
        if kind == "addr":
            if arg not in rec.hosts:
                raise StoradviseError(f"firewall of {self_host}: unknown host {arg!r} in {{{{ addr:{arg} }}}}")
            return rec.hosts[arg]["address"]
        hs = sc.select(arg or "")
        if not hs:
            raise StoradviseError(f"firewall of {self_host}: {{{{ addrs:{arg} }}}} matches no host")
        return ", ".join(rec.hosts[h.name]["address"] for h in hs)

    return re.sub(r"\{\{\s*(self|prefix|addr|addrs)(?::([^}\s]+))?\s*\}\}", sub, text)


def _apply_sysctls(ns: str, host: str, values: dict) -> None:
    pairs = [f"{k}={v}" for k, v in values.items()]
    nx.in_ns(ns, ["sysctl", "-q", "-w", *pairs], check=False)
    got = nx.in_ns(ns, ["sysctl", "-n", *values.keys()], check=False).stdout.splitlines()
    for (k, v), g in zip(values.items(), got + [""] * len(values)):
        if " ".join(str(v).split()) != " ".join(g.split()):
            raise StoradviseError(f"host {host}: sysctl {k}={v} did not take effect in its namespace (reads {g.strip()!r})")


def _wait_ready(rec: LabRecord, sc: Scenario, procs: dict, timeout: float = 30.0) -> None:
    pending = {h.name for h in sc.hosts}
    deadline = time.monotonic() + timeout
    while pending:
        for hn in sorted(pending):
            hdir = rec.dir / "hosts" / hn
            p = procs[hn]
            if p.poll() is not None:
                log = (hdir / "boot.log").read_text(errors="replace").strip().splitlines()
                slog = (hdir / "sshd.log").read_text(errors="replace").strip().splitlines() if (hdir / "sshd.log").exists() else []
                why = (log + slog)[-1] if (log + slog) else f"exit {p.returncode}"
                raise StoradviseError(f"host {hn}: sshd did not start: {why}")
            try:
                with socket.create_connection((rec.hosts[hn]["address"], 22), timeout=0.3) as s:
                    s.recv(4)
            except OSError:
                continue
            h = next(x for x in sc.hosts if x.name == hn)
            if h.iperf3:
                pf = hdir / "iperf3.pid"
                if not pf.exists() or not pf.read_text().strip().isdigit():
                    continue
                # boot.sh wrote the pid the host sees (its own PID namespace); record the machine's
                outer = hostmod.outer_pid(p.pid, int(pf.read_text().strip()))
                if outer is None:
                    continue
                rec.add_pid(outer, "iperf3", hn)
            pending.discard(hn)
        if pending:
            if time.monotonic() > deadline:
                raise StoradviseError(f"hosts not ready after {timeout:.0f}s: {', '.join(sorted(pending))}")
            time.sleep(0.05)


# -- down -----------------------------------------------------------------------------------


def lab_down(name: str | None = None, all_labs: bool = False, progress: Progress = _noop) -> list[dict]:
    require_root()
    if all_labs:
        names = all_lab_names()
    else:
        if not name:
            raise StoradviseError("give --name LAB or --all")
        names = [check_lab_name(name)]
    out = []
    with labs_lock():
        for n in names:
            progress(f"removing lab {n}")
            t = time.monotonic()
            r = teardown_lab(n)
            r["seconds"] = round(time.monotonic() - t, 3)
            out.append(r)
        # stale probe namespaces of killed runs
        if all_labs:
            for n in nx.list_netns():
                if n.startswith("salab_probe~"):
                    pid = n.split("~", 1)[1]
                    if not (pid.isdigit() and nx.pid_alive(int(pid))):
                        nx.run(["ip", "netns", "del", n], check=False)
    return out


# -- status ---------------------------------------------------------------------------------


def lab_status() -> list[dict]:
    out = []
    for n in all_lab_names():
        rec = LabRecord.load(n)
        if rec is None:
            out.append({"name": n, "phase": "leftover", "healthy": False, "hosts": []})
            continue
        pids = rec.pids()
        hosts = []
        for hn, info in rec.hosts.items():
            sshd = [p for p, w, h in pids if h == hn and w == "sshd"]
            ip3 = [p for p, w, h in pids if h == hn and w == "iperf3"]
            hosts.append({
                "name": hn, "address": info["address"], "roles": info["roles"], "groups": info["groups"],
                "sshd_pid": sshd[-1] if sshd else None, "sshd_alive": bool(sshd) and nx.pid_alive(sshd[-1]),
                "iperf3_pid": ip3[-1] if ip3 else None, "iperf3_alive": bool(ip3) and nx.pid_alive(ip3[-1]),
            })
        out.append({
            "name": n, "scenario": rec.scenario, "phase": rec.phase, "subnet": rec.subnet,
            "controller_address": rec.controller_address, "site_file": rec.site_file,
            "state_dir": str(rec.dir), "healthy": lab_healthy(rec), "timings": rec.timings, "hosts": hosts,
            "delay_forwarders": [{"switch": sw, "pid": p, "alive": nx.pid_alive(p)}
                                 for p, w, sw in pids if w == "delayq"],
        })
    return out
