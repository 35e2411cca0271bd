"""Running the client-scaling points of one protocol over one or several worker nodes.

A point of C clients on N nodes deals the clients round-robin: node j runs ``C // N`` clients,
one more for the first ``C % N`` nodes; a point with fewer clients than nodes uses C nodes (one
client each). Each node runs one job that forks its clients; the jobs of all nodes run at once
(one thread per node, each over its own transport) and their clients start together at a common
time (``--start-at``: now + a margin for the SSH session and the job's calibration; a job that is
late starts at once and reports by how much, ``start_late_s``). Every client gets its index
among all the point's clients, so over XRootD each starts at its own place in the file list.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from advisor.efficiency.scaling_curve import point_summary
from advisor.site.model import Host

#: seconds between launching the jobs of a multi-node point and the clients' common start
START_MARGIN_S = 3.0


def spread(clients: int, nodes: int) -> list[int]:
    """Clients per node, round-robin: ``spread(5, 2) == [3, 2]``, ``spread(1, 3) == [1]``."""
    if clients < 1 or nodes < 1:
        raise ValueError(f"clients and nodes must be positive, got {clients} and {nodes}")
    used = min(clients, nodes)
    return [clients // used + (1 if j < clients % used else 0) for j in range(used)]


def run_point(nodes: list[Host], clients: int, mb_each: float, spec: str, protocol: str,
              run_job: Callable[..., dict[str, Any]], calibrate_seconds: float = 0.3) -> dict[str, Any]:
    """One point: the jobs of its nodes at once; the summary of all their clients."""
    share = spread(clients, len(nodes))
    used = nodes[:len(share)]
    start_at = time.time() + START_MARGIN_S + 2 * calibrate_seconds if len(used) > 1 else 0.0
    outputs: list[Any] = [None] * len(used)
    first = 0
    jobs = []
    for j, (h, n) in enumerate(zip(used, share)):
        extra = ["--first-client", str(first), "--total-clients", str(clients)]
        if start_at:
            extra += ["--start-at", f"{start_at:.3f}"]
        first += n
        jobs.append((j, h, n, extra))

    def one(j: int, h: Host, n: int, extra: list[str]) -> None:
        try:
            outputs[j] = run_job(h, n, mb_each, spec, extra=extra)
        except Exception as e:  # reported below with the host's name
            outputs[j] = e

    if len(jobs) == 1:
        one(*jobs[0])
    else:
        threads = [threading.Thread(target=one, args=job, daemon=True) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for (_j, h, _n, _e), out in zip(jobs, outputs):
        if isinstance(out, Exception):
            raise RuntimeError(f"{h.name}: {' '.join(str(out).split()) or type(out).__name__}")
    return point_summary([(h.name, out) for (_j, h, _n, _e), out in zip(jobs, outputs)], clients, protocol, mb_each)


def run_points(nodes: list[Host], counts: list[int], mb_each: float, spec: str, protocol: str,
               run_job: Callable[..., dict[str, Any]], step: Callable[..., Any],
               say: Callable[[str], None], calibrate_seconds: float = 0.3) -> list[dict[str, Any]]:
    """Every count of one protocol, one point at a time; a failed point is a row with its error."""
    points = []
    for c in counts:
        used = nodes[:len(spread(c, len(nodes)))]
        where = ",".join(h.name for h in used)
        say(f"{protocol}: {c} concurrent client(s) on {where}, {mb_each:g} MiB each")
        try:
            p = step("scaling", where, c, lambda c=c: run_point(nodes, c, mb_each, spec, protocol, run_job,
                                                                calibrate_seconds))
        except Exception as e:
            points.append({"clients": c, "nodes": len(used), "protocol": protocol, "host": used[0].name,
                           "hosts": [h.name for h in used], "error": " ".join(str(e).split()),
                           "runtime_per_client_s": None, "rate_per_client_bps": None, "efficiency": None})
            continue
        points.append(p)
    return points
