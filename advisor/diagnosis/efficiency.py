"""From a path's predicted rate to the active test job's CPU efficiency (docs/efficiency-active.md).

The active test job reads its data from one source and computes on it; its efficiency is CPU
time / wall time. The time it did not compute is spent waiting for data, and that wait scales
with the rate of the path the data comes over: wait_after = wait_now x rate_now / rate_after
(model ``read-wait``), never below zero, so efficiency_after = cpu / (cpu + wait_after).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.diagnosis.report_types import FindingRef, Predicted
from advisor.diagnosis.paths import Fix, PathState, index_fixes, predict


def _source_host(source: Any) -> str | None:
    if not isinstance(source, str) or not source:
        return None
    host = source.rsplit(":", 1)[0] if source.count(":") == 1 else source
    return host.strip("[]") or None


def efficiency_predictions(efficiency: dict | None, states: dict[str, PathState], fixes: set[Fix] | frozenset,
                           symptoms: list | None, explains: dict | None,
                           ref: Callable[[Any], FindingRef] | None) -> list[Predicted]:
    """One prediction per tested worker whose source path the fixes lift. With ``symptoms`` (the
    failed symptom findings) and ``explains``, the worker's failed findings join ``explains``.
    Without (a whole plan's prediction) every tested worker is predicted, lifted or not."""
    out: list[Predicted] = []
    fixes = index_fixes(fixes)
    hosts = (efficiency or {}).get("hosts") or {}
    if not isinstance(hosts, dict):
        return out
    for worker, r in sorted(hosts.items()):
        if not isinstance(r, dict):
            continue
        cpu, wall, eff = r.get("cpu_seconds"), r.get("wall_seconds"), r.get("efficiency")
        src = _source_host(r.get("source"))
        st = states.get(f"{src}->{worker}") if src else None
        if not (isinstance(cpu, (int, float)) and isinstance(wall, (int, float)) and wall > 0 and cpu > 0):
            continue
        now = eff if isinstance(eff, (int, float)) else cpu / wall
        if st is None:
            if symptoms is None:
                out.append(Predicted(metric="efficiency", subject=worker, now=round(now, 3), after=None,
                                     unit="ratio", model="unquantified", inputs={"source": src}))
            continue
        pr = predict(st, fixes)
        lifted = pr.model != "measured" and pr.bps > st.measured_bps * 1.05
        if symptoms is not None and not lifted:
            continue
        wait = max(0.0, wall - cpu)
        wait_after = wait * st.measured_bps / pr.bps if lifted else wait
        after = cpu / (cpu + wait_after)
        out.append(Predicted(metric="efficiency", subject=worker, now=round(now, 3), after=round(after, 3),
                             unit="ratio", model="read-wait" if lifted else "measured",
                             inputs={"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "path": st.subject,
                                     "path_bps_now": round(st.measured_bps), "path_bps_after": round(pr.bps)}))
        if symptoms is not None and explains is not None and ref is not None:
            for f in symptoms:
                if worker in f.hosts and not (f.subject and "->" in f.subject):
                    explains[(f.rule_id, f.subject or "", tuple(f.hosts))] = ref(f)
    return out
