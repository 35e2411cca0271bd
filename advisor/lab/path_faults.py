"""A scenario's path faults in a running lab: loss (an nftables bridge table) and delay (the NFQUEUE
forwarder, advisor.lab.delayq) in the switch that delivers to the receivers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from advisor.util.errors import StoradviseError
from advisor.lab import netns as nx
from advisor.lab.records import LabRecord, switch_ns
from advisor.lab.scenario import Scenario


def apply_path_faults(rec: LabRecord, sc: Scenario) -> None:
    """Loss (nftables, bridge family) and delay (NFQUEUE forwarder) in the switch that delivers
    to the receivers, so a frame meets each fault once whatever switches it crosses."""
    rules: dict[str, list[str]] = {}
    delays: dict[str, list[tuple[list[str], list[str], float]]] = {}
    for p in sc.paths:
        senders = [rec.hosts[h.name]["address"] for h in sc.select_all(p.src)]
        for s in sc.switches:
            receivers = [rec.hosts[h.name]["address"] for h in sc.select_all(p.dst) if h.switch == s.name]
            if not (receivers and senders):
                continue
            if p.loss > 0:
                rules.setdefault(s.name, []).append(
                    f"ip saddr {{ {', '.join(senders)} }} ip daddr {{ {', '.join(receivers)} }} "
                    f"numgen random mod 1000000 < {p.loss} counter drop"
                )
            if p.delay > 0:
                delays.setdefault(s.name, []).append((senders, receivers, p.delay))
    for sw, rs in rules.items():
        text = "table bridge storadvise_lab {\n  chain forward {\n    type filter hook forward priority 0; policy accept;\n"
        text += "".join(f"    {r}\n" for r in rs) + "  }\n}\n"
        nx.in_ns(switch_ns(rec.name, sw), ["nft", "-f", "-"], input=text)
    for sw, entries in delays.items():
        _start_delay_forwarder(rec, sw, entries)


def delay_queues(entries: list[tuple[list[str], list[str], float]]) -> tuple[dict[float, int], list[str]]:
    """Queue numbers (one per distinct delay, from 1) and the iptables-restore text for one switch.

    A (sender, receiver) pair named by several paths takes the first path's delay (iptables stops
    at the first NFQUEUE verdict), as the scenario lists them."""
    queues: dict[float, int] = {}
    lines = ["*filter", ":FORWARD ACCEPT [0:0]"]
    for senders, receivers, ms in entries:
        q = queues.setdefault(ms, len(queues) + 1)
        lines.append(f"-A FORWARD -s {','.join(a + '/32' for a in senders)} -d {','.join(a + '/32' for a in receivers)} "
                     f"-j NFQUEUE --queue-num {q} --queue-bypass")
    lines.append("COMMIT")
    return queues, lines


#: the delay forwarder's nice value (the machine's default is 0)
FORWARDER_NICE = -10


def _raise_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, 0, FORWARDER_NICE)
    except OSError:
        pass  # not root: it runs at the default priority


def _start_delay_forwarder(rec: LabRecord, sw: str, entries: list[tuple[list[str], list[str], float]]) -> None:
    ns = switch_ns(rec.name, sw)
    queues, lines = delay_queues(entries)
    nx.in_ns(ns, ["sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"])
    ready = rec.dir / f"delayq-{sw}.ready"
    log = rec.dir / f"delayq-{sw}.log"
    cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "advisor.lab.delayq", "--ready", str(ready)]
    for ms, q in queues.items():
        cmd += ["--queue", f"{q}:{ms:g}"]
    with open(log, "ab") as out:
        # the switch is the network, not one of the hosts: it keeps its CPU when the hosts (or other
        # work on the machine) are busy, as a switch's own silicon would (a starved forwarder would
        # queue like a slow link, and nothing at the ends would say so)
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                             cwd="/", preexec_fn=_raise_priority)
    rec.add_pid(p.pid, "delayq", sw)
    deadline = time.monotonic() + 15
    while not ready.exists():
        if p.poll() is not None:
            why = log.read_text(errors="replace").strip().splitlines()
            raise StoradviseError(f"switch {sw}: the delay forwarder did not start: {why[-1] if why else p.returncode}")
        if time.monotonic() > deadline:
            raise StoradviseError(f"switch {sw}: the delay forwarder did not bind its queues within 15 s")
        time.sleep(0.02)
    # the rules go in only once the queues are served (--queue-bypass covers the gap anyway)
    nx.in_ns(ns, ["iptables-restore", "--noflush"], input="\n".join(lines) + "\n")
