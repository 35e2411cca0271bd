"""Where a mesh test and production flows measured the same path: do they say the same thing?

Each flow path that a mesh test also measured gets ``mesh``: ``{limited_by, measured_bps, agrees,
note}``. They agree when both name the same network cause (``loss`` and ``policer`` are one: two
samples of a flow cannot tell a policer's steady rate), or when neither names one (a mesh test at
its link and a flow whose reader set its pace both say the network is not what holds the path). A
mesh test that was inconclusive (``cpu``, ``contended``) agrees with anything: it says nothing of the
network. The cause stage models a path from the mesh's measurement where there is one (a test
runs alone, at full pace); the disagreement stays in the report for that path.
"""

from __future__ import annotations

from typing import Any

from advisor.flows.limits import NETWORK_CLASSES
from advisor.mesh.limits import INCONCLUSIVE

_SAME = {"policer": "loss"}


def _cause(limited_by: str | None) -> str | None:
    return _SAME.get(limited_by or "", limited_by) if limited_by in NETWORK_CLASSES else None


def compare_with_mesh(flows: dict[str, Any] | None, mesh: dict[str, Any] | None) -> None:
    """Fill each flow path's ``mesh`` (None where no mesh test of that path succeeded)."""
    if not flows:
        return
    tested = {(p.get("src"), p.get("dst")): p for p in (mesh or {}).get("paths") or []
              if isinstance(p, dict) and p.get("status") == "ok"}
    for f in flows.get("paths") or []:
        m = tested.get((f.get("src"), f.get("dst")))
        if m is None:
            f["mesh"] = None
            continue
        mine, theirs = f.get("limited_by"), m.get("limited_by")
        agrees = theirs in INCONCLUSIVE or _cause(mine) == _cause(theirs)
        note = None if agrees else (f"the mesh test says {theirs}, production flows say {mine}: "
                                    "the causes follow the mesh test's measurement")
        f["mesh"] = {"limited_by": theirs, "measured_bps": m.get("measured_bps"), "agrees": agrees, "note": note}
