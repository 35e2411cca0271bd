"""The generator's path faults: what the diagnosis is about (docs/diagnosis.md), drawn with a random
generator of their own (``paths-<seed>``) so that the other faults of every seed stay as they were.

==============  ==================================================================================
path-loss       one storage host's packets towards the workers are lost (0.3%) and it has SACK off:
                its paths to the workers run far below the link. Causes: SACK on that host (a
                change) and the loss (by hand); the mesh measures it (a short mesh of that
                host's paths to the workers).
policer         another storage host rate-limits what the workers send it (20,000 packets/s: about
                230 Mb/s of 1 Gb/s); the workers' paths to it are capped. Cause: its firewall.
cpu-load        a worker whose other jobs keep the machine's CPUs busy (two spinning processes)
                during the tests, on a site whose mesh measures it (and no delay forwarder, which
                would starve like a slow link): its paths are ``cpu`` (inconclusive) or fine, never
                a cause on it. Drawn with a generator of its own (``load-<seed>``).
==============  ==================================================================================

Each fault adds ``expect`` entries: the setting finding it must produce (``NET-TCP-SACK``,
``FW-STORAGE-NETWORK``: fixable like any other) and its measured symptom (``MESH-PATH-SLOW`` on the
faulty host, ``symptom: true``, with ``cause``: the kind of cause the diagnosis must name on that
host). ``bench/bench_diagnosis_lab.py`` scores the diagnosis against them.
"""

from __future__ import annotations

import random
from typing import Any

PATH_FAULT_KINDS = ("path-loss", "policer", "cpu-load")
#: the share of seeds that draw at least one path fault
PATH_FAULT_SHARE = 0.6
LOSS = "0.3%"
POLICER_PPS = 20000
#: the share of seeds with a mesh (and no delay) whose worker is loaded, and by how many spinning processes
CPU_LOAD_SHARE = 0.5
CPU_LOAD = 2


def draw_path_faults(seed: int, data: dict[str, Any], storage: list[dict[str, Any]], workers: list[dict[str, Any]],
                     wg: str, expect: list[dict[str, Any]]) -> list[str]:
    """Add the drawn path faults to the scenario ``data`` (in place); returns the kinds injected."""
    rng = random.Random(f"paths-{seed}")
    if not storage or not workers or rng.random() >= PATH_FAULT_SHARE:
        return []
    network = ("path-loss", "policer")
    kinds = [k for k in network if rng.random() < 0.6] or [rng.choice(network)]
    if len(storage) < 2 and len(kinds) == 2:
        kinds = [rng.choice(network)]
    hosts = rng.sample(storage, len(kinds))
    pairs: list[dict[str, Any]] = []
    injected = []
    for kind, h in zip(kinds, hosts):
        if kind == "path-loss":
            if "net.ipv4.tcp_sack" in h.get("sysctls", {}) or "net.ipv4.tcp_sack" in (h.get("read_only_sysctls") or []):
                continue  # another fault already owns the key
            h.setdefault("sysctls", {})["net.ipv4.tcp_sack"] = 0
            data.setdefault("paths", []).append({"from": [h["name"]], "to": [wg], "loss": LOSS})
            pairs.append({"a": h["name"], "b": wg, "direction": "forward"})
            expect.append({"rule": "NET-TCP-SACK", "host": h["name"], "fault": "tcp_sack=0 on a lossy sender"})
            expect.append({"rule": "MESH-PATH-SLOW", "host": h["name"], "symptom": True, "cause": "sack+loss",
                           "fault": f"{LOSS} of what {h['name']} sends to {wg} is lost, SACK off"})
        else:
            data.setdefault("firewalls", []).append({"from": [wg], "to": [h["name"]], "action": "limit",
                                                     "rate": POLICER_PPS, "backend": rng.choice(["nft", "iptables"])})
            pairs.append({"a": wg, "b": h["name"], "direction": "forward"})
            expect.append({"rule": "FW-STORAGE-NETWORK", "host": h["name"],
                           "fault": f"packets from {wg} rate-limited to {POLICER_PPS}/s"})
            expect.append({"rule": "MESH-PATH-SLOW", "host": h["name"], "symptom": True, "cause": "firewall",
                           "fault": f"what {wg} sends to {h['name']} is capped by a packet-rate limit"})
        injected.append(kind)
    if pairs:
        mesh = data.setdefault("site", {}).setdefault("mesh", generated_mesh([]))
        mesh.setdefault("pairs", []).extend(pairs)
    return injected


def generated_mesh(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """A generated site's short mesh: one test at a time, one direction each, cubic per socket (the
    EL9 and Debian default, which a lab namespace cannot make its own: what the loss models are
    checked against must say which control ran)."""
    return {"duration": 2, "streams": 1, "omit": 0, "bidir": False, "parallel": 1, "congestion": "cubic",
            "pairs": pairs}


def draw_cpu_load(seed: int, data: dict[str, Any], workers: list[dict[str, Any]],
                  expect: list[dict[str, Any]]) -> list[str]:
    """Load one worker's CPUs during the tests, on a site whose mesh measures that worker's group
    and has no delayed path; returns the kinds injected."""
    rng = random.Random(f"load-{seed}")
    pairs = ((data.get("site") or {}).get("mesh") or {}).get("pairs") or []
    if not workers or not pairs or any(p.get("delay") for p in data.get("paths", [])) or rng.random() >= CPU_LOAD_SHARE:
        return []
    h = rng.choice(workers)
    h["cpu_load"] = CPU_LOAD
    expect.append({"host": h["name"], "inconclusive": True,
                   "fault": f"{CPU_LOAD} processes of other jobs keep the CPUs busy on {h['name']} during the tests"})
    return ["cpu-load"]
